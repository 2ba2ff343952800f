//! Per-partition statistics without reading data: what `stats()`, the row counts of
//! `partitions()` and the task planning of Spark reads are made of.
//!
//! Every commit records the totals of the leaf version it makes ([`LeafTotals`]) in that
//! version's `table_version` row, so in strong mode the statistics of any manifest version come
//! from the manifest alone: one scan of its `metadata` column, however many partitions there
//! are. Leaves without recorded totals (weak mode, versions committed by other tools or by
//! older releases) are opened and measured from their Lance metadata. The statistics of a
//! manifest version are a function of that version alone, so their cost does not grow with
//! the history before it; the versions a leaf keeps on storage are counted only when asked
//! (one listing of the leaf's `_versions/` each).

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, OnceLock};

use futures::stream::{self, StreamExt, TryStreamExt};
use lance::dataset::Dataset;
use serde::Deserialize;

use crate::arrow::array::{Array, StringArray};
use crate::error::{corrupt, Error, Result};

use super::column_stats::{FragmentStats, LeafColumnStats, FRAGMENT_STATS_KEY};
use super::format::{required_string, version_rows};
use super::{parse_props, Snapshot, METADATA, OBJECT_ID, OBJECT_TYPE};

/// Leaves opened or listed at a time (totals not recorded; versions asked for).
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
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LeafVersion {
    /// The version.
    pub version: u64,
    /// Its totals.
    pub totals: LeafTotals,
    /// Its fragments: id and the path of the first data file (which names a fragment before
    /// its commit numbers it).
    pub fragments: Vec<(u64, String)>,
}

impl LeafVersion {
    /// The version `ds` is at, with its totals.
    ///
    /// # Errors
    /// As [`LeafTotals::of`].
    pub async fn of(ds: &Dataset) -> Result<Self> {
        let fragments = ds
            .fragments()
            .iter()
            .map(|f| {
                (
                    f.id,
                    f.files.first().map(|d| d.path.clone()).unwrap_or_default(),
                )
            })
            .collect();
        Ok(Self {
            version: ds.version().version,
            totals: LeafTotals::of(ds).await?,
            fragments,
        })
    }

    /// The ids of the version's fragments.
    #[must_use]
    pub fn fragment_ids(&self) -> Vec<u64> {
        self.fragments.iter().map(|(id, _)| *id).collect()
    }

    /// The ids this version gave to `written` (fragments staged before the commit numbered
    /// them), found by their first data file.
    #[must_use]
    pub fn ids_of(&self, written: &[lance::table::format::Fragment]) -> Vec<u64> {
        let files: HashSet<&str> = written
            .iter()
            .filter_map(|f| f.files.first().map(|d| d.path.as_str()))
            .collect();
        self.fragments
            .iter()
            .filter(|(_, path)| !path.is_empty() && files.contains(path.as_str()))
            .map(|(id, _)| *id)
            .collect()
    }
}

/// One leaf at its read version.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LeafStats {
    /// What the version holds.
    pub totals: LeafTotals,
    /// The version manifests in the leaf's `_versions/` (0 unless asked for): the versions
    /// of the leaf table on storage, those `expire()` keeps and any it has not removed yet.
    pub versions: u64,
}

/// The statistics of the leaves `idx` of `snap`; with `versions`, each leaf's `_versions/` is
/// listed and its version manifests counted.
///
/// # Errors
/// `Lance` when the manifest, a leaf whose totals are not recorded, or (with `versions`) a
/// leaf's `_versions/` cannot be read.
pub async fn leaf_stats(snap: &Snapshot, idx: &[usize], versions: bool) -> Result<Vec<LeafStats>> {
    let recorded = recorded_stats(snap, idx).await?;
    let missing: Vec<usize> = (0..idx.len()).filter(|&k| recorded[k].is_none()).collect();
    let opened = measure(snap, &missing, idx).await?;
    let mut out: Vec<LeafStats> = recorded
        .into_iter()
        .map(|t| LeafStats {
            totals: t.unwrap_or_default(),
            versions: 0,
        })
        .collect();
    for (k, totals) in missing.into_iter().zip(opened) {
        out[k].totals = totals;
    }
    if versions {
        let counted = count_versions(snap, idx).await?;
        for (s, n) in out.iter_mut().zip(counted) {
            s.versions = n;
        }
    }
    Ok(out)
}

/// Opens the leaves `idx[k]` for `k` in `which` at their read versions and measures them.
async fn measure(snap: &Snapshot, which: &[usize], idx: &[usize]) -> Result<Vec<LeafTotals>> {
    stream::iter(which.iter().map(|&k| {
        let leaf = &snap.leaves[idx[k]];
        async move {
            let ds = snap.storage.open(&leaf.location, leaf.read_version).await?;
            LeafTotals::of(&ds).await
        }
    }))
    .buffered(CONCURRENCY)
    .try_collect()
    .await
}

