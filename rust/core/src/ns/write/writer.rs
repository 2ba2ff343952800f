//! The partitioning writer: [`PartitionWriter::write`] aligns a batch to the namespace schema,
//! computes its partition values, routes its rows and buffers them per partition, writing a
//! partition's buffer as uncommitted Lance fragments (on the runtime, concurrently) when it is
//! full or the memory budget asks for it; [`PartitionWriter::close`] writes what is left and
//! yields one [`StagedPart`] per partition for a transaction to commit.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;

use lance::dataset::Dataset;
use tokio::sync::{OnceCell, Semaphore};
use tokio::task::JoinHandle;

use crate::arrow::array::{RecordBatch, UInt32Array};
use crate::arrow::compute::{concat_batches, take_record_batch};
use crate::datafusion::scalar::ScalarValue;
use crate::error::{Error, Result};
use crate::ns::infra::storage::Storage;
use crate::ns::leaf_io::{check_fresh_schema, fresh_lance_schema, leaf_schema, Schemas};
use crate::ns::manifest::{column_stats_enabled, describe_key, Snapshot, SortOrder};
use crate::ns::write::align::align;
use crate::ns::write::flush::{flush, PartOutput};
use crate::ns::write::options::WriteOptions;
use crate::ns::write::staged::StagedPart;
use crate::ns::write::target::{IdPlan, Target};
use crate::route::{auto_threads, route_with_threads};
use crate::spec::{CompiledSpec, PartitionSpec};

/// One partition's rows routed but not yet written.
struct PartBuffer {
    target: Target,
    batches: Vec<RecordBatch>,
    /// Rows in `batches`.
    rows: usize,
    /// Estimated memory held by `batches` (slices share their routed batch: each is charged
    /// its share of it).
    bytes: usize,
    /// Rows routed to this partition in total.
    total_rows: u64,
    out: Arc<PartOutput>,
}

/// Routes and buffers a write's rows per partition; see the module docs.
pub struct PartitionWriter {
    storage: Storage,
    snap: Arc<Snapshot>,
    spec: PartitionSpec,
    compiled: CompiledSpec,
    schemas: Schemas,
    opts: WriteOptions,
    strong: bool,
    ids: IdPlan,
    parts: HashMap<Vec<ScalarValue>, PartBuffer>,
    /// Flushes in flight, oldest first, with the bytes each holds.
    tasks: VecDeque<(JoinHandle<Result<()>>, usize)>,
    permits: Arc<Semaphore>,
    inflight_bytes: usize,
    buffered_bytes: usize,
    peak_held_bytes: usize,
    new_parts: usize,
    rows: u64,
    /// Whether flushes take the column statistics of their rows.
    column_stats: bool,
    /// The columns they leave out (sources of identity partition fields).
    stats_skip: Arc<HashSet<i32>>,
    /// The namespace's sort order, given to the rows of every flush.
    order: Option<Arc<SortOrder>>,
    /// Leaves the caller has open already (by object id), reused when a write targets one at
    /// the version it is open at instead of opening it again.
    opened: HashMap<String, Arc<Dataset>>,
    /// Whether buffers may still share a routed batch with partitions written out since
    /// (set when buffers are relieved; the copying is left to the next routing, see
    /// [`Self::release_shared`]).
    shared_pending: bool,
}

