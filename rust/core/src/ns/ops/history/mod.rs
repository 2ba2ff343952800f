//! `history()`: the manifest versions, newest first, each with what its commit did, read
//! from the difference to the version before: the `table_version` rows it added (their
//! operation and rows), the leaf tables it added or dropped, and whether the schema or the
//! specs changed.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use chrono::{DateTime, Utc};
use futures::stream::{self, StreamExt, TryStreamExt};
use lance::dataset::transaction::Operation;
use lance::dataset::Dataset;

use crate::arrow::array::{
    Array, ArrayRef, Int64Array, ListArray, ListBuilder, RecordBatch, StringArray, StringBuilder,
    TimestampMicrosecondArray, UInt64Array,
};
use crate::arrow::datatypes::{DataType, Field, Schema, TimeUnit};
use crate::error::{Error, Result};
use crate::ns::{SCHEMA_KEY, SPEC_KEY_PREFIX};

mod alone;

use crate::ns::manifest::{
    parse_props, Snapshot, METADATA, OBJECT_ID, OBJECT_TYPE, ROWS_KEY, TABLE, TABLE_VERSION,
};
use crate::ns::manifest::{required_string, scan_rows};

/// The operation of the versions that created the namespace.
const CREATE_NAMESPACE: &str = "create_namespace";

/// Manifest versions read at a time.
const CONCURRENCY: usize = 8;

/// What one manifest version holds that matters for its history.
#[derive(Default)]
struct State {
    tables: HashSet<String>,
    /// `table_version` rows: object id -> (operation, rows).
    versions: HashMap<String, (String, Option<i64>)>,
    schema: Option<String>,
    specs: BTreeSet<String>,
    /// The manifest table's own columns.
    columns: BTreeSet<String>,
    /// Spec version rows (`v<N>`).
    spec_rows: BTreeSet<String>,
    /// Fences of running cleanups (root properties).
    fences: BTreeSet<String>,
    /// Index declarations (root properties, `key=value`).
    indexes: BTreeSet<String>,
    /// The version is a step of a compaction of the manifest's fragments (a Lance
    /// `ReserveFragments` for the new fragments' ids, then a `Rewrite`).
    compaction: bool,
}

async fn state(ds: &Dataset) -> Result<State> {
    let filter = format!(
        "{OBJECT_TYPE} = '{TABLE}' OR {OBJECT_TYPE} = '{TABLE_VERSION}' \
         OR {OBJECT_ID} NOT LIKE '%$%'"
    );
    let batch = scan_rows(ds, &[OBJECT_ID, OBJECT_TYPE, METADATA], &filter).await?;
    let mut out = rows_state(&batch)?;
    out.columns = ds.schema().fields.iter().map(|f| f.name.clone()).collect();
    out.compaction = matches!(
        ds.read_transaction().await,
        Ok(Some(t)) if matches!(
            t.operation,
            Operation::Rewrite { .. } | Operation::ReserveFragments { .. }
        )
    );
    let props = ds.metadata();
    out.schema = props.get(SCHEMA_KEY).cloned();
    out.specs = props
        .iter()
        .filter(|(k, _)| k.starts_with(SPEC_KEY_PREFIX))
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    out.indexes = props
        .iter()
        .filter(|(k, _)| k.starts_with(crate::ns::manifest::INDEX_KEY_PREFIX))
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    out.fences = props
        .keys()
        .filter(|k| k.starts_with(crate::ns::CLEANUP_FENCE_PREFIX))
        .cloned()
        .collect();
    Ok(out)
}

/// The tables, `table_version` rows and spec rows of manifest rows (`object_id`,
/// `object_type`, `metadata`).
fn rows_state(batch: &RecordBatch) -> Result<State> {
    let ids = required_string(batch, OBJECT_ID)?;
    let types = required_string(batch, OBJECT_TYPE)?;
    let meta = required_string(batch, METADATA)?;
    let mut out = State::default();
    for r in 0..batch.num_rows() {
        match types.value(r) {
            TABLE => {
                out.tables.insert(ids.value(r).to_string());
                continue;
            }
            TABLE_VERSION => {}
            _ => {
                out.spec_rows.insert(ids.value(r).to_string());
                continue;
            }
        }
        let props = parse_props((!meta.is_null(r)).then(|| meta.value(r)))?;
        let op = props.get("operation").cloned().unwrap_or_default();
        let rows = props.get(ROWS_KEY).and_then(|n| n.parse().ok());
        out.versions.insert(ids.value(r).to_string(), (op, rows));
    }
    Ok(out)
}

