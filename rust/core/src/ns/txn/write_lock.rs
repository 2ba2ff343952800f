//! The lock that makes a weak-mode commit of one distributed write exclusive.
//!
//! Weak mode records no write id in the manifest: a repeated commit of the same messages finds
//! what an earlier commit already did by looking at the leaves (`leaf::weak_committed`). That
//! check and the leaf commits that follow are not atomic, so two commits of the same write at
//! the same time could both find nothing and both append. The committer of a write therefore
//! first creates `_lance_partitioned/commits/<write id>` with a create-only put (the
//! conditional write every commit already relies on), checks, commits, and removes it. A second
//! committer waits for the object to go, then checks and finds the write committed.
//!
//! A committer that dies holding the lock leaves the object behind: it is taken over once it
//! is older than [`STALE_AFTER`], far longer than a weak commit (leaf commits and one manifest
//! commit) takes.

use std::time::Duration;

use object_store::path::Path;
use object_store::{Error as StoreError, ObjectStoreExt, PutMode, PutOptions, PutPayload};

use crate::error::{Error, Result};
use crate::ns::infra::storage::Storage;

/// Age after which a lock is taken to belong to a dead committer.
pub(crate) const STALE_AFTER: Duration = Duration::from_secs(15 * 60);
/// How long a committer waits for another commit of the same write.
const WAIT: Duration = Duration::from_secs(20 * 60);

/// A held lock; [`WriteLock::release`] removes it, and so does dropping it unreleased (an
/// abandoned commit: the removal then runs on its own task).
pub(crate) struct WriteLock {
    storage: Storage,
    path: Path,
    released: bool,
}

impl WriteLock {
    /// Takes the lock of `write_id`, waiting while another committer holds it.
    ///
    /// # Errors
    /// `CommitConflict` when another commit of the same write holds it for longer than the
    /// wait; `Storage`/`Lance` errors of the store.
    pub(crate) async fn acquire(storage: &Storage, write_id: &str) -> Result<Self> {
        let (store, base) = storage.object_store().await?;
        let name: String = write_id
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let path = base
            .join(crate::ns::SCRATCH_DIR)
            .join("commits")
            .join(name.as_str());
        let started = std::time::Instant::now();
        loop {
            let put = PutOptions {
                mode: PutMode::Create,
                ..Default::default()
            };
            match store
                .inner
                .put_opts(&path, PutPayload::from_static(b""), put)
                .await
            {
                Ok(_) => {
                    return Ok(Self {
                        storage: storage.clone(),
                        path,
                        released: false,
                    })
                }
                Err(StoreError::AlreadyExists { .. } | StoreError::Precondition { .. }) => {}
                Err(e) => return Err(storage.error(e.into())),
            }
            let stale = match store.inner.head(&path).await {
                Ok(meta) => {
                    let age = chrono::Utc::now().signed_duration_since(meta.last_modified);
                    age.to_std().is_ok_and(|a| a > STALE_AFTER)
                }
                Err(StoreError::NotFound { .. }) => false,
                Err(e) => return Err(storage.error(e.into())),
            };
            if stale {
                // Its committer died: take over (another waiter may race to the same put).
                let _ = store.inner.delete(&path).await;
                continue;
            }
            if started.elapsed() > WAIT {
                return Err(Error::CommitConflict(format!(
                    "another commit of write {write_id} has been running for more than {} s; \
                     nothing was committed by this one",
                    WAIT.as_secs()
                )));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Removes the lock (best effort: a lock left behind is taken over when stale).
    pub(crate) async fn release(mut self) {
        remove(self.storage.clone(), self.path.clone()).await;
        self.released = true;
    }
}

impl Drop for WriteLock {
    fn drop(&mut self) {
        if self.released {
            return;
        }
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(remove(self.storage.clone(), self.path.clone()));
        }
    }
}

/// Removes the lock object (best effort: a lock left behind is taken over when stale).
async fn remove(storage: Storage, path: Path) {
    if let Ok((store, _)) = storage.object_store().await {
        let _ = store.inner.delete(&path).await;
    }
}
