//! The `merge_insert` binding: the clauses as the Python builder hands them over, and the
//! result classes.

use lance_partitioned_core::arrow::datatypes::Schema;
use lance_partitioned_core::ns::ops::{
    MergeClauses, MergeExplain, MergeSource, MergeSummary, MergedPartition, WhenMatched,
    WhenNotMatched, WhenNotMatchedBySource,
};
use lance_partitioned_core::ns::write::WriteOptions;
use pyo3::prelude::*;
use std::sync::Arc;

use crate::errors::{invalid_arg, run};
use crate::ffi::BatchInput;
use crate::results::{touched_one, TouchedPartition};

/// A matched clause as Python gives it: kind (`update_all`, `update`, `delete`), condition,
/// and for `update` the columns and their SQL values.
pub(crate) type MatchedArg = (String, Option<String>, Option<Vec<(String, String)>>);

/// A merge's clauses as the Python builder hands them over (`MergeClauses._args`): the key
/// columns, the matched clauses, the not-matched and not-matched-by-source conditions, and
/// `keep_last_by` (keep only each key's last source row by this column, as `apply_changes`
/// does).
#[derive(FromPyObject)]
pub(crate) struct ClausesArg(
    Vec<String>,
    Vec<MatchedArg>,
    Vec<Option<String>>,
    Vec<Option<String>>,
    Option<String>,
);

impl ClausesArg {
    /// The clauses, checked for known kinds of matched clause.
    pub(crate) fn into_clauses(self) -> PyResult<MergeClauses> {
        let Self(on, matched, not_matched, by_source, keep_last_by) = self;
        let matched = matched
            .into_iter()
            .map(|(kind, condition, set)| match kind.as_str() {
                "update_all" => Ok(WhenMatched::UpdateAll { condition }),
                "update" => Ok(WhenMatched::Update {
                    set: set.unwrap_or_default(),
                    condition,
                }),
                "delete" => Ok(WhenMatched::Delete { condition }),
                other => Err(invalid_arg(format!("unknown matched clause {other:?}"))),
            })
            .collect::<PyResult<Vec<_>>>()?;
        Ok(MergeClauses {
            on,
            matched,
            not_matched: not_matched
                .into_iter()
                .map(|condition| WhenNotMatched { condition })
                .collect(),
            not_matched_by_source: by_source
                .into_iter()
                .map(|condition| WhenNotMatchedBySource { condition })
                .collect(),
            keep_last_by,
        })
    }
}

/// The write options of a row-level change.
pub(crate) fn options(
    strong: Option<bool>,
    concurrency: usize,
    max_attempts: u32,
    max_buffer_bytes: usize,
    write_id: Option<String>,
) -> WriteOptions {
    WriteOptions {
        strong,
        concurrency: concurrency.max(1),
        max_attempts: max_attempts.max(1),
        max_buffer_bytes: max_buffer_bytes.max(1),
        write_id,
        ..Default::default()
    }
}

/// Reads the whole source `data` (with the GIL released) and runs `f` on it; an error of the
/// Python source itself comes back as it was raised.
pub(crate) fn with_source<T: Send>(
    py: Python<'_>,
    data: BatchInput,
    f: impl FnOnce(&MergeSource) -> lance_partitioned_core::Result<T> + Send,
) -> PyResult<T> {
    let slot = data.error_slot();
    BatchInput::finish(&slot, run(py, || f(&source(data)?)))
}

/// Reads the whole source (a merge holds it in memory).
fn source(data: BatchInput) -> lance_partitioned_core::Result<MergeSource> {
    let declared = data.schema();
    let batches = data.collect::<lance_partitioned_core::Result<Vec<_>>>()?;
    let schema = match (declared, batches.first()) {
        (Some(s), _) => s,
        (None, Some(b)) => b.schema(),
        (None, None) => Arc::new(Schema::empty()),
    };
    Ok(MergeSource { schema, batches })
}

/// What a merge did to one partition.
#[pyclass(module = "lance_partitioned._native", frozen, eq, get_all)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MergedPartitionResult {
    /// The partition.
    pub partition: TouchedPartition,
    /// Source rows inserted here.
    pub inserted: u64,
    /// Rows updated in place.
    pub updated: u64,
    /// Rows deleted by a delete clause.
    pub deleted: u64,
    /// Updated rows that moved to another partition.
    pub moved_out: u64,
    /// Updated rows that came from another partition.
    pub moved_in: u64,
    /// Whether the merge created the partition.
    pub created: bool,
    /// Whether the merge emptied and dropped it.
    pub dropped: bool,
}

