//! Removing the `table_version` rows a partition keeps beyond the retention limit, in one
//! conflict-checked manifest commit (`optimize()`'s last step; the rule is
//! [`crate::ns::manifest::surplus_versions`]).

use futures::future::BoxFuture;

use crate::error::Result;
use crate::ns::infra::storage::Storage;
use crate::ns::manifest::{surplus_versions, Snapshot};
use crate::ns::txn::manifest_commit::{commit_manifest, ManifestChange, ManifestUpdate};

/// Planned again on every attempt: the partitions `object_ids` (those still there).
struct TrimVersions<'a> {
    object_ids: &'a [String],
    removed: usize,
}

impl ManifestUpdate for TrimVersions<'_> {
    fn plan<'a>(
        &'a mut self,
        latest: &'a Snapshot,
    ) -> BoxFuture<'a, Result<Option<ManifestChange>>> {
        Box::pin(async move {
            let ids = surplus_of(latest, self.object_ids)?;
            self.removed = ids.len();
            Ok((!ids.is_empty()).then(|| ManifestChange {
                delete_ids: ids,
                ..ManifestChange::default()
            }))
        })
    }
}

/// The surplus rows of the partitions `object_ids` in `snap`.
///
/// # Errors
/// As [`surplus_versions`].
pub(crate) fn surplus_of(snap: &Snapshot, object_ids: &[String]) -> Result<Vec<String>> {
    let mut leaves = Vec::with_capacity(object_ids.len());
    for oid in object_ids {
        leaves.extend(snap.leaf_index(oid)?);
    }
    surplus_versions(snap, &leaves)
}

/// Removes the surplus rows of the partitions `object_ids`; returns how many went and the
/// manifest version after (unchanged when none).
///
/// # Errors
/// As [`commit_manifest`].
pub(crate) async fn trim_versions(
    storage: &Storage,
    object_ids: &[String],
    max_attempts: u32,
) -> Result<(u64, u64)> {
    let mut update = TrimVersions {
        object_ids,
        removed: 0,
    };
    let committed = commit_manifest(storage, max_attempts, &mut update).await?;
    Ok((update.removed as u64, committed.version))
}
