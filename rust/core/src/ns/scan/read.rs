//! Snapshot reads of the kept leaves at their `read_version`s, each leaf batch adapted to
//! the namespace schema by the read rules ([`crate::ns::leaf_io::read_rules`]); the filter is
//! pushed into Lance when a leaf has every filter column as the namespace has it. Leaves are
//! opened a few at a time ahead of the one being read (`LOOKAHEAD`), in scan order.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use futures::stream::FuturesOrdered;
use futures::StreamExt;
use lance::dataset::scanner::DatasetRecordBatchStream;
use lance::dataset::Dataset;
use lance::table::format::Fragment;

use crate::arrow::array::RecordBatch;
use crate::arrow::compute::{concat_batches, filter_record_batch};
use crate::arrow::datatypes::{Schema, SchemaRef};
use crate::datafusion::physical_plan::PhysicalExpr;
use crate::error::{Error, Result};
use crate::ns::infra::filter::{evaluate_mask, Filter, FilterInput};
use crate::ns::infra::storage::Storage;
use crate::ns::leaf_io::read_rules::{adapt, leaf_columns};
use crate::ns::manifest::{leaf_fragment_stats, Snapshot};

use super::index_probe::IndexProbe;
use super::prune::{prune, Pruned};
use super::stats_prune::StatsPredicate;

/// What to read.
#[derive(Debug, Clone, Default)]
pub struct ScanOptions {
    /// Row filter (SQL or a pyarrow expression).
    pub filter: Option<FilterInput>,
    /// Columns to return (all when `None`).
    pub columns: Option<Vec<String>>,
    /// Rows per batch: batches of up to this many rows, small ones of consecutive leaves
    /// combined ([`ScanIter::combined`]); without it, each leaf's batches as Lance reads them.
    pub batch_size: Option<usize>,
    /// Read only these leaves (object ids) of those pruning keeps (a Spark task's share).
    pub only: Option<std::collections::HashSet<String>>,
}

/// Leaves opened ahead of the one being read: each is opened and its first batch read while
/// the others are, so a scan of many small results (a point lookup in every partition) waits
/// for their I/O at once instead of one leaf after another.
const LOOKAHEAD: usize = 8;

/// What opening a leaf needs: shared by the leaves being opened at once.
struct LeafOpener {
    storage: Storage,
    snap: Arc<Snapshot>,
    read_schema: SchemaRef,
    filter: Option<Filter>,
    batch_size: Option<usize>,
    /// Read only the fragments at positions `k, k + n, k + 2n, ...` of each leaf.
    split: Option<(usize, usize)>,
    /// Whether the filter is never TRUE without these columns (decided once per set).
    never_true: Mutex<HashMap<Vec<String>, bool>>,
    /// The filter's equalities, asked of each leaf's indexes before it is scanned.
    probe: Option<IndexProbe>,
    /// The filter over column statistics, asked of each leaf's fragment groups.
    stats: Option<StatsPredicate>,
}

/// One leaf being read.
struct OpenLeaf {
    stream: DatasetRecordBatchStream,
    /// Namespace column name -> leaf column name.
    map: HashMap<String, String>,
    /// Whether the filter was pushed into Lance (otherwise it is applied after adapting).
    pushed: bool,
    /// The first batch, read ahead while other leaves were opened.
    ahead: Option<RecordBatch>,
    /// The stream ended while reading ahead.
    ended: bool,
    /// Fragments not read: their statistics rule the filter out.
    fragments_skipped: usize,
}

/// A leaf opened, or skipped without reading data.
enum Opened {
    Leaf(OpenLeaf),
    /// The filter is never TRUE on the leaf (it needs columns the leaf was written without).
    Skipped,
    /// The leaf's indexes hold none of the values the filter requires.
    RuledOut,
    /// The statistics of every fragment of the leaf rule the filter out (this many).
    FragmentsRuledOut(usize),
}

/// A streaming snapshot read over the kept leaves.
pub struct ScanIter {
    opener: Arc<LeafOpener>,
    leaves: std::vec::IntoIter<usize>,
    /// Leaves being opened, in scan order.
    pending: FuturesOrdered<BoxFuture<'static, Result<Opened>>>,
    current: Option<OpenLeaf>,
    out_schema: SchemaRef,
    projection: Vec<usize>,
    filter_phys: Option<Arc<dyn PhysicalExpr>>,
    /// Leaves opened so far.
    pub opened: usize,
    /// Leaves skipped without reading data: the filter is never TRUE on them (it needs
    /// columns they were written without).
    pub skipped: usize,
    /// Leaves skipped without reading data because their indexes hold none of the values the
    /// filter requires ([`super::index_probe`]).
    pub ruled_out: usize,
    /// Fragments of the leaves kept that were not read because the statistics of the rows
    /// their change added rule the filter out ([`crate::ns::manifest::FragmentStats`]).
    pub fragments_skipped: usize,
    /// Batches of fewer rows are combined up to this many (see [`Self::combined`]).
    combine_to: Option<usize>,
    /// Small batches held to be returned as one.
    held: Vec<RecordBatch>,
    held_rows: usize,
}

