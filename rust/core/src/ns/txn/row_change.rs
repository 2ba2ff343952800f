//! The transaction of a row-level change (`merge_insert`, `update`, `apply_changes`): each
//! changed partition's leaf gets one Lance `Update` commit, its deleted rows as deletion
//! files and its new rows as fragments (a partition written under an older schema that gets
//! new rows is rewritten: its kept rows under the current schema, then the new ones); a
//! partition left without rows is dropped instead; new partitions are created. Then the
//! manifest is committed once ([`crate::ns::txn::conflict::row_change`]), on the condition
//! that no partition the change read has changed since: otherwise nothing is visible (strong
//! mode) and the operation runs again on the new versions.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use futures::stream::{self, StreamExt, TryStreamExt};
use lance::dataset::transaction::{Operation, Transaction, UpdateMode};
use lance::dataset::{Dataset, InsertBuilder, WriteMode};
use lance::table::format::Fragment;

use crate::datafusion::scalar::ScalarValue;
use crate::error::{lost_race, Error, Result};
use crate::ns::infra::storage::Storage;
use crate::ns::leaf_io::{
    fresh_lance_schema, leaf_schema, op_fragments, read_adapted, write_params, Schemas,
};
use crate::ns::manifest::Snapshot;
pub(crate) use crate::ns::txn::conflict::row_change::ChangedLeaf;
use crate::ns::txn::conflict::row_change::{LeafCommit, RowChangeUpdate};
use crate::ns::txn::hooks;
use crate::ns::txn::leaf::{commit_leaf, commit_leaf_transaction, settled, Pending};
use crate::ns::txn::manifest_commit::commit_manifest;
use crate::ns::txn::retry::Committed;
use crate::ns::write::{StagedPart, Target};

/// Rows to delete in one partition.
pub(crate) struct Deletions {
    /// Index into the base snapshot's leaves.
    pub(crate) leaf: usize,
    /// The leaf at the version the change read.
    pub(crate) dataset: Arc<Dataset>,
    /// Row addresses (fragment id << 32 | offset).
    pub(crate) rows: Vec<u64>,
}

/// A row-level change, decided on `base`.
pub(crate) struct RowChange {
    /// The snapshot the change was decided on.
    pub(crate) base: Arc<Snapshot>,
    /// Leaves read (indexes into `base.leaves`): a concurrent change to one is a conflict.
    pub(crate) read: Vec<usize>,
    /// Rows to delete, per partition.
    pub(crate) deletions: Vec<Deletions>,
    /// New rows staged by the partitioning writer, per partition of the current spec.
    pub(crate) parts: Vec<StagedPart>,
    /// The operation `history()` shows (`merge`, `update`).
    pub(crate) operation: &'static str,
    /// The write id the commit records on its `table_version` rows; a manifest that already
    /// records it makes the commit a no-op.
    pub(crate) write_id: Option<String>,
}

/// Commits `change`; see the module docs. Returns the manifest commit and what changed
/// (nothing, when the manifest already recorded the change's write id).
///
/// # Errors
/// `CommitConflict` when a partition the change read changed concurrently (nothing visible
/// in strong mode); `Lance` for I/O errors.
pub(crate) async fn commit_row_change(
    storage: &Storage,
    change: RowChange,
    strong: bool,
    concurrency: usize,
    max_attempts: u32,
    started_ms: i64,
) -> Result<(Committed, Vec<ChangedLeaf>)> {
    let base = Arc::clone(&change.base);
    let (existing, created_parts) = by_leaf(&base, change.deletions, change.parts)?;
    let leaves = LeafCommits {
        storage,
        base: &base,
        strong,
        concurrency: concurrency.max(1),
        operation: change.operation,
    };
    hooks::pause("row_change_before_leaves");
    let (changed, created) = leaves.commit(existing, created_parts).await?;
    let spec = base.current_spec();
    let mut update = RowChangeUpdate {
        s0: &base,
        read: change
            .read
            .iter()
            .map(|&i| {
                (
                    base.leaves[i].object_id.clone(),
                    base.leaves[i].read_version,
                )
            })
            .collect(),
        leaves: changed,
        created,
        spec_id: spec.id,
        field_ids: spec.fields.iter().map(|f| f.field_id.clone()).collect(),
        strong,
        started_ms,
        operation: change.operation,
        write_id: change.write_id,
        already_committed: false,
    };
    let committed = match commit_manifest(storage, max_attempts, &mut update).await {
        Ok(c) => c,
        Err(e) => return Err(leaves.partial(&update.leaves, e)),
    };
    if update.already_committed {
        // Our leaf versions stay unreferenced (cleanup() removes them).
        return Ok((committed, Vec::new()));
    }
    Ok((committed, update.changed()))
}

