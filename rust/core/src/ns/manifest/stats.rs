//! Per-partition statistics without reading data: what `stats()`, the row counts of
//! `partitions()` and the task planning of Spark reads are made of.
//!
//! Every commit records the totals of the leaf version it makes ([`LeafTotals`]) in that
//! version's `table_version` row, so in strong mode the statistics of any manifest version come
//! from the manifest alone: one scan of its `metadata` column, however many partitions there
//! are. Leaves without recorded totals (weak mode, versions committed by other tools or by
//! older releases) are opened and measured from their Lance metadata.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

use futures::stream::{self, StreamExt, TryStreamExt};
use lance::dataset::Dataset;
use lance_table::format::is_detached_version;
use serde::Deserialize;

use crate::arrow::array::{Array, StringArray};
use crate::error::{corrupt, Error, Result};

use super::column_stats::LeafColumnStats;
use super::format::{required_string, version_rows};
use super::{parse_props, Snapshot, METADATA, OBJECT_ID, OBJECT_TYPE};

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

    /// The totals recorded in the properties JSON `text` of a `table_version` row; `None`
    /// unless all of them are there. Reads only the totals' keys (the rest of the row, its
    /// column statistics above all, is skipped, not parsed): `stats()` over many partitions
    /// is made of this. A row the narrow reading does not take (numbers instead of strings,
    /// repeated keys, malformed JSON) is read whole, as [`parse_props`] reads any row.
    ///
    /// # Errors
    /// `Corrupt` for malformed JSON.
    pub fn recorded_in(text: &str) -> Result<Option<Self>> {
        if let Ok(keys) = serde_json::from_str::<TotalsJson<'_>>(text) {
            return Ok(keys.totals());
        }
        Ok(Self::recorded(&parse_props(Some(text))?))
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

/// The totals' keys of a `table_version` row's properties, borrowed from its JSON text
/// (their names are those of [`TOTAL_KEYS`]; other keys are skipped).
#[derive(Deserialize)]
struct TotalsJson<'a> {
    #[serde(borrow)]
    total_rows: Option<Cow<'a, str>>,
    #[serde(borrow)]
    total_fragments: Option<Cow<'a, str>>,
    #[serde(borrow)]
    total_files: Option<Cow<'a, str>>,
    #[serde(borrow)]
    total_bytes: Option<Cow<'a, str>>,
    #[serde(borrow)]
    total_fragments_with_deletions: Option<Cow<'a, str>>,
}

