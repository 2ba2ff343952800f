//! The distributed merge binding: planned on the driver, decided and staged in tasks (each
//! with all source rows of its keys), committed once.

use std::collections::HashMap;

use lance_partitioned_core::ns::infra::ids::new_nonce;
use lance_partitioned_core::ns::infra::storage::Storage;
use lance_partitioned_core::ns::namespace::Namespace;
use lance_partitioned_core::ns::ops::{MergeMessage, MergeSummary, WriteOptions, WritePlan};
use lance_partitioned_core::ns::write::key_hasher;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple, PyType};

use crate::errors::{invalid_arg, run, to_py};
use crate::ffi::BatchInput;
use crate::merge::{self, MatchedArg, MergeResult};
use crate::runtime::block_on;
use crate::writes::{redacted, KeyHasher};

/// One merge decided in many places and committed once: the manifest version every task
/// reads, the commit mode, the nonce new partitions' ids derive from. Picklable.
#[pyclass(module = "lance_partitioned._native", frozen)]
pub struct DistributedMerge {
    /// Where the namespace lives (root and storage options, which travel with the pickle).
    storage: Storage,
    /// The manifest version every task reads.
    #[pyo3(get)]
    manifest_version: u64,
    /// Strong (true) or weak commits.
    #[pyo3(get)]
    strong: bool,
    /// The merge's random id.
    #[pyo3(get)]
    nonce: String,
}

#[pymethods]
impl DistributedMerge {
    /// Plans a new distributed merge on the latest manifest version.
    #[classmethod]
    #[pyo3(signature = (root, strong, storage_options = None))]
    fn plan(
        _cls: &Bound<'_, PyType>,
        py: Python<'_>,
        root: &str,
        strong: Option<bool>,
        storage_options: Option<HashMap<String, String>>,
    ) -> PyResult<Self> {
        let storage = Storage::new(root, storage_options.unwrap_or_default()).map_err(to_py)?;
        let (p, nonce) = run(py, || {
            Ok((
                block_on(Namespace::open(storage.clone()).plan_distributed(strong))?,
                new_nonce()?,
            ))
        })?;
        Ok(Self {
            storage,
            manifest_version: p.manifest_version,
            strong: p.strong,
            nonce,
        })
    }

    /// Rebuilds a planned merge (what unpickling calls).
    #[new]
    #[pyo3(signature = (root, manifest_version, strong, nonce, storage_options = None))]
    fn new(
        root: &str,
        manifest_version: u64,
        strong: bool,
        nonce: String,
        storage_options: Option<HashMap<String, String>>,
    ) -> PyResult<Self> {
        if nonce.len() < 16 {
            return Err(invalid_arg("a distributed merge needs its planned nonce"));
        }
        Ok(Self {
            storage: Storage::new(root, storage_options.unwrap_or_default()).map_err(to_py)?,
            manifest_version,
            strong,
            nonce,
        })
    }

    /// Namespace root.
    #[getter]
    fn root(&self) -> String {
        self.storage.root().to_string()
    }

    /// The storage options (with their secrets: they travel to the tasks; never printed).
    #[getter]
    fn storage_options(&self) -> HashMap<String, String> {
        self.storage.options().clone()
    }

    fn __reduce__<'py>(
        slf: &Bound<'py, Self>,
    ) -> PyResult<(Bound<'py, PyType>, Bound<'py, PyTuple>)> {
        let m = slf.get();
        let args = (
            m.storage.root(),
            m.manifest_version,
            m.strong,
            m.nonce.clone(),
            m.storage.options().clone(),
        );
        Ok((slf.get_type(), args.into_pyobject(slf.py())?))
    }

    /// Decides this task's share (`data`: every source row of its keys) and stages its new
    /// rows; returns the message `commit` needs.
    #[pyo3(signature = (data, on, matched, not_matched, *, keep_last_by, concurrency, max_buffer_bytes))]
    #[allow(clippy::too_many_arguments)]
    fn stage<'py>(
        &self,
        py: Python<'py>,
        data: BatchInput,
        on: Vec<String>,
        matched: Vec<MatchedArg>,
        not_matched: Vec<Option<String>>,
        keep_last_by: Option<String>,
        concurrency: usize,
        max_buffer_bytes: usize,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let mut clauses = merge::clauses(on, matched, not_matched, Vec::new())?;
        clauses.keep_last_by = keep_last_by;
        let opts = merge::options(Some(self.strong), concurrency, 1, max_buffer_bytes);
        let plan = WritePlan {
            manifest_version: self.manifest_version,
            strong: self.strong,
        };
        let slot = data.error_slot();
        let bytes = BatchInput::finish(
            &slot,
            run(py, || {
                let source = merge::source(data)?;
                let ns = Namespace::open(self.storage.clone());
                block_on(ns.stage_merge(plan, &self.nonce, &source, &clauses, &opts))?.to_bytes()
            }),
        )?;
        Ok(PyBytes::new(py, &bytes))
    }

    /// Commits the staged messages once; `attempt` is the run this plan is (the summary's
    /// `attempts`). No messages (no source rows) commit nothing.
    #[pyo3(signature = (messages, *, concurrency, max_attempts, attempt = 1))]
    fn commit(
        &self,
        py: Python<'_>,
        messages: Vec<Vec<u8>>,
        concurrency: usize,
        max_attempts: u32,
        attempt: u32,
    ) -> PyResult<MergeResult> {
        let mut s = if messages.is_empty() {
            MergeSummary {
                manifest_version: self.manifest_version,
                ..Default::default()
            }
        } else {
            run(py, || {
                let staged = messages
                    .iter()
                    .map(|m| MergeMessage::from_bytes(m))
                    .collect::<Result<Vec<_>, _>>()?;
                let opts = WriteOptions {
                    concurrency: concurrency.max(1),
                    max_attempts: max_attempts.max(1),
                    ..Default::default()
                };
                block_on(Namespace::open(self.storage.clone()).commit_merge(&staged, &opts))
            })?
        };
        s.attempts = attempt.max(1);
        Ok(MergeResult::from(&s))
    }

    /// The partition-key hasher of the planned version's spec.
    fn key_hasher(&self, py: Python<'_>) -> PyResult<KeyHasher> {
        let (storage, version) = (&self.storage, self.manifest_version);
        let inner = run(py, || {
            block_on(key_hasher::KeyHasher::new(storage, version))
        })?;
        Ok(KeyHasher::from(inner))
    }

    fn __repr__(&self) -> String {
        format!(
            "DistributedMerge({:?}, manifest_version={}, strong={}{})",
            self.storage.root(),
            self.manifest_version,
            if self.strong { "True" } else { "False" },
            redacted(&self.storage)
        )
    }
}
