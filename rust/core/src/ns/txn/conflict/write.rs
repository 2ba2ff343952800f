//! The manifest half of a write transaction: [`WriteUpdate`] plans a write's manifest change on
//! top of the latest manifest, resolving conflicts with the commits that landed since the
//! write's base version (S0):
//!
//! - a partition created concurrently with the same values is adopted: our rows are copied
//!   into it, so there are never two partitions with equal values (an overwrite fails);
//! - an append to a table another commit appended to (or deleted rows from) is rebased: our
//!   fragments are committed again on top of the new version;
//! - anything else that changed a table we write (an overwrite, a drop) fails with
//!   `CommitConflict` naming the partition.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use futures::future::BoxFuture;
use futures::TryStreamExt;
use lance::dataset::transaction::{Operation, Transaction};
use lance::dataset::{CommitBuilder, InsertBuilder, WriteMode};
use lance::table::format::Fragment;

use crate::arrow::array::RecordBatch;
use crate::datafusion::scalar::ScalarValue;
use crate::error::{Error, Result};
use crate::ns::infra::storage::Storage;
use crate::ns::infra::values;
use crate::ns::leaf_io::{op_fragments, write_params};
use crate::ns::manifest::{
    describe_key, LeafVersion, Row, Snapshot, NAMESPACE, TABLE, TABLE_VERSION, WRITE_ID_KEY,
};
use crate::ns::txn::conflict::{carried_stats, version_row, Added, VersionStats};
use crate::ns::txn::leaf::{rewritten_under_another_schema, Pending, Written};
use crate::ns::txn::manifest_commit::{ManifestChange, ManifestUpdate};
use crate::ns::write::options::Mode;
use crate::ns::LEAF_TABLE;

/// A write's manifest change; see the module docs.
pub(crate) struct WriteUpdate<'a> {
    pub(crate) storage: &'a Storage,
    pub(crate) spec_id: i32,
    pub(crate) field_ids: Vec<String>,
    pub(crate) pending: Vec<Pending>,
    pub(crate) strong: bool,
    pub(crate) mode: Mode,
    pub(crate) write_id: Option<String>,
    /// Set when the latest manifest already holds this write (a repeated commit).
    pub(crate) already_committed: bool,
    /// Partitions an `overwrite_all` drops.
    pub(crate) dropped: u64,
    /// When the parts' staging started (the writer's clock, ms; `None`: unknown).
    pub(crate) staged_since_ms: Option<i64>,
    /// Rebases done over all attempts.
    pub(crate) rebased: u64,
    /// Concurrently created partitions adopted.
    pub(crate) adopted: u64,
}

impl ManifestUpdate for WriteUpdate<'_> {
    fn plan<'a>(
        &'a mut self,
        latest: &'a Snapshot,
    ) -> BoxFuture<'a, Result<Option<ManifestChange>>> {
        Box::pin(self.plan_on(latest))
    }

    fn written(&self) -> (Option<i64>, Vec<Written>) {
        let written = self
            .pending
            .iter()
            .map(|p| Written::new(&p.location, p.committed.version, &p.fragments))
            .collect();
        (self.staged_since_ms, written)
    }
}

