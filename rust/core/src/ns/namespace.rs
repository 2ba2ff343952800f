//! [`Namespace`]: one partitioned namespace, the entry point of every operation on it.
//!
//! The top layer of the namespace: each method is the one entry point of an operation, whose
//! home is in [`crate::ns::ops`] (creating a namespace is the transaction layer's
//! [`crate::ns::txn::create_namespace`]). Every method that does I/O is async; the caller owns
//! the runtime (the Python binding drives them with its own fork-aware runtime). Operations
//! on snapshots (`history`, the joins of two namespaces) take the snapshots they read. The
//! handle keeps the latest snapshot it loaded and reuses it while the manifest has not moved.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::arrow::array::RecordBatch;
use crate::arrow::datatypes::Schema;
use crate::error::Result;
use crate::ns::infra::storage::Storage;
use crate::ns::manifest::Snapshot;
use crate::ns::ops::join::{plan_join, JoinSide};
use crate::ns::ops::write::{distributed, shared_plan};
use crate::ns::ops::{
    cleanup, delete, evolve, expire, history, index, merge, optimize, repair, sort_order, tags,
    update_schema, write, CleanupSummary, CreateIndexOptions, DeleteSummary, ExpireOptions,
    ExpireSummary, IndexCoverage, IndexRefresh, JoinPlan, JoinRequest, MergeClauses, MergeExplain,
    MergeMessage, MergeSource, MergeSummary, OptimizeOptions, OptimizeSummary, PreparedJoin,
    WritePlan,
};
use crate::ns::write::{StagedMessage, WriteOptions, WriteSummary};
use crate::spec::PartitionSpec;

/// One partitioned namespace (see the module docs).
#[derive(Debug)]
pub struct Namespace {
    storage: Storage,
    latest: Mutex<Option<Arc<Snapshot>>>,
}

impl Namespace {
    /// The namespace at `storage` (nothing is read until it is used).
    pub fn open(storage: Storage) -> Self {
        Self {
            storage,
            latest: Mutex::new(None),
        }
    }

    /// Creates a namespace at `storage`; returns it and its schema as stored (with field ids).
    ///
    /// # Errors
    /// As [`crate::ns::txn::create_namespace::create`].
    pub async fn create(
        storage: Storage,
        schema: &Schema,
        spec: &PartitionSpec,
        properties: &HashMap<String, String>,
    ) -> Result<(Self, Schema)> {
        let stored =
            crate::ns::txn::create_namespace::create(&storage, schema, spec, properties).await?;
        Ok((Self::open(storage), stored))
    }

    /// Where the namespace lives.
    pub fn storage(&self) -> &Storage {
        &self.storage
    }

    /// The snapshot for reads at manifest `version`, or the latest one (reused while the
    /// manifest has not moved: [`Namespace::refresh`], then [`Namespace::current`]).
    ///
    /// # Errors
    /// `NotFound` for a missing namespace or version; `Corrupt` for a manifest that does not
    /// index.
    pub async fn snapshot(&self, version: Option<u64>) -> Result<Arc<Snapshot>> {
        if let Some(v) = version {
            return Ok(Arc::new(
                Snapshot::load_with(&self.storage, Some(v), true).await?,
            ));
        }
        self.refresh().await?;
        self.current().await
    }

    /// The handle's snapshot: the one cache of the namespace's state, loaded on first use and
    /// replaced only by [`Namespace::refresh`] (no I/O after the first call).
    ///
    /// # Errors
    /// As [`Namespace::snapshot`].
    pub async fn current(&self) -> Result<Arc<Snapshot>> {
        match self.cached() {
            Some(snap) => Ok(snap),
            None => self.reload().await,
        }
    }

    /// Reloads the handle's snapshot if the manifest moved since it was loaded (one version
    /// lookup otherwise); whether it changed.
    ///
    /// # Errors
    /// As [`Namespace::snapshot`].
    pub async fn refresh(&self) -> Result<bool> {
        if let Some(snap) = self.cached() {
            if snap.dataset.latest_version_id().await? == snap.version {
                return Ok(false);
            }
        }
        self.reload().await?;
        Ok(true)
    }

    async fn reload(&self) -> Result<Arc<Snapshot>> {
        let snap = Arc::new(Snapshot::load_with(&self.storage, None, true).await?);
        *self.latest.lock().unwrap_or_else(|e| e.into_inner()) = Some(Arc::clone(&snap));
        Ok(snap)
    }

