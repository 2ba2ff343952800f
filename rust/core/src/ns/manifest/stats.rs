//! Per-partition statistics without reading data: what `stats()`, the row counts of
//! `partitions()` and the task planning of Spark reads are made of.
//!
//! Every commit records the totals of the leaf version it makes ([`LeafTotals`]) in that
//! version's `table_version` row, so in strong mode the statistics of any manifest version come
//! from the manifest alone: one scan of its `metadata` column, however many partitions there
//! are. Leaves without recorded totals (weak mode, versions committed by other tools or by
//! older releases) are opened and measured from their Lance metadata.

use std::collections::HashMap;
use std::sync::Arc;

use futures::stream::{self, StreamExt, TryStreamExt};
use lance::dataset::Dataset;
use lance_table::format::is_detached_version;

use crate::arrow::array::{Array, StringArray};
use crate::error::{Error, Result};

use super::column_stats::LeafColumnStats;
use super::format::{required_string, scan_rows, version_rows};
use super::{parse_props, Snapshot, METADATA, OBJECT_ID, OBJECT_TYPE, TABLE_VERSION};

/// Leaves opened at a time when their totals are not recorded.
const CONCURRENCY: usize = 16;

/// Property keys of the totals in a `table_version` row.
const TOTAL_KEYS: [&str; 5] = [
    "total_rows",
    "total_fragments",
    "total_files",
    "total_bytes",
    "total_fragments_with_deletions",
];

/// What one leaf version holds, from its Lance metadata.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LeafTotals {
    /// Rows (deleted rows excluded).
    pub rows: u64,
    /// Fragments.
    pub fragments: u64,
    /// Data files.
    pub files: u64,
    /// Bytes of the data files.
    pub bytes: u64,
    /// Fragments with a deletion file.
    pub fragments_with_deletions: u64,
}

impl LeafTotals {
    /// The totals of the opened version `ds`: from its fragment metadata; the store is asked
    /// only for the size of a file Lance did not record, and the rows are counted by Lance
    /// only when a fragment lacks its row or deletion counts.
    ///
    /// # Errors
    /// `Lance` when a size or count cannot be read.
    pub async fn of(ds: &Dataset) -> Result<Self> {
        let mut t = Self::default();
        let mut rows_known = true;
        let data = ds.data_dir();
        for f in ds.fragments().iter() {
            t.fragments += 1;
            t.files += f.files.len() as u64;
            if let Some(d) = &f.deletion_file {
                t.fragments_with_deletions += 1;
                rows_known &= d.num_deleted_rows.is_some();
            }
            match f.physical_rows {
                Some(n) => {
                    let deleted = f
                        .deletion_file
                        .as_ref()
                        .and_then(|d| d.num_deleted_rows)
                        .unwrap_or(0);
                    t.rows += n.saturating_sub(deleted) as u64;
                }
                None => rows_known = false,
            }
            for file in &f.files {
                t.bytes += match file.file_size_bytes.get() {
                    Some(n) => n.get(),
                    // Written by a tool that did not record sizes: ask the store.
                    None => {
                        let store = ds.object_store(file.base_id).await?;
                        store.size(&data.clone().join(file.path.as_str())).await?
                    }
                };
            }
        }
        if !rows_known {
            t.rows = ds.count_rows(None).await? as u64;
        }
        Ok(t)
    }

    /// Adds the totals to the properties of the version's `table_version` row.
    pub fn record(&self, props: &mut HashMap<String, String>) {
        let values = [
            self.rows,
            self.fragments,
            self.files,
            self.bytes,
            self.fragments_with_deletions,
        ];
        for (k, v) in TOTAL_KEYS.iter().zip(values) {
            props.insert((*k).to_string(), v.to_string());
        }
    }

