//! What writes, deletes and cleanups report: frozen Python classes with typed attributes.

use lance_partitioned_core::ns::infra::touched;
use lance_partitioned_core::ns::ops::{
    CleanupSummary, DeleteSummary, ExpireSummary, OptimizeSummary, WriteSummary,
};
use pyo3::prelude::*;

/// A partition a write or delete touched.
#[pyclass(module = "lance_partitioned._native", frozen, eq, get_all)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TouchedPartition {
    /// The leaf table's object id.
    pub object_id: String,
    /// The leaf table's directory, relative to the namespace root.
    pub location: String,
    /// The partition's spec version.
    pub spec_id: i32,
    /// (partition field id, value string form or None), in spec order.
    pub values: Vec<(String, Option<String>)>,
}

#[pymethods]
impl TouchedPartition {
    fn __repr__(&self) -> String {
        let values: Vec<String> = self
            .values
            .iter()
            .map(|(f, v)| match v {
                Some(v) => format!("({f:?}, {v:?})"),
                None => format!("({f:?}, None)"),
            })
            .collect();
        format!(
            "TouchedPartition({:?}, spec_id={}, values=[{}])",
            self.object_id,
            self.spec_id,
            values.join(", ")
        )
    }
}

fn touched_list(t: &[touched::TouchedPartition]) -> Vec<TouchedPartition> {
    t.iter().map(touched_one).collect()
}

/// The Python form of one touched partition.
pub(crate) fn touched_one(p: &touched::TouchedPartition) -> TouchedPartition {
    TouchedPartition {
        object_id: p.object_id.clone(),
        location: p.location.clone(),
        spec_id: p.spec_id,
        values: p.values.clone(),
    }
}

/// What a write did.
#[pyclass(module = "lance_partitioned._native", frozen, eq, get_all)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteResult {
    /// Rows written.
    pub rows: u64,
    /// Partitions written to.
    pub partitions: u64,
    /// Partitions created by this write.
    pub created: u64,
    /// Partitions dropped (`mode="overwrite_all"`).
    pub dropped: u64,
    /// Data files written.
    pub files: u64,
    /// Bytes written.
    pub bytes: u64,
    /// The `__manifest` version that made the write visible.
    pub manifest_version: u64,
    /// Manifest commit attempts (more than 1 when concurrent writers were rebased over).
    pub attempts: u32,
    /// Partitions an append rewrote because they were written under an older schema.
    pub rewritten: u64,
    /// Rebases: a partition's fragments re-committed on top of a concurrent commit to it.
    pub rebased: u64,
    /// Partitions a concurrent write created with the same values, adopted by this one.
    pub adopted: u64,
    /// The most input bytes the writer held at once (0 for a distributed commit).
    pub peak_buffered_bytes: u64,
    /// A repeated commit of a write that was already committed: nothing was done.
    pub already_committed: bool,
    /// The partitions written.
    pub touched: Vec<TouchedPartition>,
    /// Partitions the write left with more small fragments than the namespace allows,
    /// compacted after its commit (a second manifest commit).
    pub compacted: u64,
    /// Old manifest versions the namespace's automatic expiry removed after the commit.
    pub expired: u64,
    /// Partitions whose declared indexes were built again after the commit.
    pub indexed: u64,
    /// The maintenance steps after the commit that failed (compaction, indexes, expiry),
    /// each `"<step>: <error>"`; the write is committed whatever they say.
    pub maintenance_errors: Vec<String>,
}