    fn cached(&self) -> Option<Arc<Snapshot>> {
        self.latest
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Writes `input`: a [`crate::ns::write::PartitionWriter`] stages it in this process, a
    /// [`crate::ns::txn::WriteTransaction`] commits it.
    ///
    /// # Errors
    /// As [`write::write`].
    pub async fn write(
        &self,
        input: impl Iterator<Item = Result<RecordBatch>>,
        opts: &WriteOptions,
    ) -> Result<WriteSummary> {
        write::write(&self.storage, input, opts).await
    }

    /// Plans a distributed write on the latest manifest version.
    ///
    /// # Errors
    /// As [`distributed::plan`].
    pub async fn plan_distributed(&self, strong: Option<bool>) -> Result<WritePlan> {
        distributed::plan(&self.storage, strong).await
    }

    /// The plan the tasks of a write without a driver-side plan share under `key` (a stream
    /// micro-batch's run): published by the first task, read by the others.
    ///
    /// # Errors
    /// As [`shared_plan::shared_plan`].
    pub async fn plan_shared(
        &self,
        key: &str,
        strong: Option<bool>,
    ) -> Result<(WritePlan, String)> {
        shared_plan::shared_plan(&self.storage, key, strong).await
    }

    /// Removes the shared plan `key` once its write committed (best effort).
    pub async fn remove_shared_plan(&self, key: &str) {
        shared_plan::remove_shared_plan(&self.storage, key).await;
    }

    /// Stages one task's rows of a distributed write.
    ///
    /// # Errors
    /// As [`distributed::stage`].
    pub async fn stage(
        &self,
        plan: WritePlan,
        nonce: &str,
        input: impl Iterator<Item = Result<RecordBatch>>,
        opts: &WriteOptions,
    ) -> Result<StagedMessage> {
        distributed::stage(&self.storage, plan, nonce, input, opts).await
    }

    /// Commits the staged outputs of one distributed write (idempotent per write).
    ///
    /// # Errors
    /// As [`write::commit_staged`].
    pub async fn commit_staged(
        &self,
        messages: &[StagedMessage],
        opts: &WriteOptions,
    ) -> Result<WriteSummary> {
        write::commit_staged(&self.storage, messages, opts).await
    }

    /// Deletes the rows matching `filter`.
    ///
    /// # Errors
    /// As [`delete::delete`].
    pub async fn delete(
        &self,
        filter: &str,
        strong: Option<bool>,
        max_attempts: u32,
    ) -> Result<DeleteSummary> {
        delete::delete(&self.storage, filter, strong, max_attempts).await
    }

    /// Merges `source` into the namespace by the key columns of `clauses` (`merge_insert`):
    /// matched rows updated or deleted, unmatched source rows inserted, unmatched target rows
    /// deleted, as the clauses say; one atomic commit.
    ///
    /// # Errors
    /// As [`merge::merge`].
    pub async fn merge_insert(
        &self,
        source: &MergeSource,
        clauses: &MergeClauses,
        opts: &WriteOptions,
    ) -> Result<MergeSummary> {
        merge::merge(&self.storage, source, clauses, opts).await
    }

    /// What merging `source` with `clauses` would read, and why; reads no partition.
    ///
    /// # Errors
    /// As [`merge::explain`].
    pub async fn explain_merge(
        &self,
        source: &MergeSource,
        clauses: &MergeClauses,
    ) -> Result<MergeExplain> {
        merge::explain(&self.storage, source, clauses).await
    }

    /// Decides one task's share of a distributed merge planned by [`Self::plan_distributed`]
    /// (all source rows of one key in this share) and stages its new rows; commits nothing.
    ///
    /// # Errors
    /// As [`merge::distributed::stage_merge`].
    pub async fn stage_merge(
        &self,
        plan: WritePlan,
        nonce: &str,
        source: &MergeSource,
        clauses: &MergeClauses,
        opts: &WriteOptions,
    ) -> Result<MergeMessage> {
        merge::distributed::stage_merge(&self.storage, plan, nonce, source, clauses, opts).await
    }

    /// Commits the staged shares of the distributed merge planned as `plan` with `nonce` at
    /// once, deciding its not-matched-by-source clauses (of `clauses`) over every share.
    ///
    /// # Errors
    /// As [`merge::distributed::commit_merge`].
    pub async fn commit_merge(
        &self,
        (plan, nonce): (WritePlan, &str),
        messages: &[MergeMessage],
        clauses: &MergeClauses,
        opts: &WriteOptions,
    ) -> Result<MergeSummary> {
        merge::distributed::commit_merge(&self.storage, (plan, nonce), messages, clauses, opts)
            .await
    }

    /// Sets `set`'s columns (SQL over each row's columns) on the rows matching `filter`
    /// (every row without one); one atomic commit.
    ///
    /// # Errors
    /// As [`merge::update::update`].
    pub async fn update(
        &self,
        set: &[(String, String)],
        filter: Option<&str>,
        opts: &WriteOptions,
    ) -> Result<MergeSummary> {
        merge::update::update(&self.storage, set, filter, opts).await
    }

    /// Adds a spec version and makes it current; returns its id.
    ///
    /// # Errors
    /// `Spec` for an invalid spec (validated against the latest schema and spec versions);
    /// `CommitConflict` when concurrent changes kept landing first.
    pub async fn evolve(&self, spec: &PartitionSpec) -> Result<i32> {
        evolve::evolve(&self.storage, spec).await
    }

    /// Changes the schema from `base` (the schema the caller read) to `new` (fields matched by
    /// field id), applied to the latest schema: columns other changes added or renamed since
    /// `base` are kept. Returns the schema as stored.
    ///
    /// # Errors
    /// `SchemaMismatch` for a refused change; `CommitConflict` when a concurrent change
    /// touched the same columns.
    pub async fn update_schema(&self, base: &Schema, new: &Schema) -> Result<Schema> {
        update_schema::update_schema(&self.storage, base, new).await
    }

    /// Restores manifest columns other tools dropped; returns their names.
    ///
    /// # Errors
    /// As [`repair::repair`].
    pub async fn repair(&self) -> Result<Vec<String>> {
        repair::repair(&self.storage).await
    }

    /// Removes what failed writes left behind (files older than `older_than`).
    ///
    /// # Errors
    /// As [`cleanup::cleanup`].
    pub async fn cleanup(
        &self,
        older_than: Duration,
        dry_run: bool,
        retention_check: bool,
    ) -> Result<CleanupSummary> {
        cleanup::cleanup(&self.storage, older_than, dry_run, retention_check).await
    }

    /// Compacts the small files of the partitions `opts.filter` selects, in one commit.
    ///
    /// # Errors
    /// As [`optimize::optimize`].
    pub async fn optimize(&self, opts: &OptimizeOptions) -> Result<OptimizeSummary> {
        optimize::optimize(&self.storage, opts).await
    }

    /// Declares a scalar index on a column and builds it on every partition; returns its name
    /// and what the build did.
    ///
    /// # Errors
    /// As [`index::create_index`].
    pub async fn create_index(&self, opts: &CreateIndexOptions) -> Result<(String, IndexRefresh)> {
        index::create_index(&self.storage, opts).await
    }

    /// Sets the order writers give the rows of each file (`column [ASC|DESC] [NULLS
    /// FIRST|LAST]` items; none when empty); returns the manifest version.
    ///
    /// # Errors
    /// As [`sort_order::set_sort_order`].
    pub async fn set_sort_order(&self, items: &[String]) -> Result<u64> {
        sort_order::set_sort_order(&self.storage, items).await
    }

    /// Removes index `name`: its declaration and its indexes on every partition.
    ///
    /// # Errors
    /// As [`index::drop_index`].
    pub async fn drop_index(&self, name: &str, max_attempts: u32) -> Result<IndexRefresh> {
        index::drop_index(&self.storage, name, max_attempts).await
    }

    /// How much of each declared index is current at `snap`.
    ///
    /// # Errors
    /// As [`index::coverage::index_coverage`].
    pub async fn index_coverage(snap: &Snapshot) -> Result<Vec<IndexCoverage>> {
        index::coverage::index_coverage(snap).await
    }

    /// Removes old manifest versions and the leaf versions and files only they read.
    ///
    /// # Errors
    /// As [`expire::expire`].
    pub async fn expire(&self, opts: &ExpireOptions) -> Result<ExpireSummary> {
        expire::expire(&self.storage, opts).await
    }

    /// Names manifest version `version` (the latest when `None`) `name`; returns the version.
    ///
    /// # Errors
    /// As [`tags::create_tag`].
    pub async fn create_tag(&self, name: &str, version: Option<u64>) -> Result<u64> {
        tags::create_tag(&self.storage, name, version).await
    }

    /// Removes the tag `name`.
    ///
    /// # Errors
    /// As [`tags::delete_tag`].
    pub async fn delete_tag(&self, name: &str) -> Result<()> {
        tags::delete_tag(&self.storage, name).await
    }

    /// Every tag and its manifest version, by version.
    ///
    /// # Errors
    /// As [`tags::list_tags`].
    pub async fn tags(&self) -> Result<Vec<(String, u64)>> {
        tags::list_tags(&self.storage).await
    }

    /// The manifest version the tag `name` names.
    ///
    /// # Errors
    /// As [`tags::tag_version`].
    pub async fn tag_version(&self, name: &str) -> Result<u64> {
        tags::tag_version(&self.storage, name).await
    }

    /// The manifest versions up to `snap`'s, newest first (at most `limit`), each with what
    /// its commit did.
    ///
    /// # Errors
    /// As [`history::history`].
    pub async fn history(snap: &Snapshot, limit: Option<usize>) -> Result<RecordBatch> {
        history::history(snap, limit).await
    }

    /// The storage-partitioned join plan of two snapshots (of any two namespaces) on the
    /// column pairs `on`: the groups of leaves that join only each other.
    ///
    /// # Errors
    /// As [`plan_join`].
    pub fn plan_join(
        left: &Snapshot,
        right: &Snapshot,
        on: &[(String, String)],
    ) -> Result<JoinPlan> {
        plan_join(&JoinSide::of(left)?, &JoinSide::of(right)?, on)
    }

    /// A storage-partitioned join of two snapshots, planned and ready to run.
    ///
    /// # Errors
    /// As [`PreparedJoin::new`].
    pub async fn join(
        left: Arc<Snapshot>,
        right: Arc<Snapshot>,
        request: JoinRequest,
    ) -> Result<PreparedJoin> {
        PreparedJoin::new(left, right, request).await
    }
}
