//! Snapshots loaded recently in this process, found again instead of loaded again.
//!
//! A small commit loads the manifest version it works on several times: the write plans on
//! it, a distributed write's tasks stage against it, the commit checks it, and the commit
//! loop loads the latest version, which is usually the same. Loading one is a scan of the
//! whole manifest and, on first use, the writers' lookups: the largest fixed cost of a
//! micro-batch on a namespace of many partitions. A version of `__manifest` never changes
//! once committed, so a loaded snapshot is found again by the namespace's URI, the version,
//! the time Lance committed it (a namespace deleted and created again at the same URI has
//! other times) and whether it is light. Snapshots share their lookups (built once, by
//! whichever user needs them first). The cache holds at most [`ENTRIES`] snapshots and
//! [`BUDGET_BYTES`] of manifest rows; a larger snapshot is not kept.

use std::collections::VecDeque;
use std::sync::Mutex;

use lance::dataset::Dataset;

use super::Snapshot;

/// Snapshots kept.
const ENTRIES: usize = 4;
/// Manifest rows kept, in bytes of Arrow memory.
const BUDGET_BYTES: usize = 256 << 20;

/// What identifies a loaded snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Key {
    uri: String,
    version: u64,
    committed_nanos: u128,
    light: bool,
}

impl Key {
    /// The key of `dataset` (one version of a manifest) at `uri`.
    pub(super) fn of(uri: String, dataset: &Dataset, light: bool) -> Self {
        Self {
            uri,
            version: dataset.version().version,
            committed_nanos: dataset.manifest().timestamp_nanos,
            light,
        }
    }

    /// Whether the snapshot kept under `self` serves a load under `wanted`: the same key, or
    /// the full snapshot of the version a light load wants.
    fn serves(&self, wanted: &Key) -> bool {
        self.uri == wanted.uri
            && self.version == wanted.version
            && self.committed_nanos == wanted.committed_nanos
            && (self.light == wanted.light || wanted.light)
    }
}

static CACHE: Mutex<VecDeque<(Key, Snapshot, usize)>> = Mutex::new(VecDeque::new());

/// The snapshot loaded under `key`, if it is still kept; for a light key, the full snapshot
/// of the same version serves too (it holds every column a light one reads), so a reader
/// after a writer (a stream's `committed()` check after its plan) does not scan again.
pub(super) fn get(key: &Key) -> Option<Snapshot> {
    let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    let i = cache.iter().position(|(k, _, _)| k.serves(key))?;
    let entry = cache.remove(i)?;
    let snap = entry.1.clone();
    cache.push_front(entry);
    Some(snap)
}

/// Keeps `snap`, loaded under `key`, evicting the least recently used.
pub(super) fn put(key: Key, snap: &Snapshot) {
    let bytes = snap.batch.get_array_memory_size();
    if bytes > BUDGET_BYTES {
        return;
    }
    let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    cache.retain(|(k, _, _)| *k != key);
    cache.push_front((key, snap.clone(), bytes));
    while cache.len() > ENTRIES || cache.iter().map(|e| e.2).sum::<usize>() > BUDGET_BYTES {
        cache.pop_back();
    }
}

#[cfg(test)]
mod tests {
    use super::Key;

    fn key(uri: &str, version: u64, nanos: u128, light: bool) -> Key {
        Key {
            uri: uri.to_string(),
            version,
            committed_nanos: nanos,
            light,
        }
    }

    #[test]
    fn a_full_snapshot_serves_a_light_load_of_its_version_only() {
        let full = key("file:///ns", 7, 70, false);
        let light = key("file:///ns", 7, 70, true);
        assert!(full.serves(&full) && light.serves(&light));
        assert!(
            full.serves(&light),
            "a full snapshot holds every column a light one reads"
        );
        assert!(
            !light.serves(&full),
            "a light snapshot lacks the property columns"
        );
        for other in [
            key("file:///ns", 8, 70, true),
            key("file:///ns", 7, 71, true),
            key("file:///other", 7, 70, true),
        ] {
            assert!(!full.serves(&other), "{other:?}");
        }
    }
}