/// One existing partition's deletions and new rows.
type ExistingChange = (Option<Deletions>, Option<StagedPart>);

/// The changes per existing leaf (index into `base.leaves`), and the parts of new partitions.
fn by_leaf(
    base: &Snapshot,
    deletions: Vec<Deletions>,
    parts: Vec<StagedPart>,
) -> Result<(BTreeMap<usize, ExistingChange>, Vec<StagedPart>)> {
    let position: HashMap<&str, usize> = base
        .leaves
        .iter()
        .enumerate()
        .map(|(i, l)| (l.object_id.as_str(), i))
        .collect();
    let mut existing: BTreeMap<usize, ExistingChange> = BTreeMap::new();
    let mut created = Vec::new();
    for d in deletions {
        let i = d.leaf;
        existing.entry(i).or_default().0 = Some(d);
    }
    for p in parts {
        match &p.target {
            Target::Existing { object_id, .. } => {
                let i = *position.get(object_id.as_str()).ok_or_else(|| {
                    Error::Internal(format!("staged part for unknown leaf {object_id}"))
                })?;
                existing.entry(i).or_default().1 = Some(p);
            }
            Target::New { .. } => created.push(p),
        }
    }
    Ok((existing, created))
}

/// The leaf commits of one change.
struct LeafCommits<'a> {
    storage: &'a Storage,
    base: &'a Arc<Snapshot>,
    strong: bool,
    concurrency: usize,
    operation: &'static str,
}

impl LeafCommits<'_> {
    /// Commits every existing leaf's change and creates the new partitions' leaves.
    async fn commit(
        &self,
        existing: BTreeMap<usize, ExistingChange>,
        created: Vec<StagedPart>,
    ) -> Result<(Vec<LeafCommit>, Vec<Pending>)> {
        let ns = self.base.schema();
        let schemas = Schemas {
            leaf: leaf_schema(&ns),
            ns,
        };
        let fresh = fresh_lance_schema(&schemas.leaf)?;
        let keys = self.base.keys()?;
        let (schemas, fresh) = (&schemas, &fresh);
        let results: Vec<Result<LeafCommit>> =
            stream::iter(existing.into_iter().map(|(i, change)| {
                let key = keys.leaf_values[i].clone();
                async move {
                    let leaf = ExistingLeaf {
                        storage: self.storage,
                        base: self.base,
                        schemas,
                        fresh,
                    };
                    leaf.commit((i, key), change, self.strong).await
                }
            }))
            .buffer_unordered(self.concurrency)
            .collect()
            .await;
        let (changed, failed) = settled(results);
        if let Some(e) = failed {
            return Err(self.partial(&changed, e));
        }
        let created = stream::iter(
            created
                .into_iter()
                .map(|p| commit_leaf(self.storage, p, false, self.strong, fresh)),
        )
        .buffer_unordered(self.concurrency)
        .try_collect::<Vec<Pending>>()
        .await
        .map_err(|e| self.partial(&changed, e))?;
        Ok((changed, created))
    }

    /// The error of a change that failed after its leaf commits began. In strong mode they
    /// are invisible until the manifest commit, so the error stands as it is. In weak mode
    /// every existing partition whose leaf was committed is visible already: say so, and
    /// which (each partition's own change is whole; partitions it would have created are
    /// not visible).
    fn partial(&self, committed: &[LeafCommit], e: Error) -> Error {
        let visible: Vec<&LeafCommit> =
            committed.iter().filter(|l| l.committed.is_some()).collect();
        if self.strong || visible.is_empty() {
            return e;
        }
        let shown: Vec<String> = visible
            .iter()
            .take(5)
            .map(|l| self.base.describe_leaf(&l.object_id))
            .collect();
        let more = visible.len() - shown.len();
        let more = if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        };
        Error::PartialCommit(format!(
            "weak-mode {} failed after committing {} existing partition(s), which are now \
             visible with their whole change: {}{more}; its other partitions are unchanged \
             and partitions it would have created are not visible. Cause: {e}",
            self.operation,
            visible.len(),
            shown.join("; "),
        ))
    }
}

/// What committing an existing leaf's change needs.
struct ExistingLeaf<'a> {
    storage: &'a Storage,
    base: &'a Snapshot,
    schemas: &'a Schemas,
    fresh: &'a lance::datatypes::Schema,
}

