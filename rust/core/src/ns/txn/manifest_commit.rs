//! The one way anything becomes visible: an atomic commit to `__manifest`, retried on top of
//! the latest version until it succeeds or the change no longer applies.
//!
//! A [`ManifestUpdate`] plans its change on top of the latest manifest (conflict checks,
//! rebases, adoption); [`commit_manifest`] applies it with one Lance `merge_insert` (or a
//! delete) without Lance's own retries, so that when another commit lands first the update
//! re-plans against what is now there. Lance's row-level conflict detection makes two commits
//! that rewrite the same row (a table's row, or a spec version's row when both create or drop
//! partitions under it) exclusive.

use futures::future::BoxFuture;
use lance::dataset::{
    Dataset, DeleteBuilder, MergeInsertBuilder, WhenMatched, WhenNotMatched, WhenNotMatchedBySource,
};
use std::collections::HashMap;
use std::sync::Arc;

use crate::arrow::array::{Array, AsArray, RecordBatch, UInt32Array, UInt64Array};
use crate::arrow::compute::{cast, concat_batches, take_record_batch};
use crate::arrow::datatypes::{DataType, UInt64Type};
use crate::error::{Error, Result};
use crate::ns::infra::storage::Storage;
use crate::ns::manifest::{
    max_fragments, rows_to_batch, trimmed_versions, Row, Snapshot, DEFAULT_MAX_FRAGMENTS,
    OBJECT_ID, READ_VERSION,
};
use crate::ns::txn::cleanup_marks;
use crate::ns::txn::leaf::{verify_written, Written};
use crate::ns::txn::manifest_compact::compact_if_fragmented;
use crate::ns::txn::retry::{backoff, manifest_race, Committed};

/// A change of the manifest, planned on one snapshot.
#[derive(Debug, Default)]
pub(crate) struct ManifestChange {
    /// Rows of the snapshot to write again (their `read_version` replaced where
    /// `read_versions` names them): rewriting a row is what makes concurrent commits touching
    /// it conflict.
    pub(crate) copy_rows: Vec<usize>,
    /// New `read_version` per table object id.
    pub(crate) read_versions: HashMap<String, u64>,
    /// New rows (or replacements, by object id).
    pub(crate) rows: Vec<Row>,
    /// Object ids to delete.
    pub(crate) delete_ids: Vec<String>,
    /// Delete every row not written by this change that matches this predicate
    /// (`overwrite_all`).
    pub(crate) delete_others: Option<String>,
}

impl ManifestChange {
    fn writes_rows(&self) -> bool {
        !self.copy_rows.is_empty() || !self.rows.is_empty()
    }
}

/// A change that plans itself on top of the latest manifest.
pub(crate) trait ManifestUpdate: Send {
    /// The change on top of `latest`; `None` when there is nothing (left) to commit.
    ///
    /// # Errors
    /// `CommitConflict` when a concurrent commit makes this one impossible.
    fn plan<'a>(
        &'a mut self,
        latest: &'a Snapshot,
    ) -> BoxFuture<'a, Result<Option<ManifestChange>>>;

    /// The leaf versions and files the planned change points at that this operation wrote,
    /// and when the operation started writing them (ms since the epoch, its clock; `None`:
    /// unknown). Before every commit attempt they are checked to exist when a `cleanup()` may
    /// have started since (see `cleanup_marks`).
    fn written(&self) -> (Option<i64>, Vec<Written>) {
        (None, Vec::new())
    }
}

/// Commits `update` to the manifest at `root` (see the module docs).
///
/// # Errors
/// `Corrupt` when the manifest lacks our columns; `CommitConflict` from the update, or after
/// `max_attempts` lost races; `Lance` for I/O errors.
pub(crate) async fn commit_manifest(
    storage: &Storage,
    max_attempts: u32,
    update: &mut dyn ManifestUpdate,
) -> Result<Committed> {
    storage.check_conditional_writes().await?;
    let mut attempt = 0u32;
    let mut fenced_since: Option<std::time::Instant> = None;
    loop {
        attempt += 1;
        // Every attempt starts from the latest version, which another tool may have
        // rewritten since the change was planned: commit only onto a complete manifest.
        let latest = Snapshot::load(storage, None).await?;
        latest.check_writable()?;
        let Some(mut change) = update.plan(&latest).await? else {
            return Ok(Committed {
                version: latest.version,
                attempts: attempt,
            });
        };
        if change.delete_others.is_none() {
            // Retention: the partitions' oldest version rows go in the same commit.
            change
                .delete_ids
                .extend(trimmed_versions(&latest, &change.rows)?);
        }
        let (since_ms, written) = update.written();
        if !written.is_empty() && cleanup_marks::fenced(&latest, since_ms)? {
            // A cleanup is deleting files as old as ours: commit once it is done (its fence
            // commit makes a commit planned before it conflict, so it is planned again here).
            let waited = fenced_since.get_or_insert_with(std::time::Instant::now);
            if waited.elapsed() > FENCE_WAIT {
                return Err(fence_timeout());
            }
            attempt -= 1;
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            continue;
        }
        if !written.is_empty() && cleanup_may_have_run(storage, since_ms).await? {
            verify_written(storage, &written).await?;
        }
        crate::ns::txn::hooks::pause("before_manifest_apply");
        crate::ns::txn::interrupt::enter_commit()?;
        crate::ns::txn::hooks::pause("after_commit_point");
        match apply(&latest, &change).await {
            Ok(dataset) => {
                crate::ns::txn::hooks::pause("after_manifest_commit");
                let version = dataset.version().version;
                // Maintenance after the commit point: the change is visible whatever happens.
                let limit =
                    max_fragments(&latest.root_props.props).unwrap_or(DEFAULT_MAX_FRAGMENTS);
                compact_if_fragmented((*dataset).clone(), limit).await;
                return Ok(Committed {
                    version,
                    attempts: attempt,
                });
            }
            Err(Error::Lance(e)) if manifest_race(&e) && attempt < max_attempts => {
                backoff(attempt).await;
            }
            Err(Error::Lance(e)) if manifest_race(&e) => {
                return Err(Error::CommitConflict(format!(
                    "gave up after {attempt} manifest commit attempts: concurrent commits kept \
                     landing first ({})",
                    crate::error::user_message(&e.to_string())
                )))
            }
            Err(e) => return Err(e),
        }
    }
}

