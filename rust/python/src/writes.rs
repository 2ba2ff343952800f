//! Bindings of writes: a local write, and the distributed write (planned on the driver,
//! staged in tasks, committed once) with its partition-key hasher.

use std::sync::Arc;

use crate::runtime::block_on;
use lance_partitioned_core::ns::namespace::Namespace;
use lance_partitioned_core::ns::write::distributed::{self, WritePlan};
use lance_partitioned_core::ns::write::key_hasher;
use lance_partitioned_core::ns::write::{Mode, StagedMessage, WriteOptions};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple, PyType};

use crate::args::{ArrowArray, ArrowBatch, WriteMode};
use crate::errors::{invalid_arg, run};
use crate::ffi::BatchInput;
use crate::results::WriteResult;

/// How much a write may buffer and create (every default lives in the Python package).
#[derive(Debug, Clone, Copy)]
struct Limits {
    max_rows_per_file: usize,
    concurrency: usize,
    route_threads: usize,
    max_buffer_bytes: usize,
    max_new_partitions: Option<usize>,
}

impl Limits {
    fn options(self, mode: Mode, strong: Option<bool>) -> WriteOptions {
        WriteOptions {
            mode,
            strong,
            max_rows_per_file: self.max_rows_per_file.max(1),
            concurrency: self.concurrency.max(1),
            route_threads: self.route_threads.max(1),
            max_buffer_bytes: self.max_buffer_bytes.max(1),
            max_new_partitions: self.max_new_partitions.unwrap_or(usize::MAX),
            ..Default::default()
        }
    }
}

/// write_data(root, data, *, mode, strong, max_rows_per_file, concurrency, route_threads,
/// max_buffer_bytes, max_new_partitions) -> WriteResult
#[pyfunction]
#[pyo3(signature = (root, data, *, mode, strong, max_rows_per_file, concurrency, route_threads, max_buffer_bytes, max_new_partitions))]
#[allow(clippy::too_many_arguments)]
pub fn write_data(
    py: Python<'_>,
    root: &str,
    data: BatchInput,
    mode: WriteMode,
    strong: Option<bool>,
    max_rows_per_file: usize,
    concurrency: usize,
    route_threads: usize,
    max_buffer_bytes: usize,
    max_new_partitions: Option<usize>,
) -> PyResult<WriteResult> {
    let limits = Limits {
        max_rows_per_file,
        concurrency,
        route_threads,
        max_buffer_bytes,
        max_new_partitions,
    };
    let opts = limits.options(mode.0, strong);
    let slot = data.error_slot();
    let s = BatchInput::finish(
        &slot,
        run(py, || block_on(Namespace::open(root).write(data, &opts))),
    )?;
    Ok(WriteResult::from(&s))
}

/// One write staged in many places and committed once: what every part plans against (the
/// manifest version, the commit mode, the nonce new partitions' ids derive from). Picklable.
#[pyclass(module = "lance_partitioned._native", frozen)]
pub struct DistributedWrite {
    /// Namespace root.
    #[pyo3(get)]
    root: String,
    /// Append or overwrite.
    mode: Mode,
    /// The manifest version every part is written against.
    #[pyo3(get)]
    manifest_version: u64,
    /// Strong (true) or weak commits.
    #[pyo3(get)]
    strong: bool,
    /// The write's random id.
    #[pyo3(get)]
    nonce: String,
}

#[pymethods]
impl DistributedWrite {
    /// Plans a new distributed write on the latest manifest version.
    #[classmethod]
    #[pyo3(signature = (root, mode, strong))]
    fn plan(
        _cls: &Bound<'_, PyType>,
        py: Python<'_>,
        root: &str,
        mode: WriteMode,
        strong: Option<bool>,
    ) -> PyResult<Self> {
        let (p, nonce) = run(py, || {
            Ok((
                block_on(Namespace::open(root).plan_distributed(strong))?,
                distributed::new_nonce()?,
            ))
        })?;
        Ok(Self {
            root: root.to_string(),
            mode: mode.0,
            manifest_version: p.manifest_version,
            strong: p.strong,
            nonce,
        })
    }

