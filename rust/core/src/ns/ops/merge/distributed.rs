//! Distributed merges: tasks decide and stage, one committer commits.
//!
//! The driver plans the merge like a distributed write (the manifest version every task
//! reads, the commit mode, a nonce). The source is split so that all rows of one key meet in
//! one task (Spark shuffles by the partition key when the key determines it, by the key
//! otherwise). Every task runs [`stage_merge`] on its rows: the merge's decisions on the
//! planned version ([`super::decide`]), the new rows staged by the partitioning writer (new
//! partitions' ids derived from the nonce, so two tasks that create one partition write into
//! one leaf table), and returns one [`MergeMessage`]: the rows to delete per partition read
//! (row addresses), the staged parts, and the counts. Nothing is visible yet.
//!
//! [`commit_merge`] adds the messages up (one message passed twice counts once; two tasks
//! deciding one target row is refused: the source was not split by key) and commits them in
//! one row-level change ([`crate::ns::txn::row_change`]): one Lance commit per leaf, one
//! manifest commit, on the condition that no partition any task read changed since the
//! planned version. On that conflict nothing is visible (strong mode) and the caller runs
//! the merge again on a new plan.
//!
//! A not-matched-by-source clause needs the whole source to know that a target row matched
//! nothing: the tasks leave it out and report the target rows they matched, and
//! [`commit_merge`] decides it over every task's matches ([`super::unmatched`]).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use futures::stream::{self, StreamExt, TryStreamExt};
use lance::dataset::Dataset;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::ns::infra::storage::Storage;
use crate::ns::manifest::{check_repeatable, Snapshot};
use crate::ns::ops::write::distributed::{base_snapshot, merge_messages, WritePlan};
use crate::ns::txn::cleanup_marks::now_ms;
use crate::ns::txn::row_change::{Deletions, RowChange};
use crate::ns::write::message::{key_from_text, key_to_text, WriteIdentity};
use crate::ns::write::{IdPlan, Mode, StagedMessage, StagedPart, WriteOptions};
use crate::spec::CompiledSpec;

use super::tally::{LeafTally, Tally};
use super::unmatched::decide_unmatched;
use super::{already_committed, decide, stage, Commit, MergeClauses, MergeSource, MergeSummary};

/// Version of the [`MergeMessage`] layout.
const FORMAT: u32 = 1;

/// What one task decided for one partition it read.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MessageLeaf {
    /// The leaf's object id.
    pub object_id: String,
    /// Row addresses to delete (deleted rows and the old versions of updated ones).
    pub deleted: Vec<u64>,
    /// Rows updated.
    pub updated: u64,
    /// Rows deleted by a delete clause.
    pub deleted_rows: u64,
    /// Updated rows that stayed in the partition.
    pub in_place: u64,
    /// Addresses of the rows a source row matched (reported when the merge has a
    /// not-matched-by-source clause, which the committer decides).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub matched: Vec<u64>,
}

/// One task's share of a distributed merge.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MergeMessage {
    /// Message layout version.
    pub format: u32,
    /// Leaves the task read (object ids): a concurrent change to one is a conflict.
    pub read: Vec<String>,
    /// Per partition read with rows to delete or updated: what was decided.
    pub leaves: Vec<MessageLeaf>,
    /// Updated rows per destination partition (exact text values, current spec).
    pub landed: Vec<(Vec<Option<String>>, u64)>,
    /// Source rows inserted.
    pub inserted: u64,
    /// How the task chose the partitions it read.
    pub matching: Vec<String>,
    /// The new rows (updated versions and inserts), staged as a distributed write's parts;
    /// it also names the merge (manifest version, spec, nonce, commit mode).
    pub staged: StagedMessage,
}

impl MergeMessage {
    /// Serialises the message (JSON).
    ///
    /// # Errors
    /// `Internal` if serialisation fails.
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        serde_json::to_vec(self).map_err(|e| Error::Internal(format!("merge message: {e}")))
    }

    /// Parses a message made by [`MergeMessage::to_bytes`].
    ///
    /// # Errors
    /// `InvalidArgument` for anything else.
    pub fn from_bytes(b: &[u8]) -> Result<Self> {
        let m: Self = serde_json::from_slice(b)
            .map_err(|e| Error::InvalidArgument(format!("not a staged merge message: {e}")))?;
        if m.format != FORMAT {
            return Err(Error::InvalidArgument(format!(
                "staged merge message format {} is not supported (expected {FORMAT})",
                m.format
            )));
        }
        Ok(m)
    }
}

