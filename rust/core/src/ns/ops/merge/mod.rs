//! `merge_insert`: row-level changes keyed by columns (Lance's builder, SQL `MERGE`'s
//! semantics), atomic across partitions.
//!
//! 1. The source is conformed to the namespace types and its keys indexed ([`source`]); the
//!    clauses' SQL is planned ([`sql`]).
//! 2. The partitions to read are chosen ([`candidates`]): those holding the source's keys
//!    when the key determines the partition, every partition of a spec it does not, and
//!    those a not-matched-by-source delete reaches.
//! 3. Each is read at its version and its rows decided ([`matcher`]): deleted, updated (the
//!    old version deleted, the new one written like any row, so a row whose partition
//!    columns change moves), or kept. Source rows that matched nothing are inserted when a
//!    not-matched clause says so.
//! 4. New rows go through the partitioning writer; deletions and new fragments are
//!    committed per leaf, then the manifest once ([`crate::ns::txn::row_change`]). When a
//!    partition the merge read changed meanwhile, the merge runs again from step 2 on the
//!    new versions (strong mode), up to `max_attempts` times.
//!
//! [`update`] (`update(set, where)`) decides its rows by a filter instead of a source and
//! commits the same way.

pub(crate) mod candidates;
pub mod clauses;
pub(crate) mod distributed;
pub(crate) mod key_index;
pub(crate) mod keys;
pub(crate) mod leaf_scan;
pub(crate) mod matcher;
pub(crate) mod source;
pub(crate) mod sql;
pub(crate) mod tally;
pub(crate) mod unmatched;
pub(crate) mod update;

use std::collections::HashMap;
use std::sync::Arc;

use futures::stream::{self, StreamExt, TryStreamExt};

use crate::arrow::array::{RecordBatch, UInt32Array};
use crate::arrow::compute::take_record_batch;
use crate::arrow::datatypes::SchemaRef;
use crate::error::{Error, Result};
use crate::ns::infra::storage::Storage;
use crate::ns::infra::touched::TouchedPartition;
use crate::ns::manifest::{check_repeatable, Snapshot};
use crate::ns::ops::after_commit::AfterCommit;
use crate::ns::txn::cleanup_marks::now_ms;
use crate::ns::txn::retry::backoff;
use crate::ns::txn::row_change::{commit_row_change, Deletions, RowChange};
use crate::ns::write::{IdPlan, Mode, PartitionWriter, StagedPart, WriteOptions};

pub use clauses::{
    MergeClauses, MergeExplain, MergeSummary, MergedPartition, WhenMatched, WhenNotMatched,
    WhenNotMatchedBySource,
};
pub use distributed::MergeMessage;
use keys::{key_paths, KeyEncoder};
use matcher::{match_leaf, Inputs, LeafChanges};
use source::Source;
use tally::Tally;

/// The rows a merge takes, held in memory.
#[derive(Debug, Clone)]
pub struct MergeSource {
    /// Their schema.
    pub schema: SchemaRef,
    /// The rows.
    pub batches: Vec<RecordBatch>,
}

/// Merges `source` into the namespace at `storage`; see the module docs.
///
/// # Errors
/// `InvalidArgument` for clauses that say nothing or keys that do not exist;
/// `SchemaMismatch` for source columns that do not fit; `DuplicateKey` for two source rows
/// with one key; `Expression` for bad conditions; `CommitConflict` when concurrent commits
/// to the partitions it reads outlast `max_attempts` runs. Nothing is visible on error
/// (strong mode).
pub(crate) async fn merge(
    storage: &Storage,
    source: &MergeSource,
    clauses: &MergeClauses,
    opts: &WriteOptions,
) -> Result<MergeSummary> {
    clauses.check()?;
    until_settled(storage, opts, |snap, strong| {
        merge_once(storage, snap, strong, source, clauses, opts)
    })
    .await
}

