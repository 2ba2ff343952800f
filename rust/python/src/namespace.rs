//! The namespace handle: `_native.Namespace(root, storage_options)`, the one object every
//! namespace operation of the Python API goes through (create, snapshots, writes, schema and
//! spec evolution, deletes, cleanup, repair). Its storage options reach every request; its
//! `repr` never shows their secret values.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use lance_partitioned_core::ns::infra::storage::Storage;
use lance_partitioned_core::ns::manifest::IndexKind;
use lance_partitioned_core::ns::manifest::Snapshot;
use lance_partitioned_core::ns::namespace::Namespace as CoreNamespace;
use lance_partitioned_core::ns::ops::{
    CreateIndexOptions, ExpireOptions, OptimizeOptions, DEFAULT_MAX_ATTEMPTS,
};
use lance_partitioned_core::spec::PartitionSpec;
use pyo3::prelude::*;
use pyo3::types::PyType;

use crate::args::{ArrowSchema, WriteMode};
use crate::errors::{invalid_arg, run, to_py};
use crate::ffi::BatchInput;
use crate::indexes::IndexResult;
use crate::merge::{self, ClausesArg, MergePlan, MergeResult};
use crate::results::{CleanupResult, DeleteResult, ExpireResult, OptimizeResult, WriteResult};
use crate::runtime::block_on;
use crate::snapshot::ManifestSnapshot;
use crate::writes::{redacted, Limits};

/// A partitioned namespace: its root URI and storage options.
#[pyclass(module = "lance_partitioned._native", frozen)]
pub struct Namespace {
    inner: Arc<CoreNamespace>,
}

impl Namespace {
    fn storage(&self) -> &Storage {
        self.inner.storage()
    }
}

#[pymethods]
impl Namespace {
    /// The namespace at `root` (nothing is read until it is used).
    #[new]
    #[pyo3(signature = (root, storage_options = None))]
    fn new(root: &str, storage_options: Option<HashMap<String, String>>) -> PyResult<Self> {
        let storage = Storage::new(root, storage_options.unwrap_or_default()).map_err(to_py)?;
        Ok(Self {
            inner: Arc::new(CoreNamespace::open(storage)),
        })
    }

    /// Creates a namespace; returns it and its schema as stored (with field ids).
    #[classmethod]
    #[pyo3(signature = (root, schema, spec_json, properties, storage_options = None))]
    fn create(
        _cls: &Bound<'_, PyType>,
        py: Python<'_>,
        root: &str,
        schema: ArrowSchema,
        spec_json: &str,
        properties: HashMap<String, String>,
        storage_options: Option<HashMap<String, String>>,
    ) -> PyResult<(Self, ArrowSchema)> {
        let storage = Storage::new(root, storage_options.unwrap_or_default()).map_err(to_py)?;
        run(py, || {
            let spec = PartitionSpec::from_json(spec_json)?;
            let (ns, stored) = block_on(CoreNamespace::create(
                storage,
                &schema.0,
                &spec,
                &properties,
            ))?;
            Ok((
                Self {
                    inner: Arc::new(ns),
                },
                ArrowSchema(stored),
            ))
        })
    }

    /// The root URI.
    #[getter]
    fn root(&self) -> String {
        self.storage().root().to_string()
    }

    /// The storage options (with their secrets: for handing the namespace to other
    /// processes; never printed).
    #[getter]
    fn storage_options(&self) -> HashMap<String, String> {
        self.storage().options().clone()
    }

    /// The manifest at `version`, or the latest (the handle's snapshot, refreshed).
    #[pyo3(signature = (version = None))]
    fn snapshot(&self, py: Python<'_>, version: Option<u64>) -> PyResult<ManifestSnapshot> {
        let snap = run(py, || block_on(self.inner.snapshot(version)))?;
        Ok(ManifestSnapshot { snap })
    }

    /// The handle's snapshot as it is (loaded on first use; see `refresh`).
    fn current(&self, py: Python<'_>) -> PyResult<ManifestSnapshot> {
        let snap = run(py, || block_on(self.inner.current()))?;
        Ok(ManifestSnapshot { snap })
    }

    /// Reloads the handle's snapshot if the manifest moved; whether it did.
    fn refresh(&self, py: Python<'_>) -> PyResult<bool> {
        run(py, || block_on(self.inner.refresh()))
    }

    /// A user's time travel to manifest `version` (`as_of`): refused on weak-mode namespaces,
    /// whose manifest records no leaf versions.
    fn snapshot_as_of(&self, py: Python<'_>, version: u64) -> PyResult<ManifestSnapshot> {
        let snap = run(py, || {
            block_on(Snapshot::load_as_of(self.storage(), version))
        })?;
        Ok(ManifestSnapshot {
            snap: Arc::new(snap),
        })
    }

