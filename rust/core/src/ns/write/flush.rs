//! Writing one partition's buffered rows as uncommitted Lance fragments, in the namespace's
//! sort order when it has one (the leaf I/O helpers the writer shares with the transaction
//! are in [`crate::ns::leaf_io`]).

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use lance::dataset::fragment::write::FragmentCreateBuilder;
use lance::dataset::{Dataset, InsertBuilder, WriteMode};
use lance::table::format::Fragment;
use tokio::sync::OnceCell;

use crate::arrow::array::{RecordBatch, RecordBatchIterator};
use crate::arrow::compute::concat_batches;
use crate::arrow::datatypes::Schema;
use crate::error::{Error, Result};
use crate::ns::infra::storage::Storage;
use crate::ns::leaf_io::read_rules::leaf_is_current;
use crate::ns::leaf_io::{op_fragments, write_params, Schemas};
use crate::ns::manifest::{LeafColumnStats, SortOrder};
use crate::ns::write::target::Target;

/// What the flushes of one partition produced, shared with the flush tasks.
#[derive(Default)]
pub(crate) struct PartOutput {
    /// The existing leaf, opened once at the write's base version.
    pub(crate) dataset: OnceCell<Arc<Dataset>>,
    /// Uncommitted fragments, in write order.
    pub(crate) fragments: Mutex<Vec<Fragment>>,
    /// The Lance schema Lance chose for fragments that create or replace a leaf.
    pub(crate) schema: Mutex<Option<lance::datatypes::Schema>>,
    /// Whether the fragments replace the leaf's rows: an overwrite, or an append to a leaf
    /// written under an older schema (decided by the first flush; the transaction then
    /// rewrites the old rows).
    pub(crate) rewrite: OnceCell<bool>,
    /// Whether to take the column statistics of the rows.
    pub(crate) take_stats: bool,
    /// Columns (field ids) left out of the statistics: sources of identity partition fields,
    /// constant in a partition and bounded by its values already.
    pub(crate) stats_skip: Arc<HashSet<i32>>,
    /// Column statistics of the rows flushed so far.
    pub(crate) stats: Mutex<Option<LeafColumnStats>>,
    /// The namespace's sort order, given to the rows of every flush (`None`: none).
    pub(crate) order: Option<Arc<SortOrder>>,
}