/// One line of history.
struct Entry {
    version: u64,
    timestamp: DateTime<Utc>,
    operation: String,
    partitions: Option<i64>,
    rows: Option<i64>,
}

fn describe(version: u64, timestamp: DateTime<Utc>, prev: Option<&State>, now: &State) -> Entry {
    let Some(prev) = prev.filter(|p| !p.specs.is_empty()) else {
        // Version 1, and the versions setting up the root properties, created the namespace.
        return Entry {
            version,
            timestamp,
            operation: CREATE_NAMESPACE.into(),
            partitions: None,
            rows: None,
        };
    };
    let (mut ops, touched, rows) = table_changes(prev, now);
    let dropped = prev.tables.difference(&now.tables).count();
    if dropped > 0 {
        ops.insert("drop");
    }
    structure_changes(prev, now, &mut ops);
    let operation = if ops.is_empty() {
        "commit".to_string()
    } else {
        ops.into_iter().collect::<Vec<_>>().join("+")
    };
    Entry {
        version,
        timestamp,
        operation,
        partitions: Some((touched.len() + dropped) as i64),
        rows,
    }
}

/// What the `table_version` rows new in `now` say: their operations, the tables they belong
/// to and the rows they wrote or deleted.
fn table_changes<'a>(
    prev: &State,
    now: &'a State,
) -> (BTreeSet<&'a str>, HashSet<&'a str>, Option<i64>) {
    let mut ops: BTreeSet<&str> = BTreeSet::new();
    let mut touched: HashSet<&str> = HashSet::new();
    let mut rows: Option<i64> = None;
    for (id, (op, n)) in &now.versions {
        if prev.versions.contains_key(id) {
            continue;
        }
        ops.insert(op.as_str());
        touched.insert(id.rsplit_once('$').map_or(id.as_str(), |(t, _)| t));
        if let Some(n) = n {
            rows = Some(rows.unwrap_or(0) + n);
        }
    }
    // A write's new partitions record Lance's `create` as their first version: to the user
    // it is the write (an append, or part of an overwrite).
    if ops.remove("create") && ops.is_empty() {
        ops.insert("append");
    }
    (ops, touched, rows)
}

/// The operations that change the manifest's structure: spec evolution, repaired columns,
/// schema changes, cleanups' fences, the manifest's own compaction.
fn structure_changes(prev: &State, now: &State, ops: &mut BTreeSet<&str>) {
    // `evolve()` prepares the manifest first (new partition columns, the spec version's row:
    // invisible to readers until the spec lands), then sets the spec: one `evolve`, after
    // its `evolve_prepare` steps.
    if now.specs != prev.specs {
        ops.insert("evolve");
    } else if now.spec_rows != prev.spec_rows {
        ops.insert("evolve_prepare");
    }
    for added in now.columns.difference(&prev.columns) {
        // New partition columns come with a spec version; other columns come back by
        // `repair()`.
        ops.insert(
            match added.starts_with(crate::ns::PARTITION_COLUMN_PREFIX) {
                true if !ops.contains("evolve") => "evolve_prepare",
                true => "evolve",
                false => "repair",
            },
        );
    }
    if now.schema != prev.schema {
        ops.insert("schema");
    }
    if now.indexes != prev.indexes {
        ops.insert("index");
    }
    // A deleting cleanup raises its fence, rewrites the partition rows unchanged under it,
    // and lowers it.
    if now.fences != prev.fences || (ops.is_empty() && !now.fences.is_empty()) {
        ops.insert("cleanup");
    }
    if ops.is_empty() && now.compaction {
        // The manifest's fragments compacted after a commit (`compact`): nothing changed.
        ops.insert("compact_manifest");
    }
}

/// The entry of `version`, described from its own transaction (see [`alone`]).
async fn alone_entry(ds: &Dataset, version: u64, timestamp: DateTime<Utc>) -> Result<Entry> {
    let ds = ds.checkout_version(version).await?;
    let (operation, partitions, rows) = alone::describe(&ds).await?;
    Ok(Entry {
        version,
        timestamp,
        operation,
        partitions,
        rows,
    })
}