impl ScanIter {
    /// The schema of the batches.
    pub fn schema(&self) -> SchemaRef {
        Arc::clone(&self.out_schema)
    }

    /// Reads only part `k` of `n` of each leaf: the fragments at positions `k, k + n, ...` (so
    /// `n` readers with `k = 0..n` read every row once; a big leaf becomes several tasks).
    ///
    /// # Errors
    /// `InvalidArgument` unless `k < n`; `Internal` once reading started.
    pub fn with_split(mut self, k: usize, n: usize) -> Result<Self> {
        if k >= n {
            return Err(Error::InvalidArgument(format!(
                "split {k} of {n}: the part must be below the number of parts"
            )));
        }
        Arc::get_mut(&mut self.opener)
            .ok_or_else(|| Error::Internal("a scan is split before it is read".into()))?
            .split = Some((k, n));
        Ok(self)
    }

    /// Returns batches of up to `rows` rows: consecutive small batches (a few matching rows
    /// from each of many partitions) are combined, so a consumer that pays per batch (polars,
    /// DuckDB through the dataset view) gets full ones: of two consecutive batches returned,
    /// at least one holds half of `rows` or more, or both together more than `rows`. A batch
    /// of at least half of `rows` is returned as it is; rows are copied only when small
    /// batches are combined.
    #[must_use]
    pub fn combined(mut self, rows: usize) -> Self {
        self.combine_to = Some(rows.max(1));
        self
    }

    /// Starts opening leaves until `LOOKAHEAD` are on their way.
    fn open_ahead(&mut self) {
        while self.pending.len() < LOOKAHEAD {
            let Some(i) = self.leaves.next() else { return };
            let opener = Arc::clone(&self.opener);
            self.pending
                .push_back(on_runtime(async move { opener.open(i).await }));
        }
    }

    /// The next batch of the scan (`None` at the end).
    ///
    /// # Errors
    /// `Lance` for I/O errors; `Arrow` when a leaf's rows do not adapt to the schema.
    pub async fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        let version = self.opener.snap.version;
        self.next_combined().await.map_err(|e| {
            crate::error::gone(e, || {
                format!(
                    "a file that manifest version {version} reads no longer exists (expire() \
                     removed that version while it was read, or something deleted files of the \
                     namespace)"
                )
            })
        })
    }

    /// The next batch, small ones combined when asked ([`Self::combined`]).
    async fn next_combined(&mut self) -> Result<Option<RecordBatch>> {
        let Some(limit) = self.combine_to else {
            return self.next_filtered().await;
        };
        loop {
            if !self.held.is_empty() && self.held_rows >= limit / 2 {
                return self.take_held();
            }
            let Some(b) = self.next_filtered().await? else {
                return self.take_held();
            };
            if self.held_rows + b.num_rows() > limit && !self.held.is_empty() {
                let out = self.take_held();
                self.held_rows = b.num_rows();
                self.held.push(b);
                return out;
            }
            self.held_rows += b.num_rows();
            self.held.push(b);
        }
    }

    /// The held batches as one (`None` when none is held).
    fn take_held(&mut self) -> Result<Option<RecordBatch>> {
        self.held_rows = 0;
        let held = std::mem::take(&mut self.held);
        Ok(match held.len() {
            0 => None,
            1 => held.into_iter().next(),
            _ => Some(concat_batches(&self.out_schema, &held)?),
        })
    }

    async fn next_filtered(&mut self) -> Result<Option<RecordBatch>> {
        loop {
            if self.current.is_none() {
                self.open_ahead();
                match self.pending.next().await.transpose()? {
                    None => return Ok(None),
                    Some(Opened::Skipped) => self.skipped += 1,
                    Some(Opened::RuledOut) => self.ruled_out += 1,
                    Some(Opened::FragmentsRuledOut(n)) => self.fragments_skipped += n,
                    Some(Opened::Leaf(leaf)) => {
                        self.opened += 1;
                        self.fragments_skipped += leaf.fragments_skipped;
                        self.current = Some(leaf);
                        self.open_ahead();
                    }
                }
                continue;
            }
            let Some(leaf) = self.current.as_mut() else {
                continue;
            };
            let next = match leaf.ahead.take() {
                Some(b) => Some(b),
                None if leaf.ended => None,
                None => leaf.stream.next().await.transpose()?,
            };
            let Some(b) = next else {
                self.current = None;
                continue;
            };
            let adapted = adapt(&b, &self.opener.read_schema, &leaf.map)?;
            let filtered = match (&self.filter_phys, leaf.pushed) {
                (Some(p), false) => filter_record_batch(&adapted, &evaluate_mask(p, &adapted)?)?,
                _ => adapted,
            };
            if filtered.num_rows() == 0 {
                continue;
            }
            return Ok(Some(
                filtered
                    .project(&self.projection)?
                    .with_schema(Arc::clone(&self.out_schema))?,
            ));
        }
    }
}

