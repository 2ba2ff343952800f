//! The DataFusion execution plan of a namespace scan ([`super::provider::NamespaceTable`]):
//! the leaves pruning kept, spread over DataFusion's partitions, each partition a streaming
//! read of its leaves ([`super::read::read_leaves`]) with the pushed filter and projection,
//! cut at the pushed limit.

use std::sync::Arc;

use futures::stream::{self, StreamExt};

use crate::arrow::array::{RecordBatch, RecordBatchOptions};
use crate::arrow::datatypes::SchemaRef;
use crate::datafusion::common::stats::Precision;
use crate::datafusion::common::{Result as DfResult, Statistics};
use crate::datafusion::error::DataFusionError;
use crate::datafusion::execution::TaskContext;
use crate::datafusion::physical_expr::EquivalenceProperties;
use crate::datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use crate::datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use crate::datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PlanProperties,
    SendableRecordBatchStream,
};
use crate::ns::infra::filter::Filter;
use crate::ns::manifest::Snapshot;

use super::read::{read_leaves, ScanIter};

/// One scan DataFusion planned against the table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScanRecord {
    /// Columns read (the projection DataFusion pushed; all when it pushed none).
    pub columns: Vec<String>,
    /// The filter taken (the conjunction of the pushed filters), as text.
    pub filter: Option<String>,
    /// The limit DataFusion pushed.
    pub limit: Option<usize>,
    /// Leaves of the snapshot.
    pub leaves: usize,
    /// Leaves the partition values kept.
    pub kept_by_partitions: usize,
    /// Leaves read: those the column statistics did not skip either.
    pub kept: usize,
}

/// What every partition of a scan shares.
#[derive(Debug)]
pub(super) struct ScanShape {
    pub snap: Arc<Snapshot>,
    /// The output schema (the projection, without field metadata).
    pub schema: SchemaRef,
    pub filter: Option<Filter>,
    pub limit: Option<usize>,
    pub batch_size: usize,
    /// Rows and bytes of the kept leaves, when known exactly (no filter, totals recorded).
    pub totals: Option<(u64, u64)>,
    /// What was pushed and kept, for display.
    pub record: ScanRecord,
}

impl ScanShape {
    /// Columns to read: the projection, or one column when DataFusion wants only row counts
    /// and no filter reads a column (a batch of no columns still counts its rows).
    fn read_columns(&self) -> Vec<String> {
        let mut cols: Vec<String> = self
            .schema
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect();
        if cols.is_empty() && self.filter.is_none() {
            if let Some(first) = self.snap.schema().fields().first() {
                cols.push(first.name().clone());
            }
        }
        cols
    }
}

/// The scan of a namespace snapshot, one DataFusion partition per group of kept leaves.
#[derive(Debug)]
pub(super) struct NamespaceExec {
    shape: Arc<ScanShape>,
    /// Leaf indexes read by each partition.
    parts: Vec<Vec<usize>>,
    properties: Arc<PlanProperties>,
}

impl NamespaceExec {
    /// Spreads `leaves` round-robin over at most `target` partitions (at least one).
    pub fn new(shape: ScanShape, leaves: Vec<usize>, target: usize) -> Self {
        let n = target.min(leaves.len()).max(1);
        let mut parts = vec![Vec::new(); n];
        for (j, leaf) in leaves.into_iter().enumerate() {
            parts[j % n].push(leaf);
        }
        let properties = PlanProperties::new(
            EquivalenceProperties::new(Arc::clone(&shape.schema)),
            Partitioning::UnknownPartitioning(n),
            EmissionType::Incremental,
            Boundedness::Bounded,
        );
        Self {
            shape: Arc::new(shape),
            parts,
            properties: Arc::new(properties),
        }
    }
}