/// Decides one task's share of a merge on the planned version and stages its new rows; see
/// the module docs.
///
/// # Errors
/// As [`super::merge`]; `InvalidArgument` for a missing nonce; `CommitConflict` when
/// `expire()` removed the planned version.
pub(crate) async fn stage_merge(
    storage: &Storage,
    plan: WritePlan,
    nonce: &str,
    source: &MergeSource,
    clauses: &MergeClauses,
    opts: &WriteOptions,
) -> Result<MergeMessage> {
    clauses.check()?;
    if nonce.len() < 16 {
        return Err(Error::InvalidArgument(
            "a staged merge needs the merge's planned nonce".into(),
        ));
    }
    let staged_since = now_ms()?;
    let snap = Arc::new(base_snapshot(storage, plan.manifest_version).await?);
    snap.check_writable()?;
    // The not-matched-by-source clauses are the committer's; the task reports its matches.
    let by_source = !clauses.not_matched_by_source.is_empty();
    let own = MergeClauses {
        not_matched_by_source: Vec::new(),
        ..clauses.clone()
    };
    let (change, summary) = decide(storage, &snap, source, &own, opts, by_source).await?;
    let tally = Tally::of(&snap, &change.results)?;
    let ids = IdPlan::Derived(nonce.to_string());
    let parts = stage(storage, &snap, plan.strong, opts, ids, &change).await?;
    let id = WriteIdentity {
        manifest_version: plan.manifest_version,
        spec_id: snap.current_spec().id,
        nonce: nonce.to_string(),
        mode: Mode::Append,
        strong: plan.strong,
    };
    let rows = parts.iter().map(|p| p.rows).sum();
    let leaves = change
        .results
        .iter()
        .filter(|r| r.changes() || r.updated > 0 || !r.matched_rows.is_empty())
        .map(|r| {
            let object_id = snap.leaves[r.leaf].object_id.clone();
            let in_place = tally.leaves.get(&object_id).map_or(0, |t| t.in_place);
            MessageLeaf {
                object_id,
                deleted: r.deleted.clone(),
                updated: r.updated,
                deleted_rows: r.deleted_rows,
                in_place,
                matched: r.matched_rows.clone(),
            }
        })
        .collect();
    Ok(MergeMessage {
        format: FORMAT,
        read: change
            .read
            .iter()
            .map(|&i| snap.leaves[i].object_id.clone())
            .collect(),
        leaves,
        landed: tally
            .landed
            .iter()
            .map(|(k, n)| Ok((key_to_text(k)?, *n)))
            .collect::<Result<_>>()?,
        inserted: summary.inserted,
        matching: summary.matching,
        staged: StagedMessage::new(&id, rows, staged_since, parts)?,
    })
}

