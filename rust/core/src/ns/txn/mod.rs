//! Transactions: how staged changes become visible, atomically.
//!
//! A [`WriteTransaction`] commits the [`StagedPart`]s of one write (made by a
//! [`crate::ns::write::PartitionWriter`] in this process, or by the tasks of a distributed write
//! and sent as messages): it checks the staged files still exist (when a cleanup started
//! since the staging did: `cleanup_marks`), rewrites partitions written
//! under an older schema, commits every leaf table (detached in strong mode), then commits the
//! manifest once through [`manifest_commit::commit_manifest`], which deletes (and later
//! compaction) use as well.
//!
//! - [`leaf`]: per-leaf checks and commits (a delete's and a compaction's leaf transactions
//!   too: [`leaf::commit_leaf_transaction`]); [`compaction`]: one leaf's compaction and its
//!   `Rewrite` commit ([`compaction_tiers`]: the fragments the compaction after a write
//!   leaves alone); [`leaf_index`]: one leaf's declared scalar indexes brought up to
//!   date and their `CreateIndex` commit.
//! - [`conflict`]: the conflict rules: the manifest change of a write, a delete and a
//!   compaction, planned again against concurrent commits.
//! - [`manifest_commit`]: the retried atomic manifest commit every change goes through;
//!   [`manifest_compact`]: the compaction of the manifest's fragments after a commit.
//! - [`create_namespace`]: creating a namespace (the manifest and its root properties);
//!   [`repair`]: adding back manifest columns another tool dropped; [`prepare_spec`]: the
//!   manifest columns and row of a new spec version.
//! - [`new_leaf`]: the commit handler of new leaf tables (no existence listing, no hint).
//! - [`row_change`]: a row-level change (merge, update): per leaf one Lance `Update` of
//!   deletion files and new fragments, then the manifest commit.
//! - [`root_commit`]: the retried commit of root properties, on which the operations
//!   `update_schema` and `evolve` ([`crate::ns::ops`]) plan schema changes and spec
//!   evolutions.
//! - [`record_stats`]: recording the column statistics of partitions whose read version has
//!   none (`optimize()`).
//! - [`trim_versions`]: removing the `table_version` rows partitions keep beyond the
//!   retention limit (`optimize()`).
//! - [`cleanup_marks`]: when deleting cleanups ran, so commits check their staged files only
//!   when one could have removed them.
//! - [`retry`]: what every retried commit shares (outcome, lost races, backoff).
//! - [`write_lock`]: the lock of a weak-mode commit of one distributed write.
//! - [`interrupt`]: the commit point, before which an operation can be interrupted.

pub(crate) mod cleanup_marks;
pub(crate) mod compaction;
pub(crate) mod compaction_tiers;
pub(crate) mod conflict;
pub(crate) mod create_namespace;
pub(crate) mod hooks;
pub mod interrupt;
pub(crate) mod leaf;
pub(crate) mod leaf_index;
pub(crate) mod manifest_commit;
pub(crate) mod manifest_compact;
pub(crate) mod new_leaf;
pub(crate) mod prepare_spec;
pub(crate) mod record_stats;
pub(crate) mod repair;
pub(crate) mod retry;
pub(crate) mod root_commit;
pub(crate) mod row_change;
pub(crate) mod trim_versions;
pub(crate) mod write_lock;

use std::sync::Arc;

use futures::stream::{self, StreamExt};

use crate::error::{Error, Result};
use crate::ns::infra::storage::Storage;
use crate::ns::infra::touched::TouchedPartition;
use crate::ns::leaf_io::{data_files, fresh_lance_schema, leaf_schema, Schemas};
use crate::ns::manifest::{describe_key, leaf_max_fragments, too_fragmented, Snapshot};
use crate::ns::write::options::{compaction_target, Mode, WriteOptions, WriteSummary};
use crate::ns::write::staged::StagedPart;
use crate::spec::PartitionSpec;
use conflict::write::WriteUpdate;
use leaf::{commit_leaf, rewrite_old_rows, verify_staged_files, weak_committed, Pending, Written};
use write_lock::WriteLock;

/// Commits the staged parts of one write; see the module docs.
pub struct WriteTransaction {
    storage: Storage,
    /// The manifest version the parts were written against (S0).
    base: Arc<Snapshot>,
    spec: PartitionSpec,
    mode: Mode,
    strong: bool,
    write_id: Option<String>,
    concurrency: usize,
    max_attempts: u32,
    /// When the parts' staging started (the writer's clock, ms since the epoch); unknown:
    /// the staged files are always checked.
    staged_since_ms: Option<i64>,
}