impl WriteUpdate<'_> {
    async fn plan_on(&mut self, latest: &Snapshot) -> Result<Option<ManifestChange>> {
        if let Some(id) = &self.write_id {
            if latest.has_write(id)? {
                // A concurrent commit of this same write won: ours is a no-op (its leaf
                // versions stay unreferenced; cleanup() removes them).
                self.already_committed = true;
                return Ok(None);
            }
        }
        let mut change = ManifestChange::default();
        let mut created_ns = HashMap::new();
        let mut creating = false;
        for i in 0..self.pending.len() {
            if self.pending[i].created {
                self.adopt_if_created(latest, i).await?;
            }
            if self.pending[i].created {
                creating = true;
                self.register_new(latest, i, &mut created_ns, &mut change.rows)?;
            } else {
                self.update_existing(latest, i, &mut change).await?;
            }
        }
        if creating {
            // Rewrite the spec version row: concurrent creators conflict on it in Lance.
            if let Some(&r) = latest.keys()?.row_by_id.get(&format!("v{}", self.spec_id)) {
                change.copy_rows.push(r);
            }
        }
        if self.mode == Mode::OverwriteAll {
            self.keep_only_written(latest, &mut change)?;
        }
        if let Some(id) = &self.write_id {
            tag_version_rows(&mut change, id);
        }
        if change.copy_rows.is_empty() && change.rows.is_empty() && change.delete_others.is_none() {
            return Ok(None);
        }
        if self.strong {
            change.read_versions = self
                .pending
                .iter()
                .filter(|p| !p.created)
                .filter_map(|p| p.object_id.clone().map(|o| (o, p.committed.version)))
                .collect();
        }
        Ok(Some(change))
    }

    fn describe(&self, key: &[ScalarValue]) -> String {
        describe_key(&self.field_ids, key)
    }

    /// A partition we created that a concurrent write created too (same values): copy our
    /// rows into theirs.
    async fn adopt_if_created(&mut self, latest: &Snapshot, i: usize) -> Result<()> {
        let Some(leaf) = latest.leaf(self.spec_id, &self.pending[i].key)? else {
            return Ok(());
        };
        if self.mode != Mode::Append {
            return Err(Error::CommitConflict(format!(
                "partition ({}) was created by a concurrent write during this overwrite",
                self.describe(&self.pending[i].key)
            )));
        }
        let p = &self.pending[i];
        let (committed, copied) = copy_into(
            self.storage,
            (&p.location, p.committed.version),
            (&leaf.location, leaf.read_version),
            self.strong,
        )
        .await
        .map_err(|e| rewritten_under_another_schema(e, &self.describe(&p.key)))?;
        let p = &mut self.pending[i];
        p.created = false;
        p.object_id = Some(leaf.object_id.clone());
        p.location = leaf.location.clone();
        p.base = leaf.read_version;
        p.committed = committed;
        p.operation = "append";
        // Later rebases re-append exactly the copied rows.
        p.fragments = copied;
        self.adopted += 1;
        Ok(())
    }

    /// The namespace, table and version rows of a partition this write creates.
    fn register_new(
        &mut self,
        latest: &Snapshot,
        i: usize,
        created_ns: &mut HashMap<Vec<ScalarValue>, String>,
        rows: &mut Vec<Row>,
    ) -> Result<()> {
        let p = &self.pending[i];
        let new = NewPartition {
            spec_id: self.spec_id,
            field_ids: &self.field_ids,
            strong: self.strong,
        };
        let oid = new.register(latest, p, created_ns, rows)?;
        self.pending[i].object_id = Some(oid);
        Ok(())
    }

    /// An existing partition: still there, and (strong mode) rebased onto concurrent appends.
    async fn update_existing(
        &mut self,
        latest: &Snapshot,
        i: usize,
        change: &mut ManifestChange,
    ) -> Result<()> {
        let oid = self.pending[i].object_id.clone().unwrap_or_default();
        let Some(leaf) = latest.leaf_by_id(&oid)? else {
            return Err(Error::CommitConflict(format!(
                "partition ({}) was dropped by a concurrent write",
                self.describe(&self.pending[i].key)
            )));
        };
        if !self.strong {
            return Ok(());
        }
        let (row, current) = (leaf.row, leaf.read_version);
        if current != self.pending[i].base {
            self.rebase(latest, i, &oid, current).await?;
        }
        let p = &self.pending[i];
        let stats = match p.operation {
            "append" => {
                let ids = p.committed.ids_of(&p.fragments);
                let added = Added {
                    stats: p.stats.as_ref(),
                    rows: p.rows(),
                    ids: &ids,
                };
                carried_stats(latest, &oid, p.base, &p.committed, added, &[])?
            }
            _ => VersionStats::written(p.stats.as_ref()),
        };
        change.copy_rows.push(row);
        change.rows.push(version_row(
            &oid,
            &p.committed,
            (p.operation, p.base),
            p.rows(),
            &stats,
        ));
        Ok(())
    }

    /// Someone committed to this table since our base: rebase appends, refuse the rest.
    async fn rebase(
        &mut self,
        latest: &Snapshot,
        i: usize,
        oid: &str,
        current: Option<u64>,
    ) -> Result<()> {
        let key = self.describe(&self.pending[i].key);
        if self.pending[i].operation != "append" {
            return Err(Error::CommitConflict(format!(
                "partition ({key}) was changed by a concurrent write during this overwrite"
            )));
        }
        let (location, base) = (&self.pending[i].location, self.pending[i].base);
        check_append_chain(self.storage, location, latest, oid, (current, base))
            .await
            .map_err(|e| match e {
                Error::CommitConflict(m) => {
                    Error::CommitConflict(format!("partition ({key}): {m}"))
                }
                other => other,
            })?;
        let p = &mut self.pending[i];
        let ds = self.storage.open(&p.location, current).await?;
        let read_version = ds.version().version;
        let op = Operation::Append {
            fragments: p.fragments.clone(),
        };
        let committed = CommitBuilder::new(ds)
            .with_detached(true)
            .with_skip_auto_cleanup(true)
            .execute(Transaction::new(read_version, op, None))
            .await
            .map_err(|e| rewritten_under_another_schema(e, &key))?;
        p.base = Some(read_version);
        p.committed = LeafVersion::of(&committed).await?;
        self.rebased += 1;
        Ok(())
    }

    /// `overwrite_all`: keep exactly the written partitions (their ancestors and history),
    /// delete every other row below a spec version.
    fn keep_only_written(&mut self, latest: &Snapshot, change: &mut ManifestChange) -> Result<()> {
        let k1 = latest.keys()?;
        let keep: HashSet<String> = self
            .pending
            .iter()
            .filter_map(|p| p.object_id.clone())
            .collect();
        let mut keep_rows: HashSet<usize> = change.copy_rows.iter().copied().collect();
        for oid in &keep {
            let parts: Vec<&str> = oid.split('$').collect();
            for i in 1..parts.len() {
                if let Some(&r) = k1.row_by_id.get(&parts[..=i].join("$")) {
                    keep_rows.insert(r);
                }
            }
            for v in k1.versions.get(oid).into_iter().flatten() {
                if let Some(&r) = k1.row_by_id.get(&format!("{oid}${}", v.version)) {
                    keep_rows.insert(r);
                }
            }
        }
        self.dropped = latest
            .leaves
            .iter()
            .filter(|l| !keep.contains(&l.object_id))
            .count() as u64;
        change.copy_rows = keep_rows.into_iter().collect();
        change.copy_rows.sort_unstable();
        change.delete_others = Some("object_id LIKE 'v%$%'".to_string());
        Ok(())
    }
}