#[pymethods]
impl WriteResult {
    #[new]
    #[pyo3(signature = (*, rows, partitions, created, dropped, files, bytes, manifest_version, attempts, rewritten = 0, already_committed = false))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        rows: u64,
        partitions: u64,
        created: u64,
        dropped: u64,
        files: u64,
        bytes: u64,
        manifest_version: u64,
        attempts: u32,
        rewritten: u64,
        already_committed: bool,
    ) -> Self {
        Self {
            rows,
            partitions,
            created,
            dropped,
            files,
            bytes,
            manifest_version,
            attempts,
            rewritten,
            rebased: 0,
            adopted: 0,
            peak_buffered_bytes: 0,
            already_committed,
            touched: Vec::new(),
            compacted: 0,
            expired: 0,
            indexed: 0,
            maintenance_errors: Vec::new(),
        }
    }

    fn __repr__(&self) -> String {
        format!(
            "WriteResult(rows={}, partitions={}, created={}, dropped={}, files={}, bytes={}, \
             manifest_version={}, attempts={}, rewritten={}, rebased={}, adopted={}, \
             compacted={}, expired={}, already_committed={})",
            self.rows,
            self.partitions,
            self.created,
            self.dropped,
            self.files,
            self.bytes,
            self.manifest_version,
            self.attempts,
            self.rewritten,
            self.rebased,
            self.adopted,
            self.compacted,
            self.expired,
            if self.already_committed {
                "True"
            } else {
                "False"
            }
        )
    }
}

impl From<&WriteSummary> for WriteResult {
    fn from(s: &WriteSummary) -> Self {
        Self {
            rows: s.rows,
            partitions: s.partitions,
            created: s.created,
            dropped: s.dropped,
            files: s.files,
            bytes: s.bytes,
            manifest_version: s.manifest_version,
            attempts: s.attempts,
            rewritten: s.rewritten,
            rebased: s.rebased,
            adopted: s.adopted,
            peak_buffered_bytes: s.peak_buffered_bytes,
            already_committed: s.already_committed,
            touched: touched_list(&s.touched),
            compacted: s.compacted,
            expired: s.expired,
            indexed: s.indexed,
            maintenance_errors: s.maintenance_errors.clone(),
        }
    }
}

/// What a delete did.
#[pyclass(module = "lance_partitioned._native", frozen, eq, get_all)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeleteResult {
    /// Rows deleted (including the rows of dropped partitions).
    pub rows: u64,
    /// Partitions dropped whole (the filter covered them exactly).
    pub dropped: u64,
    /// Partitions with rows deleted inside them.
    pub changed: u64,
    /// The `__manifest` version after the delete (unchanged when nothing matched).
    pub manifest_version: u64,
    /// Manifest commit attempts.
    pub attempts: u32,
    /// The partitions dropped or deleted from.
    pub touched: Vec<TouchedPartition>,
}

#[pymethods]
impl DeleteResult {
    fn __repr__(&self) -> String {
        format!(
            "DeleteResult(rows={}, dropped={}, changed={}, manifest_version={}, attempts={})",
            self.rows, self.dropped, self.changed, self.manifest_version, self.attempts
        )
    }
}

impl From<&DeleteSummary> for DeleteResult {
    fn from(s: &DeleteSummary) -> Self {
        Self {
            rows: s.rows,
            dropped: s.dropped,
            changed: s.changed,
            manifest_version: s.manifest_version,
            attempts: s.attempts,
            touched: touched_list(&s.touched),
        }
    }
}

/// What a cleanup found (and removed, unless it was a dry run).
#[pyclass(module = "lance_partitioned._native", frozen, eq, get_all)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CleanupResult {
    /// Orphan leaf table directories (relative to the root).
    pub orphans: Vec<String>,
    /// Whether everything found was removed (`False` for a dry run).
    pub removed: bool,
    /// Files found in total: the orphans' files, stale version manifests and data files.
    pub files: u64,
    /// Bytes of those files.
    pub bytes: u64,
    /// Detached versions of live partitions no manifest version records
    /// (`<location>@<version>`).
    pub stale_versions: Vec<String>,
    /// Data files of live partitions no kept version names (relative to the root).
    pub stale_files: Vec<String>,
}

#[pymethods]
impl CleanupResult {
    fn __repr__(&self) -> String {
        format!(
            "CleanupResult(orphans={}, stale_versions={}, stale_files={}, files={}, bytes={}, \
             removed={})",
            self.orphans.len(),
            self.stale_versions.len(),
            self.stale_files.len(),
            self.files,
            self.bytes,
            if self.removed { "True" } else { "False" }
        )
    }
}

impl From<CleanupSummary> for CleanupResult {
    fn from(s: CleanupSummary) -> Self {
        Self {
            orphans: s.orphans,
            removed: s.removed,
            files: s.files,
            bytes: s.bytes,
            stale_versions: s.stale_versions,
            stale_files: s.stale_files,
        }
    }
}

