//! The one way anything becomes visible: an atomic commit to `__manifest`, retried on top of
//! the latest version until it succeeds or the change no longer applies.
//!
//! A [`ManifestUpdate`] plans its change on top of the latest manifest (conflict checks,
//! rebases, adoption); [`commit_manifest`] applies it with one Lance `merge_insert` (or a
//! delete) without Lance's own retries, so that when another commit lands first the update
//! re-plans against what is now there. Lance's row-level conflict detection makes two commits
//! that rewrite the same row (a table's row, or a spec version's row when both create or drop
//! partitions under it) exclusive.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use lance::dataset::{
    DeleteBuilder, MergeInsertBuilder, WhenMatched, WhenNotMatched, WhenNotMatchedBySource,
};

use crate::arrow::array::{Array, AsArray, RecordBatch, UInt32Array, UInt64Array};
use crate::arrow::compute::{cast, concat_batches, take_record_batch};
use crate::arrow::datatypes::{DataType, UInt64Type};
use crate::error::{Error, Result};
use crate::ns::manifest::{rows_to_batch, Row, Snapshot, OBJECT_ID, READ_VERSION};
use crate::ns::storage::Storage;

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
}

/// The outcome of [`commit_manifest`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct Committed {
    /// The manifest version after the commit (the latest one when nothing was committed).
    pub(crate) version: u64,
    /// Commit attempts.
    pub(crate) attempts: u32,
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
    loop {
        attempt += 1;
        // Every attempt starts from the latest version, which another tool may have
        // rewritten since the change was planned: commit only onto a complete manifest.
        let latest = Snapshot::load(storage, None).await?;
        latest.check_writable()?;
        let Some(change) = update.plan(&latest).await? else {
            return Ok(Committed {
                version: latest.version,
                attempts: attempt,
            });
        };
        match apply(&latest, &change).await {
            Ok(version) => {
                return Ok(Committed {
                    version,
                    attempts: attempt,
                })
            }
            Err(Error::Lance(e)) if is_retryable(&e) && attempt < max_attempts => {
                let jitter = u64::from(getrandom::u32().unwrap_or(0) % 50_000);
                let backoff = Duration::from_millis(20 * u64::from(attempt.min(10)))
                    + Duration::from_micros(jitter);
                tokio::time::sleep(backoff).await;
            }
            Err(Error::Lance(e)) if is_retryable(&e) => {
                return Err(Error::CommitConflict(format!(
                    "gave up after {attempt} manifest commit attempts: {e}"
                )))
            }
            Err(e) => return Err(e),
        }
    }
}

/// Lance errors that mean "another commit landed first".
pub(crate) fn is_retryable(e: &lance::Error) -> bool {
    matches!(
        e,
        lance::Error::RetryableCommitConflict { .. }
            | lance::Error::CommitConflict { .. }
            | lance::Error::TooMuchWriteContention { .. }
    )
}

/// Applies `change` to `latest` in one Lance commit; returns the new version.
async fn apply(latest: &Snapshot, change: &ManifestChange) -> Result<u64> {
    let delete_ids = (!change.delete_ids.is_empty()).then(|| {
        let list: Vec<String> = change
            .delete_ids
            .iter()
            .map(|id| format!("'{}'", id.replace('\'', "''")))
            .collect();
        format!("{OBJECT_ID} IN ({})", list.join(", "))
    });
    if !change.writes_rows() {
        let expr = delete_ids.unwrap_or_else(|| "false".into());
        let r = DeleteBuilder::new(Arc::clone(&latest.dataset), expr)
            .conflict_retries(0)
            .execute()
            .await?;
        return Ok(r.new_dataset.version().version);
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
    Ok(ds.version().version)
}

/// The rows `change` writes, in the manifest's schema.
fn source_batch(latest: &Snapshot, change: &ManifestChange) -> Result<RecordBatch> {
    let mschema = latest.batch.schema();
    let mut source = Vec::with_capacity(2);
    if !change.copy_rows.is_empty() {
        let idx = UInt32Array::from_iter_values(change.copy_rows.iter().map(|&r| r as u32));
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
