//! One leaf table's share of `expire()`: its versions that only expired manifest versions read
//! go, then the files only they named.
//!
//! The latest main-line version is always kept (it is what Lance opens without a version,
//! and a leaf table without one is no table), whatever reads it.

use std::collections::{HashMap, HashSet};

use futures::stream::{self, StreamExt, TryStreamExt};
use lance::io::ObjectStore;
use lance_table::io::commit::ManifestNamingScheme;
use lance_table::io::deletion::relative_deletion_file_path;
use object_store::path::Path;

use crate::error::Result;
use crate::ns::infra::storage::Storage;

/// Version manifests loaded at a time.
const CONCURRENCY: usize = 8;

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
/// latest main-line version, and the data and deletion files no other version names.
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
    let named = |vs: Vec<u64>| {
        let ds = &ds;
        async move {
            let mut named: HashSet<String> = HashSet::new();
            let mut loaded = stream::iter(
                vs.into_iter()
                    .map(|v| async move { ds.checkout_version(v).await }),
            )
            .buffer_unordered(CONCURRENCY);
            while let Some(version) = loaded.next().await {
                for frag in version?.get_fragments() {
                    let meta = frag.metadata();
                    for f in &meta.files {
                        named.insert(format!("data/{}", f.path));
                    }
                    if let Some(d) = &meta.deletion_file {
                        named.insert(relative_deletion_file_path(meta.id, d));
                    }
                }
            }
            Ok::<_, crate::error::Error>(named)
        }
    };
    let keep = named(kept.iter().map(|v| v.version).collect()).await?;
    let only_gone: HashSet<String> = named(gone.iter().map(|v| v.version).collect())
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
        let Some(&size) = sizes.get(rel) else {
            continue; // already gone
        };
        removed.files += 1;
        removed.bytes += size;
        if !dry_run {
            let path = rel.split('/').fold(dir.clone(), |p, part| p.join(part));
            store.delete(&path).await?;
        }
    }
    Ok(removed)
}

/// Sizes of the leaf's data and deletion files, by path relative to the leaf.
async fn file_sizes(store: &ObjectStore, dir: &Path) -> Result<HashMap<String, u64>> {
    let mut out = HashMap::new();
    for sub in ["data", "_deletions"] {
        let listed: Vec<_> = store
            .list(Some(dir.clone().join(sub)))
            .try_collect()
            .await?;
        for m in listed {
            if let Some(name) = m.location.filename() {
                out.insert(format!("{sub}/{name}"), m.size);
            }
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
