//! `optimize()`: compacts the small files of the partitions a filter selects, atomically.
//!
//! Each selected leaf is compacted by Lance (its planner, its rewrite tasks) and committed
//! as one `Rewrite` version, detached in strong mode; then one manifest commit records every
//! new version, through the same retried commit as writes and deletes. Readers of older
//! manifest versions keep reading the files they named. In weak mode each leaf's rewrite is
//! committed on its main line (Lance rebases it over concurrent appends) and the manifest
//! does not change.
//!
//! Then, in strong mode, the selected partitions whose read version has no column statistics
//! get them, read from their rows, in one more manifest commit
//! ([`crate::ns::txn::record_stats`]), and the declared indexes of the selected partitions
//! that are missing or do not cover every row are built again, in one more
//! ([`crate::ns::ops::index::refresh`]). Last, the selected partitions' `table_version` rows
//! beyond the retention limit go in one more manifest commit (a commit trims the partitions it changes only once
//! they hold twice the limit; see `manifest::retention`).
//!
//! One leaf's compaction and its Lance commit live in the transaction layer
//! ([`crate::ns::txn::compaction`]), as does the manifest commit with its rebases over
//! concurrent appends ([`crate::ns::txn::conflict::optimize`]).

use std::sync::Arc;

use futures::stream::{self, StreamExt, TryStreamExt};
use lance::dataset::optimize::{CompactionMode, CompactionOptions};

use crate::error::{Error, Result};
use crate::ns::infra::storage::Storage;
use crate::ns::manifest::{declared_indexes, Snapshot, SortOrder};
use crate::ns::ops::index::refresh::{refresh_indexes, RefreshOptions};
use crate::ns::scan::{prune, Filter};
use crate::ns::txn::compaction::{LeafCompaction, LeafOutcome, Rewrite};
use crate::ns::txn::conflict::optimize::{Compacted, OptimizeUpdate};
use crate::ns::txn::leaf_index::LeafIndexing;
use crate::ns::txn::manifest_commit::commit_manifest;
use crate::ns::txn::record_stats::record_missing_stats;
use crate::ns::txn::trim_versions::{surplus_of, trim_versions};
use crate::ns::write::options::compaction_target;

/// What `optimize()` is asked to do.
#[derive(Debug, Clone)]
pub struct OptimizeOptions {
    /// SQL over the namespace columns selecting the partitions (all when `None`).
    pub filter: Option<String>,
    /// Files with fewer rows are compacted, into files of up to this many rows (`None`: the
    /// namespace's target, `write::options::compaction_target`).
    pub target_rows_per_file: Option<usize>,
    /// A partition is compacted only when at least this many of its files would be.
    pub min_files: usize,
    /// Plan only: report what would be compacted.
    pub dry_run: bool,
    /// Commit mode (the namespace's when `None`).
    pub strong: Option<bool>,
    /// Leaves compacted at a time.
    pub concurrency: usize,
    /// Manifest commit attempts.
    pub max_attempts: u32,
}

/// What `optimize()` did (or would do, for a dry run).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OptimizeSummary {
    /// Partitions compacted.
    pub partitions: u64,
    /// Data files replaced.
    pub files_before: u64,
    /// Data files written.
    pub files_after: u64,
    /// Rows rewritten.
    pub rows: u64,
    /// Bytes written.
    pub bytes_written: u64,
    /// Files rewritten because their rows were out of the namespace's sort order (written
    /// before the order was set, or by another tool).
    pub resorted: u64,
    /// Partitions left alone because their leaf has indices the namespace does not declare
    /// (made by another tool).
    pub skipped_indexed: u64,
    /// Partitions whose compaction was rebased over a concurrent append.
    pub rebased: u64,
    /// Partitions compacted again because a concurrent commit replaced their files.
    pub recompacted: u64,
    /// The manifest version after the commit (unchanged when nothing was committed).
    pub manifest_version: u64,
    /// Manifest commit attempts.
    pub attempts: u32,
    /// `table_version` rows removed beyond the retention limit
    /// (`lance_partitioned.manifest.versions_kept`) from the selected partitions.
    pub version_rows_removed: u64,
    /// Selected partitions whose column statistics were recorded (their read version had
    /// none: written by another tool or an older release).
    pub stats_recorded: u64,
    /// Selected partitions whose declared indexes were built again (missing, or not covering
    /// every row).
    pub indexes_refreshed: u64,
    /// Whether this was a dry run.
    pub dry_run: bool,
}

