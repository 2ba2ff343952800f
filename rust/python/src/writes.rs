//! Bindings of writes: a local write, and the distributed write (planned on the driver,
//! staged in tasks, committed once) with its partition-key hasher.

use std::collections::HashMap;
use std::sync::Arc;

use crate::runtime::block_on;
use lance_partitioned_core::ns::infra::storage::Storage;
use lance_partitioned_core::ns::ops::{Mode, StagedMessage, WriteOptions};
use lance_partitioned_core::ns::write::key_hasher;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple, PyType};

use crate::args::{ArrowArray, ArrowBatch, WriteMode};
use crate::errors::{run, to_py};
use crate::ffi::BatchInput;
use crate::planned::Planned;
use crate::results::WriteResult;

/// How much a write may buffer and create (every default lives in the Python package;
/// `route_threads: None` asks the router to decide per batch, `route::auto_threads`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    pub max_rows_per_file: usize,
    pub concurrency: usize,
    pub route_threads: Option<usize>,
    pub max_buffer_bytes: usize,
    pub max_new_partitions: Option<usize>,
}

impl Limits {
    pub(crate) fn options(self, mode: Mode, strong: Option<bool>) -> WriteOptions {
        WriteOptions {
            mode,
            strong,
            max_rows_per_file: self.max_rows_per_file.max(1),
            concurrency: self.concurrency.max(1),
            route_threads: self.route_threads.map(|t| t.max(1)),
            max_buffer_bytes: self.max_buffer_bytes.max(1),
            max_new_partitions: self.max_new_partitions.unwrap_or(usize::MAX),
            ..Default::default()
        }
    }
}

/// One write staged in many places and committed once: what every part plans against (the
/// manifest version, the commit mode, the nonce new partitions' ids derive from). Picklable.
#[pyclass(module = "lance_partitioned._native", frozen)]
pub struct DistributedWrite {
    /// What every part plans against.
    plan: Planned,
    /// Append or overwrite.
    mode: Mode,
}

#[pymethods]
impl DistributedWrite {
    /// Plans a new distributed write on the latest manifest version.
    #[classmethod]
    #[pyo3(signature = (root, mode, strong, storage_options = None))]
    fn plan(
        _cls: &Bound<'_, PyType>,
        py: Python<'_>,
        root: &str,
        mode: WriteMode,
        strong: Option<bool>,
        storage_options: Option<HashMap<String, String>>,
    ) -> PyResult<Self> {
        Ok(Self {
            plan: Planned::plan(py, root, strong, storage_options)?,
            mode: mode.0,
        })
    }

    /// The write the tasks of one stream micro-batch run share under `key`: planned and
    /// published by the first task to ask, read by the others.
    #[classmethod]
    #[pyo3(signature = (root, mode, key, strong, storage_options = None))]
    fn shared(
        _cls: &Bound<'_, PyType>,
        py: Python<'_>,
        root: &str,
        mode: WriteMode,
        key: &str,
        strong: Option<bool>,
        storage_options: Option<HashMap<String, String>>,
    ) -> PyResult<Self> {
        Ok(Self {
            plan: Planned::shared(py, root, key, strong, storage_options)?,
            mode: mode.0,
        })
    }

    /// Removes the shared plan `key` (after its commit; best effort).
    fn remove_shared_plan(&self, py: Python<'_>, key: &str) -> PyResult<()> {
        let ns = self.plan.namespace();
        run(py, || {
            block_on(async {
                ns.remove_shared_plan(key).await;
                Ok(())
            })
        })
    }

    /// Rebuilds a planned write (what unpickling calls).
    #[new]
    #[pyo3(signature = (root, mode, manifest_version, strong, nonce, storage_options = None))]
    fn new(
        root: &str,
        mode: WriteMode,
        manifest_version: u64,
        strong: bool,
        nonce: String,
        storage_options: Option<HashMap<String, String>>,
    ) -> PyResult<Self> {
        let what = "distributed write";
        Ok(Self {
            plan: Planned::restore(root, manifest_version, strong, nonce, storage_options, what)?,
            mode: mode.0,
        })
    }