/// What `optimize()` did (or would do, for a dry run).
#[pyclass(module = "lance_partitioned._native", frozen, eq, get_all)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OptimizeResult {
    /// Partitions compacted (or that would be).
    pub partitions: u64,
    /// Data files replaced.
    pub files_before: u64,
    /// Data files written (estimated for a dry run).
    pub files_after: u64,
    /// Rows rewritten.
    pub rows: u64,
    /// Bytes written (0 for a dry run).
    pub bytes_written: u64,
    /// Files rewritten (or that would be) because their rows were out of the sort order.
    pub resorted: u64,
    /// Partitions left alone because their leaf table has indices the namespace does not
    /// declare (made by another tool).
    pub skipped_indexed: u64,
    /// Compactions rebased over a concurrent append.
    pub rebased: u64,
    /// Partitions compacted again because a concurrent commit replaced their files.
    pub recompacted: u64,
    /// The `__manifest` version after the commit (unchanged when nothing was committed).
    pub manifest_version: u64,
    /// Manifest commit attempts.
    pub attempts: u32,
    /// `table_version` rows removed beyond the retention limit (or that would be).
    pub version_rows_removed: u64,
    /// Selected partitions whose column statistics were recorded (or would be).
    pub stats_recorded: u64,
    /// Selected partitions whose declared indexes were built again (or would be).
    pub indexes_refreshed: u64,
    /// Whether this was a dry run.
    pub dry_run: bool,
}

#[pymethods]
impl OptimizeResult {
    fn __repr__(&self) -> String {
        format!(
            "OptimizeResult(partitions={}, files_before={}, files_after={}, rows={}, \
             bytes_written={}, manifest_version={}, dry_run={})",
            self.partitions,
            self.files_before,
            self.files_after,
            self.rows,
            self.bytes_written,
            self.manifest_version,
            if self.dry_run { "True" } else { "False" }
        )
    }
}

impl From<OptimizeSummary> for OptimizeResult {
    fn from(s: OptimizeSummary) -> Self {
        Self {
            partitions: s.partitions,
            files_before: s.files_before,
            files_after: s.files_after,
            rows: s.rows,
            bytes_written: s.bytes_written,
            resorted: s.resorted,
            skipped_indexed: s.skipped_indexed,
            rebased: s.rebased,
            recompacted: s.recompacted,
            manifest_version: s.manifest_version,
            attempts: s.attempts,
            version_rows_removed: s.version_rows_removed,
            stats_recorded: s.stats_recorded,
            indexes_refreshed: s.indexes_refreshed,
            dry_run: s.dry_run,
        }
    }
}

/// What `expire()` removed (or would, for a dry run).
#[pyclass(module = "lance_partitioned._native", frozen, eq, get_all)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExpireResult {
    /// The `__manifest` versions removed.
    pub manifest_versions: Vec<u64>,
    /// Leaf table versions removed.
    pub leaf_versions: u64,
    /// Leaf tables removed whole (partitions dropped before every kept version).
    pub leaf_tables: u64,
    /// Data and deletion files removed.
    pub files: u64,
    /// Bytes removed.
    pub bytes: u64,
    /// Whether this was a dry run.
    pub dry_run: bool,
}

#[pymethods]
impl ExpireResult {
    fn __repr__(&self) -> String {
        format!(
            "ExpireResult(manifest_versions={:?}, leaf_versions={}, leaf_tables={}, files={}, \
             bytes={}, dry_run={})",
            self.manifest_versions,
            self.leaf_versions,
            self.leaf_tables,
            self.files,
            self.bytes,
            if self.dry_run { "True" } else { "False" }
        )
    }
}

impl From<ExpireSummary> for ExpireResult {
    fn from(s: ExpireSummary) -> Self {
        Self {
            manifest_versions: s.manifest_versions,
            leaf_versions: s.leaf_versions,
            leaf_tables: s.leaf_tables,
            files: s.files,
            bytes: s.bytes,
            dry_run: s.dry_run,
        }
    }
}