/// How long a commit waits for a running cleanup that may remove its files.
const FENCE_WAIT: std::time::Duration = std::time::Duration::from_secs(120);

fn fence_timeout() -> Error {
    Error::CommitConflict(format!(
        "a cleanup() with a grace period shorter than this operation has been running for \
         more than {} s; nothing was committed, run it again",
        FENCE_WAIT.as_secs()
    ))
}

/// Waits until no running cleanup may remove files written since `since_ms` (at most
/// [`FENCE_WAIT`]): for visible steps outside the manifest commit (weak-mode leaf commits).
///
/// # Errors
/// `CommitConflict` when a cleanup keeps running; `Lance` for I/O errors.
pub(crate) async fn wait_for_cleanups(storage: &Storage, since_ms: Option<i64>) -> Result<()> {
    let started = std::time::Instant::now();
    while cleanup_marks::fenced(&Snapshot::load(storage, None).await?, since_ms)? {
        if started.elapsed() > FENCE_WAIT {
            return Err(fence_timeout());
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    Ok(())
}

/// Whether a cleanup could have removed files written since `since_ms` (`None`: unknown).
pub(crate) async fn cleanup_may_have_run(storage: &Storage, since_ms: Option<i64>) -> Result<bool> {
    match since_ms {
        Some(t) => cleanup_marks::any_since(storage, t).await,
        None => Ok(true),
    }
}

/// Applies `change` to `latest` in one Lance commit; returns the new version.
async fn apply(latest: &Snapshot, change: &ManifestChange) -> Result<Arc<Dataset>> {
    let delete_ids = (!change.delete_ids.is_empty()).then(|| {
        let list: Vec<String> = change
            .delete_ids
            .iter()
            .map(|id| format!("'{}'", id.replace('\'', "''")))
            .collect();
        format!("{OBJECT_ID} IN ({})", list.join(", "))
    });
    if !change.writes_rows() {
        // Nothing written: only deletes (of named rows, or of every row an `overwrite_all`
        // of no rows does not keep).
        let expr = change
            .delete_others
            .clone()
            .or(delete_ids)
            .unwrap_or_else(|| "false".into());
        let r = DeleteBuilder::new(Arc::clone(&latest.dataset), expr)
            .conflict_retries(0)
            .execute()
            .await?;
        return Ok(r.new_dataset);
    }
    let batch = source_batch(latest, change)?;
    let mut b = MergeInsertBuilder::try_new(Arc::clone(&latest.dataset), vec![OBJECT_ID.into()])?;
    b.when_matched(WhenMatched::UpdateAll)
        .when_not_matched(WhenNotMatched::InsertAll)
        .conflict_retries(0)
        .skip_auto_cleanup(true);
    if let Some(expr) = change.delete_others.as_ref().or(delete_ids.as_ref()) {
        b.when_not_matched_by_source(WhenNotMatchedBySource::delete_if(&latest.dataset, expr)?);
    }
    let (ds, _) = b.try_build()?.execute_batches(vec![batch]).await?;
    Ok(ds)
}

/// The rows `change` writes, in the manifest's schema.
fn source_batch(latest: &Snapshot, change: &ManifestChange) -> Result<RecordBatch> {
    let mschema = latest.batch.schema();
    let mut source = Vec::with_capacity(2);
    if !change.copy_rows.is_empty() {
        // One row rewritten for several reasons (a spec version row that both a created and
        // a dropped partition rewrite) is written once: twice would be an ambiguous merge.
        let rows: std::collections::BTreeSet<usize> = change.copy_rows.iter().copied().collect();
        let idx = UInt32Array::from_iter_values(rows.into_iter().map(|r| r as u32));
        let copied = take_record_batch(&latest.batch, &idx)?;
        source.push(set_read_versions(&copied, &change.read_versions)?);
    }
    if !change.rows.is_empty() {
        source.push(rows_to_batch(&mschema, &change.rows)?);
    }
    Ok(concat_batches(&mschema, &source)?)
}

/// `batch` with the `read_version` of the rows `new_versions` names replaced.
fn set_read_versions(
    batch: &RecordBatch,
    new_versions: &HashMap<String, u64>,
) -> Result<RecordBatch> {
    if new_versions.is_empty() {
        return Ok(batch.clone());
    }
    let Some(idx) = batch.schema().index_of(READ_VERSION).ok() else {
        return Ok(batch.clone());
    };
    let ids = cast(
        batch
            .column_by_name(OBJECT_ID)
            .ok_or_else(|| Error::Corrupt("no object_id".into()))?,
        &DataType::Utf8,
    )?;
    let ids = ids.as_string::<i32>();
    let old = batch.column(idx).as_primitive::<UInt64Type>();
    let new: UInt64Array = (0..batch.num_rows())
        .map(|r| match new_versions.get(ids.value(r)) {
            Some(v) => Some(*v),
            None => (!old.is_null(r)).then(|| old.value(r)),
        })
        .collect();
    let mut cols = batch.columns().to_vec();
    cols[idx] = Arc::new(new);
    Ok(RecordBatch::try_new(batch.schema(), cols)?)
}