/// The version manifests of each leaf `idx`, listed concurrently.
async fn count_versions(snap: &Snapshot, idx: &[usize]) -> Result<Vec<u64>> {
    stream::iter(
        idx.iter()
            .map(|&i| listed_versions(snap, &snap.leaves[i].location)),
    )
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
/// scans the `metadata` column again nor walks or parses its rows).
#[derive(Debug)]
pub(crate) struct Recorded {
    /// The `metadata` column, row for row with the snapshot's batch, in the chunks it was read
    /// in (joining 30 MB of them for 100,000 leaves costs more than the scan).
    metadata: Vec<StringArray>,
    /// The snapshot row each chunk of `metadata` starts at.
    starts: Vec<usize>,
    /// Per leaf (by its index in the snapshot): the row recording its read version.
    by_leaf: Vec<Option<usize>>,
    /// Per leaf: its recorded totals, parsed on first use (a pruned read parses only the
    /// leaves it keeps).
    totals: Vec<OnceLock<Option<LeafTotals>>>,
    /// Per leaf: its recorded fragment groups, parsed on first use.
    fragments: Vec<OnceLock<Option<Arc<FragmentStats>>>>,
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
            totals: (0..snap.leaves.len()).map(|_| OnceLock::new()).collect(),
            fragments: (0..snap.leaves.len()).map(|_| OnceLock::new()).collect(),
        };
        let mut by_leaf = vec![None; snap.leaves.len()];
        for (r, table, ver) in version_rows(&ids, &types) {
            match read.get(table) {
                Some(&(leaf, read_version))
                    if ver == read_version && recorded.text(r).is_some() =>
                {
                    by_leaf[leaf] = Some(r);
                }
                _ => {}
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

    /// The totals recorded for the read version of the snapshot's leaf `leaf`.
    fn of(&self, leaf: usize) -> Result<Option<LeafTotals>> {
        let Some(cell) = self.totals.get(leaf) else {
            return Ok(None);
        };
        if let Some(known) = cell.get() {
            return Ok(*known);
        }
        let parsed = match self.by_leaf[leaf].and_then(|r| self.text(r)) {
            Some(text) => LeafTotals::recorded_in(text)?,
            None => None,
        };
        Ok(*cell.get_or_init(|| parsed))
    }

    /// The fragment groups recorded for the read version of leaf `leaf`, parsed on first use
    /// (a row without them is told by a search of its text, not parsed).
    fn fragment_stats(&self, leaf: usize) -> Result<Option<Arc<FragmentStats>>> {
        let Some(cell) = self.fragments.get(leaf) else {
            return Ok(None);
        };
        if let Some(known) = cell.get() {
            return Ok(known.clone());
        }
        let parsed = match self.by_leaf[leaf].and_then(|r| self.text(r)) {
            Some(t) if t.contains(FRAGMENT_STATS_KEY) => {
                FragmentStats::recorded(&parse_props(Some(t))?).map(Arc::new)
            }
            _ => None,
        };
        Ok(cell.get_or_init(|| parsed).clone())
    }

    /// The properties of the row recording the read version of the snapshot's leaf `leaf`.
    fn props(&self, leaf: usize) -> Result<Option<HashMap<String, String>>> {
        match self.by_leaf.get(leaf) {
            Some(&Some(r)) => Ok(Some(parse_props(self.text(r))?)),
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

/// The fragment groups recorded for the read version of the leaf `leaf` of `snap` (`None`
/// when there are none: see [`FragmentStats`]), with the number of fragments the version
/// holds as its row records it. Parsed once per snapshot.
///
/// # Errors
/// `Lance` when the manifest's properties cannot be read; `Corrupt` for a malformed one.
pub async fn leaf_fragment_stats(
    snap: &Snapshot,
    leaf: usize,
) -> Result<Option<(Arc<FragmentStats>, Option<u64>)>> {
    if !snap.strong_mode(None)? {
        return Ok(None);
    }
    let recorded = snap
        .recorded
        .get_or_try_init(|| Recorded::index(snap))
        .await?;
    let Some(groups) = recorded.fragment_stats(leaf)? else {
        return Ok(None);
    };
    Ok(Some((groups, recorded.of(leaf)?.map(|t| t.fragments))))
}

/// The rows and bytes the manifest records for the leaves `idx` together, without opening
/// any leaf: `None` when a leaf has no recorded totals (weak mode, other tools).
///
/// # Errors
/// `Lance` when the manifest's properties cannot be read; `Corrupt` for a malformed one.
pub async fn recorded_totals(snap: &Snapshot, idx: &[usize]) -> Result<Option<(u64, u64)>> {
    let recorded = recorded_stats(snap, idx).await?;
    Ok(recorded.into_iter().try_fold((0, 0), |(rows, bytes), t| {
        t.map(|t| (rows + t.rows, bytes + t.bytes))
    }))
}

/// The totals the manifest records for the leaves `idx` at their read versions (`None` for
/// a leaf whose version row has no totals, and for every leaf in weak mode).
async fn recorded_stats(snap: &Snapshot, idx: &[usize]) -> Result<Vec<Option<LeafTotals>>> {
    if idx.is_empty() || !snap.strong_mode(None)? {
        return Ok(vec![None; idx.len()]);
    }
    let recorded = snap
        .recorded
        .get_or_try_init(|| Recorded::index(snap))
        .await?;
    idx.iter().map(|&i| recorded.of(i)).collect()
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
