//! Writes: align input to the namespace schema, route every batch by partition key, write each
//! partition's rows as Lance fragments (concurrently), commit every leaf table, then make
//! everything visible with one atomic `merge_insert` into `__manifest` (strong mode, D11).
//!
//! Conflicts (spec: Conflict Resolution) are resolved against the manifest version read at
//! the start (S0): a concurrent append to the same table is rebased (our fragments are
//! re-committed on top of the new version); a concurrently created partition with the same
//! values is adopted (our rows are copied into it, so there are never two partitions with the
//! same values); an overwrite racing any other write fails with `CommitConflict`.
//! Lance's own row-level conflict detection on `__manifest` guards the final step: two
//! commits updating the same table row, or both creating partitions under the same spec
//! version (both rewrite the `v<N>` row), cannot both succeed; the loser re-checks and retries.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::stream::{self, StreamExt, TryStreamExt};
use lance::dataset::builder::DatasetBuilder;
use lance::dataset::transaction::{Operation, Transaction};
use lance::dataset::{
    CommitBuilder, Dataset, InsertBuilder, MergeInsertBuilder, WhenMatched, WhenNotMatched,
    WhenNotMatchedBySource, WriteMode, WriteParams,
};
use lance::table::format::Fragment;
use lance_file::writer::FileWriterOptions;
use tokio::sync::{OnceCell, Semaphore};

use crate::arrow::array::UInt32Array;
use crate::arrow::array::{new_null_array, Array, ArrayRef, RecordBatch, RecordBatchOptions};
use crate::arrow::compute::{concat_batches, take_record_batch};
use crate::arrow::datatypes::{Field, Schema, SchemaRef};
use crate::datafusion::scalar::ScalarValue;
use crate::error::{schema_err, Error, Result};
use crate::ns::ids::{derived_id, random_id, table_location};
use crate::ns::manifest::{
    describe_key, rows_to_batch, Row, Snapshot, NAMESPACE, READ_VERSION, TABLE, TABLE_VERSION,
    WRITE_ID_KEY,
};
use crate::ns::runtime::{runtime, session};
use crate::ns::{join_uri, values, LEAF_FIELD_ID_KEY, LEAF_TABLE};
use crate::route::route_with_threads;
use crate::spec::{to_namespace_type, CompiledSpec};
use crate::types::FIELD_ID_KEY;

/// How a write treats existing data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Add rows.
    Append,
    /// Replace exactly the partitions the input touches (dynamic partition overwrite).
    Overwrite,
    /// Replace everything: partitions the input does not touch are dropped.
    OverwriteAll,
}

impl Mode {
    /// Parses `append`, `overwrite` or `overwrite_all`.
    ///
    /// # Errors
    /// `InvalidArgument` for anything else.
    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "append" => Ok(Self::Append),
            "overwrite" => Ok(Self::Overwrite),
            "overwrite_all" => Ok(Self::OverwriteAll),
            other => Err(Error::InvalidArgument(format!(
                "mode must be 'append', 'overwrite' or 'overwrite_all', not {other:?}"
            ))),
        }
    }
}

/// Default of [`WriteOptions::max_new_partitions`].
pub const DEFAULT_MAX_NEW_PARTITIONS: usize = 1000;

/// Options of a write.
#[derive(Debug, Clone)]
pub struct WriteOptions {
    /// Append or overwrite.
    pub mode: Mode,
    /// Strong (detached commits + one manifest commit) or weak (direct commits); `None`
    /// takes the namespace default (strong unless the root property says `weak`).
    pub strong: Option<bool>,
    /// Rows buffered per partition before a fragment is written.
    pub max_rows_per_file: usize,
    /// Partitions written concurrently.
    pub concurrency: usize,
    /// Threads used to route one batch (1 inside Spark tasks).
    pub route_threads: usize,
    /// Manifest commit attempts before giving up with `CommitConflict`.
    pub max_attempts: u32,
    /// Most partitions one write (one task of a distributed write) may create: a guard
    /// against a spec that makes a partition of almost every row (like Hive's limit on
    /// dynamic partitions per node).
    pub max_new_partitions: usize,
    /// The id of a distributed write (its nonce): recorded on the `table_version` rows of its
    /// commit, so that committing the same write again is a no-op.
    pub write_id: Option<String>,
    /// Memory budget of a write's buffers, in bytes: rows routed but not yet written plus
    /// rows being written. When the routed rows reach half of it, the largest partitions are
    /// written out (a partition may then get more than one file) and the rest compacted;
    /// when the writes in flight reach the other half, routing waits for them.
    pub max_buffer_bytes: usize,
}

impl Default for WriteOptions {
    fn default() -> Self {
        Self {
            mode: Mode::Append,
            strong: None,
            max_rows_per_file: 1 << 20,
            concurrency: 8,
            route_threads: 1,
            max_attempts: 20,
            max_new_partitions: DEFAULT_MAX_NEW_PARTITIONS,
            write_id: None,
            max_buffer_bytes: 1 << 30,
        }
    }
}

/// What a write did.
#[derive(Debug, Clone, Default)]
pub struct WriteSummary {
    /// Rows written.
    pub rows: u64,
    /// Partitions written to.
    pub partitions: u64,
    /// Partitions created.
    pub created: u64,
    /// Partitions dropped (overwrite_all).
    pub dropped: u64,
    /// Data files written.
    pub files: u64,
    /// Bytes written.
    pub bytes: u64,
    /// Manifest version after the commit.
    pub manifest_version: u64,
    /// Manifest commit attempts.
    pub attempts: u32,
    /// Partitions an append rewrote because they were written under an older schema.
    pub rewritten: u64,
    /// The write had already been committed (a repeated commit of a distributed write):
    /// nothing was done.
    pub already_committed: bool,
}