impl DisplayAs for NamespaceExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        let r = &self.shape.record;
        write!(
            f,
            "NamespaceExec: version={}, leaves={} of {} (partition values kept {}, statistics \
             skipped {}), partitions={}, projection=[{}]",
            self.shape.snap.version,
            r.kept,
            r.leaves,
            r.kept_by_partitions,
            r.kept_by_partitions - r.kept,
            self.parts.len(),
            r.columns.join(", "),
        )?;
        if let Some(filter) = &r.filter {
            write!(f, ", filter={filter}")?;
        }
        if let Some(limit) = r.limit {
            write!(f, ", limit={limit}")?;
        }
        Ok(())
    }
}

impl ExecutionPlan for NamespaceExec {
    fn name(&self) -> &str {
        "NamespaceExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        Vec::new()
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        match children.is_empty() {
            true => Ok(self),
            false => Err(DataFusionError::Internal(
                "a namespace scan has no inputs".into(),
            )),
        }
    }

    fn execute(
        &self,
        partition: usize,
        _context: Arc<TaskContext>,
    ) -> DfResult<SendableRecordBatchStream> {
        let leaves = self.parts.get(partition).cloned().ok_or_else(|| {
            DataFusionError::Internal(format!(
                "partition {partition} of a scan with {} partitions",
                self.parts.len()
            ))
        })?;
        let shape = Arc::clone(&self.shape);
        let iter = read_leaves(
            Arc::clone(&shape.snap),
            leaves,
            shape.filter.clone(),
            Some(&shape.read_columns()),
            Some(shape.batch_size),
        )
        .map_err(external)?;
        let schema = Arc::clone(&shape.schema);
        let state = PartitionRead {
            iter,
            shape,
            left: self.shape.limit,
        };
        let batches = stream::unfold(Some(state), |state| async move {
            let mut state = state?;
            match state.next().await {
                Ok(Some(b)) => Some((Ok(b), Some(state))),
                Ok(None) => None,
                Err(e) => Some((Err(external(e)), None)),
            }
        })
        .boxed();
        Ok(Box::pin(RecordBatchStreamAdapter::new(schema, batches)))
    }

    fn partition_statistics(&self, partition: Option<usize>) -> DfResult<Arc<Statistics>> {
        let schema = &self.shape.schema;
        let mut stats = Statistics::new_unknown(schema);
        if let (None, Some((rows, bytes))) = (partition, self.shape.totals) {
            let rows = usize::try_from(rows).unwrap_or(usize::MAX);
            stats.num_rows = Precision::Exact(self.shape.limit.map_or(rows, |l| l.min(rows)));
            stats.total_byte_size = Precision::Inexact(usize::try_from(bytes).unwrap_or(0));
        }
        Ok(Arc::new(stats))
    }
}

/// One partition being read.
struct PartitionRead {
    iter: ScanIter,
    shape: Arc<ScanShape>,
    /// Rows still wanted under the pushed limit.
    left: Option<usize>,
}

impl PartitionRead {
    /// The next batch, in the output schema, cut at the limit.
    async fn next(&mut self) -> crate::Result<Option<RecordBatch>> {
        if self.left == Some(0) {
            return Ok(None);
        }
        let Some(batch) = self.iter.next_batch().await? else {
            return Ok(None);
        };
        let take = self
            .left
            .map_or(batch.num_rows(), |l| l.min(batch.num_rows()));
        self.left = self.left.map(|l| l - take);
        let schema = &self.shape.schema;
        // Our batches carry the namespace's field metadata; DataFusion's schema does not. A
        // projection to no columns keeps only the row count.
        let columns: Vec<_> = batch
            .columns()
            .iter()
            .take(schema.fields().len())
            .map(|c| c.slice(0, take))
            .collect();
        let options = RecordBatchOptions::new().with_row_count(Some(take));
        Ok(Some(RecordBatch::try_new_with_options(
            Arc::clone(schema),
            columns,
            &options,
        )?))
    }
}

/// An error of ours (or of our runtime) as DataFusion carries it.
pub(super) fn external(e: impl std::error::Error + Send + Sync + 'static) -> DataFusionError {
    DataFusionError::External(Box::new(e))
}