impl PartitionWriter {
    /// A writer of rows partitioned by the current spec of `snap`.
    ///
    /// # Errors
    /// `Spec` if the spec does not compile against the schema.
    pub fn new(
        storage: &Storage,
        snap: Arc<Snapshot>,
        opts: &WriteOptions,
        strong: bool,
        ids: IdPlan,
    ) -> Result<Self> {
        let ns = snap.schema();
        let spec = snap.current_spec().clone();
        let compiled = CompiledSpec::compile(&spec, &ns, false)?;
        let column_stats = column_stats_enabled(&snap.root_props.props)?;
        let identity = spec
            .fields
            .iter()
            .filter(|f| f.transform.as_ref().is_some_and(|t| t.kind == "identity"));
        let stats_skip = Arc::new(identity.flat_map(|f| f.source_ids.clone()).collect());
        let order = SortOrder::of(&snap.root_props.props)?;
        let order = (!order.keys.is_empty()).then(|| Arc::new(order));
        Ok(Self {
            storage: storage.clone(),
            schemas: Schemas {
                leaf: leaf_schema(&ns),
                ns,
            },
            snap,
            spec,
            compiled,
            opts: opts.clone(),
            strong,
            ids,
            parts: HashMap::new(),
            tasks: VecDeque::new(),
            permits: Arc::new(Semaphore::new(opts.concurrency.max(1))),
            inflight_bytes: 0,
            buffered_bytes: 0,
            peak_held_bytes: 0,
            new_parts: 0,
            opened: HashMap::new(),
            column_stats,
            stats_skip,
            order,
            rows: 0,
            shared_pending: false,
        })
    }

    /// Rows written so far.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Routes one batch into the partitions' buffers (writing some of them out when full).
    ///
    /// # Errors
    /// `SchemaMismatch` for a batch that does not fit the schema; `InvalidArgument` past
    /// `max_new_partitions`; the errors of finished flushes.
    pub async fn write(&mut self, batch: RecordBatch) -> Result<()> {
        if batch.num_rows() == 0 {
            return Ok(());
        }
        let aligned = align(&batch, &self.schemas.ns, &self.schemas.leaf)?;
        // Routing copies its input: a batch larger than the whole budget is routed a quarter
        // of the budget at a time, so the copies stay near the budget however the input is
        // batched. Smaller batches are routed whole: slices would be copied again when the
        // buffers are relieved and flushed, costing time and, below the budget, memory.
        let step = slice_rows(&aligned, self.opts.max_buffer_bytes, self.half_budget() / 2);
        let mut start = 0;
        while start < aligned.num_rows() {
            let len = step.min(aligned.num_rows() - start);
            self.route_slice(aligned.slice(start, len)).await?;
            start += len;
        }
        Ok(())
    }

    /// Routes one aligned slice into the partitions' buffers.
    async fn route_slice(&mut self, aligned: RecordBatch) -> Result<()> {
        self.release_shared()?;
        let threads = self
            .opts
            .route_threads
            .unwrap_or_else(|| auto_threads(aligned.num_rows()))
            .max(1);
        let keys = self
            .compiled
            .partition_values_with_threads(&aligned, threads)?;
        let routed = route_with_threads(&aligned, keys.columns(), keys.schema(), threads)?;
        let batch_rows = routed.batch.num_rows().max(1);
        let batch_bytes = routed.batch.get_array_memory_size();
        for g in 0..routed.keys.num_rows() {
            let key = routed
                .keys
                .columns()
                .iter()
                .map(|c| ScalarValue::try_from_array(c, g))
                .collect::<std::result::Result<Vec<_>, _>>()?;
            let rows = routed.offsets[g + 1] - routed.offsets[g];
            let bytes = (batch_bytes as u128 * rows as u128 / batch_rows as u128) as usize;
            self.buffer(key, routed.group(g), rows, bytes)?;
        }
        drop(routed);
        let half_budget = self.half_budget();
        if self.buffered_bytes >= half_budget {
            self.relieve_buffers(half_budget / 2);
        }
        while self.inflight_bytes >= half_budget {
            let Some((h, b)) = self.tasks.pop_front() else {
                break;
            };
            self.inflight_bytes -= b;
            join(h).await?;
        }
        Ok(())
    }

    /// Writes every remaining buffer, waits for all flushes and returns the staged parts.
    ///
    /// # Errors
    /// The first flush error (after every flush has ended).
    /// The most input bytes held at once so far (buffered and being written).
    #[must_use]
    pub fn peak_held_bytes(&self) -> u64 {
        self.peak_held_bytes as u64
    }

