//! Bindings of the partitioned namespace: create, snapshots, writes, pruning and scans.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::runtime::block_on;
use lance_partitioned_core::arrow::array::RecordBatch;
use lance_partitioned_core::ns::manifest::{self, Snapshot};
use lance_partitioned_core::ns::namespace::Namespace;
use lance_partitioned_core::ns::scan::{self, ScanIter, ScanOptions};
use lance_partitioned_core::spec::PartitionSpec;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::errors::run;
use crate::ffi::{export_batch, export_schema, import_schema};

/// create_namespace(root, schema, spec_json, props) -> pyarrow.Schema (with field ids)
#[pyfunction]
pub fn create_namespace<'py>(
    py: Python<'py>,
    root: &str,
    schema: &Bound<'py, PyAny>,
    spec_json: &str,
    props: HashMap<String, String>,
) -> PyResult<Bound<'py, PyAny>> {
    let s = import_schema(schema)?;
    let (root, spec_json) = (root.to_string(), spec_json.to_string());
    let stored = run(py, || {
        let spec = PartitionSpec::from_json(&spec_json)?;
        Ok(block_on(Namespace::create(&root, &s, &spec, &props))?.1)
    })?;
    export_schema(py, &stored)
}

/// `partitions()` result: (pruning plan, leaves batch, row counts when asked for).
type Partitions<'py> = (Bound<'py, PyAny>, Bound<'py, PyAny>, Option<Vec<u64>>);

/// A manifest snapshot (one version of `__manifest`, indexed).
#[pyclass(module = "lance_partitioned._native", frozen)]
pub struct ManifestSnapshot {
    pub(crate) snap: Arc<Snapshot>,
}

impl ManifestSnapshot {
    /// This snapshot with its property columns (reloaded at the same version when light).
    fn full(&self, py: Python<'_>) -> PyResult<Arc<Snapshot>> {
        if !self.snap.light {
            return Ok(Arc::clone(&self.snap));
        }
        let (root, version) = (self.snap.root.clone(), self.snap.version);
        let snap = run(py, || block_on(Snapshot::load(&root, Some(version))))?;
        Ok(Arc::new(snap))
    }
}

#[pymethods]
impl ManifestSnapshot {
    /// Loads the manifest of `root` at `version` (latest when None).
    #[staticmethod]
    #[pyo3(signature = (root, version = None))]
    fn load(py: Python<'_>, root: &str, version: Option<u64>) -> PyResult<Self> {
        let root = root.to_string();
        let snap = run(py, || block_on(Snapshot::load_with(&root, version, true)))?;
        Ok(Self {
            snap: Arc::new(snap),
        })
    }

    /// A user's time travel to manifest `version` (`as_of`): refused on weak-mode namespaces,
    /// whose manifest records no leaf versions.
    #[staticmethod]
    fn load_as_of(py: Python<'_>, root: &str, version: u64) -> PyResult<Self> {
        let root = root.to_string();
        let snap = run(py, || block_on(Snapshot::load_as_of(&root, version)))?;
        Ok(Self {
            snap: Arc::new(snap),
        })
    }

    /// The latest manifest version (cheap: no manifest scan).
    fn latest_version(&self, py: Python<'_>) -> PyResult<u64> {
        let ds = Arc::clone(&self.snap.dataset);
        run(py, || {
            block_on(async move { Ok(ds.latest_version_id().await?) })
        })
    }

    #[getter]
    fn version(&self) -> u64 {
        self.snap.version
    }

    #[getter]
    fn root(&self) -> String {
        self.snap.root.clone()
    }

