//! Recording the column statistics of partitions whose read version has none (written by
//! another tool, by a release before statistics, or by an operation that could not take them),
//! in one conflict-checked manifest commit: `optimize()`'s step after its compaction. Each
//! such leaf is read once, at its read version, in a stream of batches; its version row is
//! then written again with the statistics added, if the manifest still holds it without any.

use futures::future::BoxFuture;
use futures::stream::{self, StreamExt, TryStreamExt};

use crate::error::Result;
use crate::ns::infra::storage::Storage;
use crate::ns::manifest::{
    column_stats_enabled, leaf_column_stats, LeafColumnStats, Row, Snapshot, TABLE_VERSION,
};
use crate::ns::txn::manifest_commit::{commit_manifest, ManifestChange, ManifestUpdate};

/// Leaves read at a time.
const CONCURRENCY: usize = 4;

/// The statistics of one leaf version, to record on its row.
struct Measured {
    object_id: String,
    version: u64,
    stats: LeafColumnStats,
}

struct RecordStats {
    measured: Vec<Measured>,
    recorded: usize,
}

impl ManifestUpdate for RecordStats {
    fn plan<'a>(
        &'a mut self,
        latest: &'a Snapshot,
    ) -> BoxFuture<'a, Result<Option<ManifestChange>>> {
        Box::pin(async move {
            let mut rows = Vec::new();
            for m in &self.measured {
                // Gone (trimmed, or the partition dropped), or recorded meanwhile: leave it.
                let Some(entry) = latest.table_version(&m.object_id, m.version)? else {
                    continue;
                };
                if LeafColumnStats::recorded(&entry.props).is_some() {
                    continue;
                }
                let mut props = entry.props;
                m.stats.record(&mut props);
                rows.push(Row {
                    object_id: format!("{}${}", m.object_id, m.version),
                    object_type: TABLE_VERSION.into(),
                    location: None,
                    props,
                    read_version: Some(m.version),
                    values: Vec::new(),
                });
            }
            self.recorded = rows.len();
            Ok((!rows.is_empty()).then(|| ManifestChange {
                rows,
                ..ManifestChange::default()
            }))
        })
    }
}

/// The partitions among `object_ids` (in the latest manifest) whose read version is recorded
/// without column statistics, as leaf indexes of `snap`.
async fn without_stats(snap: &Snapshot, object_ids: &[String]) -> Result<Vec<usize>> {
    if !snap.strong_mode(None)? || !column_stats_enabled(&snap.root_props.props)? {
        return Ok(Vec::new());
    }
    let recorded = leaf_column_stats(snap).await?;
    let mut out = Vec::new();
    for oid in object_ids {
        let Some(i) = snap.leaf_index(oid)? else {
            continue;
        };
        let Some(v) = snap.leaves[i].read_version else {
            continue;
        };
        let has_row = snap.table_version(oid, v)?.is_some();
        if has_row && recorded[i].is_none() {
            out.push(i);
        }
    }
    Ok(out)
}

/// The statistics of the leaf `i` of `snap` at its read version, from its rows.
async fn measure(snap: &Snapshot, i: usize) -> Result<Measured> {
    let leaf = &snap.leaves[i];
    let ds = snap.storage.open(&leaf.location, leaf.read_version).await?;
    let mut batches = ds.scan().try_into_stream().await?;
    let mut stats: Option<LeafColumnStats> = None;
    while let Some(b) = batches.try_next().await? {
        let s = LeafColumnStats::of_batch(&b);
        stats = Some(match stats {
            Some(acc) => LeafColumnStats::merge(&acc, &s),
            None => s,
        });
    }
    Ok(Measured {
        object_id: leaf.object_id.clone(),
        version: ds.version().version,
        stats: stats.unwrap_or_default(),
    })
}

/// Records the statistics of the partitions `object_ids` whose read version has none; returns
/// how many were recorded (would be, for a `dry_run`) and the manifest version after.
///
/// # Errors
/// `Lance` when a leaf cannot be read; as [`commit_manifest`].
pub(crate) async fn record_missing_stats(
    storage: &Storage,
    object_ids: &[String],
    max_attempts: u32,
    dry_run: bool,
) -> Result<(u64, u64)> {
    let snap = Snapshot::load(storage, None).await?;
    let missing = without_stats(&snap, object_ids).await?;
    if dry_run || missing.is_empty() {
        return Ok((missing.len() as u64, snap.version));
    }
    let measured = stream::iter(missing.iter().map(|&i| measure(&snap, i)))
        .buffered(CONCURRENCY)
        .try_collect()
        .await?;
    let mut update = RecordStats {
        measured,
        recorded: 0,
    };
    let committed = commit_manifest(storage, max_attempts, &mut update).await?;
    Ok((update.recorded as u64, committed.version))
}