    /// The totals recorded in `props`; `None` unless all of them are there.
    pub fn recorded(props: &HashMap<String, String>) -> Option<Self> {
        let mut v = [0u64; 5];
        for (slot, k) in v.iter_mut().zip(TOTAL_KEYS) {
            *slot = props.get(k)?.parse().ok()?;
        }
        Some(Self {
            rows: v[0],
            fragments: v[1],
            files: v[2],
            bytes: v[3],
            fragments_with_deletions: v[4],
        })
    }
}

/// A committed leaf version and what it holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LeafVersion {
    /// The version.
    pub version: u64,
    /// Its totals.
    pub totals: LeafTotals,
}

impl LeafVersion {
    /// The version `ds` is at, with its totals.
    ///
    /// # Errors
    /// As [`LeafTotals::of`].
    pub async fn of(ds: &Dataset) -> Result<Self> {
        Ok(Self {
            version: ds.version().version,
            totals: LeafTotals::of(ds).await?,
        })
    }
}

/// One leaf at its read version.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LeafStats {
    /// What the version holds.
    pub totals: LeafTotals,
    /// Versions of the leaf that are kept (0 unless asked for): in strong mode the version
    /// the oldest existing manifest version reads and those the manifest recorded since (the
    /// older ones are expired); in weak mode the versions in the leaf's `_versions/`.
    pub versions: u64,
}

/// The statistics of the leaves `idx` of `snap`, with their kept versions when `versions`.
///
/// # Errors
/// `Lance` when the manifest or a leaf whose totals are not recorded cannot be read.
pub async fn leaf_stats(snap: &Snapshot, idx: &[usize], versions: bool) -> Result<Vec<LeafStats>> {
    let recorded = recorded_stats(snap, idx, versions).await?;
    let missing: Vec<usize> = (0..idx.len()).filter(|&k| recorded[k].is_none()).collect();
    let opened = measure(snap, &missing, idx, versions).await?;
    let mut out: Vec<LeafStats> = recorded
        .into_iter()
        .map(Option::unwrap_or_default)
        .collect();
    for (k, s) in missing.into_iter().zip(opened) {
        out[k] = s;
    }
    Ok(out)
}

/// Opens the leaves `idx[k]` for `k` in `which` and measures them.
async fn measure(
    snap: &Snapshot,
    which: &[usize],
    idx: &[usize],
    versions: bool,
) -> Result<Vec<LeafStats>> {
    stream::iter(which.iter().map(|&k| {
        let leaf = &snap.leaves[idx[k]];
        async move {
            let ds = snap.storage.open(&leaf.location, leaf.read_version).await?;
            let totals = LeafTotals::of(&ds).await?;
            let versions = match versions {
                true => listed_versions(snap, &leaf.location).await?,
                false => 0,
            };
            Ok::<LeafStats, Error>(LeafStats { totals, versions })
        }
    }))
    .buffered(CONCURRENCY)
    .try_collect()
    .await
}

/// The manifest files in a leaf's `_versions/`.
async fn listed_versions(snap: &Snapshot, location: &str) -> Result<u64> {
    let (store, root) = snap.storage.object_store().await?;
    let dir = root.join(location).join("_versions");
    let listed: Vec<_> = store.list(Some(dir)).try_collect().await?;
    Ok(listed
        .iter()
        .filter(|m| m.location.extension() == Some("manifest"))
        .count() as u64)
}

/// Where the manifest records each leaf's totals, indexed once per snapshot (snapshots share
/// it, like their lookups: a repeated `stats()` or read planning on the same version neither
/// scans the `metadata` column again nor walks its rows).
#[derive(Debug)]
pub(crate) struct Recorded {
    /// The `metadata` column (of `table_version` rows, for a light snapshot).
    metadata: StringArray,
    /// Leaf object id -> (its `table_version` rows, the row recording its read version).
    by_leaf: HashMap<String, (u64, Option<usize>)>,
}

