//! `expire()`: removes old `__manifest` versions, then every leaf version and file that only
//! the removed manifest versions read.
//!
//! A manifest version is expired when it is not the latest, not tagged, older than
//! `older_than` (when given) and not among the last `retain_versions` (when given). For each
//! leaf, the versions expired manifest versions read and no kept manifest version reads go
//! (the latest main-line version of a leaf always stays, see [`leaf`]), then the files no
//! remaining version names; a leaf table no kept manifest version names goes whole. The
//! expired manifest versions go last (Lance's cleanup of `__manifest`), so an expire that
//! stops half-way is completed by the next one. A write in flight is never affected: its
//! files and versions are named by no manifest version yet (`cleanup()` handles abandoned
//! ones), and its commit rebases onto the latest versions.
//!
//! Weak-mode leaves record no versions in the manifest (readers read their latest): their old
//! versions go by Lance's own cleanup with the same age and count rules.

pub(crate) mod after_commit;
mod leaf;
mod reads;

use std::collections::HashSet;
use std::time::Duration;

use chrono::{DateTime, Utc};
use lance::dataset::cleanup::{cleanup_old_versions, CleanupPolicy, CleanupPolicyBuilder};
use lance::dataset::{Dataset, Version};

use reads::ReadSets;

use crate::error::{Error, Result};
use crate::ns::infra::storage::Storage;
use crate::ns::manifest::Snapshot;

/// What `expire()` keeps.
#[derive(Debug, Clone, Default)]
pub struct ExpireOptions {
    /// Keep manifest versions younger than this.
    pub older_than: Option<Duration>,
    /// Keep the last this many manifest versions.
    pub retain_versions: Option<usize>,
    /// Report only.
    pub dry_run: bool,
}

/// What `expire()` removed (or would, for a dry run).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExpireSummary {
    /// The manifest versions removed.
    pub manifest_versions: Vec<u64>,
    /// Leaf table versions removed.
    pub leaf_versions: u64,
    /// Leaf tables removed whole (partitions dropped before the kept versions).
    pub leaf_tables: u64,
    /// Data and deletion files removed.
    pub files: u64,
    /// Bytes of the leaf files (data, deletion, transaction and index files) and version
    /// manifests removed (`__manifest`'s own files are not counted).
    pub bytes: u64,
    /// Whether this was a dry run.
    pub dry_run: bool,
}

/// Removes what the kept manifest versions no longer need (see the module docs).
///
/// # Errors
/// `InvalidArgument` without any retention rule; `Lance` for I/O errors.
pub(crate) async fn expire(storage: &Storage, opts: &ExpireOptions) -> Result<ExpireSummary> {
    if opts.older_than.is_none() && opts.retain_versions.is_none() {
        return Err(Error::InvalidArgument(
            "expire needs older_than or retain_versions".into(),
        ));
    }
    if opts.retain_versions == Some(0) {
        return Err(Error::InvalidArgument(
            "retain_versions must be positive (the latest version is always kept)".into(),
        ));
    }
    let snap = Snapshot::load(storage, None).await?;
    // A manifest another tool stripped of `read_version` cannot say which leaf versions the
    // latest reads: like every other change, expiring waits for `repair()`.
    snap.check_writable()?;
    let strong = snap.strong_mode(None)?;
    let mut all = crate::ns::infra::versions::list(&snap.dataset).await?;
    all.sort_by_key(|v| v.version);
    let expired = expired_versions(&snap, &all, opts).await?;
    let gone: HashSet<u64> = expired.iter().copied().collect();
    let reads = reads::read_sets(&snap, &all, &gone, strong).await?;
    let mut summary = ExpireSummary {
        dry_run: opts.dry_run,
        ..Default::default()
    };
    if !opts.dry_run {
        // Deleting is the visible step of an expiry.
        crate::ns::txn::interrupt::enter_commit()?;
    }
    remove_leaf_versions(storage, &reads, opts.dry_run, &mut summary).await?;
    if !opts.dry_run {
        clean_weak_leaves(storage, &reads.weak, opts, &mut summary).await?;
        if !expired.is_empty() {
            let policy = policy(&snap.dataset, opts, Some(&expired)).await?;
            cleanup_old_versions(&snap.dataset, policy).await?;
        }
    }
    summary.manifest_versions = expired;
    Ok(summary)
}

