//! A distributed merge's not-matched-by-source clauses. A task sees only its share of the
//! source, so it cannot know that no source row matches a target row; it reports the target
//! rows it matched instead, and the committer decides these clauses where every task's
//! matches meet: it reads the partitions the clauses can reach (pruned by their conditions)
//! at the planned version, and deletes each row that no task matched and that a clause's
//! condition selects.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use futures::stream::{self, StreamExt, TryStreamExt};

use crate::arrow::array::UInt32Array;
use crate::arrow::compute::take_record_batch;
use crate::arrow::datatypes::Schema;
use crate::error::Result;
use crate::ns::infra::storage::Storage;
use crate::ns::manifest::{Leaf, Snapshot};
use crate::ns::txn::row_change::Deletions;

use super::candidates::by_source;
use super::keys::key_paths;
use super::leaf_scan::LeafScan;
use super::matcher::first_true;
use super::sql::{self, Plan};
use super::MergeClauses;

/// What the not-matched-by-source clauses decided.
pub(crate) struct Unmatched {
    /// The partitions read (indexes into the snapshot's leaves).
    pub(crate) read: Vec<usize>,
    /// Per partition with rows to delete: the leaf as read and the row addresses.
    pub(crate) deletions: Vec<Deletions>,
    /// How the partitions were chosen.
    pub(crate) why: String,
}

/// Decides the not-matched-by-source clauses of `clauses` on `snap`, given the rows the
/// tasks matched (row addresses per leaf index); see the module docs.
///
/// # Errors
/// `Expression` for bad conditions; `Lance` for I/O errors.
pub(crate) async fn decide_unmatched(
    storage: &Storage,
    snap: &Snapshot,
    clauses: &MergeClauses,
    matched: &HashMap<usize, HashSet<u64>>,
    concurrency: usize,
) -> Result<Unmatched> {
    let ns = snap.schema();
    let keys = key_paths(&clauses.on, &ns)?;
    let only = MergeClauses {
        on: clauses.on.clone(),
        not_matched_by_source: clauses.not_matched_by_source.clone(),
        ..Default::default()
    };
    let plan = sql::plan(&only, &keys, &sql::conformed(&ns, &ns), &ns)?;
    let (reached, why) = by_source(snap, &plan).await?;
    let none = HashSet::new();
    let (ns, plan) = (&ns, &plan);
    let deletions: Vec<Deletions> = stream::iter(reached.iter().map(|&i| {
        let matched = matched.get(&i).unwrap_or(&none);
        leaf_unmatched(storage, ns, plan, (i, &snap.leaves[i]), matched)
    }))
    .buffer_unordered(concurrency.max(1))
    .try_filter(|d| std::future::ready(!d.rows.is_empty()))
    .try_collect()
    .await?;
    Ok(Unmatched {
        read: reached.into_iter().collect(),
        deletions,
        why,
    })
}

/// The rows of one partition that no task matched and a clause deletes.
async fn leaf_unmatched(
    storage: &Storage,
    ns: &Schema,
    plan: &Plan,
    (index, leaf): (usize, &Leaf),
    matched: &HashSet<u64>,
) -> Result<Deletions> {
    let scan = LeafScan::open(storage, leaf, ns).await?;
    let mut rows = Vec::new();
    let mut stream = Box::pin(scan.rows(&plan.read).await?);
    while let Some(next) = stream.next().await {
        let (target, refs) = next?;
        let open: Vec<u32> = (0..target.num_rows() as u32)
            .filter(|&r| !matched.contains(&refs.addr[r as usize]))
            .collect();
        if open.is_empty() {
            continue;
        }
        let candidates = take_record_batch(&target, &UInt32Array::from(open.clone()))?;
        let chosen = first_true(&plan.by_source, &candidates)?;
        rows.extend(
            chosen
                .iter()
                .zip(&open)
                .filter(|(c, _)| c.is_some())
                .map(|(_, &r)| refs.addr[r as usize]),
        );
    }
    Ok(Deletions {
        leaf: index,
        dataset: Arc::clone(&scan.ds),
        rows,
    })
}
