//! Compaction of one leaf table: Lance's compaction planner picks the small fragments, each
//! task rewrites a run of them into new files, and one `Rewrite` commit (detached in strong
//! mode) replaces them; in a namespace with a sort order, each task's rows are sorted and
//! written by us instead of copied by Lance. A leaf whose indexes are all declared by the namespace is compacted
//! too, and its indexes are then built again over the new files (a `Rewrite` moves the rows
//! they point at), on top of the `Rewrite` version; a leaf with other indexes is left alone.
//! Nothing here touches the manifest.

use std::collections::HashMap;
use std::sync::Arc;

use futures::TryStreamExt;
use lance::dataset::optimize::{plan_compaction, CompactionOptions};
use lance::dataset::transaction::{Operation, RewriteGroup, Transaction};
use lance::dataset::{Dataset, InsertBuilder, WriteMode};
use lance::index::DatasetIndexExt;
use lance::table::format::{Fragment, IndexMetadata};

use crate::arrow::array::RecordBatch;
use crate::arrow::compute::concat_batches;
use crate::arrow::datatypes::Schema;
use crate::error::Result;
use crate::field_ids::field_id;
use crate::ns::infra::storage::Storage;
use crate::ns::leaf_io::read_rules::leaf_columns;
use crate::ns::leaf_io::{op_fragments, write_params};
use crate::ns::manifest::{LeafVersion, SortOrder};
use crate::ns::txn::compaction_tiers::{held_back, live_rows};
use crate::ns::txn::leaf_index::{IndexOutcome, LeafIndexing};
use crate::ns::txn::retry::is_retryable;

/// Leaf commits tried again in weak mode when a concurrent commit conflicts (a row delete of a
/// fragment being rewritten).
const WEAK_ATTEMPTS: u32 = 5;

/// What compacting one leaf found or did.
#[derive(Debug, Clone)]
pub(crate) enum LeafOutcome {
    /// Nothing to compact (fewer than `min_files` small files).
    Unchanged,
    /// The leaf has indices the namespace does not declare (so cannot build again), whose
    /// row addresses a rewrite would move: left alone.
    Indexed,
    /// The compaction a dry run would do.
    Planned(Rewrite),
    /// Committed (detached in strong mode) on top of the rewrite's `base`.
    Committed {
        rewrite: Rewrite,
        committed: LeafVersion,
    },
}

/// The files one leaf's compaction replaces and writes.
#[derive(Debug, Clone)]
pub(crate) struct Rewrite {
    /// The version compacted.
    pub(crate) base: u64,
    /// Old and new fragments (new ones without ids until committed).
    pub(crate) groups: Vec<RewriteGroup>,
    /// Data files replaced.
    pub(crate) files_before: u64,
    /// Data files written (an estimate for a dry run: one per task and target).
    pub(crate) files_after: u64,
    /// Rows rewritten.
    pub(crate) rows: u64,
    /// Bytes written.
    pub(crate) bytes: u64,
    /// Files rewritten because their rows were out of the sort order.
    pub(crate) resorted: u64,
}

/// The settings of one `optimize()`.
#[derive(Debug, Clone)]
pub(crate) struct LeafCompaction {
    pub(crate) options: CompactionOptions,
    pub(crate) min_files: usize,
    pub(crate) strong: bool,
    pub(crate) dry_run: bool,
    /// The namespace's declared indexes, built again after compacting a leaf carrying them.
    pub(crate) indexing: LeafIndexing,
    /// The namespace's sort order: each compaction task's rows are written in it (`None`:
    /// Lance's own rewrite, which keeps the rows' order).
    pub(crate) order: Option<Arc<SortOrder>>,
    /// Whether files outside the compaction tasks whose rows are out of the sort order are
    /// rewritten sorted too (`optimize()`; not the compaction that follows a write, whose
    /// files the writer sorted).
    pub(crate) restore_order: bool,
    /// Whether the fragments before the newest run of similar sizes are left out (the
    /// compaction after a write; see [`crate::ns::txn::compaction_tiers`]), rather than
    /// every small fragment compacted (`optimize()`).
    pub(crate) tiered: bool,
    pub(crate) storage: Storage,
}

