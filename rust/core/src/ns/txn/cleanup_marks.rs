//! Cleanup marks: when a `cleanup()` that deletes starts, it leaves a small object under
//! `_lance_partitioned/cleanups/` named by its start time (its own clock, the one its age
//! cut-off comes from). A commit then knows whether any cleanup could have removed the files
//! it staged, and checks that they still exist only in that case, instead of asking the store
//! about every staged file on every commit (one request per file on object storage).
//!
//! Why this is enough: a cleanup removes only files older than its cut-off, `start -
//! older_than`, fixed when it starts. A file staged at `t` (the write's clock) can be removed
//! only by a cleanup whose start is at or after `t` (less the clock difference between the
//! writer and the store). So a write checks its files when some mark is at or after its
//! staging start less [`CLOCK_MARGIN_MS`]; marks are kept [`RETENTION_MS`], and a write that
//! staged longer ago than that is always checked.

use futures::TryStreamExt;
use object_store::path::Path;
use object_store::{ObjectStoreExt, PutPayload};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::ns::infra::storage::Storage;
use crate::ns::manifest::Snapshot;

/// Where the marks live, under the root's scratch prefix.
const DIR: &str = "cleanups";
/// How far apart the clocks of writers, cleanups and the store may be.
pub(crate) const CLOCK_MARGIN_MS: i64 = 10 * 60 * 1000;
/// How long marks are kept (older ones are removed by the next cleanup).
pub(crate) const RETENTION_MS: i64 = 7 * 24 * 3600 * 1000;

/// Milliseconds since the Unix epoch on this machine's clock.
///
/// # Errors
/// `Internal` for a clock before 1970.
pub(crate) fn now_ms() -> Result<i64> {
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_err(|e| Error::Internal(format!("system clock before 1970: {e}")))?;
    Ok(i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

fn marks_dir(base: &Path) -> Path {
    base.clone().join(crate::ns::SCRATCH_DIR).join(DIR)
}

/// The start time a mark's name records (`<start ms>-<nonce>`).
fn mark_start(name: &str) -> Option<i64> {
    name.split_once('-')?.0.parse().ok()
}

/// Records that a deleting cleanup starts at `started_ms`, and removes marks older than the
/// retention.
///
/// # Errors
/// `Lance`/`Storage` errors of the store.
pub(crate) async fn record(storage: &Storage, started_ms: i64) -> Result<()> {
    let (store, base) = storage.object_store().await?;
    let dir = marks_dir(&base);
    let nonce = crate::ns::infra::ids::random_id()?;
    let mark = dir.clone().join(format!("{started_ms}-{nonce}").as_str());
    store
        .inner
        .put(&mark, PutPayload::from_static(b""))
        .await
        .map_err(|e| storage.error(e.into()))?;
    let listed: Vec<_> = store.list(Some(dir)).try_collect().await?;
    for m in listed {
        let start = m.location.filename().and_then(mark_start);
        if start.is_some_and(|s| s < started_ms - RETENTION_MS) {
            store.delete(&m.location).await?;
        }
    }
    Ok(())
}

/// Whether a cleanup may have removed files staged since `staged_since_ms` (the writer's
/// clock): a mark at or after it (less the clock margin), a mark we cannot read, or a staging
/// start too old for the marks to tell.
///
/// # Errors
/// `Lance`/`Storage` errors of the store.
pub(crate) async fn any_since(storage: &Storage, staged_since_ms: i64) -> Result<bool> {
    if staged_since_ms <= now_ms()? - RETENTION_MS + CLOCK_MARGIN_MS {
        return Ok(true);
    }
    let (store, base) = storage.object_store().await?;
    let listed: Vec<_> = store.list(Some(marks_dir(&base))).try_collect().await?;
    Ok(listed.iter().any(|m| {
        m.location
            .filename()
            .and_then(mark_start)
            .is_none_or(|s| s >= staged_since_ms - CLOCK_MARGIN_MS)
    }))
}

pub(crate) use crate::ns::CLEANUP_FENCE_PREFIX as FENCE_KEY_PREFIX;
/// How long a cleanup may delete after raising its fence; a fence older than this (plus the
/// clock margin) belongs to a cleanup that died and is ignored.
pub(crate) const LEASE_MS: i64 = 3600 * 1000;

/// A running cleanup, as its fence property records it (its own clock).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Fence {
    /// When the cleanup started.
    pub(crate) started_ms: i64,
    /// It removes only files older than this.
    pub(crate) cutoff_ms: i64,
}

/// The fences of running cleanups in `snap` (stale ones left out).
pub(crate) fn fences(snap: &Snapshot) -> Result<Vec<Fence>> {
    let now = now_ms()?;
    Ok(snap
        .root_props
        .props
        .iter()
        .filter(|(k, _)| k.starts_with(FENCE_KEY_PREFIX))
        .filter_map(|(_, v)| serde_json::from_str::<Fence>(v).ok())
        .filter(|f| now <= f.started_ms + LEASE_MS + CLOCK_MARGIN_MS)
        .collect())
}

/// Whether a cleanup running in `snap` may remove files an operation wrote since `since_ms`
/// (its clock; `None`: unknown): the operation must not commit before that cleanup is done.
pub(crate) fn fenced(snap: &Snapshot, since_ms: Option<i64>) -> Result<bool> {
    Ok(fences(snap)?
        .iter()
        .any(|f| since_ms.is_none_or(|s| s <= f.cutoff_ms + CLOCK_MARGIN_MS)))
}

#[cfg(test)]
mod tests {
    use super::mark_start;

    #[test]
    fn mark_names() {
        assert_eq!(
            mark_start("1700000000000-0a1b2c3d"),
            Some(1_700_000_000_000)
        );
        assert_eq!(mark_start("x-1"), None);
        assert_eq!(mark_start("17000"), None);
    }
}
