//! The namespace as a DataFusion table: a [`TableProvider`] over one snapshot, so DataFusion
//! (in process, or datafusion-python through the binding's FFI export) plans SQL against a
//! namespace with its projection, filters and limit pushed into our scan.
//!
//! - Filters: every conjunct DataFusion offers that our filter rules accept (see
//!   [`Filter::from_expr`]) is taken as exact: partition pruning, statistics pruning and the
//!   filter pushed into each leaf's Lance scan answer it, so DataFusion does not filter again.
//!   The others stay with DataFusion.
//! - Pruning runs once per scan, when DataFusion plans it; the kept leaves are spread over
//!   DataFusion's partitions ([`super::exec::NamespaceExec`]).
//! - Planning reads the manifest: with [`NamespaceTable::with_runtime`] it runs on that tokio
//!   runtime, so an engine polling on a runtime of its own (datafusion-python, over FFI) can
//!   plan scans.
//! - Each planned scan is recorded ([`ScanRecord`]): what was pushed and what pruning kept,
//!   so a caller (and the tests) can see what another engine asked for.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;

use crate::arrow::datatypes::SchemaRef;
use crate::datafusion::catalog::{Session, TableProvider};
use crate::datafusion::common::Result as DfResult;
use crate::datafusion::logical_expr::{Expr, TableProviderFilterPushDown, TableType};
use crate::datafusion::physical_plan::ExecutionPlan;
use crate::datafusion_ffi::proto::logical_extension_codec::FFI_LogicalExtensionCodec;
use crate::datafusion_ffi::table_provider::FFI_TableProvider;
use crate::ns::infra::filter::{plain, Filter};
use crate::ns::manifest::{recorded_totals, Snapshot};

use super::exec::{external, NamespaceExec, ScanRecord, ScanShape};
use super::prune::prune;

/// A namespace snapshot as a DataFusion table.
#[derive(Debug)]
pub struct NamespaceTable {
    snap: Arc<Snapshot>,
    schema: SchemaRef,
    scans: Mutex<Vec<ScanRecord>>,
    /// Where planning runs (the caller's runtime when `None`).
    runtime: Option<tokio::runtime::Handle>,
}

impl NamespaceTable {
    /// The table over `snap` (the version it reads stays fixed).
    pub fn new(snap: Arc<Snapshot>) -> Self {
        let schema = Arc::new(plain(&snap.schema()));
        Self {
            snap,
            schema,
            scans: Mutex::new(Vec::new()),
            runtime: None,
        }
    }

    /// Plans scans on `runtime`: for engines that poll on a tokio runtime other than ours.
    #[must_use]
    pub fn with_runtime(mut self, runtime: tokio::runtime::Handle) -> Self {
        self.runtime = Some(runtime);
        self
    }

    /// The table as DataFusion's FFI table provider, for an engine built separately
    /// (datafusion-python): filters are offered to us, plans and streams run on `runtime`,
    /// and expressions cross in the engine's `codec`.
    pub fn into_ffi(
        self: Arc<Self>,
        runtime: tokio::runtime::Handle,
        codec: FFI_LogicalExtensionCodec,
    ) -> FFI_TableProvider {
        FFI_TableProvider::new_with_ffi_codec(self, true, Some(runtime), codec)
    }

    /// The scans planned so far, oldest first.
    pub fn scans(&self) -> Vec<ScanRecord> {
        self.scans
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Our filter for the conjunction of `filters`, `None` for none.
    fn filter(&self, filters: &[Expr]) -> DfResult<Option<Filter>> {
        balanced_and(filters)
            .map(|e| Filter::from_expr(e, &self.schema))
            .transpose()
            .map_err(external)
    }
}

/// `filters` joined by `AND` as a balanced tree: DataFusion pushes each conjunct on its own,
/// and hundreds of them chained would be deeper than a filter may nest.
fn balanced_and(filters: &[Expr]) -> Option<Expr> {
    match filters {
        [] => None,
        [one] => Some(one.clone()),
        _ => {
            let (left, right) = filters.split_at(filters.len() / 2);
            Some(balanced_and(left)?.and(balanced_and(right)?))
        }
    }
}

#[async_trait]
impl TableProvider for NamespaceTable {
    fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> DfResult<Vec<TableProviderFilterPushDown>> {
        Ok(filters
            .iter()
            .map(|f| match Filter::from_expr((*f).clone(), &self.schema) {
                Ok(_) => TableProviderFilterPushDown::Exact,
                Err(_) => TableProviderFilterPushDown::Unsupported,
            })
            .collect())
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let filter = self.filter(filters)?;
        let (snap, f) = (Arc::clone(&self.snap), filter.clone());
        let no_filter = filter.is_none();
        let plan = async move {
            let pruned = prune(&snap, f.as_ref()).await?;
            // Exact row counts let DataFusion answer `count(*)` without reading.
            let totals = match no_filter {
                true => recorded_totals(&snap, &pruned.leaves).await?,
                false => None,
            };
            Ok::<_, crate::Error>((pruned, totals))
        };
        let planned = match &self.runtime {
            Some(rt) => rt.spawn(plan).await.map_err(external)?,
            None => plan.await,
        };
        let (pruned, totals) = planned.map_err(external)?;
        let by_stats: usize = pruned.specs.iter().map(|s| s.skipped_by_stats).sum();
        let projected = match projection {
            Some(p) => Arc::new(self.schema.project(p)?),
            None => Arc::clone(&self.schema),
        };
        let record = ScanRecord {
            columns: projected
                .fields()
                .iter()
                .map(|f| f.name().clone())
                .collect(),
            filter: filter.as_ref().map(|f| f.sql.clone()),
            limit,
            leaves: self.snap.leaves.len(),
            kept_by_partitions: pruned.leaves.len() + by_stats,
            kept: pruned.leaves.len(),
        };
        self.scans
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(record.clone());
        let shape = ScanShape {
            snap: Arc::clone(&self.snap),
            schema: projected,
            filter,
            limit,
            batch_size: state.config().batch_size(),
            totals,
            record,
        };
        let parts = state.config().target_partitions().max(1);
        Ok(Arc::new(NamespaceExec::new(shape, pruned.leaves, parts)))
    }
}
