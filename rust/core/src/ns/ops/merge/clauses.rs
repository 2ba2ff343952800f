//! What a merge does with each row, as Lance's `merge_insert` builder and SQL `MERGE` say it:
//! clauses for target rows a source row matches, for source rows that match nothing, and for
//! target rows no source row matches. Within each kind the clauses apply in order: the first
//! whose condition holds (a NULL condition does not) decides.

use crate::error::{Error, Result};
use crate::ns::infra::touched::TouchedPartition;

/// What happens to a target row that a source row matches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WhenMatched {
    /// Replace the row's columns with the source row's (the namespace columns the source
    /// has; the others keep the target's values).
    UpdateAll {
        /// SQL over `source.` and `target.` columns.
        condition: Option<String>,
    },
    /// Set columns to SQL expressions over `source.` and `target.` columns.
    Update {
        /// Column name and expression, in order.
        set: Vec<(String, String)>,
        /// SQL over `source.` and `target.` columns.
        condition: Option<String>,
    },
    /// Delete the row.
    Delete {
        /// SQL over `source.` and `target.` columns.
        condition: Option<String>,
    },
}

impl WhenMatched {
    /// The clause's condition.
    pub fn condition(&self) -> Option<&str> {
        match self {
            Self::UpdateAll { condition }
            | Self::Update { condition, .. }
            | Self::Delete { condition } => condition.as_deref(),
        }
    }
}

/// What happens to a source row that matches no target row: it is inserted when the
/// condition (SQL over `source.` columns) holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WhenNotMatched {
    /// SQL over `source.` columns.
    pub condition: Option<String>,
}

/// What happens to a target row that no source row matches: it is deleted when the condition
/// (SQL over the target's columns, plain or as `target.`) holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WhenNotMatchedBySource {
    /// SQL over the target's columns.
    pub condition: Option<String>,
}

/// A merge: the key columns and the clauses.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MergeClauses {
    /// The key columns (`a.b` names a struct's child).
    pub on: Vec<String>,
    /// Clauses for matched target rows.
    pub matched: Vec<WhenMatched>,
    /// Clauses for source rows matching nothing.
    pub not_matched: Vec<WhenNotMatched>,
    /// Clauses for target rows matching nothing.
    pub not_matched_by_source: Vec<WhenNotMatchedBySource>,
    /// Of the source rows sharing a key, keep only the one with the greatest value of this
    /// column (a change feed's sequence: `apply_changes`); without it they are an error.
    pub keep_last_by: Option<String>,
}

impl MergeClauses {
    /// Checks that the merge says what to do.
    ///
    /// # Errors
    /// `InvalidArgument` without key columns or without any clause, or for a column set twice.
    pub fn check(&self) -> Result<()> {
        if self.on.is_empty() {
            return Err(Error::InvalidArgument(
                "merge_insert needs at least one key column (on=[...])".into(),
            ));
        }
        if self.matched.is_empty()
            && self.not_matched.is_empty()
            && self.not_matched_by_source.is_empty()
        {
            return Err(Error::InvalidArgument(
                "merge_insert has no clause: add when_matched_update_all(), \
                 when_not_matched_insert_all() or another when_* clause"
                    .into(),
            ));
        }
        for m in &self.matched {
            if let WhenMatched::Update { set, .. } = m {
                if set.is_empty() {
                    return Err(Error::InvalidArgument(
                        "when_matched_update(set=...) sets no column".into(),
                    ));
                }
                let mut seen = std::collections::HashSet::new();
                for (c, _) in set {
                    if !seen.insert(c) {
                        return Err(Error::InvalidArgument(format!(
                            "when_matched_update sets column {c:?} twice"
                        )));
                    }
                }
            }
        }
        Ok(())
    }
}

/// What a merge did to one partition.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MergedPartition {
    /// The partition (as it is after the merge; a dropped one as it was).
    pub partition: TouchedPartition,
    /// Source rows inserted here.
    pub inserted: u64,
    /// Rows updated in place (their new version stays here).
    pub updated: u64,
    /// Rows deleted by a delete clause.
    pub deleted: u64,
    /// Updated rows that left this partition for another (their partition columns changed).
    pub moved_out: u64,
    /// Updated rows that came here from another partition.
    pub moved_in: u64,
    /// Whether the merge created the partition.
    pub created: bool,
    /// Whether the merge emptied and dropped the partition.
    pub dropped: bool,
}

/// What a merge would read, decided without reading any partition (`explain`).
#[derive(Debug, Clone, Default)]
pub struct MergeExplain {
    /// The partitions it would read to find matches, in manifest order.
    pub read: Vec<TouchedPartition>,
    /// Partitions it would not read.
    pub skipped: u64,
    /// How the partitions to read were chosen, one line per spec version (and why).
    pub matching: Vec<String>,
    /// The manifest version it was decided on.
    pub manifest_version: u64,
}

/// What a merge did.
#[derive(Debug, Clone, Default)]
pub struct MergeSummary {
    /// Source rows inserted.
    pub inserted: u64,
    /// Target rows updated (moved ones included).
    pub updated: u64,
    /// Target rows deleted by a delete clause.
    pub deleted: u64,
    /// Updated rows that changed partition.
    pub moved: u64,
    /// Per partition, the ones the merge changed.
    pub partitions: Vec<MergedPartition>,
    /// Partitions read to find matches.
    pub scanned: u64,
    /// Partitions not read: pruning showed no source key and no delete condition can reach
    /// them.
    pub skipped: u64,
    /// How the partitions to read were chosen, one line per spec version (and why).
    pub matching: Vec<String>,
    /// Manifest version after the commit (unchanged when nothing changed).
    pub manifest_version: u64,
    /// Runs of the merge: a concurrent commit to a partition it read makes it run again on
    /// the new versions.
    pub attempts: u32,
    /// The manifest already recorded the change's write id (a repeated change, such as a
    /// stream's micro-batch run again): nothing was done.
    pub already_committed: bool,
    /// Partitions whose declared indexes were built again after the commit.
    pub indexed: u64,
    /// Old manifest versions the namespace's automatic expiry removed after the commit.
    pub expired: u64,
    /// The maintenance steps after the commit that failed (see `ops::after_commit`); the
    /// merge is committed whatever they say.
    pub maintenance_errors: Vec<String>,
}

impl MergeSummary {
    /// The object ids of the partitions the merge changed (those it dropped are no longer in
    /// the manifest; the index build after the merge passes them by).
    pub(crate) fn touched_ids(&self) -> Vec<String> {
        self.partitions
            .iter()
            .map(|p| p.partition.object_id.clone())
            .collect()
    }
}