/// Compacts the partitions of the namespace at `storage` (see the module docs).
///
/// # Errors
/// `InvalidArgument` for bad options, `Expression` for a bad filter; `CommitConflict` when
/// the manifest commit lost too many races; `Lance` for I/O errors. Nothing becomes visible
/// on error.
pub(crate) async fn optimize(storage: &Storage, opts: &OptimizeOptions) -> Result<OptimizeSummary> {
    if opts.target_rows_per_file == Some(0) || opts.min_files == 0 {
        return Err(Error::InvalidArgument(
            "target_rows_per_file and min_files must be positive".into(),
        ));
    }
    let started_ms = crate::ns::txn::cleanup_marks::now_ms()?;
    let snap = Snapshot::load(storage, None).await?;
    if !opts.dry_run {
        snap.check_writable()?;
    }
    let filter = match &opts.filter {
        Some(sql) => Some(Filter::parse(sql, &snap.schema())?),
        None => None,
    };
    let selected = prune(&snap, filter.as_ref()).await?.leaves;
    let ids: Vec<String> = selected
        .iter()
        .map(|&i| snap.leaves[i].object_id.clone())
        .collect();
    let mut summary =
        compact_leaves(storage, &snap, selected, opts, started_ms, Policy::Optimize).await?;
    // The declared indexes of the selected partitions, over the rows written since.
    let refreshed = refresh_indexes(
        storage,
        &RefreshOptions {
            only: Some(ids.clone()),
            dropped: Vec::new(),
            concurrency: opts.concurrency,
            max_attempts: opts.max_attempts,
            dry_run: opts.dry_run,
        },
    )
    .await?;
    summary.indexes_refreshed = refreshed.partitions;
    if !opts.dry_run {
        summary.manifest_version = summary.manifest_version.max(refreshed.manifest_version);
    }
    if !snap.strong_mode(opts.strong)? {
        return Ok(summary);
    }
    // Statistics for the partitions that have none, so later reads can skip them.
    let (recorded, version) =
        record_missing_stats(storage, &ids, opts.max_attempts, opts.dry_run).await?;
    summary.stats_recorded = recorded;
    if !opts.dry_run {
        summary.manifest_version = summary.manifest_version.max(version);
    }
    // The manifest's own upkeep: version rows of partitions no commit trims any more.
    if opts.dry_run {
        summary.version_rows_removed = surplus_of(&snap, &ids)?.len() as u64;
    } else {
        let (removed, version) = trim_versions(storage, &ids, opts.max_attempts).await?;
        summary.version_rows_removed = removed;
        summary.manifest_version = summary.manifest_version.max(version);
    }
    Ok(summary)
}

/// Compacts the partitions `object_ids` of the latest manifest (those that still exist) with
/// `opts` (its filter ignored): the compaction policy's step after a write.
///
/// # Errors
/// As [`optimize`].
pub(crate) async fn optimize_partitions(
    storage: &Storage,
    object_ids: &[String],
    opts: &OptimizeOptions,
) -> Result<OptimizeSummary> {
    let started_ms = crate::ns::txn::cleanup_marks::now_ms()?;
    let snap = Snapshot::load(storage, None).await?;
    snap.check_writable()?;
    let mut selected = Vec::with_capacity(object_ids.len());
    for oid in object_ids {
        selected.extend(snap.leaf_index(oid)?);
    }
    compact_leaves(
        storage,
        &snap,
        selected,
        opts,
        started_ms,
        Policy::AfterWrite,
    )
    .await
}

/// Which compaction [`compact_leaves`] runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Policy {
    /// `optimize()`: every small file, and files out of the sort order rewritten sorted.
    Optimize,
    /// After a write: the newest run of files of similar sizes only
    /// ([`crate::ns::txn::compaction_tiers`]).
    AfterWrite,
}