    /// Rebuilds a planned write (what unpickling calls).
    #[new]
    fn new(
        root: String,
        mode: WriteMode,
        manifest_version: u64,
        strong: bool,
        nonce: String,
    ) -> PyResult<Self> {
        if nonce.len() < 16 {
            return Err(invalid_arg("a distributed write needs its planned nonce"));
        }
        Ok(Self {
            root,
            mode: mode.0,
            manifest_version,
            strong,
            nonce,
        })
    }

    /// `append`, `overwrite` or `overwrite_all`.
    #[getter]
    fn mode(&self) -> &'static str {
        self.mode.as_str()
    }

    fn __reduce__<'py>(
        slf: &Bound<'py, Self>,
    ) -> PyResult<(Bound<'py, PyType>, Bound<'py, PyTuple>)> {
        let w = slf.get();
        let args = (
            w.root.clone(),
            w.mode.as_str(),
            w.manifest_version,
            w.strong,
            w.nonce.clone(),
        );
        Ok((slf.get_type(), args.into_pyobject(slf.py())?))
    }

    /// Writes `data` as uncommitted fragments; returns the message `commit` needs.
    #[pyo3(signature = (data, *, max_rows_per_file, concurrency, max_buffer_bytes, max_new_partitions))]
    fn stage<'py>(
        &self,
        py: Python<'py>,
        data: BatchInput,
        max_rows_per_file: usize,
        concurrency: usize,
        max_buffer_bytes: usize,
        max_new_partitions: Option<usize>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let limits = Limits {
            max_rows_per_file,
            concurrency,
            route_threads: 1,
            max_buffer_bytes,
            max_new_partitions,
        };
        let opts = limits.options(self.mode, Some(self.strong));
        let plan = WritePlan {
            manifest_version: self.manifest_version,
            strong: self.strong,
        };
        let slot = data.error_slot();
        let bytes = BatchInput::finish(
            &slot,
            run(py, || {
                let ns = Namespace::open(&self.root);
                block_on(ns.stage(plan, &self.nonce, data, &opts))?.to_bytes()
            }),
        )?;
        Ok(PyBytes::new(py, &bytes))
    }

    /// Commits the staged messages once (idempotent per write).
    #[pyo3(signature = (messages, *, concurrency))]
    fn commit(
        &self,
        py: Python<'_>,
        messages: Vec<Vec<u8>>,
        concurrency: usize,
    ) -> PyResult<WriteResult> {
        let s = run(py, || {
            let staged = messages
                .iter()
                .map(|m| StagedMessage::from_bytes(m))
                .collect::<Result<Vec<_>, _>>()?;
            let opts = WriteOptions {
                concurrency: concurrency.max(1),
                ..Default::default()
            };
            block_on(Namespace::open(&self.root).commit_staged(&staged, &opts))
        })?;
        Ok(WriteResult::from(&s))
    }

    /// The partition-key hasher of this write's spec.
    fn key_hasher(&self, py: Python<'_>) -> PyResult<KeyHasher> {
        let (root, version) = (self.root.clone(), self.manifest_version);
        let inner = run(py, || block_on(key_hasher::KeyHasher::new(&root, version)))?;
        Ok(KeyHasher { inner })
    }

    fn __repr__(&self) -> String {
        format!(
            "DistributedWrite({:?}, mode={:?}, manifest_version={}, strong={})",
            self.root,
            self.mode.as_str(),
            self.manifest_version,
            if self.strong { "True" } else { "False" }
        )
    }
}

/// Partition keys of rows for a distributed write's repartitioning.
#[pyclass(module = "lance_partitioned._native", frozen)]
pub struct KeyHasher {
    inner: key_hasher::KeyHasher,
}

#[pymethods]
impl KeyHasher {
    #[new]
    fn new(py: Python<'_>, root: &str, manifest_version: u64) -> PyResult<Self> {
        let root = root.to_string();
        let inner = run(py, || {
            block_on(key_hasher::KeyHasher::new(&root, manifest_version))
        })?;
        Ok(Self { inner })
    }

    /// The columns partition values are computed from.
    #[getter]
    fn source_columns(&self) -> Vec<String> {
        self.inner.source_columns().to_vec()
    }

    /// hash(batch) -> int32 array: one key per row.
    fn hash(&self, py: Python<'_>, batch: ArrowBatch) -> PyResult<ArrowArray> {
        run(py, || {
            Ok(ArrowArray(Arc::new(self.inner.hash(&batch.0)?)
                as lance_partitioned_core::arrow::array::ArrayRef))
        })
    }
}