/// Runs a row-level change (`run` on the latest snapshot, strong or not) until it commits:
/// a `CommitConflict` (a partition it read changed meanwhile; nothing of the run is visible)
/// runs it again on a fresh snapshot, up to `max_attempts` runs. In weak mode a failure after
/// some partitions' leaf commits is a `PartialCommit` instead, never run again (those
/// partitions' changes are visible). The summary counts the runs.
///
/// # Errors
/// The last run's error.
pub(crate) async fn until_settled<F, Fut>(
    storage: &Storage,
    opts: &WriteOptions,
    mut run: F,
) -> Result<MergeSummary>
where
    F: FnMut(Arc<Snapshot>, bool) -> Fut,
    Fut: std::future::Future<Output = Result<MergeSummary>>,
{
    let mut attempt = 0u32;
    loop {
        attempt += 1;
        let snap = Arc::new(Snapshot::load(storage, None).await?);
        snap.check_writable()?;
        let strong = snap.strong_mode(opts.strong)?;
        if let Some(id) = &opts.write_id {
            check_repeatable(id, strong)?;
            if snap.has_write(id)? {
                return Ok(already_committed(snap.version, attempt));
            }
        }
        let (from, props) = (snap.version, snap.root_props.props.clone());
        match run(snap, strong).await {
            Ok(mut summary) => {
                summary.attempts = attempt;
                maintain_after(storage, opts, &props, from, &mut summary).await;
                return Ok(summary);
            }
            Err(Error::CommitConflict(_)) if attempt < opts.max_attempts.max(1) => {
                backoff(attempt).await;
            }
            Err(e) => return Err(e),
        }
    }
}

/// One run of the merge on `snap`.
async fn merge_once(
    storage: &Storage,
    snap: Arc<Snapshot>,
    strong: bool,
    source: &MergeSource,
    clauses: &MergeClauses,
    opts: &WriteOptions,
) -> Result<MergeSummary> {
    let started_ms = now_ms()?;
    let (change, summary) = decide(storage, &snap, source, clauses, opts, false).await?;
    commit_changes(storage, &snap, strong, opts, change, summary, started_ms).await
}

/// Decides the merge on `snap`: reads the candidate partitions and decides their rows and
/// the source's (nothing is written); `report_matched`: also report each partition's matched
/// rows.
///
/// # Errors
/// As [`merge`].
pub(crate) async fn decide(
    storage: &Storage,
    snap: &Snapshot,
    source: &MergeSource,
    clauses: &MergeClauses,
    opts: &WriteOptions,
    report_matched: bool,
) -> Result<(Decided, MergeSummary)> {
    let Prepared {
        ns,
        encoder,
        src,
        plan,
        chosen,
    } = prepare(snap, source, clauses, report_matched).await?;
    let inputs = Inputs {
        storage,
        ns: &ns,
        source: &src,
        encoder: &encoder,
        plan: &plan,
        report_matched,
    };
    let results: Vec<LeafChanges> = stream::iter(
        chosen
            .leaves
            .iter()
            .map(|&i| match_leaf(&inputs, i, &snap.leaves[i])),
    )
    .buffer_unordered(opts.concurrency.max(1))
    .try_collect()
    .await?;
    let inserts = inserted_rows(&plan, &src, &results)?;
    let summary = MergeSummary {
        inserted: inserts.as_ref().map_or(0, |b| b.num_rows() as u64),
        updated: results.iter().map(|r| r.updated).sum(),
        deleted: results.iter().map(|r| r.deleted_rows).sum(),
        scanned: chosen.leaves.len() as u64,
        skipped: chosen.skipped,
        matching: chosen.matching,
        manifest_version: snap.version,
        ..Default::default()
    };
    let change = Decided {
        results,
        inserts,
        read: chosen.leaves,
        operation: "merge",
    };
    Ok((change, summary))
}

/// A merge's source conformed and indexed, its clauses planned and the partitions it reads
/// chosen, on one snapshot (nothing read yet).
struct Prepared {
    ns: SchemaRef,
    encoder: KeyEncoder,
    src: Source,
    plan: sql::Plan,
    chosen: candidates::Candidates,
}