/// Commits the messages of the distributed merge planned as `plan` with `nonce`; see the
/// module docs. `clauses` gives the key columns and the not-matched-by-source clauses (the
/// committer decides those); without them, no messages commit nothing.
///
/// # Errors
/// `InvalidArgument` for messages of another merge or two tasks deciding one target row;
/// `CommitConflict` when a partition a task read changed since the planned version (nothing
/// visible in strong mode); as [`crate::ns::txn::row_change`] otherwise.
pub(crate) async fn commit_merge(
    storage: &Storage,
    (plan, nonce): (WritePlan, &str),
    messages: &[MergeMessage],
    clauses: &MergeClauses,
    opts: &WriteOptions,
) -> Result<MergeSummary> {
    if let Some(done) = recorded(storage, opts, plan.strong).await? {
        return Ok(done);
    }
    let unique = dedupe(messages)?;
    check_identity(&unique, plan, nonce)?;
    let by_source = !clauses.not_matched_by_source.is_empty();
    if unique.is_empty() && !by_source {
        return Ok(MergeSummary {
            manifest_version: plan.manifest_version,
            attempts: 1,
            ..Default::default()
        });
    }
    let snap = Arc::new(base_snapshot(storage, plan.manifest_version).await?);
    snap.check_writable()?;
    let staged: Vec<StagedMessage> = unique.iter().map(|m| m.staged.clone()).collect();
    let parts = staged_parts(&snap, &staged)?;
    let mut decided = added_up(&snap, &unique)?;
    let mut read: BTreeSet<usize> = unique
        .iter()
        .flat_map(|m| &m.read)
        .map(|oid| leaf_index(&snap, oid))
        .collect::<Result<_>>()?;
    let mut matching = matching_lines(&unique);
    let mut opened = HashMap::new();
    if by_source {
        let un =
            decide_unmatched(storage, &snap, clauses, &decided.matched, opts.concurrency).await?;
        read.extend(&un.read);
        matching.push(un.why);
        opened = decided.add_unmatched(&snap, un.deletions);
    }
    let tally = decided.tally;
    let deletions = open_leaves(storage, &snap, decided.rows, opened, opts.concurrency).await?;
    let summary = MergeSummary {
        inserted: unique.iter().map(|m| m.inserted).sum(),
        updated: tally.leaves.values().map(|t| t.updated).sum(),
        deleted: tally.leaves.values().map(|t| t.deleted).sum(),
        scanned: read.len() as u64,
        skipped: (snap.leaves.len() - read.len()) as u64,
        matching,
        manifest_version: snap.version,
        attempts: 1,
        ..Default::default()
    };
    let started_ms = first_staged_ms(&staged)?;
    let change = RowChange {
        base: Arc::clone(&snap),
        read: read.into_iter().collect(),
        deletions,
        parts,
        operation: "merge",
        write_id: opts.write_id.clone(),
    };
    let commit = Commit {
        storage,
        strong: plan.strong,
        opts,
        started_ms,
    };
    let mut done = commit.run(change, &tally, summary).await?;
    super::maintain_after(
        storage,
        opts,
        &snap.root_props.props,
        snap.version,
        &mut done,
    )
    .await;
    Ok(done)
}

/// When the first task started staging (ms since the epoch; now when no task says).
fn first_staged_ms(staged: &[StagedMessage]) -> Result<i64> {
    staged
        .iter()
        .map(|m| m.staged_since_ms)
        .filter(|ms| *ms > 0)
        .min()
        .map_or_else(now_ms, Ok)
}

/// The summary of a merge under a write id the latest manifest records already (`None`
/// without a write id, or when it is not recorded).
///
/// # Errors
/// `InvalidArgument` for a malformed id or weak mode; `Lance` for I/O errors.
async fn recorded(
    storage: &Storage,
    opts: &WriteOptions,
    strong: bool,
) -> Result<Option<MergeSummary>> {
    let Some(id) = &opts.write_id else {
        return Ok(None);
    };
    check_repeatable(id, strong)?;
    let latest = Snapshot::load(storage, None).await?;
    Ok(latest
        .has_write(id)?
        .then(|| already_committed(latest.version, 1)))
}

/// Refuses messages of another merge than the one planned as `plan` with `nonce`.
fn check_identity(messages: &[&MergeMessage], plan: WritePlan, nonce: &str) -> Result<()> {
    let Some(m) = messages.iter().find(|m| {
        let id = m.staged.identity();
        id.manifest_version != plan.manifest_version || id.nonce != nonce
    }) else {
        return Ok(());
    };
    let id = m.staged.identity();
    Err(Error::InvalidArgument(format!(
        "a staged merge message of merge {} (manifest version {}) cannot commit with merge \
         {nonce} (manifest version {})",
        id.nonce, id.manifest_version, plan.manifest_version
    )))
}

/// The new rows the tasks staged (none without messages).
fn staged_parts(snap: &Snapshot, staged: &[StagedMessage]) -> Result<Vec<StagedPart>> {
    if staged.is_empty() {
        return Ok(Vec::new());
    }
    let (parts, _, _) = merge_messages(snap, staged)?;
    Ok(parts.into_iter().filter(|p| p.rows > 0).collect())
}

/// The messages, each once (a retried driver step may pass one twice).
fn dedupe(messages: &[MergeMessage]) -> Result<Vec<&MergeMessage>> {
    let mut seen = HashSet::new();
    let mut out = Vec::with_capacity(messages.len());
    for m in messages {
        if seen.insert(m.to_bytes()?) {
            out.push(m);
        }
    }
    Ok(out)
}

/// The index of leaf `object_id` in `snap`.
fn leaf_index(snap: &Snapshot, object_id: &str) -> Result<usize> {
    snap.leaves
        .iter()
        .position(|l| l.object_id == object_id)
        .ok_or_else(|| {
            Error::InvalidArgument(format!(
                "a staged merge message names partition {object_id}, which is not in manifest \
                 version {}",
                snap.version
            ))
        })
}

