//! A namespace snapshot as a table for datafusion-python, over DataFusion's FFI: the
//! capsule `__datafusion_table_provider__` returns wraps the core's `NamespaceTable`, whose
//! scans plan and read on our runtime (datafusion-python polls on its own).

use std::ptr::NonNull;
use std::sync::Arc;

use lance_partitioned_core::datafusion_ffi::proto::logical_extension_codec::FFI_LogicalExtensionCodec;
use lance_partitioned_core::ns::scan::NamespaceTable;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyDict};

use crate::errors::to_py;
use crate::runtime::runtime;
use crate::snapshot::ManifestSnapshot;

/// A snapshot as a DataFusion table provider.
#[pyclass(module = "lance_partitioned._native", frozen)]
pub struct DataFusionTable {
    table: Arc<NamespaceTable>,
}

/// The logical codec of the session datafusion-python passes: its
/// `__datafusion_logical_extension_codec__()` capsule, or that capsule itself.
fn session_codec(session: &Bound<'_, PyAny>) -> PyResult<FFI_LogicalExtensionCodec> {
    let attr = "__datafusion_logical_extension_codec__";
    let capsule = match session.hasattr(attr)? {
        true => session.getattr(attr)?.call0()?,
        false => session.clone(),
    };
    let capsule = capsule.cast::<PyCapsule>().map_err(|_| {
        PyTypeError::new_err(
            "__datafusion_table_provider__ takes the DataFusion session (datafusion-python 54)",
        )
    })?;
    let data: NonNull<FFI_LogicalExtensionCodec> = capsule
        .pointer_checked(Some(c"datafusion_logical_extension_codec"))?
        .cast();
    // SAFETY: the capsule's name says it holds an `FFI_LogicalExtensionCodec`, which
    // datafusion-python keeps alive while it calls us; we take a clone of it.
    Ok(unsafe { data.as_ref() }.clone())
}

#[pymethods]
impl DataFusionTable {
    #[new]
    fn new(py: Python<'_>, snapshot: &ManifestSnapshot) -> PyResult<Self> {
        let snap = snapshot.full(py)?;
        let rt = runtime().map_err(to_py)?;
        let table = NamespaceTable::new(snap).with_runtime(rt.handle().clone());
        Ok(Self {
            table: Arc::new(table),
        })
    }

    /// The FFI table provider (`datafusion_table_provider` capsule) for `session`.
    fn __datafusion_table_provider__<'py>(
        &self,
        py: Python<'py>,
        session: Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let codec = session_codec(&session)?;
        let rt = runtime().map_err(to_py)?;
        let provider = Arc::clone(&self.table).into_ffi(rt.handle().clone(), codec);
        PyCapsule::new_with_value(py, provider, c"datafusion_table_provider")
    }

    /// The scans planned so far: columns, filter, limit and what pruning kept.
    fn scans<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        self.table
            .scans()
            .into_iter()
            .map(|s| {
                let d = PyDict::new(py);
                d.set_item("columns", s.columns)?;
                d.set_item("filter", s.filter)?;
                d.set_item("limit", s.limit)?;
                d.set_item("leaves", s.leaves)?;
                d.set_item("kept_by_partitions", s.kept_by_partitions)?;
                d.set_item("kept", s.kept)?;
                Ok(d)
            })
            .collect()
    }
}
