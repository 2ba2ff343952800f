//! `cleanup()`: removes what failed or abandoned writes left behind.
//!
//! A strong-mode write that dies before its manifest commit leaves leaf tables that no
//! `__manifest` version references (new partitions) and detached versions nobody records
//! (existing partitions). Both are invisible to readers. This removes the first kind: leaf
//! directories under the root that no manifest version, old or new, names in its `location`
//! column, once every file in them is older than a grace period (a write still in progress
//! writes fresh files, so it is never touched).

use std::collections::HashSet;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures::TryStreamExt;
use lance::io::ObjectStore;

use crate::arrow::array::{Array, AsArray};
use crate::arrow::compute::cast;
use crate::arrow::datatypes::DataType;
use crate::error::{Error, Result};
use crate::ns::manifest::{Snapshot, LOCATION, OBJECT_TYPE, TABLE};

/// What a cleanup found and removed.
#[derive(Debug, Clone, Default)]
pub struct CleanupSummary {
    /// Orphan leaf directories found (relative to the root).
    pub orphans: Vec<String>,
    /// Whether they were removed (false for a dry run).
    pub removed: bool,
    /// Files in them.
    pub files: u64,
    /// Bytes in them.
    pub bytes: u64,
}

/// Whether `name` looks like a leaf table directory (`<8 hex>_v<N>$...$dataset`).
fn is_leaf_dir(name: &str) -> bool {
    let Some((prefix, oid)) = name.split_once('_') else {
        return false;
    };
    prefix.len() == 8
        && prefix.bytes().all(|b| b.is_ascii_hexdigit())
        && oid.starts_with('v')
        && oid.ends_with("$dataset")
        && oid.contains('$')
}

/// Locations referenced by any version of the manifest.
async fn referenced(snap: &Snapshot) -> Result<HashSet<String>> {
    let mut out = HashSet::new();
    for v in snap.dataset.versions().await? {
        let ds = snap.dataset.checkout_version(v.version).await?;
        let mut scan = ds.scan();
        scan.project(&[LOCATION, OBJECT_TYPE])?;
        let batch = scan.try_into_batch().await?;
        let locs = cast(
            batch
                .column_by_name(LOCATION)
                .ok_or_else(|| Error::Corrupt("manifest without location column".into()))?,
            &DataType::Utf8,
        )?;
        let types = cast(
            batch
                .column_by_name(OBJECT_TYPE)
                .ok_or_else(|| Error::Corrupt("manifest without object_type column".into()))?,
            &DataType::Utf8,
        )?;
        let (locs, types) = (locs.as_string::<i32>(), types.as_string::<i32>());
        for r in 0..batch.num_rows() {
            if !locs.is_null(r) && types.value(r) == TABLE {
                out.insert(locs.value(r).trim_end_matches('/').to_string());
            }
        }
    }
    Ok(out)
}

/// Finds (and unless `dry_run`, removes) orphan leaf directories older than `older_than`.
///
/// # Errors
/// `NotFound` without a namespace; `Lance` for I/O errors.
pub async fn cleanup(root: &str, older_than: Duration, dry_run: bool) -> Result<CleanupSummary> {
    let snap = Snapshot::load(root, None).await?;
    let keep = referenced(&snap).await?;
    let (store, base) = ObjectStore::from_uri(root).await?;
    let listing = store.list_with_delimiter(Some(&base)).await?;
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_err(|e| Error::Internal(e.to_string()))?
        .as_secs() as i64;
    let cutoff = now - older_than.as_secs() as i64;
    let mut summary = CleanupSummary {
        removed: !dry_run,
        ..Default::default()
    };
    for dir in listing.common_prefixes {
        let Some(name) = dir.filename().map(str::to_string) else {
            continue;
        };
        if !is_leaf_dir(&name) || keep.contains(&name) {
            continue;
        }
        let files: Vec<_> = store.list(Some(dir.clone())).try_collect().await?;
        if files.iter().any(|m| m.last_modified.timestamp() > cutoff) {
            continue;
        }
        summary.files += files.len() as u64;
        summary.bytes += files.iter().map(|m| m.size).sum::<u64>();
        if !dry_run {
            store.remove_dir_all(dir.clone()).await?;
        }
        summary.orphans.push(name);
    }
    summary.orphans.sort();
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::is_leaf_dir;

    #[test]
    fn leaf_dir_names() {
        assert!(is_leaf_dir("0a1b2c3d_v1$abc$def$dataset"));
        assert!(!is_leaf_dir("__manifest"));
        assert!(!is_leaf_dir("0a1b2c3d_v1"));
        assert!(!is_leaf_dir("zzzzzzzz_v1$a$dataset"));
        assert!(!is_leaf_dir("0a1b2c3_v1$a$dataset"));
    }
}