/// Compacts the leaves `selected` (indices into `snap.leaves`) under `policy` and commits
/// them at once.
async fn compact_leaves(
    storage: &Storage,
    snap: &Snapshot,
    selected: Vec<usize>,
    opts: &OptimizeOptions,
    started_ms: i64,
    policy: Policy,
) -> Result<OptimizeSummary> {
    let strong = snap.strong_mode(opts.strong)?;
    let mut compaction = compaction_of(storage, snap, opts, strong)?;
    compaction.restore_order = policy == Policy::Optimize;
    compaction.tiered = policy == Policy::AfterWrite;
    let outcomes: Vec<(usize, LeafOutcome)> = stream::iter(selected.into_iter().map(|i| {
        let (leaf, compaction) = (&snap.leaves[i], &compaction);
        async move {
            let version = if strong { leaf.read_version } else { None };
            let out = compaction.run(storage, &leaf.location, version).await?;
            Ok::<_, Error>((i, out))
        }
    }))
    .buffer_unordered(opts.concurrency.max(1))
    .try_collect()
    .await?;
    let mut summary = OptimizeSummary {
        manifest_version: snap.version,
        dry_run: opts.dry_run,
        ..Default::default()
    };
    let mut compacted = Vec::new();
    for (i, out) in outcomes {
        match out {
            LeafOutcome::Unchanged => {}
            LeafOutcome::Indexed => summary.skipped_indexed += 1,
            LeafOutcome::Planned(r) => summary.add(&r),
            LeafOutcome::Committed { rewrite, committed } => compacted.push(Compacted {
                object_id: snap.leaves[i].object_id.clone(),
                location: snap.leaves[i].location.clone(),
                rewrite,
                committed,
            }),
        }
    }
    if !strong || compacted.is_empty() {
        compacted.iter().for_each(|c| summary.add(&c.rewrite));
        return Ok(summary);
    }
    let mut update = OptimizeUpdate {
        storage,
        compaction: &compaction,
        leaves: compacted,
        rebased: 0,
        recompacted: 0,
        started_ms,
    };
    crate::ns::txn::hooks::pause("optimize_before_manifest_commit");
    let committed = commit_manifest(storage, opts.max_attempts, &mut update).await?;
    update.leaves.iter().for_each(|c| summary.add(&c.rewrite));
    summary.rebased = update.rebased;
    summary.recompacted = update.recompacted;
    summary.manifest_version = committed.version;
    summary.attempts = committed.attempts;
    Ok(summary)
}

/// How `optimize()` compacts each leaf: Lance's planner with `opts`, the namespace's declared
/// indexes built again and its sort order given to what it rewrites.
fn compaction_of(
    storage: &Storage,
    snap: &Snapshot,
    opts: &OptimizeOptions,
    strong: bool,
) -> Result<LeafCompaction> {
    Ok(LeafCompaction {
        options: CompactionOptions {
            target_rows_per_fragment: match opts.target_rows_per_file {
                Some(rows) => rows,
                None => compaction_target(&snap.root_props.props)?,
            },
            // Pages are copied as they are when the files allow it (no decode, no encode);
            // Lance re-encodes otherwise (deleted rows to drop, differing file versions).
            compaction_mode: Some(CompactionMode::TryBinaryCopy),
            ..CompactionOptions::default()
        },
        min_files: opts.min_files,
        strong,
        dry_run: opts.dry_run,
        indexing: LeafIndexing {
            defs: declared_indexes(&snap.root_props.props)?
                .into_values()
                .collect(),
            dropped: Vec::new(),
            schema: snap.schema(),
            strong,
            dry_run: opts.dry_run,
        },
        order: Some(SortOrder::of(&snap.root_props.props)?)
            .filter(|o| !o.keys.is_empty())
            .map(Arc::new),
        restore_order: false,
        tiered: false,
        storage: storage.clone(),
    })
}

impl OptimizeSummary {
    fn add(&mut self, r: &Rewrite) {
        self.partitions += 1;
        self.files_before += r.files_before;
        self.files_after += r.files_after;
        self.rows += r.rows;
        self.bytes_written += r.bytes;
        self.resorted += r.resorted;
    }
}
