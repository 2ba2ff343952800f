//! Bringing the declared indexes of some partitions up to date: each leaf's stale indexes are
//! built again ([`crate::ns::txn::leaf_index`]), then, in strong mode, one manifest commit
//! records every new leaf version ([`crate::ns::txn::conflict::index`]). `create_index()`,
//! `drop_index()`, `optimize()` and the step after a write all come here.

use futures::stream::{self, StreamExt, TryStreamExt};

use crate::error::{Error, Result};
use crate::ns::infra::storage::Storage;
use crate::ns::manifest::{declared_indexes, Snapshot};
use crate::ns::txn::conflict::index::{IndexUpdate, Indexed};
use crate::ns::txn::leaf_index::{IndexOutcome, LeafIndexing};
use crate::ns::txn::manifest_commit::commit_manifest;

/// Leaves indexed at a time unless asked otherwise.
pub(crate) const DEFAULT_CONCURRENCY: usize = 4;

/// Which partitions to bring up to date, and how.
#[derive(Debug, Clone)]
pub(crate) struct RefreshOptions {
    /// The partitions (object ids in the latest manifest); every partition when `None`.
    pub(crate) only: Option<Vec<String>>,
    /// Indexes to remove from the leaves (dropped declarations).
    pub(crate) dropped: Vec<String>,
    pub(crate) concurrency: usize,
    pub(crate) max_attempts: u32,
    pub(crate) dry_run: bool,
}

/// What bringing indexes up to date did (or would do, for a dry run).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IndexRefresh {
    /// Partitions whose indexes were built (or removed).
    pub partitions: u64,
    /// Indexes built, over all partitions.
    pub indexes_built: u64,
    /// Partitions indexed again because a concurrent commit changed them.
    pub rebuilt: u64,
    /// The manifest version after the commit (unchanged when nothing was committed).
    pub manifest_version: u64,
    /// Manifest commit attempts.
    pub attempts: u32,
}

/// See the module docs.
///
/// # Errors
/// `Lance` for I/O errors or an index Lance cannot build; as [`commit_manifest`].
pub(crate) async fn refresh_indexes(
    storage: &Storage,
    opts: &RefreshOptions,
) -> Result<IndexRefresh> {
    let started_ms = crate::ns::txn::cleanup_marks::now_ms()?;
    let snap = Snapshot::load(storage, None).await?;
    let mut summary = IndexRefresh {
        manifest_version: snap.version,
        ..IndexRefresh::default()
    };
    let defs: Vec<_> = declared_indexes(&snap.root_props.props)?
        .into_values()
        .collect();
    if defs.is_empty() && opts.dropped.is_empty() {
        return Ok(summary);
    }
    if !opts.dry_run {
        snap.check_writable()?;
    }
    let strong = snap.strong_mode(None)?;
    let indexing = LeafIndexing {
        defs,
        dropped: opts.dropped.clone(),
        schema: snap.schema(),
        strong,
        dry_run: opts.dry_run,
    };
    let selected = selected_leaves(&snap, opts.only.as_deref())?;
    let outcomes: Vec<(usize, IndexOutcome)> = stream::iter(selected.into_iter().map(|i| {
        let (leaf, indexing) = (&snap.leaves[i], &indexing);
        async move {
            let version = if strong { leaf.read_version } else { None };
            let out = indexing.run(storage, &leaf.location, version).await?;
            Ok::<_, Error>((i, out))
        }
    }))
    .buffer_unordered(opts.concurrency.max(1))
    .try_collect()
    .await?;
    let leaves = built_leaves(&snap, outcomes, &mut summary);
    if !strong || leaves.is_empty() {
        summary.partitions += leaves.len() as u64;
        return Ok(summary);
    }
    let mut update = IndexUpdate {
        storage,
        indexing: &indexing,
        leaves,
        rebuilt: 0,
        started_ms,
    };
    crate::ns::txn::hooks::pause("index_before_manifest_commit");
    let committed = commit_manifest(storage, opts.max_attempts, &mut update).await?;
    summary.partitions += update.leaves.len() as u64;
    summary.rebuilt = update.rebuilt;
    summary.manifest_version = committed.version;
    summary.attempts = committed.attempts;
    Ok(summary)
}

/// The leaves (indexes into `snap.leaves`) of the object ids `only` that `snap` still has;
/// every leaf when `None`.
fn selected_leaves(snap: &Snapshot, only: Option<&[String]>) -> Result<Vec<usize>> {
    let Some(ids) = only else {
        return Ok((0..snap.leaves.len()).collect());
    };
    let mut out = Vec::with_capacity(ids.len());
    for oid in ids {
        out.extend(snap.leaf_index(oid)?);
    }
    Ok(out)
}

/// The leaves whose indexes were built, waiting for the manifest commit; the planned and
/// built indexes counted in `summary`.
fn built_leaves(
    snap: &Snapshot,
    outcomes: Vec<(usize, IndexOutcome)>,
    summary: &mut IndexRefresh,
) -> Vec<Indexed> {
    let mut leaves = Vec::new();
    for (i, out) in outcomes {
        match out {
            IndexOutcome::Current => {}
            IndexOutcome::Planned(names) => {
                summary.partitions += 1;
                summary.indexes_built += names.len() as u64;
            }
            IndexOutcome::Built {
                base,
                committed,
                names,
            } => {
                summary.indexes_built += names.len() as u64;
                leaves.push(Indexed {
                    object_id: snap.leaves[i].object_id.clone(),
                    location: snap.leaves[i].location.clone(),
                    base,
                    committed,
                });
            }
        }
    }
    leaves
}