impl PartOutput {
    /// Takes the fragments written so far.
    pub(crate) fn take_fragments(&self) -> Vec<Fragment> {
        std::mem::take(&mut *self.fragments.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Takes the column statistics of the rows flushed so far.
    pub(crate) fn take_stats(&self) -> Option<LeafColumnStats> {
        self.stats.lock().unwrap_or_else(|e| e.into_inner()).take()
    }

    /// The Lance schema of the fragments (new or replaced leaves).
    pub(crate) fn schema(&self) -> Option<lance::datatypes::Schema> {
        self.schema
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

/// Writes one buffer of a partition as fragments (uncommitted).
pub(crate) async fn flush(
    storage: Storage,
    target: Target,
    overwrite: bool,
    out: Arc<PartOutput>,
    mut batches: Vec<RecordBatch>,
    schemas: Schemas,
) -> Result<()> {
    // Routing leaves a partition many small slices (one per input batch); Lance pays a
    // fixed cost per batch it encodes, so hand it one contiguous batch.
    if batches.len() > 1 {
        let one = concat_batches(&batches[0].schema(), &batches)?;
        batches = vec![one];
    }
    if let (Some(order), Some(batch)) = (&out.order, batches.first()) {
        batches = vec![sorted(Arc::clone(order), batch.clone(), &schemas).await?];
    }
    let stats = start_stats(&out, &batches);
    let (fragments, schema) = match &target {
        Target::New { location, .. } => {
            // A new leaf has a fresh random location, so nothing can exist there: write its
            // fragments directly (an InsertBuilder on a URI first lists `_versions/` to see
            // whether a dataset exists, one request per partition on object storage).
            let uri = storage.uri(location);
            let arrow_schema = batches
                .first()
                .ok_or_else(|| Error::Internal("flush of an empty buffer".into()))?
                .schema();
            let schema = lance::datatypes::Schema::try_from(arrow_schema.as_ref())?;
            let params = write_params(&storage, WriteMode::Create)?;
            let source = RecordBatchIterator::new(batches.into_iter().map(Ok), arrow_schema);
            let fragments = FragmentCreateBuilder::new(uri.as_str())
                .schema(&schema)
                .write_params(&params)
                .write_fragments(source)
                .await?;
            (fragments, Some(schema))
        }
        Target::Existing { location, base, .. } => {
            let ds = out
                .dataset
                .get_or_try_init(|| storage.open(location, *base))
                .await?
                .clone();
            let stored = Schema::from(ds.schema());
            let rewrite = *out
                .rewrite
                .get_or_init(|| async { overwrite || !leaf_is_current(&stored, &schemas.leaf) })
                .await;
            let mode = if rewrite {
                WriteMode::Overwrite
            } else {
                WriteMode::Append
            };
            let txn = InsertBuilder::new(ds)
                .with_params(&write_params(&storage, mode)?)
                .execute_uncommitted(batches)
                .await?;
            op_fragments(txn.operation)?
        }
    };
    out.fragments
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .extend(fragments);
    if let Some(s) = schema {
        *out.schema.lock().unwrap_or_else(|e| e.into_inner()) = Some(s);
    }
    add_stats(&out, stats).await
}

/// `batch` in the namespace's sort order, sorted on a blocking thread (CPU work on the flush
/// task would hold up the runtime's workers).
async fn sorted(
    order: Arc<SortOrder>,
    batch: RecordBatch,
    schemas: &Schemas,
) -> Result<RecordBatch> {
    let ns = Arc::clone(&schemas.ns);
    tokio::task::spawn_blocking(move || order.sort(&batch, &ns))
        .await
        .map_err(|e| Error::Internal(format!("sorting task: {e}")))?
}

/// Rows under which a flush takes its statistics on the flush task itself (well under a
/// millisecond of work): a write of many small partitions would otherwise start a blocking
/// thread per partition, which costs more than the statistics.
const INLINE_STATS_ROWS: usize = 1 << 16;

/// Starts taking the column statistics of `batches` (when the write takes them): on the
/// flush task for a few rows, else on a blocking thread while Lance writes the same batches
/// (CPU work on the flush task would hold up the runtime's workers and the write's I/O).
fn start_stats(
    out: &PartOutput,
    batches: &[RecordBatch],
) -> Option<tokio::task::JoinHandle<Option<LeafColumnStats>>> {
    if !out.take_stats {
        return None;
    }
    let skip = Arc::clone(&out.stats_skip);
    let take = move |batches: &[RecordBatch]| {
        batches
            .iter()
            .map(|b| LeafColumnStats::of_batch_except(b, &skip))
            .reduce(|a, b| LeafColumnStats::merge(&a, &b))
    };
    if batches.iter().map(RecordBatch::num_rows).sum::<usize>() < INLINE_STATS_ROWS {
        merge_stats(out, take(batches));
        return None;
    }
    let batches = batches.to_vec();
    Some(tokio::task::spawn_blocking(move || take(&batches)))
}

/// Waits for [`start_stats`]'s statistics and adds them to the partition's.
async fn add_stats(
    out: &PartOutput,
    task: Option<tokio::task::JoinHandle<Option<LeafColumnStats>>>,
) -> Result<()> {
    let Some(task) = task else {
        return Ok(());
    };
    let stats = task
        .await
        .map_err(|e| Error::Internal(format!("column statistics task: {e}")))?;
    merge_stats(out, stats);
    Ok(())
}

/// Adds `new` (when there are any) to the partition's statistics.
fn merge_stats(out: &PartOutput, new: Option<LeafColumnStats>) {
    if let Some(new) = new {
        let mut held = out.stats.lock().unwrap_or_else(|e| e.into_inner());
        *held = Some(match held.take() {
            Some(old) => LeafColumnStats::merge(&old, &new),
            None => new,
        });
    }
}