    /// Writes `data` (an Arrow stream or an iterator of record batches); returns what it did.
    #[pyo3(signature = (data, *, mode, strong, max_rows_per_file, concurrency, route_threads, max_buffer_bytes, max_new_partitions))]
    #[allow(clippy::too_many_arguments)]
    fn write(
        &self,
        py: Python<'_>,
        data: BatchInput,
        mode: WriteMode,
        strong: Option<bool>,
        max_rows_per_file: usize,
        concurrency: usize,
        route_threads: Option<usize>,
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
        let s = BatchInput::finish(&slot, run(py, || block_on(self.inner.write(data, &opts))))?;
        Ok(WriteResult::from(&s))
    }

    /// Merges `data` by the key columns `on` as the clauses say (`merge_insert`); returns
    /// what it did.
    #[pyo3(signature = (data, clauses, *, strong, concurrency, max_attempts, max_buffer_bytes, write_id = None))]
    #[allow(clippy::too_many_arguments)]
    fn merge_insert(
        &self,
        py: Python<'_>,
        data: BatchInput,
        clauses: ClausesArg,
        strong: Option<bool>,
        concurrency: usize,
        max_attempts: u32,
        max_buffer_bytes: usize,
        write_id: Option<String>,
    ) -> PyResult<MergeResult> {
        let clauses = clauses.into_clauses()?;
        let opts = merge::options(
            strong,
            concurrency,
            max_attempts,
            max_buffer_bytes,
            write_id,
        );
        let s = merge::with_source(py, data, |source| {
            block_on(self.inner.merge_insert(source, &clauses, &opts))
        })?;
        Ok(MergeResult::from(&s))
    }

    /// What merging `data` by `on` as the clauses say would read, and why; reads no
    /// partition.
    fn explain_merge(
        &self,
        py: Python<'_>,
        data: BatchInput,
        clauses: ClausesArg,
    ) -> PyResult<MergePlan> {
        let clauses = clauses.into_clauses()?;
        let e = merge::with_source(py, data, |source| {
            block_on(self.inner.explain_merge(source, &clauses))
        })?;
        Ok(MergePlan::from(&e))
    }

    /// Sets `set`'s columns (SQL values over the row's columns) on the rows matching `filter`.
    #[pyo3(signature = (set, filter, *, strong, concurrency, max_attempts, max_buffer_bytes, write_id = None))]
    #[allow(clippy::too_many_arguments)]
    fn update(
        &self,
        py: Python<'_>,
        set: Vec<(String, String)>,
        filter: Option<String>,
        strong: Option<bool>,
        concurrency: usize,
        max_attempts: u32,
        max_buffer_bytes: usize,
        write_id: Option<String>,
    ) -> PyResult<MergeResult> {
        let opts = merge::options(
            strong,
            concurrency,
            max_attempts,
            max_buffer_bytes,
            write_id,
        );
        let s = run(py, || {
            block_on(self.inner.update(&set, filter.as_deref(), &opts))
        })?;
        Ok(MergeResult::from(&s))
    }

    /// Changes the schema from `base` (the schema the caller read) to `schema` (fields
    /// matched by field id), applied to the latest schema; returns it as stored.
    fn update_schema(
        &self,
        py: Python<'_>,
        base: ArrowSchema,
        schema: ArrowSchema,
    ) -> PyResult<ArrowSchema> {
        run(py, || {
            Ok(ArrowSchema(block_on(
                self.inner.update_schema(&base.0, &schema.0),
            )?))
        })
    }

    /// Adds a spec version (JSON) and makes it current; returns its id.
    fn evolve(&self, py: Python<'_>, spec_json: &str) -> PyResult<i32> {
        run(py, || {
            let spec = PartitionSpec::from_json(spec_json)?;
            block_on(self.inner.evolve(&spec))
        })
    }

    /// Names manifest version `version` (the latest when `None`) `name`; returns the version.
    #[pyo3(signature = (name, version = None))]
    fn create_tag(&self, py: Python<'_>, name: &str, version: Option<u64>) -> PyResult<u64> {
        run(py, || block_on(self.inner.create_tag(name, version)))
    }

    /// Removes the tag `name`.
    fn delete_tag(&self, py: Python<'_>, name: &str) -> PyResult<()> {
        run(py, || block_on(self.inner.delete_tag(name)))
    }

    /// Every tag and the manifest version it names, by version.
    fn tags(&self, py: Python<'_>) -> PyResult<Vec<(String, u64)>> {
        run(py, || block_on(self.inner.tags()))
    }