/// The schema leaf tables are written with: the namespace schema with the namespace field id
/// kept under [`LEAF_FIELD_ID_KEY`] (Lance numbers its own field ids).
pub fn leaf_schema(ns: &Schema) -> SchemaRef {
    fn convert(f: &Field) -> Field {
        let mut md = f.metadata().clone();
        if let Some(id) = md.remove(FIELD_ID_KEY) {
            md.insert(LEAF_FIELD_ID_KEY.to_string(), id);
        }
        let f = f.clone().with_metadata(md);
        match f.data_type() {
            crate::arrow::datatypes::DataType::Struct(children) => {
                let kids: Vec<Field> = children.iter().map(|c| convert(c)).collect();
                f.clone()
                    .with_data_type(crate::arrow::datatypes::DataType::Struct(kids.into()))
            }
            _ => f,
        }
    }
    Arc::new(Schema::new(
        ns.fields().iter().map(|f| convert(f)).collect::<Vec<_>>(),
    ))
}

/// Aligns an input batch to the namespace schema (write schema rules): columns match by
/// name; an unknown column is an error; a missing nullable column is NULL, a missing
/// non-nullable one an error; types are cast when lossless, otherwise an error.
///
/// # Errors
/// `SchemaMismatch` naming the column.
pub fn align(batch: &RecordBatch, ns: &Schema, out_schema: &SchemaRef) -> Result<RecordBatch> {
    let mut seen = HashSet::with_capacity(batch.num_columns());
    for f in batch.schema().fields() {
        if !seen.insert(f.name().as_str()) {
            return schema_err!(
                "the input has two columns named {:?}; each column may appear once",
                f.name()
            );
        }
        if ns.field_with_name(f.name()).is_err() {
            return schema_err!(
                "column {:?} is not in the namespace schema (columns: {})",
                f.name(),
                ns.fields()
                    .iter()
                    .map(|f| f.name().as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
    }
    let rows = batch.num_rows();
    let mut cols: Vec<ArrayRef> = Vec::with_capacity(ns.fields().len());
    for f in ns.fields() {
        let col = match batch.column_by_name(f.name()) {
            Some(c) => to_namespace_type(c, f.data_type(), f.name())
                .map_err(|e| Error::SchemaMismatch(e.to_string()))?,
            None if f.is_nullable() => new_null_array(f.data_type(), rows),
            None => {
                return schema_err!(
                    "column {:?} is missing from the input and is not nullable",
                    f.name()
                )
            }
        };
        if !f.is_nullable() && col.null_count() > 0 {
            return schema_err!(
                "column {:?} is not nullable but the input has {} NULLs",
                f.name(),
                col.null_count()
            );
        }
        cols.push(col);
    }
    Ok(RecordBatch::try_new_with_options(
        Arc::clone(out_schema),
        cols,
        &RecordBatchOptions::new().with_row_count(Some(rows)),
    )?)
}

/// Where a partition's rows go.
#[derive(Debug, Clone)]
pub(crate) enum Target {
    /// An existing leaf, read at `base` (None = latest, weak mode).
    Existing {
        object_id: String,
        location: String,
        base: Option<u64>,
    },
    /// A new leaf at a fresh location; `path` holds the planned namespace id of every level
    /// (existing ones where the snapshot had them), so that the location names the object id.
    New { location: String, path: Vec<String> },
}

/// One partition being written.
pub(crate) struct Part {
    pub(crate) key: Vec<ScalarValue>,
    pub(crate) target: Target,
    pub(crate) buffer: Vec<RecordBatch>,
    /// Rows in `buffer`.
    pub(crate) buffered: usize,
    /// Estimated memory held by `buffer` (slices share their routed batch: each is charged
    /// its share of it).
    pub(crate) buffered_bytes: usize,
    pub(crate) rows: u64,
    pub(crate) shared: Arc<PartShared>,
}

/// State of a partition shared with its flush tasks.
#[derive(Default)]
pub(crate) struct PartShared {
    pub(crate) dataset: OnceCell<Arc<Dataset>>,
    pub(crate) fragments: Mutex<Vec<Fragment>>,
    pub(crate) schema: Mutex<Option<lance::datatypes::Schema>>,
    /// Whether an append rewrites the partition (its leaf has an older schema); decided by
    /// the first flush, which also writes the old rows.
    pub(crate) rewrite: OnceCell<bool>,
}

/// The schemas a flush needs.
#[derive(Clone)]
pub(crate) struct Schemas {
    /// The namespace schema.
    pub(crate) ns: SchemaRef,
    /// The leaf schema new data is written with.
    pub(crate) leaf: SchemaRef,
}

/// The rows of a leaf at its read version, adapted to the current leaf schema (read rules).
pub(crate) async fn read_adapted(ds: &Dataset, schemas: &Schemas) -> Result<Vec<RecordBatch>> {
    let stored = Schema::from(ds.schema());
    let map = crate::ns::scan::leaf_columns(&stored, &schemas.ns);
    let batches: Vec<RecordBatch> = ds.scan().try_into_stream().await?.try_collect().await?;
    batches
        .iter()
        .map(|b| {
            let adapted = crate::ns::scan::adapt(b, &schemas.ns, &map)?;
            Ok(RecordBatch::try_new_with_options(
                Arc::clone(&schemas.leaf),
                adapted.columns().to_vec(),
                &RecordBatchOptions::new().with_row_count(Some(adapted.num_rows())),
            )?)
        })
        .collect()
}

pub(crate) fn op_fragments(
    op: Operation,
) -> Result<(Vec<Fragment>, Option<lance::datatypes::Schema>)> {
    match op {
        Operation::Append { fragments } => Ok((fragments, None)),
        Operation::Overwrite {
            fragments, schema, ..
        } => Ok((fragments, Some(schema))),
        other => Err(Error::Internal(format!(
            "unexpected uncommitted operation {}",
            other.name()
        ))),
    }
}

pub(crate) async fn open_at(uri: &str, version: Option<u64>) -> Result<Arc<Dataset>> {
    let mut b = DatasetBuilder::from_uri(uri).with_session(session()?);
    if let Some(v) = version {
        b = b.with_version(v);
    }
    Ok(Arc::new(b.load().await?))
}

pub(crate) fn write_params(mode: WriteMode) -> Result<WriteParams> {
    Ok(WriteParams {
        mode,
        session: Some(session()?),
        enable_v2_manifest_paths: true,
        skip_auto_cleanup: true,
        max_rows_per_file: usize::MAX / 2,
        // Our batches are owned, contiguous Rust arrays (routing copies them out of the
        // input), so Lance can keep them instead of copying every buffered slice again.
        file_writer_options: Some(FileWriterOptions {
            keep_original_array: Some(true),
            ..Default::default()
        }),
        ..Default::default()
    })
}

/// Writes one buffer of a partition as fragments (uncommitted).
async fn flush(
    root: String,
    target: Target,
    overwrite: bool,
    staging: bool,
    shared: Arc<PartShared>,
    mut batches: Vec<RecordBatch>,
    schemas: Schemas,
) -> Result<()> {
    // Routing leaves a partition many small slices (one per input batch); Lance pays a
    // fixed cost per batch it encodes, so hand it one contiguous batch.
    if batches.len() > 1 {
        let one = concat_batches(&batches[0].schema(), &batches)?;
        batches = vec![one];
    }
    let (fragments, schema) = match &target {
        Target::New { location, .. } => {
            let uri = join_uri(&root, location);
            let params = write_params(WriteMode::Create)?;
            let txn = InsertBuilder::new(uri.as_str())
                .with_params(&params)
                .execute_uncommitted(batches)
                .await?;
            op_fragments(txn.operation)?
        }
        Target::Existing { location, base, .. } => {
            let uri = join_uri(&root, location);
            let ds = shared
                .dataset
                .get_or_try_init(|| open_at(&uri, *base))
                .await?
                .clone();
            // An append to a leaf written under an older schema rewrites the partition with
            // the current one (old rows first, adapted by the read rules).
            let mut old_rows = None;
            let rewrite = overwrite
                || *shared
                    .rewrite
                    .get_or_try_init(|| async {
                        let stored = Schema::from(ds.schema());
                        if crate::ns::schema::leaf_is_current(&stored, &schemas.leaf) {
                            return Ok::<bool, Error>(false);
                        }
                        if !staging {
                            old_rows = Some(read_adapted(&ds, &schemas).await?);
                        }
                        Ok(true)
                    })
                    .await?;
            if let Some(old) = old_rows {
                batches.splice(0..0, old);
            }
            let params = write_params(if rewrite {
                WriteMode::Overwrite
            } else {
                WriteMode::Append
            })?;
            let txn = InsertBuilder::new(ds)
                .with_params(&params)
                .execute_uncommitted(batches)
                .await?;
            op_fragments(txn.operation)?
        }
    };
    shared
        .fragments
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .extend(fragments);
    if let Some(s) = schema {
        *shared.schema.lock().unwrap_or_else(|e| e.into_inner()) = Some(s);
    }
    Ok(())
}

/// A partition whose fragments are written and whose leaf table is committed (detached in
/// strong mode), waiting for the manifest commit.
#[derive(Debug, Clone)]
pub struct Pending {
    /// Partition values.
    pub key: Vec<ScalarValue>,
    /// Leaf object id (None for a new partition until its namespaces are resolved).
    pub object_id: Option<String>,
    /// Leaf location.
    pub location: String,
    /// Planned namespace ids per level (new partitions).
    pub path: Vec<String>,
    /// Whether this write created the leaf table.
    pub created: bool,
    /// The version our change was based on (None: created, or weak mode).
    pub base: Option<u64>,
    /// The version holding our change.
    pub version: u64,
    /// `append` or `overwrite` (`create` for new leaves).
    pub operation: &'static str,
    /// Whether an append rewrote the partition (its leaf had an older schema).
    pub rewritten: bool,
    /// The fragments we wrote (for rebasing).
    pub fragments: Vec<Fragment>,
    /// Rows written.
    pub rows: u64,
}

fn data_files(frags: &[Fragment]) -> (u64, u64) {
    let files = frags.iter().map(|f| f.files.len() as u64).sum();
    let bytes = frags
        .iter()
        .flat_map(|f| f.files.iter())
        .filter_map(|d| d.file_size_bytes.get().map(|n| n.get()))
        .sum();
    (files, bytes)
}

/// Commits one partition's fragments to its leaf table.
async fn commit_leaf(
    root: &str,
    target: &Target,
    overwrite: bool,
    strong: bool,
    shared: &PartShared,
    key: Vec<ScalarValue>,
    rows: u64,
) -> Result<Pending> {
    let fragments =
        std::mem::take(&mut *shared.fragments.lock().unwrap_or_else(|e| e.into_inner()));
    let schema = shared
        .schema
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    match target {
        Target::New { location, path } => {
            let uri = join_uri(root, location);
            let schema =
                schema.ok_or_else(|| Error::Internal("new leaf without a schema".into()))?;
            let txn = Transaction::new(
                0,
                Operation::Overwrite {
                    fragments: fragments.clone(),
                    schema,
                    config_upsert_values: None,
                    initial_bases: None,
                },
                None,
            );
            let ds = CommitBuilder::new(uri.as_str())
                .with_session(session()?)
                .enable_v2_manifest_paths(true)
                .with_skip_auto_cleanup(true)
                .execute(txn)
                .await?;
            Ok(Pending {
                key,
                object_id: None,
                location: location.clone(),
                path: path.clone(),
                created: true,
                base: None,
                version: ds.version().version,
                operation: "create",
                rewritten: false,
                fragments,
                rows,
            })
        }
        Target::Existing {
            object_id,
            location,
            base,
        } => {
            let uri = join_uri(root, location);
            let ds = match shared.dataset.get() {
                Some(d) => Arc::clone(d),
                None => open_at(&uri, *base).await?,
            };
            let read_version = ds.version().version;
            let rewrite = overwrite || shared.rewrite.get().copied().unwrap_or(false);
            let op = if rewrite {
                let schema = match schema {
                    Some(s) => s,
                    None => ds.schema().clone(),
                };
                Operation::Overwrite {
                    fragments: fragments.clone(),
                    schema,
                    config_upsert_values: None,
                    initial_bases: None,
                }
            } else {
                Operation::Append {
                    fragments: fragments.clone(),
                }
            };
            let committed = CommitBuilder::new(ds)
                .with_detached(strong)
                .with_skip_auto_cleanup(true)
                .execute(Transaction::new(read_version, op, None))
                .await?;
            Ok(Pending {
                key,
                object_id: Some(object_id.clone()),
                location: location.clone(),
                path: Vec::new(),
                created: false,
                base: Some(read_version),
                version: committed.version().version,
                operation: if rewrite { "overwrite" } else { "append" },
                rewritten: rewrite && !overwrite,
                fragments,
                rows,
            })
        }
    }
}

/// Writes `input` into the namespace at `root`.
///
/// # Errors
/// `SchemaMismatch` for input that does not fit the schema; `CommitConflict` when a
/// concurrent commit makes this one impossible; `Lance` for I/O errors. On error nothing
/// becomes visible to readers; written files are left for `cleanup`.
pub fn write(
    root: &str,
    input: impl Iterator<Item = Result<RecordBatch>>,
    opts: &WriteOptions,
) -> Result<WriteSummary> {
    let rt = runtime()?;
    let snap = rt.block_on(Snapshot::load(root, None))?;
    snap.check_writable()?;
    let strong = snap.strong_mode(opts.strong)?;
    let spec = snap.current_spec().clone();
    let mut ids = IdPlan::Random(HashMap::new());
    let (parts, total_rows) =
        route_input(root, &snap, &spec, input, opts, strong, &mut ids, false)?;
    test_pause("after_fragments");
    let mut summary = commit_parts(root, &spec, parts, strong, opts)?;
    summary.rows = total_rows;
    Ok(summary)
}

/// How new partitions get their namespace ids.
pub(crate) enum IdPlan {
    /// Fresh random ids, one per new namespace prefix of this write.
    Random(HashMap<Vec<ScalarValue>, String>),
    /// Ids derived from a per-job random nonce and the partition values, so that every task
    /// of a distributed write names a new partition the same way.
    Derived(String),
}

/// Routes `input` by partition and writes every partition's rows as uncommitted fragments
/// (concurrently). With `staging`, an append to a leaf written under an older schema writes
/// its new rows with the current schema but leaves the old rows to the committer.
#[allow(clippy::too_many_arguments)]
pub(crate) fn route_input(
    root: &str,
    snap: &Snapshot,
    spec: &crate::spec::PartitionSpec,
    input: impl Iterator<Item = Result<RecordBatch>>,
    opts: &WriteOptions,
    strong: bool,
    ids: &mut IdPlan,
    staging: bool,
) -> Result<(HashMap<Vec<ScalarValue>, Part>, u64)> {
    let rt = runtime()?;
    let ns_schema = snap.schema();
    let out_schema = leaf_schema(&ns_schema);
    let compiled = CompiledSpec::compile(spec, &ns_schema, false)?;
    let overwrite = opts.mode != Mode::Append;
    let sem = Arc::new(Semaphore::new(opts.concurrency.max(1)));
    let mut parts: HashMap<Vec<ScalarValue>, Part> = HashMap::new();
    // Flushes in flight, oldest first, with the bytes each holds.
    let mut tasks: VecDeque<(tokio::task::JoinHandle<Result<()>>, usize)> = VecDeque::new();
    let mut inflight_bytes = 0usize;
    // Bytes held by the partitions' buffers.
    let mut buffered_bytes = 0usize;
    let half_budget = (opts.max_buffer_bytes / 2).max(1);
    let root_s = root.to_string();
    let spawn_flush = |p: &mut Part, tasks: &mut VecDeque<_>| -> usize {
        let batches = std::mem::take(&mut p.buffer);
        let bytes = std::mem::take(&mut p.buffered_bytes);
        p.buffered = 0;
        let (root, target, shared, sem, schemas) = (
            root_s.clone(),
            p.target.clone(),
            Arc::clone(&p.shared),
            Arc::clone(&sem),
            Schemas {
                ns: Arc::clone(&ns_schema),
                leaf: Arc::clone(&out_schema),
            },
        );
        tasks.push_back((
            rt.spawn(async move {
                let _permit = sem
                    .acquire_owned()
                    .await
                    .map_err(|e| Error::Internal(e.to_string()))?;
                flush(root, target, overwrite, staging, shared, batches, schemas).await
            }),
            bytes,
        ));
        bytes
    };
    let join = |h: tokio::task::JoinHandle<Result<()>>| -> Result<()> {
        rt.block_on(h)
            .map_err(|e| Error::Internal(format!("write task failed: {e}")))?
    };
    let mut total_rows = 0u64;
    let mut new_parts = 0usize;
    let result: Result<()> = (|| {
        for batch in input {
            let batch = batch?;
            if batch.num_rows() == 0 {
                continue;
            }
            let aligned = align(&batch, &ns_schema, &out_schema)?;
            let keys = compiled.partition_values(&aligned)?;
            let routed = route_with_threads(
                &aligned,
                keys.columns(),
                keys.schema(),
                opts.route_threads.max(1),
            )?;
            let batch_rows = routed.batch.num_rows().max(1);
            let batch_bytes = routed.batch.get_array_memory_size();
            for g in 0..routed.keys.num_rows() {
                let key = routed
                    .keys
                    .columns()
                    .iter()
                    .map(|c| ScalarValue::try_from_array(c, g))
                    .collect::<std::result::Result<Vec<_>, _>>()?;
                let part = match parts.get_mut(&key) {
                    Some(p) => p,
                    None => {
                        let target = match snap.leaf(spec.id, &key)? {
                            Some(leaf) => Target::Existing {
                                object_id: leaf.object_id.clone(),
                                location: leaf.location.clone(),
                                base: if strong { leaf.read_version } else { None },
                            },
                            None => {
                                new_parts += 1;
                                if new_parts > opts.max_new_partitions {
                                    return Err(too_many_partitions(spec, opts, &key));
                                }
                                let path = plan_path(snap, spec.id, &key, ids)?;
                                let oid = format!("v{}${}${LEAF_TABLE}", spec.id, path.join("$"));
                                Target::New {
                                    location: table_location(&oid),
                                    path,
                                }
                            }
                        };
                        parts.entry(key.clone()).or_insert(Part {
                            key,
                            target,
                            buffer: Vec::new(),
                            buffered: 0,
                            buffered_bytes: 0,
                            rows: 0,
                            shared: Arc::new(PartShared::default()),
                        })
                    }
                };
                let rows = routed.offsets[g + 1] - routed.offsets[g];
                let bytes = (batch_bytes as u128 * rows as u128 / batch_rows as u128) as usize;
                part.buffer.push(routed.group(g));
                part.buffered += rows;
                part.buffered_bytes += bytes;
                buffered_bytes += bytes;
                part.rows += rows as u64;
                total_rows += rows as u64;
                if part.buffered >= opts.max_rows_per_file {
                    let b = spawn_flush(part, &mut tasks);
                    buffered_bytes -= b;
                    inflight_bytes += b;
                }
            }
            drop(routed);
            if buffered_bytes >= half_budget {
                // Write the largest partitions until half of the buffers are gone, then copy
                // what the others hold out of the routed batches they share (a slice keeps its
                // whole batch alive), so the memory is really released.
                let mut order: Vec<(usize, Vec<ScalarValue>)> = parts
                    .iter()
                    .filter(|(_, p)| p.buffered > 0)
                    .map(|(k, p)| (p.buffered_bytes, k.clone()))
                    .collect();
                order.sort_unstable_by_key(|b| std::cmp::Reverse(b.0));
                let goal = half_budget / 2;
                for (_, k) in order {
                    let Some(p) = parts.get_mut(&k) else { continue };
                    if buffered_bytes > goal {
                        let b = spawn_flush(p, &mut tasks);
                        buffered_bytes -= b;
                        inflight_bytes += b;
                    } else if p.buffer.len() > 1
                        || p.buffer[0].get_array_memory_size() > p.buffered_bytes
                    {
                        let owned = compact(&p.buffer)?;
                        let b = owned.get_array_memory_size();
                        buffered_bytes = buffered_bytes - p.buffered_bytes + b;
                        p.buffered_bytes = b;
                        p.buffer = vec![owned];
                    }
                }
            }
            while inflight_bytes >= half_budget {
                let Some((h, b)) = tasks.pop_front() else {
                    break;
                };
                inflight_bytes -= b;
                join(h)?;
            }
        }
        Ok(())
    })();
    for p in parts.values_mut() {
        if !p.buffer.is_empty() && result.is_ok() {
            spawn_flush(p, &mut tasks);
        }
    }
    let mut flushed: Result<()> = Ok(());
    for (h, _) in tasks {
        let r = join(h);
        if flushed.is_ok() {
            flushed = r;
        }
    }
    result?;
    flushed?;
    Ok((parts, total_rows))
}

fn too_many_partitions(
    spec: &crate::spec::PartitionSpec,
    opts: &WriteOptions,
    key: &[ScalarValue],
) -> Error {
    let ids: Vec<String> = spec.fields.iter().map(|f| f.field_id.clone()).collect();
    Error::InvalidArgument(format!(
        "this write would create more than {} new partitions (partitioned by {}; the next \
         new one: {}). A spec that makes a partition of almost every row produces many tiny \
         tables; check the spec (a coarser transform, bucket(), ...) or raise \
         max_new_partitions",
        opts.max_new_partitions,
        ids.join(", "),
        describe_key(&ids, key)
    ))
}

/// One batch holding `batches`' rows in buffers of its own (nothing shared with the batches
/// they were sliced from).
fn compact(batches: &[RecordBatch]) -> Result<RecordBatch> {
    match batches {
        [] => Err(Error::Internal("compact: no batches".into())),
        [one] => {
            let all = UInt32Array::from_iter_values(0..one.num_rows() as u32);
            Ok(take_record_batch(one, &all)?)
        }
        many => Ok(concat_batches(&many[0].schema(), many)?),
    }
}

/// Commits every partition's leaf table (concurrently), then the manifest.
pub(crate) fn commit_parts(
    root: &str,
    spec: &crate::spec::PartitionSpec,
    parts: HashMap<Vec<ScalarValue>, Part>,
    strong: bool,
    opts: &WriteOptions,
) -> Result<WriteSummary> {
    let rt = runtime()?;
    let overwrite = opts.mode != Mode::Append;
    let results: Vec<Result<Pending>> = rt.block_on(
        stream::iter(parts.into_values().map(|p| {
            let root = root.to_string();
            async move {
                commit_leaf(
                    &root, &p.target, overwrite, strong, &p.shared, p.key, p.rows,
                )
                .await
            }
        }))
        .buffer_unordered(opts.concurrency.max(1))
        .collect(),
    );
    let mut pending = Vec::with_capacity(results.len());
    let mut failed = None;
    for r in results {
        match r {
            Ok(p) => pending.push(p),
            Err(e) => failed = failed.or(Some(e)),
        }
    }
    if let Some(e) = failed {
        return Err(partial_commit(strong, spec, &pending, e));
    }
    test_pause("before_manifest_commit");
    let visible: Vec<Pending> = if strong { Vec::new() } else { pending.clone() };
    commit_manifest(root, spec, pending, strong, opts)
        .map_err(|e| partial_commit(strong, spec, &visible, e))
}

/// The error of a write that failed after its leaf commits began. In strong mode leaf commits
/// are invisible until the manifest commit, so the error stands as it is. In weak mode every
/// existing partition whose leaf was committed is already visible: say so, and which.
fn partial_commit(
    strong: bool,
    spec: &crate::spec::PartitionSpec,
    committed: &[Pending],
    e: Error,
) -> Error {
    let visible: Vec<&Pending> = committed.iter().filter(|p| !p.created).collect();
    if strong || visible.is_empty() {
        return e;
    }
    let field_ids: Vec<String> = spec.fields.iter().map(|f| f.field_id.clone()).collect();
    let shown: Vec<String> = visible
        .iter()
        .take(5)
        .map(|p| describe_key(&field_ids, &p.key))
        .collect();
    let more = visible.len().saturating_sub(shown.len());
    Error::PartialCommit(format!(
        "weak-mode write failed after committing {} existing partition(s), which are now \
         visible: {}{}; partitions it would have created are not visible. Cause: {e}",
        visible.len(),
        shown.join("; "),
        if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        }
    ))
}

/// The namespace id segment of every level of a new partition: the snapshot's where the
/// namespace exists, else one shared by every new partition of this write with that prefix.
fn plan_path(
    snap: &Snapshot,
    spec_id: i32,
    key: &[ScalarValue],
    ids: &mut IdPlan,
) -> Result<Vec<String>> {
    let mut path = Vec::with_capacity(key.len());
    for level in 1..=key.len() {
        let prefix = key[..level].to_vec();
        let seg = match snap.keys()?.ns_by_key.get(&(spec_id, prefix.clone())) {
            Some(oid) => oid.rsplit('$').next().unwrap_or_default().to_string(),
            None => match ids {
                IdPlan::Random(planned) => match planned.get(&prefix) {
                    Some(seg) => seg.clone(),
                    None => {
                        let seg = random_id()?;
                        planned.insert(prefix, seg.clone());
                        seg
                    }
                },
                IdPlan::Derived(nonce) => derived_id(nonce, spec_id, &prefix)?,
            },
        };
        path.push(seg);
    }
    Ok(path)
}

/// Chooses the namespace rows for a new partition, reusing namespaces that exist (in the
/// latest manifest, or created by this commit) and otherwise the planned ids.
fn plan_new_partition(
    snap: &Snapshot,
    spec_id: i32,
    field_ids: &[String],
    key: &[ScalarValue],
    path: &[String],
    created_ns: &mut HashMap<Vec<ScalarValue>, String>,
    rows: &mut Vec<Row>,
) -> Result<String> {
    let mut parent = format!("v{spec_id}");
    for level in 1..=key.len() {
        let prefix = key[..level].to_vec();
        let oid = match snap.keys()?.ns_by_key.get(&(spec_id, prefix.clone())) {
            Some(oid) => oid.clone(),
            None => match created_ns.get(&prefix) {
                Some(oid) => oid.clone(),
                None => {
                    let seg = match path.get(level - 1) {
                        Some(s) => s.clone(),
                        None => random_id()?,
                    };
                    let oid = format!("{parent}${seg}");
                    let props: HashMap<String, String> =
                        values::properties(&field_ids[level - 1], &key[level - 1])?
                            .into_iter()
                            .collect();
                    rows.push(Row {
                        object_id: oid.clone(),
                        object_type: NAMESPACE.into(),
                        location: None,
                        props,
                        read_version: None,
                        values: field_ids[..level]
                            .iter()
                            .cloned()
                            .zip(prefix.iter().cloned())
                            .collect(),
                    });
                    created_ns.insert(prefix, oid.clone());
                    oid
                }
            },
        };
        parent = oid;
    }
    Ok(format!("{parent}${LEAF_TABLE}"))
}

pub(crate) fn is_retryable(e: &lance::Error) -> bool {
    matches!(
        e,
        lance::Error::RetryableCommitConflict { .. }
            | lance::Error::CommitConflict { .. }
            | lance::Error::TooMuchWriteContention { .. }
    )
}

/// Copies the rows of a leaf version into another table (detached append on top of `base`);
/// returns the new version and the appended fragments (to rebase them again if needed).
async fn copy_into(
    root: &str,
    from_location: &str,
    from_version: u64,
    to_location: &str,
    base: Option<u64>,
    strong: bool,
) -> Result<(u64, Vec<Fragment>)> {
    let src = open_at(&join_uri(root, from_location), Some(from_version)).await?;
    let batches: Vec<RecordBatch> = src.scan().try_into_stream().await?.try_collect().await?;
    let dst = open_at(&join_uri(root, to_location), base).await?;
    let read_version = dst.version().version;
    if batches.iter().all(|b| b.num_rows() == 0) {
        return Ok((read_version, Vec::new()));
    }
    let params = write_params(WriteMode::Append)?;
    let txn = InsertBuilder::new(Arc::clone(&dst))
        .with_params(&params)
        .execute_uncommitted(batches)
        .await?;
    let (fragments, _) = op_fragments(txn.operation.clone())?;
    let committed = CommitBuilder::new(dst)
        .with_detached(strong)
        .with_skip_auto_cleanup(true)
        .execute(Transaction::new(read_version, txn.operation, None))
        .await?;
    Ok((committed.version().version, fragments))
}

/// Resolves conflicts of `pending` against the latest manifest `s1` (taken after S0) and
/// returns the rows to merge.
async fn prepare_rows(
    root: &str,
    s1: &Snapshot,
    spec_id: i32,
    field_ids: &[String],
    pending: &mut [Pending],
    strong: bool,
    mode: Mode,
) -> Result<(Vec<Row>, Vec<usize>)> {
    let mut rows = Vec::new();
    let mut copy_rows = Vec::new();
    let mut created_ns = HashMap::new();
    let mut creating = false;
    for p in pending.iter_mut() {
        // A partition created concurrently: adopt it (copy our rows in).
        if p.created {
            if let Some(leaf) = s1.leaf(spec_id, &p.key)? {
                if mode != Mode::Append {
                    return Err(Error::CommitConflict(format!(
                        "partition ({}) was created by a concurrent write during this overwrite",
                        describe_key(field_ids, &p.key)
                    )));
                }
                let (v, copied) = copy_into(
                    root,
                    &p.location,
                    p.version,
                    &leaf.location,
                    leaf.read_version,
                    strong,
                )
                .await?;
                p.created = false;
                p.object_id = Some(leaf.object_id.clone());
                p.location = leaf.location.clone();
                p.base = leaf.read_version;
                p.version = v;
                p.operation = "append";
                // Later rebases re-append exactly the copied rows.
                p.fragments = copied;
            }
        }
        if p.created {
            creating = true;
            let oid = plan_new_partition(
                s1,
                spec_id,
                field_ids,
                &p.key,
                &p.path,
                &mut created_ns,
                &mut rows,
            )?;
            p.object_id = Some(oid.clone());
            rows.push(Row {
                object_id: oid.clone(),
                object_type: TABLE.into(),
                location: Some(p.location.clone()),
                props: HashMap::new(),
                read_version: strong.then_some(p.version),
                values: field_ids
                    .iter()
                    .cloned()
                    .zip(p.key.iter().cloned())
                    .collect(),
            });
            if strong {
                rows.push(version_row(&oid, p.version, "create", None));
            }
            continue;
        }
        let oid = p.object_id.clone().unwrap_or_default();
        let Some(&row) = s1.keys()?.row_by_id.get(&oid) else {
            return Err(Error::CommitConflict(format!(
                "partition ({}) was dropped by a concurrent write",
                describe_key(field_ids, &p.key)
            )));
        };
        if !strong {
            continue;
        }
        let current = s1
            .leaves
            .iter()
            .find(|l| l.row == row)
            .and_then(|l| l.read_version);
        if current != p.base {
            // Someone committed to this table since our base: rebase appends, refuse the rest.
            if p.operation != "append" {
                return Err(Error::CommitConflict(format!(
                    "partition ({}) was changed by a concurrent write during this overwrite",
                    describe_key(field_ids, &p.key)
                )));
            }
            check_append_chain(s1, &oid, current, p.base).map_err(|e| match e {
                Error::CommitConflict(m) => Error::CommitConflict(format!(
                    "partition ({}): {m}",
                    describe_key(field_ids, &p.key)
                )),
                other => other,
            })?;
            let ds = open_at(&join_uri(root, &p.location), current).await?;
            let read_version = ds.version().version;
            let committed = CommitBuilder::new(ds)
                .with_detached(true)
                .with_skip_auto_cleanup(true)
                .execute(Transaction::new(
                    read_version,
                    Operation::Append {
                        fragments: p.fragments.clone(),
                    },
                    None,
                ))
                .await?;
            p.base = Some(read_version);
            p.version = committed.version().version;
        }
        copy_rows.push(row);
        rows.push(version_row(&oid, p.version, p.operation, p.base));
    }
    if creating {
        // Rewrite the spec version row: concurrent creators conflict on it in Lance.
        if let Some(&r) = s1.keys()?.row_by_id.get(&format!("v{spec_id}")) {
            copy_rows.push(r);
        }
    }
    Ok((rows, copy_rows))
}

pub(crate) fn version_row(table: &str, version: u64, operation: &str, base: Option<u64>) -> Row {
    let mut props = HashMap::from([("operation".to_string(), operation.to_string())]);
    if let Some(b) = base {
        props.insert("base_version".into(), b.to_string());
    }
    Row {
        object_id: format!("{table}${version}"),
        object_type: TABLE_VERSION.into(),
        location: None,
        props,
        read_version: Some(version),
        values: Vec::new(),
    }
}

/// Every version between `base` (exclusive) and `current` must be a recorded append or row
/// delete.
fn check_append_chain(
    s1: &Snapshot,
    oid: &str,
    current: Option<u64>,
    base: Option<u64>,
) -> Result<()> {
    let recorded = s1.keys()?.versions.get(oid);
    let mut v = current;
    let mut steps = 0usize;
    while v != base {
        let Some(ver) = v else { break };
        let entry = recorded.and_then(|r| r.iter().find(|t| t.version == ver));
        let Some(entry) = entry else {
            return Err(Error::CommitConflict(format!(
                "its leaf moved to version {ver}, which the manifest does not record"
            )));
        };
        let op = entry
            .props
            .get("operation")
            .map(String::as_str)
            .unwrap_or("");
        // Appends rebase over appends and row deletes; anything else replaced the data.
        if op != "append" && op != "delete" {
            return Err(Error::CommitConflict(format!(
                "it was changed by a concurrent {op} (version {ver})"
            )));
        }
        v = entry.props.get("base_version").and_then(|b| b.parse().ok());
        steps += 1;
        if steps > 100_000 {
            break;
        }
    }
    if v != base {
        return Err(Error::CommitConflict(format!(
            "cannot trace its leaf versions back to {base:?}"
        )));
    }
    Ok(())
}

/// The atomic manifest commit with conflict resolution and retries.
fn commit_manifest(
    root: &str,
    spec: &crate::spec::PartitionSpec,
    mut pending: Vec<Pending>,
    strong: bool,
    opts: &WriteOptions,
) -> Result<WriteSummary> {
    let rt = runtime()?;
    let field_ids: Vec<String> = spec.fields.iter().map(|f| f.field_id.clone()).collect();
    let mut summary = WriteSummary {
        partitions: pending.len() as u64,
        created: pending.iter().filter(|p| p.created).count() as u64,
        rewritten: pending.iter().filter(|p| p.rewritten).count() as u64,
        ..Default::default()
    };
    for p in &pending {
        let (f, b) = data_files(&p.fragments);
        summary.files += f;
        summary.bytes += b;
    }
    let touched: HashSet<String> = pending.iter().filter_map(|p| p.object_id.clone()).collect();
    let mut attempt = 0u32;
    loop {
        attempt += 1;
        // Every attempt starts from the latest version, which another tool may have
        // rewritten since the write began: commit only onto a complete manifest.
        let s1 = rt.block_on(Snapshot::load(root, None))?;
        s1.check_writable()?;
        if let Some(id) = &opts.write_id {
            if s1.has_write(id)? {
                // A concurrent commit of this same write won: ours is a no-op (its leaf
                // versions stay unreferenced; cleanup() removes them).
                return Ok(WriteSummary {
                    manifest_version: s1.version,
                    attempts: attempt,
                    already_committed: true,
                    ..Default::default()
                });
            }
        }
        let (mut rows, mut copy_rows) = rt.block_on(prepare_rows(
            root,
            &s1,
            spec.id,
            &field_ids,
            &mut pending,
            strong,
            opts.mode,
        ))?;
        let mut dropped = 0u64;
        let delete_if = if opts.mode == Mode::OverwriteAll {
            // Keep exactly the touched partitions: rewrite their ancestors and history,
            // delete every other row below a spec version.
            let k1 = s1.keys()?;
            let keep: HashSet<String> =
                pending.iter().filter_map(|p| p.object_id.clone()).collect();
            let mut keep_rows: HashSet<usize> = copy_rows.iter().copied().collect();
            for oid in &keep {
                let parts: Vec<&str> = oid.split('$').collect();
                for i in 1..parts.len() {
                    if let Some(&r) = k1.row_by_id.get(&parts[..=i].join("$")) {
                        keep_rows.insert(r);
                    }
                }
                if let Some(vs) = k1.versions.get(oid) {
                    for v in vs {
                        if let Some(&r) = k1.row_by_id.get(&format!("{oid}${}", v.version)) {
                            keep_rows.insert(r);
                        }
                    }
                }
            }
            dropped = s1
                .leaves
                .iter()
                .filter(|l| !keep.contains(&l.object_id))
                .count() as u64;
            copy_rows = keep_rows.into_iter().collect();
            copy_rows.sort_unstable();
            Some("object_id LIKE 'v%$%'".to_string())
        } else {
            None
        };
        let mut source = Vec::new();
        let mschema = s1.batch.schema();
        if !copy_rows.is_empty() {
            let idx = UInt32Array::from_iter_values(copy_rows.iter().map(|&r| r as u32));
            let mut copied = take_record_batch(&s1.batch, &idx)?;
            // Set read_version of the tables we wrote.
            let new_versions: HashMap<&str, u64> = pending
                .iter()
                .filter(|p| !p.created)
                .filter_map(|p| p.object_id.as_deref().map(|o| (o, p.version)))
                .collect();
            if strong {
                copied = set_read_versions(&copied, &new_versions)?;
            }
            source.push(copied);
        }
        rows.retain(|r| !r.object_id.is_empty());
        if let Some(id) = &opts.write_id {
            for r in rows.iter_mut().filter(|r| r.object_type == TABLE_VERSION) {
                r.props.insert(WRITE_ID_KEY.to_string(), id.clone());
            }
        }
        if !rows.is_empty() {
            source.push(rows_to_batch(&mschema, &rows)?);
        }
        let _ = &touched;
        if source.is_empty() {
            summary.manifest_version = s1.version;
            summary.attempts = attempt;
            return Ok(summary);
        }
        let batch = concat_batches(&mschema, &source)?;
        let result = rt.block_on(async {
            let mut b =
                MergeInsertBuilder::try_new(Arc::clone(&s1.dataset), vec!["object_id".into()])?;
            b.when_matched(WhenMatched::UpdateAll)
                .when_not_matched(WhenNotMatched::InsertAll)
                .conflict_retries(0)
                .skip_auto_cleanup(true);
            if let Some(expr) = &delete_if {
                b.when_not_matched_by_source(WhenNotMatchedBySource::delete_if(&s1.dataset, expr)?);
            }
            let job = b.try_build()?;
            job.execute_batches(vec![batch]).await
        });
        match result {
            Ok((ds, _stats)) => {
                summary.manifest_version = ds.version().version;
                summary.attempts = attempt;
                summary.dropped = dropped;
                return Ok(summary);
            }
            Err(e) if is_retryable(&e) && attempt < opts.max_attempts => {
                let backoff = Duration::from_millis(20 * u64::from(attempt.min(10)))
                    + Duration::from_micros(u64::from(getrandom::u32().unwrap_or(0) % 50_000));
                std::thread::sleep(backoff);
            }
            Err(e) if is_retryable(&e) => {
                return Err(Error::CommitConflict(format!(
                    "gave up after {attempt} manifest commit attempts: {e}"
                )))
            }
            Err(e) => return Err(e.into()),
        }
    }
}

pub(crate) fn set_read_versions(
    batch: &RecordBatch,
    new_versions: &HashMap<&str, u64>,
) -> Result<RecordBatch> {
    use crate::arrow::array::{AsArray, UInt64Array};
    use crate::arrow::datatypes::UInt64Type;
    let ids = crate::arrow::compute::cast(
        batch
            .column_by_name(crate::ns::manifest::OBJECT_ID)
            .ok_or_else(|| Error::Corrupt("no object_id".into()))?,
        &crate::arrow::datatypes::DataType::Utf8,
    )?;
    let ids = ids.as_string::<i32>();
    let Some(idx) = batch.schema().index_of(READ_VERSION).ok() else {
        return Ok(batch.clone());
    };
    let old = batch.column(idx).as_primitive::<UInt64Type>();
    let new: UInt64Array = (0..batch.num_rows())
        .map(|r| match new_versions.get(ids.value(r)) {
            Some(v) => Some(*v),
            None => (!old.is_null(r)).then(|| old.value(r)),
        })
        .collect();
    let mut cols = batch.columns().to_vec();
    cols[idx] = Arc::new(new);
    Ok(RecordBatch::try_new(batch.schema(), cols)?)
}

/// Crash-test hook: with `LANCE_PARTITIONED_TEST_PAUSE=<point>:<file>` the writer creates
/// `<file>` at `<point>` and sleeps, so a test can kill it exactly there.
fn test_pause(point: &str) {
    if let Ok(v) = std::env::var("LANCE_PARTITIONED_TEST_PAUSE") {
        if let Some((p, file)) = v.split_once(':') {
            if p == point {
                // Paused until the test removes the flag file (or kills the process).
                let _ = std::fs::write(file, point);
                let until = std::time::Instant::now() + Duration::from_secs(600);
                while std::path::Path::new(file).exists() && std::time::Instant::now() < until {
                    std::thread::sleep(Duration::from_millis(20));
                }
            }
        }
    }
}