/// Prepares `source` and `clauses` on `snap`; see [`Prepared`]. The partitions that can
/// hold the source's keys are read when a clause acts on matches, or `report_matched`.
async fn prepare(
    snap: &Snapshot,
    source: &MergeSource,
    clauses: &MergeClauses,
    report_matched: bool,
) -> Result<Prepared> {
    let ns = snap.schema();
    let keys = key_paths(&clauses.on, &ns)?;
    let encoder = KeyEncoder::new(keys.clone())?;
    let mut extra = sql::extra_source_columns(clauses, &source.schema, &ns)?;
    extra.extend(clauses.keep_last_by.iter().cloned());
    let src = Source::new(
        Arc::clone(&source.schema),
        source.batches.clone(),
        &ns,
        &encoder,
        &extra,
        clauses.keep_last_by.as_deref(),
    )?;
    let plan = sql::plan(clauses, &keys, src.batch.schema().as_ref(), &ns)?;
    let matching = report_matched || !clauses.matched.is_empty() || !clauses.not_matched.is_empty();
    let chosen = candidates::candidates(snap, &src, &keys, &plan, matching).await?;
    Ok(Prepared {
        ns,
        encoder,
        src,
        plan,
        chosen,
    })
}

/// What merging `source` with `clauses` would read on the latest snapshot, and why: the
/// source is checked and indexed and the clauses planned as [`merge`] does, but no partition
/// is read and nothing is written.
///
/// # Errors
/// As [`merge`] before it reads a partition (bad clauses, keys, columns, duplicate keys).
pub(crate) async fn explain(
    storage: &Storage,
    source: &MergeSource,
    clauses: &MergeClauses,
) -> Result<MergeExplain> {
    clauses.check()?;
    let snap = Snapshot::load(storage, None).await?;
    let chosen = prepare(&snap, source, clauses, false).await?.chosen;
    let values = snap.keys()?;
    let read = chosen
        .leaves
        .iter()
        .map(|&i| {
            let leaf = &snap.leaves[i];
            let spec = snap.root_props.specs.get(&leaf.spec_id).ok_or_else(|| {
                Error::Internal(format!(
                    "partition {} has unknown spec {}",
                    leaf.object_id, leaf.spec_id
                ))
            })?;
            Ok(TouchedPartition::new(
                &leaf.object_id,
                &leaf.location,
                spec,
                &values.leaf_values[i],
            ))
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(MergeExplain {
        read,
        skipped: chosen.skipped,
        matching: chosen.matching,
        manifest_version: snap.version,
    })
}

/// What a row-level change decided on its snapshot.
pub(crate) struct Decided {
    /// Per partition read: its deletions and the new versions of its updated rows.
    pub(crate) results: Vec<LeafChanges>,
    /// Rows to insert (namespace columns).
    pub(crate) inserts: Option<RecordBatch>,
    /// The partitions read (indexes into the snapshot's leaves).
    pub(crate) read: Vec<usize>,
    /// `merge` or `update`, as `history()` shows it.
    pub(crate) operation: &'static str,
}

/// Stages the new rows and commits a decided change (nothing when it changes nothing);
/// completes `summary` with the commit and the per-partition lines.
///
/// # Errors
/// As [`commit_row_change`] and the partitioning writer.
pub(crate) async fn commit_changes(
    storage: &Storage,
    snap: &Arc<Snapshot>,
    strong: bool,
    opts: &WriteOptions,
    change: Decided,
    summary: MergeSummary,
    started_ms: i64,
) -> Result<MergeSummary> {
    let tally = Tally::of(snap, &change.results)?;
    let ids = IdPlan::Random(HashMap::new());
    let parts = stage(storage, snap, strong, opts, ids, &change).await?;
    let deletions: Vec<Deletions> = change
        .results
        .iter()
        .filter(|r| r.changes())
        .map(|r| Deletions {
            leaf: r.leaf,
            dataset: Arc::clone(&r.dataset),
            rows: r.deleted.clone(),
        })
        .collect();
    let change = RowChange {
        base: Arc::clone(snap),
        read: change.read,
        deletions,
        parts,
        operation: change.operation,
        write_id: opts.write_id.clone(),
    };
    let commit = Commit {
        storage,
        strong,
        opts,
        started_ms,
    };
    commit.run(change, &tally, summary).await
}

/// The summary of a change whose write id the manifest at `version` records already.
/// The maintenance after a merge's commit (from manifest version `from`, see
/// `ops::after_commit`), counted in `summary`.
pub(crate) async fn maintain_after(
    storage: &Storage,
    opts: &WriteOptions,
    props: &HashMap<String, String>,
    from: u64,
    summary: &mut MergeSummary,
) {
    if summary.already_committed {
        return;
    }
    let after = AfterCommit {
        storage,
        props,
        from,
        to: summary.manifest_version,
        opts,
    };
    let done = after.run(&[], summary.touched_ids()).await;
    summary.indexed = done.indexed;
    summary.expired = done.expired;
    summary.maintenance_errors = done.errors;
}

pub(crate) fn already_committed(version: u64, attempts: u32) -> MergeSummary {
    MergeSummary {
        manifest_version: version,
        attempts,
        already_committed: true,
        ..Default::default()
    }
}

/// How a decided change is committed.
pub(crate) struct Commit<'a> {
    pub(crate) storage: &'a Storage,
    pub(crate) strong: bool,
    pub(crate) opts: &'a WriteOptions,
    /// When the change started writing files (ms since the epoch).
    pub(crate) started_ms: i64,
}

impl Commit<'_> {
    /// Commits `change` (nothing when it changes nothing); completes `summary` with the
    /// commit and the per-partition lines of `tally`.
    ///
    /// # Errors
    /// As [`commit_row_change`].
    pub(crate) async fn run(
        &self,
        change: RowChange,
        tally: &Tally,
        mut summary: MergeSummary,
    ) -> Result<MergeSummary> {
        summary.moved = summary.updated.saturating_sub(tally.in_place());
        if change.deletions.is_empty() && change.parts.is_empty() {
            return Ok(summary);
        }
        let snap = Arc::clone(&change.base);
        let repeatable = change.write_id.is_some();
        let (committed, changed) = commit_row_change(
            self.storage,
            change,
            self.strong,
            self.opts.concurrency,
            self.opts.max_attempts,
            self.started_ms,
        )
        .await?;
        summary.manifest_version = committed.version;
        if repeatable && changed.is_empty() {
            return Ok(already_committed(committed.version, summary.attempts));
        }
        summary.partitions = tally.per_partition(&snap, &changed);
        Ok(summary)
    }
}

