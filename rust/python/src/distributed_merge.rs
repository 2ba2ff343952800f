//! The distributed merge binding: planned on the driver, decided and staged in tasks (each
//! with all source rows of its keys), committed once.

use std::collections::HashMap;

use lance_partitioned_core::ns::ops::{MergeMessage, WriteOptions};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple, PyType};

use crate::errors::run;
use crate::ffi::BatchInput;
use crate::merge::{self, ClausesArg, MergeResult};
use crate::planned::Planned;
use crate::runtime::block_on;
use crate::writes::KeyHasher;

/// One merge decided in many places and committed once: the manifest version every task
/// reads, the commit mode, the nonce new partitions' ids derive from. Picklable.
#[pyclass(module = "lance_partitioned._native", frozen)]
pub struct DistributedMerge {
    /// What every task plans against.
    plan: Planned,
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
        let plan = Planned::plan(py, root, strong, storage_options)?;
        Ok(Self { plan })
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
        let what = "distributed merge";
        let plan = Planned::restore(root, manifest_version, strong, nonce, storage_options, what)?;
        Ok(Self { plan })
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

    /// The manifest version every task reads.
    #[getter]
    fn manifest_version(&self) -> u64 {
        self.plan.manifest_version
    }

    /// Strong (true) or weak commits.
    #[getter]
    fn strong(&self) -> bool {
        self.plan.strong
    }

    /// The merge's random id.
    #[getter]
    fn nonce(&self) -> String {
        self.plan.nonce.clone()
    }

    fn __reduce__<'py>(
        slf: &Bound<'py, Self>,
    ) -> PyResult<(Bound<'py, PyType>, Bound<'py, PyTuple>)> {
        let p = &slf.get().plan;
        let args = (
            p.root(),
            p.manifest_version,
            p.strong,
            p.nonce.clone(),
            p.options(),
        );
        Ok((slf.get_type(), args.into_pyobject(slf.py())?))
    }

    /// Decides this task's share (`data`: every source row of its keys) and stages its new
    /// rows; returns the message `commit` needs. The not-matched-by-source clauses are
    /// `commit`'s: given here, the task reports the target rows it matched.
    #[pyo3(signature = (data, clauses, *, concurrency, max_buffer_bytes))]
    fn stage<'py>(
        &self,
        py: Python<'py>,
        data: BatchInput,
        clauses: ClausesArg,
        concurrency: usize,
        max_buffer_bytes: usize,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let clauses = clauses.into_clauses()?;
        let opts = merge::options(
            Some(self.plan.strong),
            concurrency,
            1,
            max_buffer_bytes,
            None,
        );
        let (plan, nonce) = (self.plan.write_plan(), &self.plan.nonce);
        let bytes = merge::with_source(py, data, |source| {
            let ns = self.plan.namespace();
            block_on(ns.stage_merge(plan, nonce, source, &clauses, &opts))?.to_bytes()
        })?;
        Ok(PyBytes::new(py, &bytes))
    }

    /// Commits the staged messages once and decides the merge's not-matched-by-source
    /// clauses (of `clauses`, as `stage` got them) over all of them; `attempt` is the run this
    /// plan is (the summary's `attempts`). No messages (no source rows) and no such clause
    /// commit nothing. Under `write_id`, a merge the manifest already records commits
    /// nothing (`already_committed`), whatever the messages.
    #[pyo3(signature = (messages, clauses, *, concurrency, max_attempts, attempt = 1, write_id = None))]
    #[allow(clippy::too_many_arguments)]
    fn commit(
        &self,
        py: Python<'_>,
        messages: Vec<Vec<u8>>,
        clauses: ClausesArg,
        concurrency: usize,
        max_attempts: u32,
        attempt: u32,
        write_id: Option<String>,
    ) -> PyResult<MergeResult> {
        let clauses = clauses.into_clauses()?;
        let mut s = run(py, || {
            let staged = messages
                .iter()
                .map(|m| MergeMessage::from_bytes(m))
                .collect::<Result<Vec<_>, _>>()?;
            let opts = WriteOptions {
                concurrency: concurrency.max(1),
                max_attempts: max_attempts.max(1),
                write_id,
                ..Default::default()
            };
            let id = (self.plan.write_plan(), self.plan.nonce.as_str());
            block_on(
                self.plan
                    .namespace()
                    .commit_merge(id, &staged, &clauses, &opts),
            )
        })?;
        s.attempts = attempt.max(1);
        Ok(MergeResult::from(&s))
    }

    /// The partition-key hasher of the planned version's spec.
    fn key_hasher(&self, py: Python<'_>) -> PyResult<KeyHasher> {
        self.plan.key_hasher(py)
    }

    fn __repr__(&self) -> String {
        self.plan.repr("DistributedMerge", "")
    }
}