    #[getter]
    fn schema<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        export_schema(py, &self.snap.schema())
    }

    /// Root properties (schema, partition_spec_v<N>, ...).
    #[getter]
    fn properties(&self) -> HashMap<String, String> {
        self.snap.root_props.props.clone()
    }

    /// Spec JSON by spec id.
    fn specs(&self) -> PyResult<Vec<(i32, String)>> {
        self.snap
            .root_props
            .specs
            .iter()
            .map(|(k, v)| Ok((*k, v.to_json().map_err(crate::errors::to_py)?)))
            .collect()
    }

    #[getter]
    fn missing_columns(&self) -> Vec<String> {
        self.snap.missing_columns.clone()
    }

    #[getter]
    fn num_leaves(&self) -> usize {
        self.snap.leaves.len()
    }

    /// All manifest rows as a pyarrow RecordBatch.
    fn manifest_batch<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let full = self.full(py)?;
        export_batch(py, &full.batch)
    }

    /// Pruned leaves: (plan, leaves batch, row counts or None).
    #[pyo3(signature = (filter = None, with_rows = false))]
    fn partitions<'py>(
        &self,
        py: Python<'py>,
        filter: Option<String>,
        with_rows: bool,
    ) -> PyResult<Partitions<'py>> {
        let snap = Arc::clone(&self.snap);
        let (plan, batch, rows) = run(py, || {
            let schema = snap.schema();
            let f = filter
                .as_deref()
                .map(|f| scan::Filter::parse(f, &schema))
                .transpose()?;
            let pruned = scan::prune(&snap, f.as_ref())?;
            let batch = snap.leaves_batch(&pruned.leaves)?;
            let rows = if with_rows {
                Some(block_on(manifest::count_rows(&snap, &pruned.leaves))?)
            } else {
                None
            };
            Ok((pruned.specs, batch, rows))
        })?;
        Ok((plan_to_py(py, &plan)?, export_batch(py, &batch)?, rows))
    }

    /// Row counts of at most `sample` pruned leaves, evenly spaced over all kept leaves
    /// (explain's partition-size check: bounded cost on namespaces of any size).
    #[pyo3(signature = (filter, sample))]
    fn sampled_rows(
        &self,
        py: Python<'_>,
        filter: Option<String>,
        sample: usize,
    ) -> PyResult<(usize, Vec<u64>)> {
        let snap = Arc::clone(&self.snap);
        run(py, || {
            let schema = snap.schema();
            let f = filter
                .as_deref()
                .map(|f| scan::Filter::parse(f, &schema))
                .transpose()?;
            let kept = scan::prune(&snap, f.as_ref())?.leaves;
            let n = kept.len();
            let picked: Vec<usize> = if n <= sample {
                kept
            } else {
                (0..sample).map(|i| kept[i * n / sample]).collect()
            };
            Ok((n, block_on(manifest::count_rows(&snap, &picked))?))
        })
    }

    /// describe_namespace(path) -> properties
    fn describe_namespace(
        &self,
        py: Python<'_>,
        path: Vec<String>,
    ) -> PyResult<HashMap<String, String>> {
        let snap = self.full(py)?;
        run(py, || snap.describe_namespace(&path))
    }

    /// Starts a scan: returns a Scan iterator.
    #[pyo3(signature = (filter = None, columns = None, batch_size = None, only = None))]
    fn scan(
        &self,
        py: Python<'_>,
        filter: Option<String>,
        columns: Option<Vec<String>>,
        batch_size: Option<usize>,
        only: Option<Vec<String>>,
    ) -> PyResult<Scan> {
        let snap = Arc::clone(&self.snap);
        let opts = ScanOptions {
            filter,
            columns,
            batch_size,
            only: only.map(|o| o.into_iter().collect()),
        };
        let (iter, pruned) = run(py, || scan::scan(snap, &opts))?;
        Ok(Scan {
            inner: Mutex::new(Some(iter)),
            plan: pruned.specs,
            schema: None,
        })
    }
}

fn plan_to_py<'py>(py: Python<'py>, plan: &[scan::SpecPlan]) -> PyResult<Bound<'py, PyAny>> {
    let out = pyo3::types::PyList::empty(py);
    for p in plan {
        let d = PyDict::new(py);
        d.set_item("spec_id", p.spec_id)?;
        d.set_item("predicate", p.predicate.clone())?;
        d.set_item("total", p.total)?;
        d.set_item("kept", p.kept)?;
        out.append(d)?;
    }
    Ok(out.into_any())
}

/// A streaming scan; iterate to get pyarrow RecordBatches.
#[pyclass(module = "lance_partitioned._native")]
pub struct Scan {
    inner: Mutex<Option<ScanIter>>,
    plan: Vec<scan::SpecPlan>,
    schema: Option<()>,
}

#[pymethods]
impl Scan {
    #[getter]
    fn schema<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let _ = self.schema;
        let guard = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        match guard.as_ref() {
            Some(it) => export_schema(py, &it.schema()),
            None => Err(crate::errors::invalid_arg("the scan is exhausted")),
        }
    }

    /// The pruning plan.
    fn plan<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        plan_to_py(py, &self.plan)
    }

    /// Leaves opened so far.
    #[getter]
    fn leaves_opened(&self) -> usize {
        self.inner
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .map_or(0, |i| i.opened)
    }

    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let next: Option<RecordBatch> = run(py, || {
            let mut guard = self.inner.lock().unwrap_or_else(|e| e.into_inner());
            match guard.as_mut() {
                None => Ok(None),
                Some(it) => block_on(it.next_batch()),
            }
        })?;
        match next {
            Some(b) => Ok(Some(export_batch(py, &b)?)),
            None => Ok(None),
        }
    }
}