/// Source rows that matched nothing and pass a not-matched clause (namespace columns).
fn inserted_rows(
    plan: &sql::Plan,
    src: &Source,
    results: &[LeafChanges],
) -> Result<Option<RecordBatch>> {
    if plan.not_matched.is_empty() {
        return Ok(None);
    }
    let mut matched = vec![false; src.rows()];
    for r in results {
        for &s in &r.matched {
            matched[s as usize] = true;
        }
    }
    let open: Vec<u32> = (0..src.rows() as u32)
        .filter(|&i| !matched[i as usize])
        .collect();
    let rows = take_record_batch(&src.batch, &UInt32Array::from(open))?;
    let chosen = matcher::first_true(&plan.not_matched, &rows)?;
    let keep: Vec<u32> = (0..chosen.len() as u32)
        .filter(|&j| chosen[j as usize].is_some())
        .collect();
    if keep.is_empty() {
        return Ok(None);
    }
    let rows = take_record_batch(&rows, &UInt32Array::from(keep))?;
    let ns_only: Vec<usize> = (0..rows.num_columns())
        .filter(|&c| src.ns_columns.contains(rows.schema().field(c).name()))
        .collect();
    Ok(Some(rows.project(&ns_only)?))
}

/// Stages the new rows of `change` (updated versions, then inserts) with the partitioning
/// writer; new partitions get ids by `ids`.
pub(crate) async fn stage(
    storage: &Storage,
    snap: &Arc<Snapshot>,
    strong: bool,
    opts: &WriteOptions,
    ids: IdPlan,
    change: &Decided,
) -> Result<Vec<StagedPart>> {
    let wopts = WriteOptions {
        mode: Mode::Append,
        write_id: None,
        ..opts.clone()
    };
    let mut writer = PartitionWriter::new(storage, Arc::clone(snap), &wopts, strong, ids)?;
    // The leaves the change read are open: new rows of those partitions reuse them.
    writer.reuse(change.results.iter().map(|r| {
        let leaf = &snap.leaves[r.leaf];
        (leaf.object_id.clone(), Arc::clone(&r.dataset))
    }));
    let updates = change.results.iter().flat_map(|r| r.updates.iter());
    for b in updates.chain(change.inserts.as_ref()) {
        if let Err(e) = writer.write(b.clone()).await {
            writer.abort().await;
            return Err(e);
        }
    }
    writer.close().await
}