    /// The manifest version the tag `name` names.
    fn tag_version(&self, py: Python<'_>, name: &str) -> PyResult<u64> {
        run(py, || block_on(self.inner.tag_version(name)))
    }

    /// Restores manifest columns other tools dropped; returns their names.
    fn repair(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        run(py, || block_on(self.inner.repair()))
    }

    /// Deletes the rows matching `filter`.
    #[pyo3(signature = (filter, strong = None))]
    fn delete(&self, py: Python<'_>, filter: &str, strong: Option<bool>) -> PyResult<DeleteResult> {
        let s = run(py, || {
            block_on(self.inner.delete(filter, strong, DEFAULT_MAX_ATTEMPTS))
        })?;
        Ok(DeleteResult::from(&s))
    }

    /// Removes what failed writes left behind (files older than `older_than_seconds`).
    #[pyo3(signature = (older_than_seconds, dry_run = false, retention_check = true))]
    fn cleanup(
        &self,
        py: Python<'_>,
        older_than_seconds: f64,
        dry_run: bool,
        retention_check: bool,
    ) -> PyResult<CleanupResult> {
        if !(older_than_seconds >= 0.0 && older_than_seconds.is_finite()) {
            return Err(invalid_arg(
                "older_than must be a non-negative, finite duration",
            ));
        }
        let older_than = Duration::from_secs_f64(older_than_seconds);
        let s = run(py, || {
            block_on(self.inner.cleanup(older_than, dry_run, retention_check))
        })?;
        Ok(CleanupResult::from(s))
    }

    /// Compacts the small files of the partitions `filter` selects, in one commit.
    #[pyo3(signature = (filter, *, target_rows_per_file, min_files, dry_run, strong, concurrency))]
    #[allow(clippy::too_many_arguments)]
    fn optimize(
        &self,
        py: Python<'_>,
        filter: Option<String>,
        target_rows_per_file: Option<usize>,
        min_files: usize,
        dry_run: bool,
        strong: Option<bool>,
        concurrency: usize,
    ) -> PyResult<OptimizeResult> {
        let opts = OptimizeOptions {
            filter,
            target_rows_per_file,
            min_files,
            dry_run,
            strong,
            concurrency,
            max_attempts: DEFAULT_MAX_ATTEMPTS,
        };
        let s = run(py, || block_on(self.inner.optimize(&opts)))?;
        Ok(OptimizeResult::from(s))
    }

    /// Declares a scalar index on `column` and builds it on every partition.
    #[pyo3(signature = (column, *, kind, name, replace, concurrency))]
    fn create_index(
        &self,
        py: Python<'_>,
        column: String,
        kind: &str,
        name: Option<String>,
        replace: bool,
        concurrency: usize,
    ) -> PyResult<IndexResult> {
        let opts = CreateIndexOptions {
            column,
            kind: IndexKind::parse(kind).map_err(to_py)?,
            name,
            replace,
            concurrency,
            max_attempts: DEFAULT_MAX_ATTEMPTS,
        };
        let (name, r) = run(py, || block_on(self.inner.create_index(&opts)))?;
        Ok(IndexResult::of(name, &r))
    }

    /// Removes index `name`: its declaration and its indexes on every partition.
    fn drop_index(&self, py: Python<'_>, name: String) -> PyResult<IndexResult> {
        let r = run(py, || {
            block_on(self.inner.drop_index(&name, DEFAULT_MAX_ATTEMPTS))
        })?;
        Ok(IndexResult::of(name, &r))
    }

    /// Sets the order writers give the rows of each file; returns the manifest version.
    fn set_sort_order(&self, py: Python<'_>, items: Vec<String>) -> PyResult<u64> {
        run(py, || block_on(self.inner.set_sort_order(&items)))
    }

    /// Removes old manifest versions and what only they read.
    #[pyo3(signature = (*, older_than_seconds, retain_versions, dry_run))]
    fn expire(
        &self,
        py: Python<'_>,
        older_than_seconds: Option<f64>,
        retain_versions: Option<usize>,
        dry_run: bool,
    ) -> PyResult<ExpireResult> {
        let older_than = match older_than_seconds {
            Some(s) if s >= 0.0 && s.is_finite() => Some(Duration::from_secs_f64(s)),
            Some(_) => {
                return Err(invalid_arg(
                    "older_than must be a non-negative, finite duration",
                ))
            }
            None => None,
        };
        let opts = ExpireOptions {
            older_than,
            retain_versions,
            dry_run,
        };
        let s = run(py, || block_on(self.inner.expire(&opts)))?;
        Ok(ExpireResult::from(s))
    }

    fn __repr__(&self) -> String {
        format!(
            "Namespace({:?}{})",
            self.storage().root(),
            redacted(self.storage())
        )
    }
}
