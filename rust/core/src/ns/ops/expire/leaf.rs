//! One leaf table's share of `expire()`: its versions that only expired manifest versions read
//! go, then the files only they named: data and deletion files, their transaction files
//! (one per commit: a stream's leaf would otherwise keep one per micro-batch forever) and the
//! index directories of indexes no kept version has.
//!
//! The latest main-line version is always kept (it is what Lance opens without a version,
//! and a leaf table without one is no table), whatever reads it.

use std::collections::{HashMap, HashSet};

use futures::stream::{self, StreamExt, TryStreamExt};
use lance::dataset::Dataset;
use lance::index::DatasetIndexExt;
use lance::io::ObjectStore;
use lance_table::io::commit::ManifestNamingScheme;
use lance_table::io::deletion::relative_deletion_file_path;
use object_store::path::Path;

use crate::error::Result;
use crate::ns::infra::storage::Storage;

/// Version manifests loaded at a time.
const CONCURRENCY: usize = 8;

/// Where a leaf keeps its transaction files.
const TRANSACTIONS: &str = "_transactions";
/// Where a leaf keeps its index directories, one per index segment.
const INDICES: &str = "_indices";

/// What expiring one leaf removed (or would).
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Removed {
    pub(super) versions: u64,
    pub(super) files: u64,
    pub(super) bytes: u64,
}

/// A version manifest of the leaf.
struct VersionFile {
    version: u64,
    path: Path,
    size: u64,
    detached: bool,
}

async fn version_files(store: &ObjectStore, dir: &Path) -> Result<Vec<VersionFile>> {
    let listed: Vec<_> = store
        .list(Some(dir.clone().join("_versions")))
        .try_collect()
        .await?;
    let mut out = Vec::with_capacity(listed.len());
    for m in listed {
        let Some(name) = m.location.filename() else {
            continue;
        };
        let (version, detached) = match ManifestNamingScheme::parse_detached_version(name) {
            Some(v) => (v, true),
            None => match ManifestNamingScheme::detect_scheme(name) {
                Some(s) if name.ends_with(".manifest") => match s.parse_version(name) {
                    Some(v) => (v, false),
                    None => continue,
                },
                _ => continue,
            },
        };
        out.push(VersionFile {
            version,
            path: m.location.clone(),
            size: m.size,
            detached,
        });
    }
    Ok(out)
}

/// Removes (unless `dry_run`) the versions `expired` of the leaf at `location`, except its
/// latest main-line version, and the files no other version names ([`named_files`]).
pub(super) async fn expire_leaf(
    storage: &Storage,
    location: &str,
    expired: &HashSet<u64>,
    dry_run: bool,
) -> Result<Removed> {
    let (store, base) = storage.object_store().await?;
    let dir = base.join(location);
    let versions = version_files(&store, &dir).await?;
    let latest_main = versions
        .iter()
        .filter(|v| !v.detached)
        .map(|v| v.version)
        .max();
    let (gone, kept): (Vec<&VersionFile>, Vec<&VersionFile>) = versions
        .iter()
        .partition(|v| expired.contains(&v.version) && Some(v.version) != latest_main);
    if gone.is_empty() {
        return Ok(Removed::default());
    }
    let ds = storage.builder(location)?.load().await?;
    let keep = named_files(&ds, kept.iter().map(|v| v.version).collect()).await?;
    let only_gone: HashSet<String> = named_files(&ds, gone.iter().map(|v| v.version).collect())
        .await?
        .into_iter()
        .filter(|f| !keep.contains(f))
        .collect();
    let sizes = file_sizes(&store, &dir).await?;
    let mut removed = Removed {
        versions: gone.len() as u64,
        ..Default::default()
    };
    for v in &gone {
        removed.bytes += v.size;
        if !dry_run {
            store.delete(&v.path).await?;
        }
    }
    // Version manifests first: a file goes only once no version names it.
    for rel in &only_gone {
        let Some(&(size, files)) = sizes.get(rel) else {
            continue; // already gone
        };
        if !rel.starts_with(TRANSACTIONS) && !rel.starts_with(INDICES) {
            removed.files += files; // `files` counts data and deletion files
        }
        removed.bytes += size;
        if !dry_run {
            let path = rel.split('/').fold(dir.clone(), |p, part| p.join(part));
            if rel.starts_with(INDICES) {
                store.remove_dir_all(path).await?;
            } else {
                store.delete(&path).await?;
            }
        }
    }
    Ok(removed)
}

/// The files and index directories the leaf versions `versions` name (paths relative to the
/// leaf): their data and deletion files, transaction files and index segments.
async fn named_files(ds: &Dataset, versions: Vec<u64>) -> Result<HashSet<String>> {
    let mut named: HashSet<String> = HashSet::new();
    let mut loaded = stream::iter(
        versions
            .into_iter()
            .map(|v| async move { ds.checkout_version(v).await }),
    )
    .buffer_unordered(CONCURRENCY);
    while let Some(version) = loaded.next().await {
        let version = version?;
        if let Some(tx) = &version.manifest().transaction_file {
            named.insert(format!("{TRANSACTIONS}/{tx}"));
        }
        if version.manifest().index_section.is_some() {
            for index in version.load_indices().await?.iter() {
                named.insert(format!("{INDICES}/{}", index.uuid));
            }
        }
        for frag in version.get_fragments() {
            let meta = frag.metadata();
            for f in &meta.files {
                named.insert(format!("data/{}", f.path));
            }
            if let Some(d) = &meta.deletion_file {
                named.insert(relative_deletion_file_path(meta.id, d));
            }
        }
    }
    Ok(named)
}

/// The leaf's data, deletion and transaction files and its index directories, by path
/// relative to the leaf: their bytes and how many files each holds.
async fn file_sizes(store: &ObjectStore, dir: &Path) -> Result<HashMap<String, (u64, u64)>> {
    let mut out: HashMap<String, (u64, u64)> = HashMap::new();
    for sub in ["data", "_deletions", TRANSACTIONS, INDICES] {
        let root = dir.clone().join(sub);
        let listed: Vec<_> = store.list(Some(root.clone())).try_collect().await?;
        for m in listed {
            // A file directly below `sub`, or (an index) the directory below `sub` it is in.
            let Some(first) = m.location.prefix_match(&root).and_then(|mut p| p.next()) else {
                continue;
            };
            let entry = out.entry(format!("{sub}/{}", first.as_ref())).or_default();
            entry.0 += m.size;
            entry.1 += 1;
        }
    }
    Ok(out)
}

/// Removes (unless `dry_run`) a whole leaf table no kept manifest version names.
pub(super) async fn remove_leaf(
    storage: &Storage,
    location: &str,
    dry_run: bool,
) -> Result<Removed> {
    let (store, base) = storage.object_store().await?;
    let dir = base.join(location);
    let listed: Vec<_> = store.list(Some(dir.clone())).try_collect().await?;
    let mut removed = Removed::default();
    for m in &listed {
        removed.bytes += m.size;
        match m.location.extension() {
            Some("manifest") => removed.versions += 1,
            Some("lance") | Some("arrow") | Some("bin") => removed.files += 1,
            _ => {}
        }
    }
    if !dry_run && !listed.is_empty() {
        store.remove_dir_all(dir).await?;
    }
    Ok(removed)
}
