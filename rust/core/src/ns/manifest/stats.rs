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
    /// Data files.
    pub files: usize,
    /// Bytes of the data files (a file whose size Lance did not record is asked for).
    pub bytes: u64,
    /// Fragments with a deletion file.
    pub fragments_with_deletions: usize,
    /// Versions of the leaf table that exist (`None` unless asked for: one listing each).
    pub versions: Option<usize>,
}

/// The statistics of the leaves `idx` of `snap`, `CONCURRENCY` leaves at a time; with
/// `versions`, each leaf's `_versions/` is listed too.
///
/// # Errors
/// `Lance` when a leaf cannot be opened.
pub async fn leaf_stats(snap: &Snapshot, idx: &[usize], versions: bool) -> Result<Vec<LeafStats>> {
    stream::iter(idx.iter().map(|&i| {
        let leaf = &snap.leaves[i];
        async move {
            let ds = snap.storage.open(&leaf.location, leaf.read_version).await?;
            let mut s = of_dataset(&ds).await?;
            if versions {
                s.versions = Some(count_versions(snap, &leaf.location).await?);
            }
            Ok::<LeafStats, Error>(s)
        }
    }))
    .buffered(CONCURRENCY)
    .try_collect()
    .await
}

async fn of_dataset(ds: &Dataset) -> Result<LeafStats> {
    let mut s = LeafStats {
        rows: ds.count_rows(None).await? as u64,
        fragments: ds.fragments().len(),
        ..LeafStats::default()
    };
    let data = ds.data_dir();
    for f in ds.fragments().iter() {
        s.files += f.files.len();
        s.fragments_with_deletions += usize::from(f.deletion_file.is_some());
        for file in &f.files {
            s.bytes += match file.file_size_bytes.get() {
                Some(n) => n.get(),
                // Written by a tool that did not record sizes: ask the store.
                None => {
                    let store = ds.object_store(file.base_id).await?;
                    store.size(&data.clone().join(file.path.as_str())).await?
                }
            };
        }
    }
    Ok(s)
}

async fn count_versions(snap: &Snapshot, location: &str) -> Result<usize> {
    let (store, root) = snap.storage.object_store().await?;
    let dir = root.join(location).join("_versions");
    let listed: Vec<_> = store.list(Some(dir)).try_collect().await?;
    Ok(listed
        .iter()
        .filter(|m| m.location.extension() == Some("manifest"))
        .count())
}