/// Copies the rows of a leaf version into another table (detached append on top of `base`);
/// returns the new version and the appended fragments (to rebase them again if needed).
async fn copy_into(
    storage: &Storage,
    (from_location, from_version): (&str, u64),
    (to_location, base): (&str, Option<u64>),
    strong: bool,
) -> Result<(LeafVersion, Vec<Fragment>)> {
    let src = storage.open(from_location, Some(from_version)).await?;
    let batches: Vec<RecordBatch> = src.scan().try_into_stream().await?.try_collect().await?;
    let dst = storage.open(to_location, base).await?;
    let read_version = dst.version().version;
    if batches.iter().all(|b| b.num_rows() == 0) {
        return Ok((LeafVersion::of(&dst).await?, Vec::new()));
    }
    let txn = InsertBuilder::new(Arc::clone(&dst))
        .with_params(&write_params(storage, WriteMode::Append)?)
        .execute_uncommitted(batches)
        .await?;
    let (fragments, _) = op_fragments(txn.operation.clone())?;
    crate::ns::txn::interrupt::enter_leaf_commit(strong)?;
    let committed = CommitBuilder::new(dst)
        .with_detached(strong)
        .with_skip_auto_cleanup(true)
        .execute(Transaction::new(read_version, txn.operation, None))
        .await?;
    Ok((LeafVersion::of(&committed).await?, fragments))
}

/// Where a commit registers the partitions it created.
pub(crate) struct NewPartition<'a> {
    pub(crate) spec_id: i32,
    pub(crate) field_ids: &'a [String],
    pub(crate) strong: bool,
}

impl NewPartition<'_> {
    /// The rows of partition `p` (created by this commit): its namespaces (reusing those
    /// that exist), its table row and, in strong mode, its version row. Returns its object id.
    pub(crate) fn register(
        &self,
        latest: &Snapshot,
        p: &Pending,
        created_ns: &mut HashMap<Vec<ScalarValue>, String>,
        rows: &mut Vec<Row>,
    ) -> Result<String> {
        let oid = plan_namespaces(latest, self.spec_id, self.field_ids, p, created_ns, rows)?;
        rows.push(Row {
            object_id: oid.clone(),
            object_type: TABLE.into(),
            location: Some(p.location.clone()),
            props: HashMap::new(),
            read_version: self.strong.then_some(p.committed.version),
            values: self
                .field_ids
                .iter()
                .cloned()
                .zip(p.key.iter().cloned())
                .collect(),
        });
        if self.strong {
            let stats = VersionStats::written(p.stats.as_ref());
            rows.push(version_row(
                &oid,
                &p.committed,
                ("create", None),
                p.rows(),
                &stats,
            ));
        }
        Ok(oid)
    }
}