impl Recorded {
    async fn index(snap: &Snapshot) -> Result<Self> {
        let read: HashMap<&str, u64> = snap
            .leaves
            .iter()
            .filter_map(|l| Some((l.object_id.as_str(), l.read_version?)))
            .collect();
        let (ids, types, metadata) = version_columns(snap).await?;
        let mut by_leaf: HashMap<String, (u64, Option<usize>)> = HashMap::with_capacity(read.len());
        for (r, table, ver) in version_rows(&ids, &types) {
            let Some(&read_version) = read.get(table) else {
                continue;
            };
            let entry = by_leaf.entry(table.to_string()).or_default();
            entry.0 += 1;
            if ver == read_version && !metadata.is_null(r) {
                entry.1 = Some(r);
            }
        }
        Ok(Self { metadata, by_leaf })
    }

    /// The totals recorded for `leaf`'s read version, and its recorded rows.
    fn of(&self, leaf: &str) -> Result<(Option<LeafTotals>, u64)> {
        let rows = self.by_leaf.get(leaf).map_or(0, |e| e.0);
        let totals = self.props(leaf)?.and_then(|p| LeafTotals::recorded(&p));
        Ok((totals, rows))
    }

    /// The properties of the row recording `leaf`'s read version.
    fn props(&self, leaf: &str) -> Result<Option<HashMap<String, String>>> {
        match self.by_leaf.get(leaf) {
            Some(&(_, Some(r))) => Ok(Some(parse_props(Some(self.metadata.value(r)))?)),
            _ => Ok(None),
        }
    }
}

/// The column statistics recorded for every leaf of `snap` at its read version, by leaf
/// index (`None` for a leaf without: weak mode, versions written by other tools, older
/// releases or operations that do not record them). Parsed once per snapshot.
///
/// # Errors
/// `Lance` when the manifest's properties cannot be read; `Corrupt` for a malformed one.
pub async fn leaf_column_stats(snap: &Snapshot) -> Result<Arc<Vec<Option<LeafColumnStats>>>> {
    let parsed = snap
        .column_stats
        .get_or_try_init(|| async {
            if snap.leaves.is_empty() || !snap.strong_mode(None)? {
                return Ok::<_, Error>(Arc::new(vec![None; snap.leaves.len()]));
            }
            let recorded = snap
                .recorded
                .get_or_try_init(|| Recorded::index(snap))
                .await?;
            let mut out = Vec::with_capacity(snap.leaves.len());
            for l in &snap.leaves {
                let props = recorded.props(&l.object_id)?;
                out.push(props.and_then(|p| LeafColumnStats::recorded(&p)));
            }
            Ok(Arc::new(out))
        })
        .await?;
    Ok(Arc::clone(parsed))
}

/// The rows and bytes the manifest records for the leaves `idx` together, without opening
/// any leaf: `None` when a leaf has no recorded totals (weak mode, other tools).
///
/// # Errors
/// `Lance` when the manifest's properties cannot be read; `Corrupt` for a malformed one.
pub async fn recorded_totals(snap: &Snapshot, idx: &[usize]) -> Result<Option<(u64, u64)>> {
    let recorded = recorded_stats(snap, idx, false).await?;
    Ok(recorded.into_iter().try_fold((0, 0), |(rows, bytes), s| {
        s.map(|s| (rows + s.totals.rows, bytes + s.totals.bytes))
    }))
}