    pub async fn close(mut self) -> Result<Vec<StagedPart>> {
        let keys: Vec<Vec<ScalarValue>> = self.parts.keys().cloned().collect();
        for k in keys {
            self.spawn_flush(&k);
        }
        self.join_all().await?;
        let overwrite = self.opts.mode.replaces();
        let fresh = fresh_lance_schema(&self.schemas.leaf)?;
        let mut staged = Vec::with_capacity(self.parts.len());
        for (key, p) in self.parts {
            if let Some(schema) = p.out.schema() {
                check_fresh_schema(&schema, &fresh)?;
            }
            staged.push(StagedPart {
                key,
                target: p.target,
                rewrite: overwrite || p.out.rewrite.get().copied().unwrap_or(false),
                fragments: p.out.take_fragments(),
                rows: p.total_rows,
                stats: p.out.take_stats(),
                dataset: p.out.dataset.get().cloned(),
            });
        }
        Ok(staged)
    }

    /// Waits for every flush in flight (used on error, so no task outlives the write).
    pub async fn abort(mut self) {
        let _ = self.join_all().await;
    }

    fn half_budget(&self) -> usize {
        (self.opts.max_buffer_bytes / 2).max(1)
    }

    /// Hands the writer leaves the caller has open (a merge read them): a write to one of
    /// them at the version it is open at uses it instead of opening the leaf again.
    pub(crate) fn reuse(&mut self, datasets: impl IntoIterator<Item = (String, Arc<Dataset>)>) {
        self.opened.extend(datasets);
    }

    /// The open leaf of an existing target, when the caller handed it over at the target's
    /// version.
    fn open_leaf(&self, target: &Target) -> Option<Arc<Dataset>> {
        let Target::Existing {
            object_id, base, ..
        } = target
        else {
            return None;
        };
        let ds = self.opened.get(object_id)?;
        (Some(ds.version().version) == *base).then(|| Arc::clone(ds))
    }

    /// Adds one routed group to its partition's buffer.
    fn buffer(
        &mut self,
        key: Vec<ScalarValue>,
        rows_batch: RecordBatch,
        rows: usize,
        bytes: usize,
    ) -> Result<()> {
        if !self.parts.contains_key(&key) {
            let target = Target::plan(&self.snap, self.spec.id, &key, self.strong, &mut self.ids)?;
            if matches!(target, Target::New { .. }) {
                self.new_parts += 1;
                if self.new_parts > self.opts.max_new_partitions {
                    return Err(self.too_many_partitions(&key));
                }
            }
            let out = PartOutput {
                dataset: OnceCell::new_with(self.open_leaf(&target)),
                take_stats: self.column_stats,
                stats_skip: Arc::clone(&self.stats_skip),
                order: self.order.clone(),
                ..Default::default()
            };
            let part = PartBuffer {
                target,
                batches: Vec::new(),
                rows: 0,
                bytes: 0,
                total_rows: 0,
                out: Arc::new(out),
            };
            self.parts.insert(key.clone(), part);
        }
        let Some(part) = self.parts.get_mut(&key) else {
            return Err(Error::Internal("partition buffer vanished".into()));
        };
        part.batches.push(rows_batch);
        part.rows += rows;
        part.bytes += bytes;
        part.total_rows += rows as u64;
        self.buffered_bytes += bytes;
        self.peak_held_bytes = self
            .peak_held_bytes
            .max(self.buffered_bytes + self.inflight_bytes);
        self.rows += rows as u64;
        if part.rows >= self.opts.max_rows_per_file {
            self.spawn_flush(&key);
        }
        Ok(())
    }

    /// Writes the largest partitions until the buffers hold at most `goal` bytes. What the
    /// others hold is copied out of the routed batches they share with the written ones only
    /// when more rows come ([`Self::release_shared`]): a write that ends here writes them all
    /// anyway, and the copies would only add to its peak.
    fn relieve_buffers(&mut self, goal: usize) {
        let mut order: Vec<(usize, Vec<ScalarValue>)> = self
            .parts
            .iter()
            .filter(|(_, p)| p.rows > 0)
            .map(|(k, p)| (p.bytes, k.clone()))
            .collect();
        order.sort_unstable_by_key(|b| std::cmp::Reverse(b.0));
        for (_, k) in order {
            if self.buffered_bytes <= goal {
                break;
            }
            self.spawn_flush(&k);
        }
        self.shared_pending = true;
    }