/// The manifest versions the rules expire: not the latest, not tagged, older than
/// `older_than`, and not among the last `retain_versions` (`all` sorted by version).
async fn expired_versions(
    snap: &Snapshot,
    all: &[Version],
    opts: &ExpireOptions,
) -> Result<Vec<u64>> {
    let tagged: HashSet<u64> = snap
        .dataset
        .tags()
        .list()
        .await?
        .values()
        .map(|t| t.version)
        .collect();
    let cutoff = opts.older_than.map(before_now);
    let n = all.len();
    Ok(all
        .iter()
        .enumerate()
        .filter(|(i, v)| {
            v.version != snap.version
                && !tagged.contains(&v.version)
                && cutoff.is_none_or(|c| v.timestamp < c)
                && opts.retain_versions.is_none_or(|r| i + r < n)
        })
        .map(|(_, v)| v.version)
        .collect())
}

/// Removes every leaf version only expired manifest versions read (whole leaves no kept
/// version reads), adding what was removed to `summary`.
async fn remove_leaf_versions(
    storage: &Storage,
    reads: &ReadSets,
    dry_run: bool,
    summary: &mut ExpireSummary,
) -> Result<()> {
    let mut locations: Vec<&String> = reads
        .gone
        .keys()
        .filter(|loc| !reads.unknown.contains(*loc))
        .collect();
    locations.sort();
    for loc in locations {
        let removed = match reads.kept.get(loc) {
            None => {
                summary.leaf_tables += 1;
                leaf::remove_leaf(storage, loc, dry_run).await?
            }
            Some(keep) => {
                let only_gone: HashSet<u64> = reads.gone[loc].difference(keep).copied().collect();
                if only_gone.is_empty() {
                    continue;
                }
                leaf::expire_leaf(storage, loc, &only_gone, dry_run).await?
            }
        };
        summary.leaf_versions += removed.versions;
        summary.files += removed.files;
        summary.bytes += removed.bytes;
    }
    Ok(())
}

/// Weak mode: the leaves' own old versions, by Lance's cleanup with the same rules.
async fn clean_weak_leaves(
    storage: &Storage,
    weak: &HashSet<String>,
    opts: &ExpireOptions,
    summary: &mut ExpireSummary,
) -> Result<()> {
    let mut weak: Vec<&String> = weak.iter().collect();
    weak.sort();
    for loc in weak {
        let ds = storage.builder(loc)?.load().await?;
        let stats = cleanup_old_versions(&ds, policy(&ds, opts, None).await?).await?;
        summary.leaf_versions += stats.old_versions;
        summary.files += stats.data_files_removed + stats.deletion_files_removed;
        summary.bytes += stats.bytes_removed;
    }
    Ok(())
}

/// `d` before now (the beginning of time when `d` reaches further back).
fn before_now(d: Duration) -> DateTime<Utc> {
    chrono::Duration::from_std(d)
        .ok()
        .and_then(|d| Utc::now().checked_sub_signed(d))
        .unwrap_or(DateTime::<Utc>::MIN_UTC)
}

/// Lance's cleanup policy for `opts` (only `versions` when given).
async fn policy(
    ds: &Dataset,
    opts: &ExpireOptions,
    versions: Option<&[u64]>,
) -> Result<CleanupPolicy> {
    let mut b = CleanupPolicyBuilder::default().error_if_tagged_old_versions(false);
    if let Some(vs) = versions {
        return Ok(b.versions(vs.to_vec())?.build());
    }
    if let Some(d) = opts.older_than {
        b = b.before_timestamp(before_now(d));
    }
    if let Some(r) = opts.retain_versions {
        b = b.retain_n_versions(ds, r).await?;
    }
    Ok(b.build())
}
