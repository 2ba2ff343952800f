//! The leaf half of a write transaction: checks on staged parts, the rewrite of partitions
//! written under an older schema, and one Lance commit per leaf table (detached in strong
//! mode, so nothing is visible before the manifest commit).

use std::collections::HashSet;
use std::sync::Arc;

use futures::stream::{self, StreamExt, TryStreamExt};
use lance::dataset::transaction::{Operation, Transaction};
use lance::dataset::{CommitBuilder, InsertBuilder, WriteMode};
use lance::table::format::Fragment;

use crate::arrow::array::RecordBatch;
use crate::datafusion::scalar::ScalarValue;
use crate::error::{Error, Result};
use crate::ns::infra::session::session;
use crate::ns::infra::storage::Storage;
use crate::ns::leaf_io::{op_fragments, read_adapted, write_params, Schemas};
use crate::ns::manifest::{LeafColumnStats, LeafVersion, Snapshot};
use crate::ns::txn::new_leaf::NewLeafCommit;
use crate::ns::write::staged::StagedPart;
use crate::ns::write::target::Target;

/// Commits `txn`, a Lance transaction planned on the leaf `ds` (a delete's, a compaction's
/// rewrite), on top of `ds`: detached in strong mode (the manifest commit makes it visible),
/// directly in weak mode; `with` adds what the transaction's planner knows (the rows a
/// delete touched). The one way a leaf version is made outside a write's staged parts.
///
/// # Errors
/// `Interrupted` when Ctrl-C arrived before the commit point; `Lance` for a lost race or I/O.
pub(crate) async fn commit_leaf_transaction(
    ds: Arc<lance::dataset::Dataset>,
    txn: Transaction,
    strong: bool,
    with: impl FnOnce(CommitBuilder<'static>) -> CommitBuilder<'static>,
) -> Result<LeafVersion> {
    crate::ns::txn::interrupt::enter_leaf_commit(strong)?;
    let builder = CommitBuilder::new(ds)
        .with_detached(strong)
        .with_skip_auto_cleanup(true);
    let committed = with(builder).execute(txn).await?;
    LeafVersion::of(&committed).await
}

/// The leaf commits that succeeded, and the first error of those that failed (every commit
/// ran to its end: in weak mode the successful ones are visible and must be reported).
pub(crate) fn settled<T>(results: Vec<Result<T>>) -> (Vec<T>, Option<Error>) {
    let mut done = Vec::with_capacity(results.len());
    let mut failed = None;
    for r in results {
        match r {
            Ok(c) => done.push(c),
            Err(e) => failed = failed.or(Some(e)),
        }
    }
    (done, failed)
}

/// A partition whose leaf table is committed (detached in strong mode), waiting for the
/// manifest commit.
#[derive(Debug, Clone)]
pub(crate) struct Pending {
    /// Partition values.
    pub(crate) key: Vec<ScalarValue>,
    /// Leaf object id (None for a new partition until its namespaces are resolved).
    pub(crate) object_id: Option<String>,
    /// Leaf location.
    pub(crate) location: String,
    /// Planned namespace ids per level (new partitions).
    pub(crate) path: Vec<String>,
    /// Whether this write created the leaf table.
    pub(crate) created: bool,
    /// The version our change was based on (None: created, or weak mode).
    pub(crate) base: Option<u64>,
    /// The version holding our change, with its totals.
    pub(crate) committed: LeafVersion,
    /// `append` or `overwrite` (`create` for new leaves).
    pub(crate) operation: &'static str,
    /// Whether an append rewrote the partition (its leaf had an older schema).
    pub(crate) rewritten: bool,
    /// The fragments we wrote (for rebasing).
    pub(crate) fragments: Vec<Fragment>,
    /// Column statistics of the rows we wrote (`None`: unknown).
    pub(crate) stats: Option<LeafColumnStats>,
}

impl Pending {
    /// Rows of the fragments this write added.
    pub(crate) fn rows(&self) -> u64 {
        self.fragments
            .iter()
            .map(|f| f.physical_rows.unwrap_or(0) as u64)
            .sum()
    }
}

/// Commits one partition's fragments to its leaf table. New and replaced leaves get `fresh`
/// (the leaf schema as a fresh Lance write numbers it).
pub(crate) async fn commit_leaf(
    storage: &Storage,
    part: StagedPart,
    replaces: bool,
    strong: bool,
    fresh: &lance::datatypes::Schema,
) -> Result<Pending> {
    match part.target.clone() {
        Target::New { location, path } => {
            commit_new_leaf(storage, part, location, path, fresh).await
        }
        Target::Existing {
            object_id,
            location,
            base,
        } => {
            let ds = base_dataset(storage, &part, &location, base).await?;
            let leaf = ExistingLeaf {
                object_id,
                location,
                replaces,
                strong,
            };
            commit_existing_leaf(ds, part, leaf, fresh).await
        }
    }
}

/// The Lance operation that replaces a leaf's rows with `fragments`.
fn overwrite(fragments: Vec<Fragment>, fresh: &lance::datatypes::Schema) -> Operation {
    Operation::Overwrite {
        fragments,
        schema: fresh.clone(),
        config_upsert_values: None,
        initial_bases: None,
    }
}

/// A new partition's leaf table: created at its fresh location by URI (no listing).
async fn commit_new_leaf(
    storage: &Storage,
    part: StagedPart,
    location: String,
    path: Vec<String>,
    fresh: &lance::datatypes::Schema,
) -> Result<Pending> {
    let uri = storage.uri(&location);
    let mut commit = CommitBuilder::new(uri.as_str())
        .with_session(session()?)
        .with_store_params(storage.store_params())
        .enable_v2_manifest_paths(true)
        .with_skip_auto_cleanup(true);
    if let Some(handler) = NewLeafCommit::for_uri(&uri) {
        commit = commit.with_commit_handler(handler);
    }
    let ds = commit
        .execute(Transaction::new(
            0,
            overwrite(part.fragments.clone(), fresh),
            None,
        ))
        .await?;
    Ok(Pending {
        key: part.key,
        object_id: None,
        location,
        path,
        created: true,
        base: None,
        operation: "create",
        rewritten: false,
        fragments: part.fragments,
        stats: part.stats,
        committed: LeafVersion::of(&ds).await?,
    })
}

/// An existing partition a part is committed to.
struct ExistingLeaf {
    object_id: String,
    location: String,
    /// The write replaces the partition (an overwrite).
    replaces: bool,
    strong: bool,
}

/// A part appended to (or replacing) an existing leaf, on top of `ds`.
async fn commit_existing_leaf(
    ds: Arc<lance::dataset::Dataset>,
    part: StagedPart,
    leaf: ExistingLeaf,
    fresh: &lance::datatypes::Schema,
) -> Result<Pending> {
    let read_version = ds.version().version;
    let op = if part.rewrite {
        overwrite(part.fragments.clone(), fresh)
    } else {
        Operation::Append {
            fragments: part.fragments.clone(),
        }
    };
    let mut commit = CommitBuilder::new(ds)
        .with_detached(leaf.strong)
        .with_skip_auto_cleanup(true);
    // A weak-mode append that rewrites the partition (written under an older schema)
    // replaces the leaf's rows with the ones it read at `read_version` plus its own: it
    // commits only onto that version (a strict overwrite, never rebased), so a concurrent
    // append's rows are never erased. Strong mode finds that conflict at its manifest commit.
    let strict = part.rewrite && !leaf.replaces && !leaf.strong;
    if strict {
        commit = commit.with_max_retries(0);
    }
    crate::ns::txn::interrupt::enter_leaf_commit(leaf.strong)?;
    let location = &leaf.location;
    let committed = match commit
        .execute(Transaction::new(read_version, op, None))
        .await
    {
        Ok(c) => c,
        Err(e) if strict && crate::error::lost_race(&e) => {
            return Err(Error::CommitConflict(format!(
                "a concurrent write appended to the partition at {location} while this append \
                 rewrote it under the current schema; nothing of this partition was \
                 committed, run the write again"
            )))
        }
        Err(e) => {
            return Err(rewritten_under_another_schema(
                e,
                &format!("leaf {location}"),
            ))
        }
    };
    Ok(Pending {
        key: part.key,
        object_id: Some(leaf.object_id),
        location: leaf.location,
        path: Vec::new(),
        created: false,
        base: Some(read_version),
        operation: if part.rewrite { "overwrite" } else { "append" },
        rewritten: part.rewrite && !leaf.replaces,
        fragments: part.fragments,
        stats: part.stats,
        committed: LeafVersion::of(&committed).await?,
    })
}

/// The existing leaf at the version the part was written against (the writer's open handle
/// when it has one).
async fn base_dataset(
    storage: &Storage,
    part: &StagedPart,
    location: &str,
    base: Option<u64>,
) -> Result<Arc<lance::dataset::Dataset>> {
    match &part.dataset {
        Some(d) => Ok(Arc::clone(d)),
        None => storage.open(location, base).await,
    }
}

/// An append to a leaf written under an older schema replaces the leaf: its old rows,
/// adapted by the read rules, are written with the current schema ahead of the new ones.
pub(crate) async fn rewrite_old_rows(
    storage: &Storage,
    mut part: StagedPart,
    schemas: &Schemas,
) -> Result<StagedPart> {
    let Target::Existing { location, base, .. } = &part.target else {
        return Ok(part);
    };
    let ds = base_dataset(storage, &part, location, *base).await?;
    let old: Vec<RecordBatch> = read_adapted(&ds, schemas, &HashSet::new()).await?;
    if !old.is_empty() {
        // The version holds the old rows too: widen the statistics by theirs.
        let old_stats = old.iter().map(LeafColumnStats::of_batch);
        let old_stats = old_stats.reduce(|a, b| LeafColumnStats::merge(&a, &b));
        part.stats = match (old_stats, part.stats) {
            (Some(o), Some(n)) => Some(LeafColumnStats::merge(&o, &n)),
            _ => None,
        };
        let txn = InsertBuilder::new(Arc::clone(&ds))
            .with_params(&write_params(storage, WriteMode::Overwrite)?)
            .execute_uncommitted(old)
            .await?;
        let (mut fragments, _) = op_fragments(txn.operation)?;
        fragments.append(&mut part.fragments);
        part.fragments = fragments;
    }
    part.dataset = Some(ds);
    Ok(part)
}

/// Fails when a staged data file is gone (for example removed by `cleanup()` with a grace
/// period shorter than the write): committing it would make the partition unreadable.
pub(crate) async fn verify_staged_files(storage: &Storage, parts: &[StagedPart]) -> Result<()> {
    let files = parts.iter().map(|p| {
        let names = p.fragments.iter().flat_map(|f| f.files.iter());
        (
            p.target.location(),
            names.map(|f| f.path.as_str()).collect(),
        )
    });
    let missing = missing_files(storage, files.collect()).await?;
    if let Some(first) = missing.first() {
        return Err(Error::CommitConflict(format!(
            "{} staged data file(s) of this write no longer exist (first: {first}); was \
             cleanup() run with a grace period shorter than the write? Nothing was committed; \
             run the write again",
            missing.len()
        )));
    }
    Ok(())
}

/// A leaf version that a manifest change makes the manifest point at, and the data files the
/// operation wrote into it.
#[derive(Debug, Clone)]
pub(crate) struct Written {
    pub(crate) location: String,
    pub(crate) version: u64,
    pub(crate) files: Vec<String>,
}

impl Written {
    /// The version `version` of `location` holding the data files of `fragments`.
    pub(crate) fn new(location: &str, version: u64, fragments: &[Fragment]) -> Self {
        Self {
            location: location.to_string(),
            version,
            files: fragments
                .iter()
                .flat_map(|f| f.files.iter().map(|d| d.path.clone()))
                .collect(),
        }
    }
}

/// Fails (nothing visible) when a leaf version or data file a commit is about to point at is
/// gone: a `cleanup()` removed it while the operation ran.
pub(crate) async fn verify_written(storage: &Storage, written: &[Written]) -> Result<()> {
    for w in written {
        if let Err(e) = storage.open(&w.location, Some(w.version)).await {
            return Err(Error::CommitConflict(format!(
                "version {} of the leaf {} that this operation committed no longer exists \
                 (was cleanup() run with a grace period shorter than the operation?); nothing \
                 was committed, run it again ({})",
                w.version,
                w.location,
                crate::error::user_message(&e.to_string())
            )));
        }
    }
    let files = written
        .iter()
        .map(|w| {
            (
                w.location.as_str(),
                w.files.iter().map(String::as_str).collect(),
            )
        })
        .collect();
    let missing = missing_files(storage, files).await?;
    if let Some(first) = missing.first() {
        return Err(Error::CommitConflict(format!(
            "{} data file(s) this operation wrote no longer exist (first: {first}); was \
             cleanup() run with a grace period shorter than the operation? Nothing was \
             committed; run it again",
            missing.len()
        )));
    }
    Ok(())
}

/// Takes back weak-mode leaf commits whose data files a `cleanup()` removed before the write's
/// manifest commit (it listed them as unreferenced just before the leaf commit named them):
/// an append's fragments are deleted again from the leaf's latest version (concurrent appends
/// stay), a rewrite is restored to the version it replaced when nothing came after it.
///
/// # Errors
/// `CommitConflict` when a rewrite cannot be taken back (the leaf moved on); `Lance` for I/O.
pub(crate) async fn withdraw(storage: &Storage, visible: &[Pending]) -> Result<()> {
    for p in visible.iter().filter(|p| !p.created) {
        let ours: HashSet<&str> = p
            .fragments
            .iter()
            .flat_map(|f| f.files.iter().map(|d| d.path.as_str()))
            .collect();
        let ds = storage.open(&p.location, None).await?;
        let read_version = ds.version().version;
        let (op, strict) = match (p.operation, p.base) {
            ("overwrite", Some(base)) => (Operation::Restore { version: base }, true),
            _ => {
                let ids: Vec<u64> = ds
                    .get_fragments()
                    .iter()
                    .filter(|f| {
                        f.metadata()
                            .files
                            .iter()
                            .any(|d| ours.contains(d.path.as_str()))
                    })
                    .map(|f| f.id() as u64)
                    .collect();
                if ids.is_empty() {
                    continue;
                }
                let op = Operation::Delete {
                    updated_fragments: Vec::new(),
                    deleted_fragment_ids: ids,
                    predicate: "withdrawn: its data files were removed by cleanup()".into(),
                };
                (op, false)
            }
        };
        if strict && read_version != p.committed.version {
            return Err(Error::CommitConflict(format!(
                "cleanup() removed data files of the partition at {} that this weak-mode write \
                 rewrote, and the partition has changed since; restore it with \
                 repair() or from an earlier version",
                p.location
            )));
        }
        let mut commit = CommitBuilder::new(ds).with_skip_auto_cleanup(true);
        if strict {
            commit = commit.with_max_retries(0);
        }
        commit
            .execute(Transaction::new(read_version, op, None))
            .await?;
    }
    Ok(())
}

/// The data files (by leaf location and file name) that do not exist.
async fn missing_files(storage: &Storage, files: Vec<(&str, Vec<&str>)>) -> Result<Vec<String>> {
    let (store, base) = storage.object_store().await?;
    let mut paths = Vec::new();
    for (location, names) in files {
        let dir = base.clone().join(location).join("data");
        for name in names {
            paths.push(name.split('/').fold(dir.clone(), |p, seg| p.join(seg)));
        }
    }
    let store = &store;
    stream::iter(
        paths.into_iter().map(|p| async move {
            Ok::<_, Error>((!store.exists(&p).await?).then(|| p.to_string()))
        }),
    )
    .buffer_unordered(16)
    .try_filter_map(|m| async move { Ok(m) })
    .try_collect()
    .await
}

/// Weak mode records no write id: the parts an earlier commit of the same write already
/// committed (their first data file is in the leaf's latest version, or the new leaf they
/// created is registered in the manifest).
pub(crate) async fn weak_committed(
    storage: &Storage,
    latest: &Snapshot,
    parts: &[StagedPart],
) -> Result<HashSet<Vec<ScalarValue>>> {
    let registered: HashSet<&str> = latest.leaves.iter().map(|l| l.location.as_str()).collect();
    let mut done = HashSet::new();
    for p in parts {
        let Some(first) = p.fragments.iter().flat_map(|f| f.files.iter()).next() else {
            continue;
        };
        let committed = match &p.target {
            Target::New { location, .. } => registered.contains(location.as_str()),
            Target::Existing { location, .. } => {
                let ds = storage.open(location, None).await?;
                ds.get_fragments()
                    .iter()
                    .flat_map(|f| f.metadata().files.iter())
                    .any(|d| d.path == first.path)
            }
        };
        if committed {
            done.insert(p.key.clone());
        }
    }
    Ok(done)
}

/// A leaf commit of our fragments that Lance refused because a concurrent write rewrote the
/// partition under another schema version: our rows cannot be appended as written; nothing of
/// this write is visible, and running it again stages them against the new leaf.
pub(crate) fn rewritten_under_another_schema(e: impl Into<Error>, key: &str) -> Error {
    match e.into() {
        Error::Lance(l) if matches!(*l, lance::Error::SchemaMismatch { .. }) => {
            Error::CommitConflict(format!(
                "partition ({key}) was rewritten under another schema version by a concurrent \
             write while this write was staged against the old one; run the write again \
             ({})",
                crate::error::user_message(&l.to_string())
            ))
        }
        other => other,
    }
}
