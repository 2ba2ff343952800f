//! Snapshot reads of the kept leaves at their `read_version`s, each leaf batch adapted to
//! the namespace schema by the read rules ([`crate::ns::leaf_io::read_rules`]); the filter is
//! pushed into Lance when a leaf has every filter column as the namespace has it.

use std::collections::HashMap;
use std::sync::Arc;

use futures::StreamExt;
use lance::dataset::scanner::DatasetRecordBatchStream;

use crate::arrow::array::RecordBatch;
use crate::arrow::compute::filter_record_batch;
use crate::arrow::datatypes::{Schema, SchemaRef};
use crate::datafusion::physical_plan::PhysicalExpr;
use crate::error::{Error, Result};
use crate::ns::infra::filter::{evaluate_mask, Filter, FilterInput};
use crate::ns::infra::storage::Storage;
use crate::ns::leaf_io::read_rules::{adapt, leaf_columns};
use crate::ns::manifest::Snapshot;

use super::prune::{prune, Pruned};

/// What to read.
#[derive(Debug, Clone, Default)]
pub struct ScanOptions {
    /// Row filter (SQL or a pyarrow expression).
    pub filter: Option<FilterInput>,
    /// Columns to return (all when `None`).
    pub columns: Option<Vec<String>>,
    /// Rows per batch hint.
    pub batch_size: Option<usize>,
    /// Read only these leaves (object ids) of those pruning keeps (a Spark task's share).
    pub only: Option<std::collections::HashSet<String>>,
}

/// A streaming snapshot read over the kept leaves.
pub struct ScanIter {
    storage: Storage,
    snap: Arc<Snapshot>,
    leaves: std::vec::IntoIter<usize>,
    read_schema: SchemaRef,
    out_schema: SchemaRef,
    projection: Vec<usize>,
    filter: Option<Filter>,
    filter_phys: Option<Arc<dyn PhysicalExpr>>,
    batch_size: Option<usize>,
    current: Option<(DatasetRecordBatchStream, HashMap<String, String>, bool)>,
    /// Read only the fragments at positions `k, k + n, k + 2n, ...` of each leaf.
    split: Option<(usize, usize)>,
    /// Whether the filter is never TRUE without these columns (decided once per set).
    never_true: HashMap<Vec<String>, bool>,
    /// Leaves opened so far.
    pub opened: usize,
    /// Leaves skipped without reading data: the filter is never TRUE on them (it needs
    /// columns they were written without).
    pub skipped: usize,
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
    /// `InvalidArgument` unless `k < n`.
    pub fn with_split(mut self, k: usize, n: usize) -> Result<Self> {
        if k >= n {
            return Err(Error::InvalidArgument(format!(
                "split {k} of {n}: the part must be below the number of parts"
            )));
        }
        self.split = Some((k, n));
        Ok(self)
    }

    async fn open_next(&mut self) -> Result<bool> {
        let (ds, leaf_schema, map) = loop {
            let Some(i) = self.leaves.next() else {
                return Ok(false);
            };
            let leaf = &self.snap.leaves[i];
            let ds = self.storage.open(&leaf.location, leaf.read_version).await?;
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
                let ns = &self.snap.root_props.schema;
                let never = !missing.is_empty()
                    && *self
                        .never_true
                        .entry(missing)
                        .or_insert_with_key(|m| f.never_true_when_null(m, ns));
                if never {
                    self.skipped += 1;
                    continue;
                }
            }
            break (ds, leaf_schema, map);
        };
        let wanted: Vec<String> = self
            .read_schema
            .fields()
            .iter()
            .filter_map(|f| map.get(f.name()).cloned())
            .collect();
        let mut scanner = ds.scan();
        scanner.project(&wanted)?;
        if let Some((k, n)) = self.split {
            let part = ds.fragments().iter().skip(k).step_by(n).cloned().collect();
            scanner.with_fragments(part);
        }
        if let Some(n) = self.batch_size {
            scanner.batch_size(n);
        }
        // Push the filter into Lance when the leaf has every filter column under its
        // namespace name and type; otherwise filter after adapting.
        let mut pushed = false;
        if let Some(f) = &self.filter {
            let same = f.columns().iter().all(|c| {
                map.get(c) == Some(c)
                    && leaf_schema.field_with_name(c).ok().map(|l| l.data_type())
                        == self
                            .snap
                            .root_props
                            .schema
                            .field_with_name(c)
                            .ok()
                            .map(|n| n.data_type())
            });
            if same {
                // The parsed expression, not the text: Lance's SQL dialect differs from ours
                // (it reads "x" as a string, not as a column).
                scanner.filter_expr(f.expr.clone());
                pushed = true;
            }
        }
        let stream = scanner.try_into_stream().await?;
        self.current = Some((stream, map, pushed));
        self.opened += 1;
        Ok(true)
    }

    /// The next batch of the scan (`None` at the end).
    ///
    /// # Errors
    /// `Lance` for I/O errors; `Arrow` when a leaf's rows do not adapt to the schema.
    pub async fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        let version = self.snap.version;
        self.next_batch_inner().await.map_err(|e| {
            crate::error::gone(e, || {
                format!(
                    "a file that manifest version {version} reads no longer exists (expire() \
                     removed that version while it was read, or something deleted files of the \
                     namespace)"
                )
            })
        })
    }

    async fn next_batch_inner(&mut self) -> Result<Option<RecordBatch>> {
        loop {
            if self.current.is_none() && !self.open_next().await? {
                return Ok(None);
            }
            let Some((stream, map, pushed)) = self.current.as_mut() else {
                continue;
            };
            match stream.next().await {
                None => {
                    self.current = None;
                }
                Some(b) => {
                    let b = b?;
                    let adapted = adapt(&b, &self.read_schema, map)?;
                    let filtered = match (&self.filter_phys, *pushed) {
                        (Some(p), false) => {
                            filter_record_batch(&adapted, &evaluate_mask(p, &adapted)?)?
                        }
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
    Ok(ScanIter {
        storage: snap.storage.clone(),
        leaves: leaves.into_iter(),
        snap,
        read_schema,
        out_schema,
        projection,
        filter,
        filter_phys,
        batch_size,
        current: None,
        split: None,
        never_true: HashMap::new(),
        opened: 0,
        skipped: 0,
    })
}