impl WriteTransaction {
    /// A transaction over `base` (the snapshot the parts were written against), committing
    /// with `opts.mode` and `strong`, recording `opts.write_id` when given.
    pub fn new(storage: &Storage, base: Arc<Snapshot>, strong: bool, opts: &WriteOptions) -> Self {
        Self {
            storage: storage.clone(),
            spec: base.current_spec().clone(),
            base,
            mode: opts.mode,
            strong,
            write_id: opts.write_id.clone(),
            concurrency: opts.concurrency.max(1),
            max_attempts: opts.max_attempts,
            staged_since_ms: None,
        }
    }

    /// The parts were staged no earlier than `ms` (the writer's clock, ms since the epoch):
    /// their files are checked only if a cleanup started since (see `cleanup_marks`).
    pub fn staged_since(mut self, ms: i64) -> Self {
        self.staged_since_ms = Some(ms);
        self
    }

    /// Commits `parts`: every leaf, then the manifest once.
    ///
    /// # Errors
    /// `CommitConflict` when a concurrent commit makes this one impossible (nothing became
    /// visible), `PartialCommit` when a weak-mode write failed after some leaf commits; `Lance`
    /// for I/O errors.
    pub async fn commit(&self, parts: Vec<StagedPart>) -> Result<WriteSummary> {
        // Weak mode finds an earlier commit of the same write in the leaves: that check and
        // the commits after it run under the write's lock (strong mode's check is part of the
        // atomic manifest commit).
        let lock = match (&self.write_id, self.strong) {
            (Some(id), false) => Some(WriteLock::acquire(&self.storage, id).await?),
            _ => None,
        };
        let out = self.commit_parts(parts).await;
        if let Some(lock) = lock {
            lock.release().await;
        }
        out
    }

    async fn commit_parts(&self, mut parts: Vec<StagedPart>) -> Result<WriteSummary> {
        if let Some(done) = self.already_committed(&mut parts).await? {
            return Ok(done);
        }
        if self.cleanup_may_have_run().await? {
            verify_staged_files(&self.storage, &parts).await?;
        }
        let parts = self.rewrite_old_schemas(parts).await?;
        let pending = self.commit_leaves(parts).await?;
        hooks::pause("before_manifest_commit");
        let visible: Vec<Pending> = if self.strong {
            Vec::new()
        } else {
            pending.clone()
        };
        if !visible.is_empty() && self.cleanup_may_have_run().await.unwrap_or(true) {
            // Weak leaf commits are visible already: a cleanup that listed their files just
            // before they landed may be removing them (one that started later sees them).
            // Once no such cleanup runs, check them.
            if let Err(e) =
                manifest_commit::wait_for_cleanups(&self.storage, self.staged_since_ms).await
            {
                return Err(self.partial_commit(&visible, e));
            }
            if let Some(gone) = self.withdraw_if_files_gone(&visible).await {
                return Err(gone);
            }
        }
        let e = match self.commit_manifest(pending).await {
            Ok(summary) => return Ok(summary),
            Err(e) => e,
        };
        if !visible.is_empty() && self.cleanup_may_have_run().await.unwrap_or(true) {
            if let Some(gone) = self.withdraw_if_files_gone(&visible).await {
                return Err(gone);
            }
        }
        Err(self.partial_commit(&visible, e))
    }

    /// When a cleanup removed data files that weak-mode leaf commits already made visible,
    /// takes those commits back and returns why (nothing of the write stays visible); None
    /// when every file is there. Callers check first that a cleanup may have run.
    async fn withdraw_if_files_gone(&self, visible: &[Pending]) -> Option<Error> {
        let written: Vec<Written> = visible
            .iter()
            .map(|p| Written::new(&p.location, p.committed.version, &p.fragments))
            .collect();
        let gone = leaf::verify_written(&self.storage, &written).await.err()?;
        Some(match leaf::withdraw(&self.storage, visible).await {
            Ok(()) => gone,
            Err(e) => self.partial_commit(visible, e),
        })
    }

    /// Whether a cleanup could have removed staged files since the staging started.
    async fn cleanup_may_have_run(&self) -> Result<bool> {
        manifest_commit::cleanup_may_have_run(&self.storage, self.staged_since_ms).await
    }

    /// A repeated commit of a distributed write: strong mode finds its write id in the
    /// manifest; weak mode drops the parts already in their leaves.
    async fn already_committed(&self, parts: &mut Vec<StagedPart>) -> Result<Option<WriteSummary>> {
        let Some(id) = &self.write_id else {
            return Ok(None);
        };
        let latest = Snapshot::load(&self.storage, None).await?;
        let done = WriteSummary {
            manifest_version: latest.version,
            already_committed: true,
            ..Default::default()
        };
        if self.strong {
            return Ok(latest.has_write(id)?.then_some(done));
        }
        let before = parts.len();
        let committed = weak_committed(&self.storage, &latest, parts).await?;
        parts.retain(|p| !committed.contains(&p.key));
        Ok((before > 0 && parts.is_empty()).then_some(done))
    }

