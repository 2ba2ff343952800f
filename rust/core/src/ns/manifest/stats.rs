//! Per-partition statistics from Lance metadata (no data read): what `stats()`, the pruned
//! row counts of `partitions()` and the task planning of Spark reads are made of.

use futures::stream::{self, StreamExt, TryStreamExt};
use lance::dataset::Dataset;

use crate::error::{Error, Result};

use super::Snapshot;

/// Leaves opened at a time.
const CONCURRENCY: usize = 16;

/// One leaf at its read version.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LeafStats {
    /// Rows (deleted rows excluded).
    pub rows: u64,
    /// Fragments.
    pub fragments: usize,
    /// Files, bytes, deletions and versions (when asked for).
    pub detail: Option<LeafDetail>,
}

/// What `stats()` adds to the sizes a reader plans with; it may cost requests (the size of a
/// file Lance did not record, one listing of `_versions/`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LeafDetail {
    /// Data files.
    pub files: usize,
    /// Bytes of the data files.
    pub bytes: u64,
    /// Fragments with a deletion file.
    pub fragments_with_deletions: usize,
    /// Versions of the leaf table that exist.
    pub versions: usize,
}

/// The statistics of the leaves `idx` of `snap`, `CONCURRENCY` leaves at a time, with their
/// [`LeafDetail`] when `detail`.
///
/// # Errors
/// `Lance` when a leaf cannot be opened or listed.
pub async fn leaf_stats(snap: &Snapshot, idx: &[usize], detail: bool) -> Result<Vec<LeafStats>> {
    stream::iter(idx.iter().map(|&i| {
        let leaf = &snap.leaves[i];
        async move {
            let ds = snap.storage.open(&leaf.location, leaf.read_version).await?;
            let detail = match detail {
                true => Some(leaf_detail(snap, &ds, &leaf.location).await?),
                false => None,
            };
            Ok::<LeafStats, Error>(LeafStats {
                rows: ds.count_rows(None).await? as u64,
                fragments: ds.fragments().len(),
                detail,
            })
        }
    }))
    .buffered(CONCURRENCY)
    .try_collect()
    .await
}

async fn leaf_detail(snap: &Snapshot, ds: &Dataset, location: &str) -> Result<LeafDetail> {
    let mut d = LeafDetail::default();
    let data = ds.data_dir();
    for f in ds.fragments().iter() {
        d.files += f.files.len();
        d.fragments_with_deletions += usize::from(f.deletion_file.is_some());
        for file in &f.files {
            d.bytes += match file.file_size_bytes.get() {
                Some(n) => n.get(),
                // Written by a tool that did not record sizes: ask the store.
                None => {
                    let store = ds.object_store(file.base_id).await?;
                    store.size(&data.clone().join(file.path.as_str())).await?
                }
            };
        }
    }
    let (store, root) = snap.storage.object_store().await?;
    let dir = root.join(location).join("_versions");
    let listed: Vec<_> = store.list(Some(dir)).try_collect().await?;
    d.versions = listed
        .iter()
        .filter(|m| m.location.extension() == Some("manifest"))
        .count();
    Ok(d)
}