impl LeafOpener {
    /// Opens leaf `i` of the snapshot and reads its first batch (or skips it).
    async fn open(&self, i: usize) -> Result<Opened> {
        let leaf = &self.snap.leaves[i];
        let ds = match leaf.read_version {
            Some(v) => self.storage.open_to_read(&leaf.location, v).await?,
            None => self.storage.open(&leaf.location, None).await?,
        };
        let leaf_schema: Schema = Schema::from(ds.schema());
        let map = leaf_columns(&leaf_schema, &self.snap.root_props.schema);
        // A leaf written before some filter columns existed reads them as NULL: when the
        // filter is never TRUE then, none of its rows match and its data is not read.
        if let Some(f) = &self.filter {
            let missing: Vec<String> = f
                .columns()
                .into_iter()
                .filter(|c| !map.contains_key(c))
                .collect();
            if !missing.is_empty() && self.never_true_without(f, missing) {
                return Ok(Opened::Skipped);
            }
        }
        // Push the filter into Lance when the leaf has every filter column under its
        // namespace name and type; otherwise filter after adapting. A pushed filter is first
        // asked of the leaf's indexes, before anything is planned.
        let pushed = match &self.filter {
            Some(f) => self.same_columns(f, &leaf_schema, &map),
            None => false,
        };
        if pushed {
            if let Some(probe) = &self.probe {
                if probe.rules_out(&ds).await {
                    return Ok(Opened::RuledOut);
                }
            }
        }
        let wanted: Vec<String> = self
            .read_schema
            .fields()
            .iter()
            .filter_map(|f| map.get(f.name()).cloned())
            .collect();
        let kept = self.fragments_kept(i, &ds).await?;
        let fragments_skipped = kept.as_ref().map_or(0, |k| ds.fragments().len() - k.len());
        if kept.as_ref().is_some_and(Vec::is_empty) {
            return Ok(Opened::FragmentsRuledOut(fragments_skipped));
        }
        let mut scanner = ds.scan();
        scanner.project(&wanted)?;
        let fragments = kept.as_deref().unwrap_or(ds.fragments().as_slice());
        if let Some((k, n)) = self.split {
            scanner.with_fragments(fragments.iter().skip(k).step_by(n).cloned().collect());
        } else if let Some(kept) = kept {
            scanner.with_fragments(kept);
        }
        if let Some(n) = self.batch_size {
            scanner.batch_size(n);
        }
        if let (true, Some(f)) = (pushed, &self.filter) {
            // The parsed expression, not the text: Lance's SQL dialect differs from ours
            // (it reads "x" as a string, not as a column).
            scanner.filter_expr(f.expr.clone());
        }
        let mut stream = scanner.try_into_stream().await?;
        let ahead = stream.next().await.transpose()?;
        let ended = ahead.is_none();
        Ok(Opened::Leaf(OpenLeaf {
            stream,
            map,
            pushed,
            ahead,
            ended,
            fragments_skipped,
        }))
    }

    /// The fragments of leaf `i` (opened as `ds`) its fragment groups' statistics do not rule
    /// out; `None` when that is all of them.
    async fn fragments_kept(&self, i: usize, ds: &Dataset) -> Result<Option<Vec<Fragment>>> {
        let Some(predicate) = &self.stats else {
            return Ok(None);
        };
        let Some((groups, _)) = leaf_fragment_stats(&self.snap, i).await? else {
            return Ok(None);
        };
        let out = predicate.fragments_ruled_out(&groups);
        if out.is_empty() {
            return Ok(None);
        }
        let kept = ds.fragments().iter().filter(|f| !out.contains(&f.id));
        Ok(Some(kept.cloned().collect()))
    }

    /// Whether `f` is never TRUE when the columns `missing` are NULL (decided once per set).
    fn never_true_without(&self, f: &Filter, missing: Vec<String>) -> bool {
        let ns = &self.snap.root_props.schema;
        let mut known = self
            .never_true
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        *known
            .entry(missing)
            .or_insert_with_key(|m| f.never_true_when_null(m, ns))
    }

