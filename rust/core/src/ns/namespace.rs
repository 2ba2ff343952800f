//! [`Namespace`]: one partitioned namespace, the entry point of every operation on it.
//!
//! The top layer of the namespace: it combines the writer and the transaction (`write`,
//! `commit_staged`), and delegates the rest. Every method is async; the caller owns the runtime (the Python binding drives them with its
//! own fork-aware runtime). The handle keeps the latest snapshot it loaded and reuses it while
//! the manifest has not moved.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::arrow::array::RecordBatch;
use crate::arrow::datatypes::Schema;
use crate::error::{Error, Result};
use crate::ns::cleanup::{cleanup, CleanupSummary};
use crate::ns::cleanup_marks;
use crate::ns::delete::{delete, DeleteSummary};
use crate::ns::expire::{expire, ExpireOptions, ExpireSummary};
use crate::ns::manifest::Snapshot;
use crate::ns::optimize::{optimize, OptimizeOptions, OptimizeSummary};
use crate::ns::storage::Storage;
use crate::ns::txn::{hooks, schema_update, spec_update, WriteTransaction};
use crate::ns::write::distributed::{self, WritePlan};
use crate::ns::write::{
    stage_all, IdPlan, PartitionWriter, StagedMessage, WriteOptions, WriteSummary,
};
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

    /// Writes `input`: a [`PartitionWriter`] stages it in this process, a
    /// [`WriteTransaction`] commits it.
    ///
    /// # Errors
    /// `SchemaMismatch` for input that does not fit the schema; `CommitConflict` when a
    /// concurrent commit makes this one impossible; `Lance` for I/O errors. On error nothing
    /// becomes visible to readers (strong mode); written files are left for `cleanup`.
    pub async fn write(
        &self,
        input: impl Iterator<Item = Result<RecordBatch>>,
        opts: &WriteOptions,
    ) -> Result<WriteSummary> {
        let staged_since = cleanup_marks::now_ms()?;
        let snap = Arc::new(Snapshot::load(&self.storage, None).await?);
        snap.check_writable()?;
        let strong = snap.strong_mode(opts.strong)?;
        let ids = IdPlan::Random(HashMap::new());
        let mut writer = PartitionWriter::new(&self.storage, Arc::clone(&snap), opts, strong, ids)?;
        if let Err(e) = stage_all(&mut writer, input).await {
            writer.abort().await;
            return Err(e);
        }
        let peak = writer.peak_held_bytes();
        let parts = writer.close().await?;
        let rows = parts.iter().map(|p| p.rows).sum();
        hooks::pause("after_fragments");
        let tx =
            WriteTransaction::new(&self.storage, snap, strong, opts).staged_since(staged_since);
        let mut summary = tx.commit(parts).await?;
        summary.rows = rows;
        summary.peak_buffered_bytes = peak;
        Ok(summary)
    }

    /// Plans a distributed write on the latest manifest version.
    ///
    /// # Errors
    /// As [`distributed::plan`].
    pub async fn plan_distributed(&self, strong: Option<bool>) -> Result<WritePlan> {
        distributed::plan(&self.storage, strong).await
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

    /// Commits the staged outputs of one distributed write: every leaf table once, then the
    /// manifest once. The write mode and commit mode come from the messages; `opts` gives the
    /// concurrency and retry limits. Idempotent per write.
    ///
    /// # Errors
    /// As [`distributed::merge_messages`] and [`WriteTransaction::commit`].
    pub async fn commit_staged(
        &self,
        messages: &[StagedMessage],
        opts: &WriteOptions,
    ) -> Result<WriteSummary> {
        let Some(first) = messages.first() else {
            return Err(Error::InvalidArgument(
                "no staged messages to commit".into(),
            ));
        };
        let snap = match distributed::base_snapshot(&self.storage, first.manifest_version).await {
            Ok(s) => Arc::new(s),
            Err(e) => return self.committed_before(messages, e).await,
        };
        snap.check_writable()?;
        let (parts, rows, id) = distributed::merge_messages(&snap, messages)?;
        let staged_since = messages.iter().map(|m| m.staged_since_ms).min();
        let opts = WriteOptions {
            mode: id.mode,
            strong: Some(id.strong),
            write_id: Some(id.nonce.clone()),
            ..opts.clone()
        };
        let mut tx = WriteTransaction::new(&self.storage, snap, id.strong, &opts);
        if let Some(ms) = staged_since.filter(|ms| *ms > 0) {
            tx = tx.staged_since(ms);
        }
        let mut summary = tx.commit(parts).await?;
        if !summary.already_committed {
            summary.rows = rows;
        }
        Ok(summary)
    }

    /// A distributed write whose base manifest version is gone (`error`): when a strong-mode
    /// commit of the same messages already landed, this repeated commit is a no-op, as it is
    /// while the base version exists; otherwise `error`.
    async fn committed_before(
        &self,
        messages: &[StagedMessage],
        error: Error,
    ) -> Result<WriteSummary> {
        let Some(first) = messages.first() else {
            return Err(error);
        };
        let latest = Snapshot::load(&self.storage, None).await?;
        if first.strong && latest.has_write(&first.nonce)? {
            return Ok(WriteSummary {
                manifest_version: latest.version,
                already_committed: true,
                ..Default::default()
            });
        }
        Err(error)
    }

    /// Deletes the rows matching `filter`.
    ///
    /// # Errors
    /// As [`delete`].
    pub async fn delete(
        &self,
        filter: &str,
        strong: Option<bool>,
        max_attempts: u32,
    ) -> Result<DeleteSummary> {
        delete(&self.storage, filter, strong, max_attempts).await
    }

    /// Adds a spec version and makes it current; returns its id.
    ///
    /// # Errors
    /// `Spec` for an invalid spec (validated against the latest schema and spec versions);
    /// `CommitConflict` when concurrent changes kept landing first.
    pub async fn evolve(&self, spec: &PartitionSpec) -> Result<i32> {
        spec_update::evolve(&self.storage, spec).await
    }

    /// Changes the schema from `base` (the schema the caller read) to `new` (fields matched by
    /// field id), applied to the latest schema: columns other changes added or renamed since
    /// `base` are kept. Returns the schema as stored.
    ///
    /// # Errors
    /// `SchemaMismatch` for a refused change; `CommitConflict` when a concurrent change
    /// touched the same columns.
    pub async fn update_schema(&self, base: &Schema, new: &Schema) -> Result<Schema> {
        schema_update::update_schema(&self.storage, base, new).await
    }

    /// Restores manifest columns other tools dropped; returns their names.
    ///
    /// # Errors
    /// As [`crate::ns::txn::repair::repair`].
    pub async fn repair(&self) -> Result<Vec<String>> {
        crate::ns::txn::repair::repair(&self.storage).await
    }

    /// Removes what failed writes left behind (files older than `older_than`).
    ///
    /// # Errors
    /// As [`cleanup`].
    pub async fn cleanup(
        &self,
        older_than: Duration,
        dry_run: bool,
        retention_check: bool,
    ) -> Result<CleanupSummary> {
        cleanup(&self.storage, older_than, dry_run, retention_check).await
    }

    /// Compacts the small files of the partitions `opts.filter` selects, in one commit.
    ///
    /// # Errors
    /// As [`optimize`].
    pub async fn optimize(&self, opts: &OptimizeOptions) -> Result<OptimizeSummary> {
        optimize(&self.storage, opts).await
    }

    /// Removes old manifest versions and the leaf versions and files only they read.
    ///
    /// # Errors
    /// As [`expire`].
    pub async fn expire(&self, opts: &ExpireOptions) -> Result<ExpireSummary> {
        expire(&self.storage, opts).await
    }
}