#[pymethods]
impl MergedPartitionResult {
    fn __repr__(&self) -> String {
        format!(
            "MergedPartition({:?}, inserted={}, updated={}, deleted={}, moved_out={}, \
             moved_in={}, created={}, dropped={})",
            self.partition.values,
            self.inserted,
            self.updated,
            self.deleted,
            self.moved_out,
            self.moved_in,
            self.created,
            self.dropped
        )
    }
}

impl From<&MergedPartition> for MergedPartitionResult {
    fn from(p: &MergedPartition) -> Self {
        Self {
            partition: touched_one(&p.partition),
            inserted: p.inserted,
            updated: p.updated,
            deleted: p.deleted,
            moved_out: p.moved_out,
            moved_in: p.moved_in,
            created: p.created,
            dropped: p.dropped,
        }
    }
}

/// What a merge did.
#[pyclass(module = "lance_partitioned._native", frozen, eq, get_all)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MergeResult {
    /// Source rows inserted.
    pub inserted: u64,
    /// Target rows updated (moved ones included).
    pub updated: u64,
    /// Target rows deleted by a delete clause.
    pub deleted: u64,
    /// Updated rows that changed partition.
    pub moved: u64,
    /// The partitions changed.
    pub partitions: Vec<MergedPartitionResult>,
    /// Partitions read to find matches.
    pub scanned: u64,
    /// Partitions pruning kept the merge from reading.
    pub skipped: u64,
    /// How the partitions to read were chosen, one line per spec version.
    pub matching: Vec<String>,
    /// The `__manifest` version after the merge (unchanged when nothing changed).
    pub manifest_version: u64,
    /// Runs of the merge (a concurrent commit to a partition it read makes it run again).
    pub attempts: u32,
    /// The manifest already recorded the merge's write id: nothing was done.
    pub already_committed: bool,
    /// Partitions whose declared indexes were built again after the merge.
    pub indexed: u64,
    /// Old manifest versions the namespace's automatic expiry removed after the merge.
    pub expired: u64,
    /// The maintenance steps after the merge's commit that failed, each
    /// `"<step>: <error>"`; the merge is committed whatever they say.
    pub maintenance_errors: Vec<String>,
}

#[pymethods]
impl MergeResult {
    fn __repr__(&self) -> String {
        format!(
            "MergeResult(inserted={}, updated={}, deleted={}, moved={}, partitions={}, \
             scanned={}, skipped={}, manifest_version={}, attempts={}, already_committed={})",
            self.inserted,
            self.updated,
            self.deleted,
            self.moved,
            self.partitions.len(),
            self.scanned,
            self.skipped,
            self.manifest_version,
            self.attempts,
            if self.already_committed {
                "True"
            } else {
                "False"
            }
        )
    }
}

impl From<&MergeSummary> for MergeResult {
    fn from(s: &MergeSummary) -> Self {
        Self {
            inserted: s.inserted,
            updated: s.updated,
            deleted: s.deleted,
            moved: s.moved,
            partitions: s
                .partitions
                .iter()
                .map(MergedPartitionResult::from)
                .collect(),
            scanned: s.scanned,
            skipped: s.skipped,
            matching: s.matching.clone(),
            manifest_version: s.manifest_version,
            attempts: s.attempts,
            already_committed: s.already_committed,
            indexed: s.indexed,
            expired: s.expired,
            maintenance_errors: s.maintenance_errors.clone(),
        }
    }
}

/// What a merge would read, and why (`explain`).
#[pyclass(module = "lance_partitioned._native", frozen, eq, get_all)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MergePlan {
    /// The partitions it would read to find matches.
    pub read: Vec<TouchedPartition>,
    /// Partitions pruning keeps it from reading.
    pub skipped: u64,
    /// How the partitions to read are chosen, one line per spec version.
    pub matching: Vec<String>,
    /// The `__manifest` version it was decided on.
    pub manifest_version: u64,
}

#[pymethods]
impl MergePlan {
    fn __repr__(&self) -> String {
        format!(
            "MergePlan(read={}, skipped={}, manifest_version={}, matching={:?})",
            self.read.len(),
            self.skipped,
            self.manifest_version,
            self.matching
        )
    }
}

impl From<&MergeExplain> for MergePlan {
    fn from(e: &MergeExplain) -> Self {
        Self {
            read: e.read.iter().map(touched_one).collect(),
            skipped: e.skipped,
            matching: e.matching.clone(),
            manifest_version: e.manifest_version,
        }
    }
}
