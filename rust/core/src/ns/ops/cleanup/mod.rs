//! `cleanup()`: removes what failed or abandoned writes left behind.
//!
//! A strong-mode write that dies before its manifest commit leaves leaf tables that no
//! `__manifest` version references (new partitions) and detached versions nobody records
//! (existing partitions). Both are invisible to readers. This removes the first kind: leaf
//! directories under the root that no manifest version, old or new, names in its `location`
//! column, once every file in them is older than a grace period (a write still in progress
//! writes fresh files, so it is never touched).
//!
//! A deleting cleanup keeps a retention floor ([`RETENTION_FLOOR`]) unless told otherwise,
//! and raises a fence in the manifest while it deletes ([`fence`]), so an operation in flight
//! never commits files it removed: it waits, checks, and fails typed if they are gone.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use lance::io::ObjectStore;
use lance::table::format::is_detached_version;
use object_store::path::Path;

use crate::error::Result;
use crate::ns::txn::cleanup_marks;

mod fence;
use crate::ns::infra::storage::Storage;
use crate::ns::manifest::{named_tables, Snapshot};
use crate::ns::ops::write::shared_plan::stale_plans;

/// What a cleanup found and removed.
#[derive(Debug, Clone, Default)]
pub struct CleanupSummary {
    /// Orphan leaf directories found (relative to the root).
    pub orphans: Vec<String>,
    /// Whether they were removed (false for a dry run).
    pub removed: bool,
    /// Detached versions of referenced leaves that no manifest version records, as
    /// `<location>@<version>`.
    pub stale_versions: Vec<String>,
    /// Data files of referenced leaves that no kept version names (relative to the root).
    pub stale_files: Vec<String>,
    /// Files removed (or found, for a dry run) in total: orphan directories' files, stale
    /// version manifests and stale data files.
    pub files: u64,
    /// Bytes of those files.
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

/// What any version of the manifest references: leaf locations, and per location the leaf
/// versions recorded (as a `read_version` or as a `table_version` row).
#[derive(Default)]
struct Referenced {
    locations: HashSet<String>,
    versions: HashMap<String, HashSet<u64>>,
}

async fn referenced(snap: &Snapshot) -> Result<Referenced> {
    let mut out = Referenced::default();
    // table object id -> location, and (table object id, version) pairs.
    let mut loc_of: HashMap<String, String> = HashMap::new();
    let mut recorded: Vec<(String, u64)> = Vec::new();
    for v in crate::ns::infra::versions::list(&snap.dataset).await? {
        // Removed by a concurrent expire since the listing: it references nothing any more.
        let Some(ds) = crate::ns::infra::versions::checkout(&snap.dataset, v.version).await? else {
            continue;
        };
        for t in named_tables(&ds).await? {
            if !t.is_version {
                if let Some(loc) = t.location {
                    out.locations.insert(loc.clone());
                    if let Some(rv) = t.read_version {
                        recorded.push((t.object_id.clone(), rv));
                    }
                    loc_of.insert(t.object_id, loc);
                }
                continue;
            }
            if let Some((table, version)) = t.object_id.rsplit_once('$') {
                match (version.parse::<u64>(), t.read_version) {
                    (Ok(version), _) | (Err(_), Some(version)) => {
                        recorded.push((table.to_string(), version))
                    }
                    _ => {}
                }
            }
        }
    }
    for (table, version) in recorded {
        if let Some(loc) = loc_of.get(&table) {
            out.versions.entry(loc.clone()).or_default().insert(version);
        }
    }
    Ok(out)
}

/// The version of a detached manifest file name (`d<version>.manifest`).
fn detached_version(name: &str) -> Option<u64> {
    let v = name
        .strip_prefix('d')?
        .strip_suffix(".manifest")?
        .parse()
        .ok()?;
    is_detached_version(v).then_some(v)
}

/// Stale detached versions and data files of one referenced leaf.
#[derive(Default)]
struct LeafGarbage {
    versions: Vec<(u64, Path, u64)>,
    files: Vec<(Path, u64)>,
    /// The leaf's latest version when `files` was computed.
    latest: Option<u64>,
}

async fn leaf_garbage(
    store: &ObjectStore,
    storage: &Storage,
    base: &Path,
    location: &str,
    keep: &HashSet<u64>,
    cutoff: i64,
) -> Result<LeafGarbage> {
    let mut out = LeafGarbage::default();
    let dir = base.clone().join(location);
    let versions_dir = dir.clone().join("_versions");
    let mut kept_detached = Vec::new();
    let listed: Vec<_> = store.list(Some(versions_dir)).try_collect().await?;
    for m in listed {
        let Some(name) = m.location.filename() else {
            continue;
        };
        let Some(version) = detached_version(name) else {
            continue;
        };
        if keep.contains(&version) || m.last_modified.timestamp() > cutoff {
            kept_detached.push(version);
        } else {
            out.versions.push((version, m.location.clone(), m.size));
        }
    }
    let data: Vec<_> = store
        .list(Some(dir.clone().join("data")))
        .try_collect()
        .await?;
    let candidates: Vec<_> = data
        .into_iter()
        .filter(|m| m.last_modified.timestamp() <= cutoff)
        .collect();
    if candidates.is_empty() {
        return Ok(out);
    }
    // Data files named by any version that stays: the main line and the kept detached ones.
    let ds = storage.builder(location)?.load().await?;
    out.latest = Some(ds.version().version);
    let mut versions: Vec<u64> = crate::ns::infra::versions::list(&ds)
        .await?
        .iter()
        .map(|v| v.version)
        .collect();
    versions.extend(kept_detached.iter().filter(|v| is_detached_version(**v)));
    let mut named: HashSet<String> = HashSet::new();
    let mut loaded = futures::stream::iter(versions.into_iter().map(|v| {
        let ds = &ds;
        async move { crate::ns::infra::versions::checkout(ds, v).await }
    }))
    .buffer_unordered(8);
    while let Some(version) = loaded.next().await {
        // A version removed since the listing names nothing any more.
        let Some(version) = version? else { continue };
        for frag in version.get_fragments() {
            for f in &frag.metadata().files {
                named.insert(f.path.clone());
            }
        }
    }
    for m in candidates {
        let Some(name) = m.location.filename() else {
            continue;
        };
        // `.tmp*`: a file a writer is writing right now (renamed into place when done).
        if !named.contains(name) && !name.starts_with('.') {
            out.files.push((m.location.clone(), m.size));
        }
    }
    Ok(out)
}

/// Whether the leaf's latest version is no longer `latest`.
async fn moved(storage: &Storage, location: &str, latest: Option<u64>) -> Result<bool> {
    let ds = storage.builder(location)?.load().await?;
    Ok(Some(ds.version().version) != latest)
}

/// The shortest grace period a deleting cleanup accepts while its retention check is on
/// (like Delta's `VACUUM` retention check): an operation that takes longer than the grace
/// period between writing its files and committing them fails at its commit instead of
/// committing files a cleanup removed, so a short grace period fails long operations.
pub const RETENTION_FLOOR: Duration = Duration::from_secs(3600);

/// A removal whose target is already gone (a writer's temporary file renamed or removed
/// meanwhile, or another cleanup) succeeded.
fn gone_ok(r: lance::Result<()>) -> Result<()> {
    match r {
        Err(lance::Error::NotFound { .. }) => Ok(()),
        Err(lance::Error::IO { source, .. })
            if source
                .downcast_ref::<object_store::Error>()
                .is_some_and(|e| matches!(e, object_store::Error::NotFound { .. })) =>
        {
            Ok(())
        }
        other => Ok(other?),
    }
}

/// Finds (and unless `dry_run`, removes) orphan leaf directories older than `older_than`.
/// With `retention_check`, a deleting cleanup refuses an `older_than` below
/// [`RETENTION_FLOOR`].
///
/// # Errors
/// `InvalidArgument` for a grace period below the floor; `NotFound` without a namespace;
/// `Lance` for I/O errors.
pub(crate) async fn cleanup(
    storage: &Storage,
    older_than: Duration,
    dry_run: bool,
    retention_check: bool,
) -> Result<CleanupSummary> {
    if retention_check && !dry_run && older_than < RETENTION_FLOOR {
        return Err(crate::error::Error::InvalidArgument(format!(
            "cleanup(older_than={}s) is below the retention floor of {}s: a write, optimize or \
             distributed write in flight for longer than the grace period would have its files \
             removed before it commits (it then fails instead of committing). Pass \
             retention_check=False (CLI: --no-retention-check) when no operation can be in \
             flight that long",
            older_than.as_secs_f64(),
            RETENTION_FLOOR.as_secs()
        )));
    }
    let started_ms = cleanup_marks::now_ms()?;
    let cutoff = started_ms
        .div_euclid(1000)
        .saturating_sub(i64::try_from(older_than.as_secs()).unwrap_or(i64::MAX));
    if dry_run {
        return sweep(storage, cutoff, None).await;
    }
    // Before anything is listed: commits of writes staged since then check their files.
    cleanup_marks::record(storage, started_ms).await?;
    let found = sweep(storage, cutoff, None).await?;
    if found.files == 0 {
        // Nothing to remove: no fence, nothing committed.
        return Ok(CleanupSummary {
            removed: true,
            ..found
        });
    }
    let fence = fence::raise(storage, started_ms, cutoff.saturating_mul(1000) + 999).await?;
    let swept = sweep(storage, cutoff, Some(&fence)).await;
    let lowered = fence.lower(storage).await;
    let summary = swept?;
    lowered?;
    Ok(summary)
}

/// Finds what is older than `cutoff` (seconds since the epoch, the store's clock) and no
/// manifest version names; removes it when a raised `fence` is given (a dry run otherwise).
async fn sweep(
    storage: &Storage,
    cutoff: i64,
    fence: Option<&fence::Raised>,
) -> Result<CleanupSummary> {
    let dry_run = fence.is_none();
    let lease = || fence.map_or(Ok(()), fence::Raised::check_lease);
    // Loaded after the fence: it has every commit that can name files older than the cut-off.
    let snap = Snapshot::load(storage, None).await?;
    let refs = referenced(&snap).await?;
    let (store, base) = storage.object_store().await?;
    let listing = store.list_with_delimiter(Some(&base)).await?;
    let mut summary = CleanupSummary {
        removed: !dry_run,
        ..Default::default()
    };
    for dir in listing.common_prefixes {
        let Some(name) = dir.filename().map(str::to_string) else {
            continue;
        };
        if !is_leaf_dir(&name) || refs.locations.contains(&name) {
            continue;
        }
        let files: Vec<_> = store.list(Some(dir.clone())).try_collect().await?;
        if files.iter().any(|m| m.last_modified.timestamp() > cutoff) {
            continue;
        }
        summary.files += files.len() as u64;
        summary.bytes += files.iter().map(|m| m.size).sum::<u64>();
        if !dry_run {
            lease()?;
            gone_ok(store.remove_dir_all(dir.clone()).await)?;
        }
        summary.orphans.push(name);
    }
    summary.orphans.sort();
    let empty = HashSet::new();
    let mut locations: Vec<&String> = refs.locations.iter().collect();
    locations.sort();
    for location in locations {
        let keep = refs.versions.get(location).unwrap_or(&empty);
        let garbage = leaf_garbage(&store, storage, &base, location, keep, cutoff).await?;
        // Version manifests first: a data file is only removed once nothing can name it.
        for (version, path, size) in &garbage.versions {
            summary.files += 1;
            summary.bytes += size;
            summary.stale_versions.push(format!("{location}@{version}"));
            if !dry_run {
                lease()?;
                gone_ok(store.delete(path).await)?;
            }
        }
        if !dry_run && !garbage.files.is_empty() {
            crate::ns::txn::hooks::pause("cleanup_listed");
            if moved(storage, location, garbage.latest).await? {
                // A (weak-mode) commit landed on the leaf since its files were listed: it may
                // name some of them now. They are left for the next cleanup.
                continue;
            }
            crate::ns::txn::hooks::pause("cleanup_before_data_files");
        }
        for (path, size) in &garbage.files {
            summary.files += 1;
            summary.bytes += size;
            let rel = path
                .as_ref()
                .strip_prefix(base.as_ref())
                .unwrap_or(path.as_ref());
            summary
                .stale_files
                .push(rel.trim_start_matches('/').to_string());
            if !dry_run {
                lease()?;
                gone_ok(store.delete(path).await)?;
            }
        }
    }
    sweep_plans(&store, &base, cutoff, dry_run, &mut summary).await?;
    Ok(summary)
}

/// Finds (and unless `dry_run`, removes) the plans the tasks of stream batches shared, left
/// by runs that never committed.
async fn sweep_plans(
    store: &ObjectStore,
    base: &Path,
    cutoff: i64,
    dry_run: bool,
    summary: &mut CleanupSummary,
) -> Result<()> {
    for (path, size) in stale_plans(store, base, cutoff).await? {
        summary.files += 1;
        summary.bytes += size;
        if !dry_run {
            gone_ok(store.delete(&path).await)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{detached_version, is_leaf_dir};

    #[test]
    fn leaf_dir_names() {
        assert!(is_leaf_dir("0a1b2c3d_v1$abc$def$dataset"));
        assert!(!is_leaf_dir("__manifest"));
        assert!(!is_leaf_dir("0a1b2c3d_v1"));
        assert!(!is_leaf_dir("zzzzzzzz_v1$a$dataset"));
        assert!(!is_leaf_dir("0a1b2c3_v1$a$dataset"));
    }

    #[test]
    fn detached_manifest_names() {
        let v = 0x8000_0000_0000_0007u64;
        assert_eq!(detached_version(&format!("d{v}.manifest")), Some(v));
        assert_eq!(detached_version("d7.manifest"), None);
        assert_eq!(detached_version("18446744073709551614.manifest"), None);
        assert_eq!(detached_version("dx.manifest"), None);
    }
}