/// The tasks' decisions added up.
struct AddedUp {
    /// Row addresses to delete per leaf index (sorted).
    rows: BTreeMap<usize, Vec<u64>>,
    /// The counts.
    tally: Tally,
    /// Row addresses a source row matched, per leaf index.
    matched: HashMap<usize, HashSet<u64>>,
}

/// Adds up the messages' decisions.
///
/// # Errors
/// `InvalidArgument` when two tasks decided one row or a message names an unknown leaf.
fn added_up(snap: &Snapshot, messages: &[&MergeMessage]) -> Result<AddedUp> {
    let spec = snap.current_spec();
    let key_types = CompiledSpec::compile(spec, &snap.schema(), false)?.output_schema();
    let mut tally = Tally::default();
    let mut rows: BTreeMap<usize, Vec<u64>> = BTreeMap::new();
    let mut matched: HashMap<usize, HashSet<u64>> = HashMap::new();
    for m in messages {
        for l in &m.leaves {
            let i = leaf_index(snap, &l.object_id)?;
            rows.entry(i).or_default().extend(&l.deleted);
            if !l.matched.is_empty() {
                matched.entry(i).or_default().extend(&l.matched);
            }
            let counts = LeafTally {
                updated: l.updated,
                deleted: l.deleted_rows,
                in_place: l.in_place,
            };
            tally.add_leaf(&l.object_id, counts);
        }
        for (text, n) in &m.landed {
            *tally
                .landed
                .entry(key_from_text(text, &key_types)?)
                .or_default() += n;
        }
    }
    for (i, r) in &mut rows {
        let before = r.len();
        r.sort_unstable();
        r.dedup();
        if r.len() != before {
            return Err(Error::InvalidArgument(format!(
                "two tasks of one merge decided the same row of partition {}: the source must \
                 be split so that all rows of one key meet in one task",
                snap.leaves[*i].object_id
            )));
        }
    }
    Ok(AddedUp {
        rows,
        tally,
        matched,
    })
}

impl AddedUp {
    /// Adds the committer's not-matched-by-source deletions; returns the leaves they opened.
    fn add_unmatched(
        &mut self,
        snap: &Snapshot,
        deletions: Vec<Deletions>,
    ) -> HashMap<usize, Arc<Dataset>> {
        let mut opened = HashMap::new();
        for d in deletions {
            let counts = LeafTally {
                deleted: d.rows.len() as u64,
                ..Default::default()
            };
            self.tally.add_leaf(&snap.leaves[d.leaf].object_id, counts);
            self.rows.entry(d.leaf).or_default().extend(d.rows);
            opened.insert(d.leaf, d.dataset);
        }
        opened
    }
}

/// The deletions per leaf, each leaf opened at the version the tasks read (`opened` holds
/// leaves already open).
async fn open_leaves(
    storage: &Storage,
    snap: &Snapshot,
    rows: BTreeMap<usize, Vec<u64>>,
    mut opened: HashMap<usize, Arc<Dataset>>,
    concurrency: usize,
) -> Result<Vec<Deletions>> {
    let wanted = rows.into_iter().filter(|(_, r)| !r.is_empty());
    let pending: Vec<_> = wanted.map(|(i, r)| (i, r, opened.remove(&i))).collect();
    stream::iter(pending.into_iter().map(|(i, rows, open)| async move {
        let dataset = match open {
            Some(ds) => ds,
            None => {
                let leaf = &snap.leaves[i];
                storage.open(&leaf.location, leaf.read_version).await?
            }
        };
        Ok::<_, Error>(Deletions {
            leaf: i,
            dataset,
            rows,
        })
    }))
    .buffer_unordered(concurrency.max(1))
    .try_collect()
    .await
}

/// How the tasks chose the partitions they read: each distinct line once, with the number
/// of tasks that reported it.
fn matching_lines(messages: &[&MergeMessage]) -> Vec<String> {
    let mut count: HashMap<&str, usize> = HashMap::new();
    let mut order = Vec::new();
    for line in messages.iter().flat_map(|m| &m.matching) {
        let n = count.entry(line.as_str()).or_insert(0);
        if *n == 0 {
            order.push(line.as_str());
        }
        *n += 1;
    }
    let mut out = vec![format!("{} task(s)", messages.len())];
    out.extend(order.iter().map(|l| format!("{l} ({} task(s))", count[l])));
    out
}