    /// Namespace root.
    #[getter]
    fn root(&self) -> String {
        self.plan.root()
    }

    /// The storage options (with their secrets: they travel to the tasks; never printed).
    #[getter]
    fn storage_options(&self) -> HashMap<String, String> {
        self.plan.options()
    }

    /// The manifest version every part is written against.
    #[getter]
    fn manifest_version(&self) -> u64 {
        self.plan.manifest_version
    }

    /// Strong (true) or weak commits.
    #[getter]
    fn strong(&self) -> bool {
        self.plan.strong
    }

    /// The write's random id.
    #[getter]
    fn nonce(&self) -> String {
        self.plan.nonce.clone()
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
        let p = &w.plan;
        let args = (
            p.root(),
            w.mode.as_str(),
            p.manifest_version,
            p.strong,
            p.nonce.clone(),
            p.options(),
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
            route_threads: Some(1),
            max_buffer_bytes,
            max_new_partitions,
        };
        let opts = limits.options(self.mode, Some(self.plan.strong));
        let (plan, nonce) = (self.plan.write_plan(), &self.plan.nonce);
        let slot = data.error_slot();
        let bytes = BatchInput::finish(
            &slot,
            run(py, || {
                block_on(self.plan.namespace().stage(plan, nonce, data, &opts))?.to_bytes()
            }),
        )?;
        Ok(PyBytes::new(py, &bytes))
    }

    /// Commits the staged messages once (idempotent per write id: `write_id`, default the
    /// nonce).
    #[pyo3(signature = (messages, *, concurrency, write_id = None))]
    fn commit(
        &self,
        py: Python<'_>,
        messages: Vec<Vec<u8>>,
        concurrency: usize,
        write_id: Option<String>,
    ) -> PyResult<WriteResult> {
        let s = run(py, || {
            let staged = messages
                .iter()
                .map(|m| StagedMessage::from_bytes(m))
                .collect::<Result<Vec<_>, _>>()?;
            let opts = WriteOptions {
                concurrency: concurrency.max(1),
                write_id,
                ..Default::default()
            };
            block_on(self.plan.namespace().commit_staged(&staged, &opts))
        })?;
        Ok(WriteResult::from(&s))
    }

    /// The partition-key hasher of this write's spec.
    fn key_hasher(&self, py: Python<'_>) -> PyResult<KeyHasher> {
        self.plan.key_hasher(py)
    }

    fn __repr__(&self) -> String {
        let mode = format!("mode={:?}, ", self.mode.as_str());
        self.plan.repr("DistributedWrite", &mode)
    }
}

/// `, storage_options={...}` with secret values redacted (empty without options).
pub(crate) fn redacted(storage: &Storage) -> String {
    let options = storage.redacted_options();
    if options.is_empty() {
        String::new()
    } else {
        format!(", storage_options={options:?}")
    }
}

/// Partition keys of rows for a distributed write's repartitioning.
#[pyclass(module = "lance_partitioned._native", frozen)]
pub struct KeyHasher {
    inner: key_hasher::KeyHasher,
}

impl From<key_hasher::KeyHasher> for KeyHasher {
    fn from(inner: key_hasher::KeyHasher) -> Self {
        Self { inner }
    }
}

#[pymethods]
impl KeyHasher {
    #[new]
    #[pyo3(signature = (root, manifest_version, storage_options = None))]
    fn new(
        py: Python<'_>,
        root: &str,
        manifest_version: u64,
        storage_options: Option<HashMap<String, String>>,
    ) -> PyResult<Self> {
        let storage = Storage::new(root, storage_options.unwrap_or_default()).map_err(to_py)?;
        let inner = run(py, || {
            block_on(key_hasher::KeyHasher::new(&storage, manifest_version))
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