impl TotalsJson<'_> {
    fn totals(&self) -> Option<LeafTotals> {
        let num = |v: &Option<Cow<'_, str>>| v.as_deref()?.parse::<u64>().ok();
        Some(LeafTotals {
            rows: num(&self.total_rows)?,
            fragments: num(&self.total_fragments)?,
            files: num(&self.total_files)?,
            bytes: num(&self.total_bytes)?,
            fragments_with_deletions: num(&self.total_fragments_with_deletions)?,
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
    /// The `metadata` column, row for row with the snapshot's batch, in the chunks it was read
    /// in (joining 30 MB of them for 100,000 leaves costs more than the scan).
    metadata: Vec<StringArray>,
    /// The snapshot row each chunk of `metadata` starts at.
    starts: Vec<usize>,
    /// Per leaf (by its index in the snapshot): its `table_version` rows, and the row
    /// recording its read version.
    by_leaf: Vec<(u64, Option<usize>)>,
}

impl Recorded {
    async fn index(snap: &Snapshot) -> Result<Self> {
        let read: HashMap<&str, (usize, u64)> = snap
            .leaves
            .iter()
            .enumerate()
            .filter_map(|(i, l)| Some((l.object_id.as_str(), (i, l.read_version?))))
            .collect();
        let ids = required_string(&snap.batch, OBJECT_ID)?;
        let types = required_string(&snap.batch, OBJECT_TYPE)?;
        let metadata = metadata_column(snap).await?;
        let starts = metadata
            .iter()
            .scan(0, |row, chunk| {
                let start = *row;
                *row += chunk.len();
                Some(start)
            })
            .collect();
        let mut recorded = Self {
            metadata,
            starts,
            by_leaf: Vec::new(),
        };
        let mut by_leaf = vec![(0u64, None); snap.leaves.len()];
        for (r, table, ver) in version_rows(&ids, &types) {
            let Some(&(leaf, read_version)) = read.get(table) else {
                continue;
            };
            let entry = &mut by_leaf[leaf];
            entry.0 += 1;
            if ver == read_version && recorded.text(r).is_some() {
                entry.1 = Some(r);
            }
        }
        recorded.by_leaf = by_leaf;
        Ok(recorded)
    }

    /// The `metadata` of the snapshot's row `row` (`None` when null).
    fn text(&self, row: usize) -> Option<&str> {
        let chunk = self.starts.partition_point(|&s| s <= row).checked_sub(1)?;
        let (array, at) = (self.metadata.get(chunk)?, row - self.starts[chunk]);
        (at < array.len() && !array.is_null(at)).then(|| array.value(at))
    }

    /// The totals recorded for the read version of the snapshot's leaf `leaf`, and its
    /// recorded rows.
    fn of(&self, leaf: usize) -> Result<(Option<LeafTotals>, u64)> {
        match self.by_leaf.get(leaf) {
            Some(&(rows, Some(r))) => Ok((
                self.text(r)
                    .map(LeafTotals::recorded_in)
                    .transpose()?
                    .flatten(),
                rows,
            )),
            Some(&(rows, None)) => Ok((None, rows)),
            None => Ok((None, 0)),
        }
    }

    /// The properties of the row recording the read version of the snapshot's leaf `leaf`.
    fn props(&self, leaf: usize) -> Result<Option<HashMap<String, String>>> {
        match self.by_leaf.get(leaf) {
            Some(&(_, Some(r))) => Ok(Some(parse_props(self.text(r))?)),
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
            for leaf in 0..snap.leaves.len() {
                let props = recorded.props(leaf)?;
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
        let (totals, n) = recorded.of(i)?;
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

/// The `metadata` column of `snap`, row for row with its batch, in chunks (a light snapshot
/// did not load it: it is read now, at the snapshot's version, in the same order; a scan of
/// the one column, without a filter, is the cheapest read of it).
async fn metadata_column(snap: &Snapshot) -> Result<Vec<StringArray>> {
    if snap.batch.column_by_name(METADATA).is_some() {
        return Ok(vec![required_string(&snap.batch, METADATA)?]);
    }
    let mut scan = snap.dataset.scan();
    scan.project(&[METADATA])?.scan_in_order(true);
    let batches: Vec<_> = scan.try_into_stream().await?.try_collect().await?;
    let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
    if rows != snap.batch.num_rows() {
        return corrupt!(
            "manifest version {} read {} rows, then {rows} rows of its metadata",
            snap.version,
            snap.batch.num_rows()
        );
    }
    batches
        .iter()
        .map(|b| required_string(b, METADATA))
        .collect()
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

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::{parse_props, LeafTotals, TOTAL_KEYS};

    /// A JSON value as text: counts as strings (some with escaped digits), as numbers,
    /// nulls, words, negative numbers and nested objects.
    fn value() -> impl Strategy<Value = String> {
        prop_oneof![
            any::<u64>().prop_map(|n| format!("\"{n}\"")),
            any::<u64>().prop_map(|n| n.to_string()),
            (0u8..10).prop_map(|d| format!("\"\\u003{d}2\"")),
            Just("null".to_string()),
            Just("\"many\"".to_string()),
            Just("\"-3\"".to_string()),
            Just("{\"a\":[1,\"}\"]}".to_string()),
            Just("\"{\\\"columns\\\":{}}\"".to_string()),
        ]
    }

    fn key() -> impl Strategy<Value = String> {
        let mut keys: Vec<String> = TOTAL_KEYS.iter().map(|k| (*k).to_string()).collect();
        keys.extend(["rows", "column_stats", "total_rows\\u0000", "operation"].map(String::from));
        proptest::sample::select(keys)
    }

    proptest! {
        /// The narrow reading of the totals agrees with reading the whole row, for rows with
        /// every key, missing keys, repeated keys, numbers, nulls and escapes; and both fail on
        /// the same malformed text.
        #[test]
        fn narrow_totals_equal_the_whole_row(
            pairs in proptest::collection::vec((key(), value()), 0..12),
            complete in any::<bool>(),
            truncate in any::<bool>(),
        ) {
            let mut pairs = pairs;
            if complete {
                pairs.extend(TOTAL_KEYS.iter().map(|k| ((*k).to_string(), "\"7\"".to_string())));
            }
            let body: Vec<String> = pairs.iter().map(|(k, v)| format!("\"{k}\":{v}")).collect();
            let mut text = format!("{{{}}}", body.join(","));
            if truncate {
                text.pop();
            }
            let whole = parse_props(Some(&text)).map(|p| LeafTotals::recorded(&p));
            match LeafTotals::recorded_in(&text) {
                Ok(narrow) => prop_assert_eq!(Some(narrow), whole.ok()),
                Err(_) => prop_assert!(whole.is_err()),
            }
        }
    }

    #[test]
    fn a_row_with_all_totals_and_column_stats_reads_them() {
        let text = r#"{"column_stats":"{\"columns\":{\"0\":{\"max\":\"1\"}}}","total_rows":"2","total_fragments":"1","total_files":"1","total_bytes":"555","total_fragments_with_deletions":"0"}"#;
        let t = LeafTotals::recorded_in(text).unwrap().unwrap();
        assert_eq!((t.rows, t.fragments, t.files, t.bytes), (2, 1, 1, 555));
        assert_eq!(t.fragments_with_deletions, 0);
    }
}