impl ExistingLeaf<'_> {
    /// Commits one existing partition's deletions and new rows to its leaf.
    async fn commit(
        &self,
        (i, key): (usize, Vec<ScalarValue>),
        (deletions, part): ExistingChange,
        strong: bool,
    ) -> Result<LeafCommit> {
        let (storage, schemas, fresh) = (self.storage, self.schemas, self.fresh);
        let leaf = &self.base.leaves[i];
        let ds = match (&deletions, part.as_ref().and_then(|p| p.dataset.clone())) {
            (Some(d), _) => Arc::clone(&d.dataset),
            (None, Some(ds)) => ds,
            (None, None) => storage.open(&leaf.location, leaf.read_version).await?,
        };
        let read_version = ds.version().version;
        let rows = deletions.map(|d| d.rows).unwrap_or_default();
        let (new_fragments, rewrite, stats) = match part {
            Some(p) => (p.fragments, p.rewrite, p.stats),
            None => (Vec::new(), false, None),
        };
        let added: u64 = new_fragments
            .iter()
            .map(|f| f.physical_rows.unwrap_or(0) as u64)
            .sum();
        let mut out = LeafCommit {
            object_id: leaf.object_id.clone(),
            location: leaf.location.clone(),
            spec_id: leaf.spec_id,
            key,
            base: strong.then_some(read_version),
            committed: None,
            added,
            deleted: rows.len() as u64,
            fragments: new_fragments.clone(),
            stats,
        };
        if added == 0 && ds.count_rows(None).await? as u64 <= rows.len() as u64 {
            return Ok(out); // every row goes: the partition is dropped
        }
        let op = if rewrite && added > 0 {
            let except = rows.iter().copied().collect();
            let kept = read_adapted(&ds, schemas, &except).await?;
            let mut fragments = if kept.is_empty() {
                Vec::new()
            } else {
                let txn = InsertBuilder::new(Arc::clone(&ds))
                    .with_params(&write_params(storage, WriteMode::Overwrite)?)
                    .execute_uncommitted(kept)
                    .await?;
                op_fragments(txn.operation)?.0
            };
            fragments.extend(new_fragments);
            Operation::Overwrite {
                fragments,
                schema: fresh.clone(),
                config_upsert_values: None,
                initial_bases: None,
            }
        } else {
            let (updated_fragments, removed_fragment_ids) = apply_deletions(&ds, &rows).await?;
            Operation::Update {
                removed_fragment_ids,
                updated_fragments,
                new_fragments,
                fields_modified: Vec::new(),
                compacted_sstables: Vec::new(),
                fields_for_preserving_frag_bitmap: Vec::new(),
                update_mode: Some(UpdateMode::RewriteRows),
                inserted_rows_filter: None,
                updated_fragment_offsets: None,
            }
        };
        let txn = Transaction::new(read_version, op, None);
        let committed = commit_leaf_transaction(ds, txn, strong, |b| b).await;
        out.committed = Some(committed.map_err(|e| self.conflict(&leaf.object_id, e))?);
        Ok(out)
    }

    /// A leaf commit's error: a lost race (weak mode: another commit changed rows of the
    /// partition since the change read it, and Lance refuses to rebase it; nothing of this
    /// partition is visible) as a `CommitConflict` naming the partition.
    fn conflict(&self, object_id: &str, e: Error) -> Error {
        match e {
            Error::Lance(l) if lost_race(&l) => Error::CommitConflict(format!(
                "partition ({}) was changed by a concurrent commit after this change read it \
                 ({l})",
                self.base.describe_leaf(object_id)
            )),
            other => other,
        }
    }
}

/// Writes the deletion files of `rows` (row addresses): the fragments with new deletion
/// files, and the ids of fragments left without rows.
async fn apply_deletions(ds: &Dataset, rows: &[u64]) -> Result<(Vec<Fragment>, Vec<u64>)> {
    let mut by_fragment: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    for &a in rows {
        by_fragment
            .entry((a >> 32) as u32)
            .or_default()
            .push((a & 0xFFFF_FFFF) as u32);
    }
    let mut updated = Vec::new();
    let mut removed = Vec::new();
    for (id, offsets) in by_fragment {
        let fragment = ds.get_fragment(id as usize).ok_or_else(|| {
            Error::Internal(format!(
                "row address names fragment {id}, which is not in the leaf"
            ))
        })?;
        match fragment.extend_deletions(offsets).await? {
            Some(f) => updated.push(f.metadata().clone()),
            None => removed.push(u64::from(id)),
        }
    }
    Ok((updated, removed))
}