/// The namespace rows a new partition needs, reusing namespaces that exist (in the latest
/// manifest, or created by this commit) and otherwise the planned ids; returns the new leaf's
/// object id.
fn plan_namespaces(
    latest: &Snapshot,
    spec_id: i32,
    field_ids: &[String],
    p: &Pending,
    created_ns: &mut HashMap<Vec<ScalarValue>, String>,
    rows: &mut Vec<Row>,
) -> Result<String> {
    let mut parent = format!("v{spec_id}");
    for level in 1..=p.key.len() {
        let prefix = p.key[..level].to_vec();
        if let Some(oid) = latest.keys()?.ns_by_key.get(&(spec_id, prefix.clone())) {
            parent = oid.clone();
            continue;
        }
        if let Some(oid) = created_ns.get(&prefix) {
            parent = oid.clone();
            continue;
        }
        let seg = match p.path.get(level - 1) {
            Some(s) => s.clone(),
            None => crate::ns::infra::ids::random_id()?,
        };
        let oid = format!("{parent}${seg}");
        rows.push(Row {
            object_id: oid.clone(),
            object_type: NAMESPACE.into(),
            location: None,
            props: values::properties(&field_ids[level - 1], &p.key[level - 1])?
                .into_iter()
                .collect(),
            read_version: None,
            values: field_ids[..level]
                .iter()
                .cloned()
                .zip(prefix.iter().cloned())
                .collect(),
        });
        created_ns.insert(prefix, oid.clone());
        parent = oid;
    }
    Ok(format!("{parent}${LEAF_TABLE}"))
}

/// Every version between `base` (exclusive) and `current` of the leaf at `location` must be an
/// append, a row delete, a compaction or a row-level change: as the manifest records it, or,
/// for versions whose rows retention removed, as the leaf's Lance transaction says.
async fn check_append_chain(
    storage: &Storage,
    location: &str,
    latest: &Snapshot,
    oid: &str,
    (current, base): (Option<u64>, Option<u64>),
) -> Result<()> {
    let recorded = latest.table_versions(oid)?;
    let mut v = current;
    let mut steps = 0usize;
    while v != base {
        let Some(ver) = v else { break };
        let (op, from) = match recorded.iter().find(|t| t.version == ver) {
            Some(entry) => (
                entry.props.get("operation").cloned().unwrap_or_default(),
                entry.props.get("base_version").and_then(|b| b.parse().ok()),
            ),
            None => leaf_step(storage, location, ver).await?,
        };
        // Appends rebase over appends, row deletes, compactions, index builds and row-level
        // changes (an append is blind, so it may land after a merge or an update); anything
        // else replaced the data.
        if !matches!(
            op.as_str(),
            "append" | "delete" | "compact" | "index" | "merge" | "update"
        ) {
            return Err(Error::CommitConflict(format!(
                "it was changed by a concurrent {op} (version {ver})"
            )));
        }
        v = from;
        steps += 1;
        if steps > 100_000 {
            break;
        }
    }
    if v != base {
        return Err(Error::CommitConflict(format!(
            "cannot trace its leaf versions back to {base:?}"
        )));
    }
    Ok(())
}

/// What version `ver` of the leaf at `location` did and the version it was made from, as its
/// Lance transaction records them (for versions the manifest no longer records).
async fn leaf_step(storage: &Storage, location: &str, ver: u64) -> Result<(String, Option<u64>)> {
    let ds = storage.open(location, Some(ver)).await?;
    let Some(txn) = ds.read_transaction().await? else {
        return Err(Error::CommitConflict(format!(
            "its leaf moved to version {ver}, which neither the manifest nor the leaf records"
        )));
    };
    let op = match txn.operation {
        Operation::Append { .. } => "append".to_string(),
        Operation::Delete { .. } => "delete".to_string(),
        Operation::Rewrite { .. } => "compact".to_string(),
        Operation::Update { .. } => "update".to_string(),
        Operation::CreateIndex { .. } => "index".to_string(),
        other => other.name().to_lowercase(),
    };
    Ok((op, Some(txn.read_version)))
}

/// Records write id `id` on the `table_version` rows `change` adds.
pub(crate) fn tag_version_rows(change: &mut ManifestChange, id: &str) {
    for r in change
        .rows
        .iter_mut()
        .filter(|r| r.object_type == TABLE_VERSION)
    {
        r.props.insert(WRITE_ID_KEY.to_string(), id.to_string());
    }
}