impl LeafCompaction {
    /// Compacts the leaf at `location` as of `version` (the latest for `None`).
    ///
    /// # Errors
    /// `Lance` for I/O errors (nothing visible is changed then).
    pub(crate) async fn run(
        &self,
        storage: &Storage,
        location: &str,
        version: Option<u64>,
    ) -> Result<LeafOutcome> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            let ds = storage.open(location, version).await?;
            match self.compact(ds).await {
                Err(crate::error::Error::Lance(e))
                    if !self.strong && is_retryable(&e) && attempt < WEAK_ATTEMPTS =>
                {
                    continue
                }
                other => return other,
            }
        }
    }

    /// Plans, rewrites and commits `ds`.
    pub(crate) async fn compact(&self, ds: Arc<Dataset>) -> Result<LeafOutcome> {
        let indices = ds.load_indices().await?;
        let declared = |name: &String| self.indexing.defs.iter().any(|d| &d.name == name);
        if !indices.iter().all(|m| declared(&m.name)) {
            return Ok(LeafOutcome::Indexed);
        }
        let base = ds.version().version;
        let indexed = !indices.is_empty();
        let ds = self.unsplit(ds, &indices).await?;
        let plan = self.plan(&ds).await?;
        let mut tasks: Vec<_> = plan.compaction_tasks().collect();
        let sources: usize = tasks.iter().map(|t| t.task.fragments.len()).sum();
        if sources < self.min_files {
            tasks.clear();
        }
        let unsorted = self.out_of_order(&ds, &tasks).await?;
        if tasks.is_empty() && unsorted.is_empty() {
            return Ok(LeafOutcome::Unchanged);
        }
        if self.dry_run {
            let target = self.options.target_rows_per_fragment.max(1) as u64;
            let groups: Vec<RewriteGroup> = tasks
                .iter()
                .map(|t| RewriteGroup {
                    old_fragments: t.task.fragments.clone(),
                    new_fragments: Vec::new(),
                })
                .collect();
            let groups = groups
                .into_iter()
                .chain(unsorted.iter().map(|f| RewriteGroup {
                    old_fragments: vec![f.clone()],
                    new_fragments: Vec::new(),
                }));
            let mut rewrite = Rewrite::of(base, groups.collect());
            let compacted = tasks.iter().map(|t| live_rows(&t.task.fragments));
            rewrite.files_after = compacted.clone().map(|n| n.div_ceil(target).max(1)).sum();
            rewrite.resorted = unsorted.len() as u64;
            rewrite.files_after += rewrite.resorted;
            rewrite.rows = compacted.sum::<u64>() + live_rows(&unsorted);
            return Ok(LeafOutcome::Planned(rewrite));
        }
        let mut groups = Vec::with_capacity(tasks.len() + unsorted.len());
        for task in &tasks {
            groups.push(match &self.order {
                Some(order) => {
                    let target = self.options.target_rows_per_fragment;
                    self.sorted_task(&ds, &task.task.fragments, order, target)
                        .await?
                }
                None => {
                    let done = task.execute(&ds).await?;
                    RewriteGroup {
                        old_fragments: done.original_fragments,
                        new_fragments: done.new_fragments,
                    }
                }
            });
        }
        if let Some(order) = &self.order {
            for f in &unsorted {
                // One file in, one file out (however it compares with the target).
                let rows =
                    usize::try_from(live_rows(std::slice::from_ref(f))).unwrap_or(usize::MAX);
                let one = std::slice::from_ref(f);
                groups.push(self.sorted_task(&ds, one, order, rows).await?);
            }
        }
        let mut rewrite = Rewrite::of(base, groups);
        rewrite.resorted = unsorted.len() as u64;
        rewrite.bytes = written_bytes(&ds, &rewrite.groups).await?;
        let committed = self.commit(ds, &rewrite.groups, indexed).await?;
        Ok(LeafOutcome::Committed { rewrite, committed })
    }

    /// Lance's compaction plan for `ds`, without the fragments a tiered compaction holds
    /// back ([`held_back`]).
    async fn plan(&self, ds: &Dataset) -> Result<lance::dataset::optimize::CompactionPlan> {
        if !self.tiered {
            return Ok(plan_compaction(ds, &self.options).await?);
        }
        let mut options = self.options.clone();
        let target = options.target_rows_per_fragment as u64;
        options.excluded_fragment_ids = held_back(ds.fragments(), target);
        Ok(plan_compaction(ds, &options).await?)
    }

    /// `ds`, or, when one of its indexes (`indices`, all declared) is split into several
    /// segments and at least `min_files` of its files are small enough to compact, a version
    /// of it without those indexes (committed detached in strong mode; never in a dry run):
    /// Lance's planner never puts fragments of different segments into one rewrite, and an
    /// extended index has a segment per append. The indexes are built again after the
    /// rewrite, as for any indexed leaf ([`Self::commit`]).
    ///
    /// # Errors
    /// `Lance` for I/O errors.
    async fn unsplit(&self, ds: Arc<Dataset>, indices: &[IndexMetadata]) -> Result<Arc<Dataset>> {
        if self.dry_run || !split(indices) {
            return Ok(ds);
        }
        let target = self.options.target_rows_per_fragment as u64;
        let small = ds
            .fragments()
            .iter()
            .filter(|f| live_rows(std::slice::from_ref(f)) < target)
            .count();
        if small < self.min_files {
            return Ok(ds);
        }
        let op = Operation::CreateIndex {
            new_indices: Vec::new(),
            removed_indices: indices.to_vec(),
        };
        let txn = Transaction::new(ds.version().version, op, None);
        let committed =
            crate::ns::txn::leaf::commit_leaf_transaction(Arc::clone(&ds), txn, self.strong, |b| b)
                .await?;
        Ok(Arc::new(ds.checkout_version(committed.version).await?))
    }

    /// The fragments of `ds` that no compaction task rewrites and whose rows are not in the
    /// namespace's sort order (none without an order, or when `restore_order` is off): read
    /// column by column, only the sort columns, one fragment at a time.
    async fn out_of_order(
        &self,
        ds: &Arc<Dataset>,
        tasks: &[lance::dataset::optimize::CompactionTask],
    ) -> Result<Vec<Fragment>> {
        let Some(order) = self.order.as_ref().filter(|_| self.restore_order) else {
            return Ok(Vec::new());
        };
        let names = self.leaf_names(ds);
        let name_of = |id| names.get(&id).cloned();
        let columns: Vec<String> = order
            .keys
            .iter()
            .filter_map(|k| name_of(k.field_id))
            .collect();
        let taken: std::collections::HashSet<u64> = tasks
            .iter()
            .flat_map(|t| t.task.fragments.iter().map(|f| f.id))
            .collect();
        let mut unsorted = Vec::new();
        for f in ds.fragments().iter().filter(|f| !taken.contains(&f.id)) {
            if columns.is_empty() || f.physical_rows.unwrap_or(0) < 2 {
                continue;
            }
            let mut scan = ds.scan();
            scan.with_fragments(vec![f.clone()]).project(&columns)?;
            let mut stream = scan.try_into_stream().await?;
            let mut check = order.check(name_of);
            let mut in_order = true;
            while let Some(batch) = stream.try_next().await? {
                if !check.in_order(&batch)? {
                    in_order = false;
                    break;
                }
            }
            if !in_order || !check.finish()? {
                unsorted.push(f.clone());
            }
        }
        Ok(unsorted)
    }

    /// Namespace field id -> the name of its column in `ds` (a leaf written under an older
    /// schema names columns as it did then), for finding the sort columns.
    fn leaf_names(&self, ds: &Dataset) -> HashMap<i32, String> {
        let names = leaf_columns(&Schema::from(ds.schema()), &self.indexing.schema);
        self.indexing
            .schema
            .fields()
            .iter()
            .filter_map(|f| Some((field_id(f)?, names.get(f.name())?.clone())))
            .collect()
    }

    /// The rows of `fragments` (without deleted ones) in the sort order `order`, written as
    /// new files (uncommitted) of up to `max_rows` rows each.
    async fn sorted_task(
        &self,
        ds: &Arc<Dataset>,
        fragments: &[Fragment],
        order: &Arc<SortOrder>,
        max_rows: usize,
    ) -> Result<RewriteGroup> {
        let mut scan = ds.scan();
        scan.with_fragments(fragments.to_vec());
        let batches: Vec<RecordBatch> = scan.try_into_stream().await?.try_collect().await?;
        let leaf = Arc::new(Schema::from(ds.schema()));
        let names = self.leaf_names(ds);
        let order = Arc::clone(order);
        let sorted = tokio::task::spawn_blocking(move || {
            let all = concat_batches(&leaf, &batches)?;
            order.sort_files(&all, |id| names.get(&id).cloned(), max_rows.max(1))
        })
        .await
        .map_err(|e| crate::error::Error::Internal(format!("sorting task: {e}")))??;
        let mut params = write_params(&self.storage, WriteMode::Append)?;
        params.max_rows_per_file = max_rows.max(1);
        let txn = InsertBuilder::new(Arc::clone(ds))
            .with_params(&params)
            .execute_uncommitted(sorted)
            .await?;
        Ok(RewriteGroup {
            old_fragments: fragments.to_vec(),
            new_fragments: op_fragments(txn.operation)?.0,
        })
    }

    /// Commits `groups` on top of `ds` (see [`commit_rewrite`]), then builds the leaf's
    /// declared indexes again on top of that when it had any (`indexed`); returns the last
    /// version.
    ///
    /// # Errors
    /// `Lance` for I/O errors or an index Lance cannot build.
    pub(crate) async fn commit(
        &self,
        ds: Arc<Dataset>,
        groups: &[RewriteGroup],
        indexed: bool,
    ) -> Result<LeafVersion> {
        let committed = commit_rewrite(Arc::clone(&ds), groups, self.strong).await?;
        if !indexed {
            return Ok(committed);
        }
        let rewritten = Arc::new(ds.checkout_version(committed.version).await?);
        match self.indexing.refresh(rewritten).await? {
            IndexOutcome::Built { committed, .. } => Ok(committed),
            _ => Ok(committed),
        }
    }
}