    /// Copies the rows each buffer holds out of the routed batches it shares (a slice keeps
    /// its whole batch alive), after buffers were relieved: the memory of the partitions
    /// written out is then really released before more rows are routed.
    fn release_shared(&mut self) -> Result<()> {
        if !std::mem::take(&mut self.shared_pending) {
            return Ok(());
        }
        for p in self.parts.values_mut() {
            let Some(first) = p.batches.first() else {
                continue;
            };
            if p.batches.len() > 1 || first.get_array_memory_size() > p.bytes {
                let owned = compact(&p.batches)?;
                let b = owned.get_array_memory_size();
                self.buffered_bytes = self.buffered_bytes - p.bytes + b;
                p.bytes = b;
                p.batches = vec![owned];
            }
        }
        self.peak_held_bytes = self
            .peak_held_bytes
            .max(self.buffered_bytes + self.inflight_bytes);
        Ok(())
    }

    /// Starts writing partition `key`'s buffer (no-op when empty).
    fn spawn_flush(&mut self, key: &[ScalarValue]) {
        let Some(p) = self.parts.get_mut(key) else {
            return;
        };
        if p.batches.is_empty() {
            return;
        }
        let batches = std::mem::take(&mut p.batches);
        let bytes = std::mem::take(&mut p.bytes);
        p.rows = 0;
        let (storage, target, out, permits, schemas) = (
            self.storage.clone(),
            p.target.clone(),
            Arc::clone(&p.out),
            Arc::clone(&self.permits),
            self.schemas.clone(),
        );
        let overwrite = self.opts.mode.replaces();
        let handle = tokio::spawn(async move {
            let _permit = permits
                .acquire_owned()
                .await
                .map_err(|e| Error::Internal(e.to_string()))?;
            flush(storage, target, overwrite, out, batches, schemas).await
        });
        self.buffered_bytes -= bytes;
        self.inflight_bytes += bytes;
        self.tasks.push_back((handle, bytes));
    }

    /// Waits for every flush; the first error wins.
    async fn join_all(&mut self) -> Result<()> {
        let mut first: Result<()> = Ok(());
        while let Some((h, b)) = self.tasks.pop_front() {
            self.inflight_bytes -= b;
            let r = join(h).await;
            if first.is_ok() {
                first = r;
            }
        }
        first
    }

    fn too_many_partitions(&self, key: &[ScalarValue]) -> Error {
        let ids: Vec<String> = self
            .spec
            .fields
            .iter()
            .map(|f| f.field_id.clone())
            .collect();
        Error::InvalidArgument(format!(
            "this write would create more than {} new partitions (partitioned by {}; the next \
             new one: {}). A spec that makes a partition of almost every row produces many \
             tiny tables; check the spec (a coarser transform, bucket(), ...) or raise \
             max_new_partitions",
            self.opts.max_new_partitions,
            ids.join(", "),
            describe_key(&ids, key)
        ))
    }
}

/// Rows of `batch` routed together: all of them when the batch holds at most `budget`
/// bytes, else rows of about `bytes` bytes, and at least [`MIN_SLICE_ROWS`] (routing pays a
/// fixed cost per slice).
fn slice_rows(batch: &RecordBatch, budget: usize, bytes: usize) -> usize {
    let held: usize = batch
        .columns()
        .iter()
        .map(|c| c.to_data().get_slice_memory_size().unwrap_or(0))
        .sum();
    let rows = batch.num_rows();
    if held <= budget {
        return rows.max(1);
    }
    let per_row = held.div_ceil(rows.max(1)).max(1);
    (bytes / per_row).max(MIN_SLICE_ROWS)
}

/// The fewest rows [`PartitionWriter::write`] routes at once (a smaller batch is routed
/// whole).
const MIN_SLICE_ROWS: usize = 4096;

async fn join(h: JoinHandle<Result<()>>) -> Result<()> {
    h.await
        .map_err(|e| Error::Internal(format!("write task failed: {e}")))?
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