    /// Whether the leaf has every column of `f` under its namespace name and type.
    fn same_columns(&self, f: &Filter, leaf: &Schema, map: &HashMap<String, String>) -> bool {
        let ns = &self.snap.root_props.schema;
        f.columns().iter().all(|c| {
            map.get(c) == Some(c)
                && leaf.field_with_name(c).ok().map(|l| l.data_type())
                    == ns.field_with_name(c).ok().map(|n| n.data_type())
        })
    }
}

/// Plans a scan: prunes, and returns the streaming reader with the pruning result.
///
/// # Errors
/// `Expression` for a bad filter; `InvalidArgument` for unknown columns.
pub async fn scan(snap: Arc<Snapshot>, opts: &ScanOptions) -> Result<(ScanIter, Pruned)> {
    let schema = snap.schema();
    let filter = opts
        .filter
        .as_ref()
        .map(|f| Filter::from_input(f, &schema))
        .transpose()?;
    let mut pruned = prune(&snap, filter.as_ref()).await?;
    if let Some(only) = &opts.only {
        pruned
            .leaves
            .retain(|&i| only.contains(&snap.leaves[i].object_id));
    }
    let iter = read_leaves(
        snap,
        pruned.leaves.clone(),
        filter,
        opts.columns.as_deref(),
        opts.batch_size,
    )?;
    let iter = match opts.batch_size {
        Some(rows) => iter.combined(rows),
        None => iter,
    };
    Ok((iter, pruned))
}

/// The streaming read of the leaves `leaves` (indexes into the snapshot's leaves, already
/// chosen: no pruning here): `columns` of the namespace schema (all when `None`), rows
/// matching `filter`.
///
/// # Errors
/// `InvalidArgument` for unknown columns; `Expression` when the filter does not bind.
pub fn read_leaves(
    snap: Arc<Snapshot>,
    leaves: Vec<usize>,
    filter: Option<Filter>,
    columns: Option<&[String]>,
    batch_size: Option<usize>,
) -> Result<ScanIter> {
    let schema = snap.schema();
    let wanted: Vec<String> = match columns {
        Some(c) => c.to_vec(),
        None => schema.fields().iter().map(|f| f.name().clone()).collect(),
    };
    for c in &wanted {
        if schema.field_with_name(c).is_err() {
            return Err(Error::InvalidArgument(format!(
                "column {c:?} is not in the namespace schema"
            )));
        }
    }
    let mut read: Vec<String> = wanted.clone();
    if let Some(f) = &filter {
        for c in f.columns() {
            if !read.contains(&c) {
                read.push(c);
            }
        }
    }
    let read_fields: Vec<_> = read
        .iter()
        .map(|n| schema.field_with_name(n).cloned())
        .collect::<std::result::Result<_, _>>()?;
    let read_schema = Arc::new(Schema::new(read_fields));
    let projection: Vec<usize> = (0..wanted.len()).collect();
    let out_schema = Arc::new(read_schema.project(&projection)?);
    let filter_phys = filter
        .as_ref()
        .map(|f| f.physical(&read_schema))
        .transpose()?;
    let probe = filter.as_ref().and_then(|f| IndexProbe::of(&f.expr, &snap));
    let stats = filter.as_ref().and_then(|f| StatsPredicate::of(&snap, f));
    let opener = LeafOpener {
        storage: snap.storage.clone(),
        snap,
        read_schema,
        filter,
        batch_size,
        split: None,
        never_true: Mutex::new(HashMap::new()),
        probe,
        stats,
    };
    Ok(ScanIter {
        opener: Arc::new(opener),
        leaves: leaves.into_iter(),
        pending: FuturesOrdered::new(),
        current: None,
        out_schema,
        projection,
        filter_phys,
        opened: 0,
        skipped: 0,
        ruled_out: 0,
        fragments_skipped: 0,
        combine_to: None,
        held: Vec::new(),
        held_rows: 0,
    })
}

/// Runs `f` as a task of the current tokio runtime, so the leaves opened ahead are opened on
/// every worker thread at once rather than interleaved on the reader's (a point lookup asks
/// the index of every kept leaf); the task is aborted when the returned future is dropped (a
/// scan dropped early). Without a runtime (never in practice), `f` runs where it is polled.
fn on_runtime(
    f: impl std::future::Future<Output = Result<Opened>> + Send + 'static,
) -> BoxFuture<'static, Result<Opened>> {
    let Ok(handle) = tokio::runtime::Handle::try_current() else {
        return Box::pin(f);
    };
    let task = AbortOnDrop(handle.spawn(f));
    Box::pin(async move {
        let mut task = task;
        (&mut task.0)
            .await
            .map_err(|e| Error::Internal(format!("opening a leaf failed: {e}")))?
    })
}

/// A spawned task, aborted when this is dropped before it ended.
struct AbortOnDrop<T>(tokio::task::JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}