/// The last `limit` versions of the manifest of `snap` (all when `None`), newest first:
/// `version`, `timestamp` (UTC), `operation` (`create_namespace`, `append` (new partitions
/// included), `overwrite`, `delete`, `compact`, `drop`, `evolve_prepare` (the invisible steps
/// before an `evolve`), `evolve`, `schema`, `repair`, `cleanup`, joined with `+` when a commit
/// did several,
/// `compact_manifest` for a compaction of the manifest's own fragments, `commit`
/// when none applies), `partitions` changed and `rows` written or deleted (NULL when not
/// recorded). The oldest version kept by `expire()` is described from its own transaction
/// (see [`alone`]).
///
/// # Errors
/// `Lance` for I/O errors.
pub(crate) async fn history(snap: &Snapshot, limit: Option<usize>) -> Result<RecordBatch> {
    let ds = &snap.dataset;
    let mut versions = crate::ns::infra::versions::list(ds).await?;
    versions.sort_by_key(|v| std::cmp::Reverse(v.version));
    let shown = limit.unwrap_or(versions.len()).min(versions.len());
    // One more than shown: the version before the oldest one shown.
    let wanted: Vec<(u64, DateTime<Utc>)> = versions
        .iter()
        .take(shown + 1)
        .map(|v| (v.version, v.timestamp))
        .collect();
    let states: Vec<Option<State>> = stream::iter(wanted.iter().map(|&(version, _)| async move {
        let read = async { state(&ds.checkout_version(version).await?).await };
        match read.await {
            Ok(s) => Ok(Some(s)),
            // Removed by an `expire()` running since the listing: not part of the history.
            Err(Error::Lance(e)) if crate::error::is_not_found(&e) => Ok(None),
            Err(e) => Err(e),
        }
    }))
    .buffered(CONCURRENCY)
    .try_collect()
    .await?;
    let kept: Vec<(u64, DateTime<Utc>, State)> = wanted
        .iter()
        .zip(states)
        .filter_map(|(&(v, t), s)| s.map(|s| (v, t, s)))
        .collect();
    let mut entries: Vec<Entry> = Vec::with_capacity(shown.min(kept.len()));
    for (i, (version, timestamp, now)) in kept.iter().take(shown).enumerate() {
        let entry = match kept.get(i + 1) {
            Some(prev) => describe(*version, *timestamp, Some(&prev.2), now),
            // `expire()` removed the version before: the commit's own transaction says what
            // it did.
            None if *version != 1 => match alone_entry(ds, *version, *timestamp).await {
                Ok(entry) => entry,
                // Removed by an `expire()` running since the listing: not part of the history.
                Err(Error::Lance(e)) if crate::error::is_not_found(&e) => continue,
                Err(e) => return Err(e),
            },
            None => describe(*version, *timestamp, None, now),
        };
        entries.push(entry);
    }
    let tags = tags_by_version(ds).await?;
    history_batch(&entries, &tags)
}

/// The tag names of each tagged manifest version, sorted.
async fn tags_by_version(ds: &Dataset) -> Result<HashMap<u64, Vec<String>>> {
    let mut out: HashMap<u64, Vec<String>> = HashMap::new();
    for (name, t) in ds.tags().list().await? {
        out.entry(t.version).or_default().push(name);
    }
    out.values_mut().for_each(|names| names.sort());
    Ok(out)
}

fn tag_lists(entries: &[Entry], tags: &HashMap<u64, Vec<String>>) -> ListArray {
    let mut b = ListBuilder::new(StringBuilder::new());
    for e in entries {
        for name in tags.get(&e.version).into_iter().flatten() {
            b.values().append_value(name);
        }
        b.append(true);
    }
    b.finish()
}

/// The history table of `entries`, with each version's `tags`.
fn history_batch(entries: &[Entry], tags: &HashMap<u64, Vec<String>>) -> Result<RecordBatch> {
    let schema = Schema::new(vec![
        Field::new("version", DataType::UInt64, false),
        Field::new(
            "timestamp",
            DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
            false,
        ),
        Field::new("operation", DataType::Utf8, false),
        Field::new("partitions", DataType::Int64, true),
        Field::new("rows", DataType::Int64, true),
        Field::new(
            "tags",
            DataType::List(Arc::new(Field::new("item", DataType::Utf8, true))),
            false,
        ),
    ]);
    let cols: Vec<ArrayRef> = vec![
        Arc::new(UInt64Array::from_iter_values(
            entries.iter().map(|e| e.version),
        )),
        Arc::new(
            TimestampMicrosecondArray::from_iter_values(
                entries.iter().map(|e| e.timestamp.timestamp_micros()),
            )
            .with_timezone("UTC"),
        ),
        Arc::new(StringArray::from_iter_values(
            entries.iter().map(|e| &e.operation),
        )),
        Arc::new(Int64Array::from_iter(entries.iter().map(|e| e.partitions))),
        Arc::new(Int64Array::from_iter(entries.iter().map(|e| e.rows))),
        Arc::new(tag_lists(entries, tags)),
    ];
    Ok(RecordBatch::try_new(Arc::new(schema), cols)?)
}