impl Rewrite {
    fn of(base: u64, groups: Vec<RewriteGroup>) -> Self {
        let old = groups.iter().flat_map(|g| &g.old_fragments);
        let new = groups.iter().flat_map(|g| &g.new_fragments);
        Self {
            base,
            files_before: old.map(|f| f.files.len() as u64).sum(),
            files_after: new.clone().map(|f| f.files.len() as u64).sum(),
            rows: new.map(|f| f.physical_rows.unwrap_or(0) as u64).sum(),
            bytes: 0,
            resorted: 0,
            groups,
        }
    }

    /// Whether every fragment this rewrite replaces is still in `ds`, unchanged (only
    /// appends happened since): then the rewrite applies on top of `ds` as it is.
    pub(crate) fn applies_to(&self, ds: &Dataset) -> bool {
        let current: HashMap<u64, &Fragment> = ds.fragments().iter().map(|f| (f.id, f)).collect();
        self.groups
            .iter()
            .flat_map(|g| &g.old_fragments)
            .all(|f| current.get(&f.id) == Some(&f))
    }
}

/// Bytes of the files the rewrite wrote: their recorded sizes, or the store's (a binary copy
/// does not record them), which are then recorded, so that `stats()` never asks again.
async fn written_bytes(ds: &Dataset, groups: &[RewriteGroup]) -> Result<u64> {
    let data = ds.data_dir();
    let mut total = 0;
    for file in groups
        .iter()
        .flat_map(|g| &g.new_fragments)
        .flat_map(|f| &f.files)
    {
        total += match file.file_size_bytes.get() {
            Some(n) => n.get(),
            None => {
                let store = ds.object_store(file.base_id).await?;
                let size = store.size(&data.clone().join(file.path.as_str())).await?;
                if let Some(n) = std::num::NonZero::new(size) {
                    file.file_size_bytes.set(n);
                }
                size
            }
        };
    }
    Ok(total)
}

/// Whether one of `indices` has several segments (an index extended by appends).
pub(crate) fn split(indices: &[IndexMetadata]) -> bool {
    let mut seen = std::collections::HashSet::new();
    indices.iter().any(|m| !seen.insert(m.name.as_str()))
}

/// Commits `groups` as one Lance `Rewrite` on top of `ds` (detached when `strong`); returns
/// the new version with its totals.
pub(crate) async fn commit_rewrite(
    ds: Arc<Dataset>,
    groups: &[RewriteGroup],
    strong: bool,
) -> Result<LeafVersion> {
    let read_version = ds.version().version;
    let op = Operation::Rewrite {
        groups: groups.to_vec(),
        rewritten_indices: Vec::new(),
        frag_reuse_index: None,
    };
    let txn = Transaction::new(read_version, op, None);
    crate::ns::txn::leaf::commit_leaf_transaction(ds, txn, strong, |b| b).await
}