    /// Appends to leaves written under an older schema rewrite the old rows once.
    async fn rewrite_old_schemas(&self, parts: Vec<StagedPart>) -> Result<Vec<StagedPart>> {
        if self.mode.replaces() || !parts.iter().any(|p| p.rewrite) {
            return Ok(parts);
        }
        let ns = self.base.schema();
        let schemas = Schemas {
            leaf: leaf_schema(&ns),
            ns,
        };
        let mut out = Vec::with_capacity(parts.len());
        for p in parts {
            out.push(if p.rewrite {
                rewrite_old_rows(&self.storage, p, &schemas).await?
            } else {
                p
            });
        }
        Ok(out)
    }

    /// Commits every leaf (concurrently); in weak mode a failure after some leaf commits is a
    /// `PartialCommit`.
    async fn commit_leaves(&self, parts: Vec<StagedPart>) -> Result<Vec<Pending>> {
        let fresh = fresh_lance_schema(&leaf_schema(&self.base.schema()))?;
        let (storage, fresh) = (&self.storage, &fresh);
        let (replaces, strong) = (self.mode.replaces(), self.strong);
        let results: Vec<Result<Pending>> = stream::iter(
            parts
                .into_iter()
                .map(|p| commit_leaf(storage, p, replaces, strong, fresh)),
        )
        .buffer_unordered(self.concurrency)
        .collect()
        .await;
        let (pending, failed) = leaf::settled(results);
        match failed {
            Some(e) => Err(self.partial_commit(&pending, e)),
            None => Ok(pending),
        }
    }

    async fn commit_manifest(&self, pending: Vec<Pending>) -> Result<WriteSummary> {
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
        let mut update = WriteUpdate {
            storage: &self.storage,
            spec_id: self.spec.id,
            field_ids: self.field_ids(),
            pending,
            strong: self.strong,
            mode: self.mode,
            write_id: self.write_id.clone(),
            already_committed: false,
            dropped: 0,
            staged_since_ms: self.staged_since_ms,
            rebased: 0,
            adopted: 0,
        };
        let committed =
            manifest_commit::commit_manifest(&self.storage, self.max_attempts, &mut update).await?;
        if update.already_committed {
            return Ok(WriteSummary {
                manifest_version: committed.version,
                attempts: committed.attempts,
                already_committed: true,
                ..Default::default()
            });
        }
        summary.manifest_version = committed.version;
        summary.attempts = committed.attempts;
        summary.dropped = update.dropped;
        summary.rebased = update.rebased;
        summary.adopted = update.adopted;
        summary.touched = update
            .pending
            .iter()
            .map(|p| {
                let oid = p.object_id.as_deref().unwrap_or_default();
                TouchedPartition::new(oid, &p.location, &self.spec, &p.key)
            })
            .collect();
        let limit = leaf_max_fragments(&self.base.root_props.props)?;
        let target = compaction_target(&self.base.root_props.props)? as u64;
        summary.fragmented = update
            .pending
            .iter()
            .filter(|p| {
                let t = &p.committed.totals;
                too_fragmented(t.rows, t.fragments, limit, target)
            })
            .filter_map(|p| p.object_id.clone())
            .collect();
        Ok(summary)
    }

    fn field_ids(&self) -> Vec<String> {
        self.spec
            .fields
            .iter()
            .map(|f| f.field_id.clone())
            .collect()
    }

    /// The error of a write that failed after its leaf commits began. In strong mode leaf
    /// commits are invisible until the manifest commit, so the error stands as it is. In weak
    /// mode every existing partition whose leaf was committed is already visible: say so, and
    /// which.
    fn partial_commit(&self, committed: &[Pending], e: Error) -> Error {
        let visible: Vec<&Pending> = committed.iter().filter(|p| !p.created).collect();
        if self.strong || visible.is_empty() {
            return e;
        }
        let field_ids = self.field_ids();
        let shown: Vec<String> = visible
            .iter()
            .take(5)
            .map(|p| describe_key(&field_ids, &p.key))
            .collect();
        let more = visible.len().saturating_sub(shown.len());
        let more = if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        };
        Error::PartialCommit(format!(
            "weak-mode write failed after committing {} existing partition(s), which are now \
             visible: {}{more}; partitions it would have created are not visible. Cause: {e}",
            visible.len(),
            shown.join("; "),
        ))
    }
}
