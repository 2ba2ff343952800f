//! One plan for the tasks of a distributed write that has no driver step before its tasks: a
//! Spark streaming sink's micro-batch, whose tasks run a writer Spark created once for the
//! whole query.
//!
//! Every task of the batch names the same key (the query run and the batch); the first one to
//! arrive plans the write (the manifest version, the commit mode, a fresh nonce) and publishes
//! it as `_lance_partitioned/plans/<key>` with a create-only put (the conditional write every
//! commit already relies on); the others, and retried attempts, read that object. So all the
//! batch's parts plan against one manifest version and derive new partitions' ids from one
//! nonce, as the tasks of a driver-planned write do. A run that replays the batch (after a
//! restart) names another key: its nonce is fresh, so its new partitions never land where a
//! crashed run's did. The committer removes the object after its commit; `cleanup()` removes
//! those left behind by runs that never committed.

use object_store::path::Path;
use object_store::{Error as StoreError, ObjectStoreExt, PutMode, PutOptions, PutPayload};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::ns::infra::ids::new_nonce;
use crate::ns::infra::storage::Storage;

use super::distributed::{plan, WritePlan};

/// The folder of shared plans under the scratch directory.
pub(crate) const PLANS_DIR: &str = "plans";

/// The longest key of a shared plan.
const MAX_KEY_LEN: usize = 200;

/// A shared plan as stored.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
struct Stored {
    manifest_version: u64,
    strong: bool,
    nonce: String,
}

/// The plan of the write `key` names: the one an earlier task published, or a new one this
/// call publishes (see the module docs).
///
/// # Errors
/// `InvalidArgument` for a key of other characters than ASCII letters, digits, `-`, `_`
/// and `.`, or longer than 200 bytes; as [`plan`]; `Corrupt` for an unreadable stored plan;
/// storage errors.
pub(crate) async fn shared_plan(
    storage: &Storage,
    key: &str,
    strong: Option<bool>,
) -> Result<(WritePlan, String)> {
    let path = plan_path(storage, key).await?;
    if let Some(found) = read(storage, &path).await? {
        return Ok(found);
    }
    let planned = plan(storage, strong).await?;
    let stored = Stored {
        manifest_version: planned.manifest_version,
        strong: planned.strong,
        nonce: new_nonce()?,
    };
    let body = serde_json::to_vec(&stored)
        .map_err(|e| Error::Internal(format!("shared plan not serialisable: {e}")))?;
    let (store, _) = storage.object_store().await?;
    let put = PutOptions {
        mode: PutMode::Create,
        ..Default::default()
    };
    match store
        .inner
        .put_opts(&path, PutPayload::from(body), put)
        .await
    {
        Ok(_) => Ok((planned, stored.nonce)),
        // Another task published first: every task takes that one.
        Err(StoreError::AlreadyExists { .. } | StoreError::Precondition { .. }) => {
            read(storage, &path)
                .await?
                .ok_or_else(|| Error::Internal(format!("shared plan {key} vanished while read")))
        }
        Err(e) => Err(storage.error(e.into())),
    }
}

/// Removes the shared plan `key` (best effort: `cleanup()` removes what is left behind).
pub(crate) async fn remove_shared_plan(storage: &Storage, key: &str) {
    let Ok(path) = plan_path(storage, key).await else {
        return;
    };
    if let Ok((store, _)) = storage.object_store().await {
        let _ = store.inner.delete(&path).await;
    }
}

/// `_lance_partitioned/plans/<key>` under the namespace root.
async fn plan_path(storage: &Storage, key: &str) -> Result<Path> {
    let valid = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.');
    if key.is_empty() || key.len() > MAX_KEY_LEN || !key.chars().all(valid) || key.starts_with('.')
    {
        return Err(Error::InvalidArgument(format!(
            "a shared plan key has 1 to {MAX_KEY_LEN} ASCII letters, digits, '-', '_' or '.' \
             (not starting with '.'), not {key:?}"
        )));
    }
    let (_, base) = storage.object_store().await?;
    Ok(base.join(crate::ns::SCRATCH_DIR).join(PLANS_DIR).join(key))
}

/// The plan stored at `path`, None when there is none.
async fn read(storage: &Storage, path: &Path) -> Result<Option<(WritePlan, String)>> {
    let (store, _) = storage.object_store().await?;
    let bytes = match store.inner.get(path).await {
        Ok(got) => got.bytes().await.map_err(|e| storage.error(e.into()))?,
        Err(StoreError::NotFound { .. }) => return Ok(None),
        Err(e) => return Err(storage.error(e.into())),
    };
    let stored: Stored = serde_json::from_slice(&bytes)
        .map_err(|e| Error::Corrupt(format!("shared plan {path} is unreadable: {e}")))?;
    let planned = WritePlan {
        manifest_version: stored.manifest_version,
        strong: stored.strong,
    };
    Ok(Some((planned, stored.nonce)))
}

/// Shared plans older than `cutoff` (seconds since the epoch, the store's clock), as (path,
/// size): left behind by runs that never committed (`cleanup()` removes them).
///
/// # Errors
/// Storage errors of the listing.
pub(crate) async fn stale_plans(
    store: &lance::io::ObjectStore,
    base: &Path,
    cutoff: i64,
) -> Result<Vec<(Path, u64)>> {
    use futures::TryStreamExt;
    let dir = base.clone().join(crate::ns::SCRATCH_DIR).join(PLANS_DIR);
    let found: Vec<_> = store.list(Some(dir)).try_collect().await?;
    Ok(found
        .into_iter()
        .filter(|m| m.last_modified.timestamp() <= cutoff)
        .map(|m| (m.location, m.size))
        .collect())
}