/// The statistics the manifest records for the leaves `idx` at their read versions (`None`
/// for a leaf whose version row has no totals, and for every leaf in weak mode).
async fn recorded_stats(
    snap: &Snapshot,
    idx: &[usize],
    versions: bool,
) -> Result<Vec<Option<LeafStats>>> {
    let mut out = vec![None; idx.len()];
    if idx.is_empty() || !snap.strong_mode(None)? {
        return Ok(out);
    }
    let recorded = snap
        .recorded
        .get_or_try_init(|| Recorded::index(snap))
        .await?;
    let mut rows = vec![0u64; idx.len()];
    for (k, &i) in idx.iter().enumerate() {
        let (totals, n) = recorded.of(&snap.leaves[i].object_id)?;
        rows[k] = n;
        out[k] = totals.map(|totals| LeafStats {
            totals,
            versions: 0,
        });
    }
    if versions {
        // Versions recorded by the oldest manifest version other than the one it reads are
        // expired (or will be).
        let expired = expired_versions(snap).await?;
        for (k, &i) in idx.iter().enumerate() {
            let gone = expired.get(snap.leaves[i].object_id.as_str()).copied();
            if let Some(s) = out[k].as_mut() {
                s.versions = rows[k].saturating_sub(gone.unwrap_or(0));
            }
        }
    }
    Ok(out)
}

/// The `object_id`, `object_type` and `metadata` columns of `snap` (a light snapshot did not
/// load `metadata`: it is read now, at the snapshot's version).
async fn version_columns(snap: &Snapshot) -> Result<(StringArray, StringArray, StringArray)> {
    let batch = match snap.batch.column_by_name(METADATA) {
        Some(_) => snap.batch.clone(),
        None => {
            let columns = [OBJECT_ID, OBJECT_TYPE, METADATA];
            let filter = format!("{OBJECT_TYPE} = '{TABLE_VERSION}'");
            scan_rows(&snap.dataset, &columns, &filter).await?
        }
    };
    Ok((
        required_string(&batch, OBJECT_ID)?,
        required_string(&batch, OBJECT_TYPE)?,
        required_string(&batch, METADATA)?,
    ))
}

/// Per leaf of the oldest manifest version that still exists, the versions it records that
/// no kept manifest version reads: what `expire()` removes, all but the version that manifest
/// version reads and the leaf's latest main-line version (Lance's `latest`). Recorded versions
/// leave the manifest only with their partition.
async fn expired_versions(snap: &Snapshot) -> Result<Arc<HashMap<String, u64>>> {
    let listed = snap.dataset.version_refs().await?;
    let Some(oldest) = listed.iter().map(|v| v.version).min() else {
        return Ok(Arc::default());
    };
    if oldest >= snap.version {
        return Ok(Arc::default());
    }
    let first = match Snapshot::load_with(&snap.storage, Some(oldest), true).await {
        Ok(first) => first,
        // The manifest's first version, written before the namespace's properties.
        Err(Error::NotFound(_)) => return Ok(Arc::default()),
        Err(e) => return Err(e),
    };
    // A function of that version alone: counted once per snapshot (cached snapshots share it).
    let counted = first
        .superseded
        .get_or_try_init(|| async { superseded(&first).map(Arc::new) })
        .await?;
    Ok(Arc::clone(counted))
}

/// Per leaf of `first`, the versions it records other than the one it reads and the newest
/// main-line one.
fn superseded(first: &Snapshot) -> Result<HashMap<String, u64>> {
    // Leaf -> (the version read, versions recorded, newest main-line version recorded).
    let mut leaves: HashMap<&str, (u64, u64, Option<u64>)> = first
        .leaves
        .iter()
        .filter_map(|l| Some((l.object_id.as_str(), (l.read_version?, 0, None))))
        .collect();
    let ids = required_string(&first.batch, OBJECT_ID)?;
    let types = required_string(&first.batch, OBJECT_TYPE)?;
    for (_, table, ver) in version_rows(&ids, &types) {
        if let Some(entry) = leaves.get_mut(table) {
            entry.1 += 1;
            if !is_detached_version(ver) {
                entry.2 = entry.2.max(Some(ver));
            }
        }
    }
    Ok(leaves
        .into_iter()
        .map(|(oid, (read, recorded, main))| {
            let kept = 1 + u64::from(main.is_some_and(|m| m != read));
            (oid.to_string(), recorded.saturating_sub(kept))
        })
        .collect())
}
