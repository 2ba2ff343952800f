//! What a row-level change did, counted for its summary: per partition read, the rows updated
//! (and how many of them stayed in the partition) and deleted; per destination partition, the
//! updated rows that landed there. A local change counts its own decisions; a distributed one
//! adds up its tasks' counts.

use std::collections::HashMap;

use crate::datafusion::scalar::ScalarValue;
use crate::error::Result;
use crate::ns::infra::touched::TouchedPartition;
use crate::ns::leaf_io::leaf_schema;
use crate::ns::manifest::Snapshot;
use crate::ns::txn::row_change::ChangedLeaf;
use crate::ns::write::align;
use crate::spec::CompiledSpec;

use super::clauses::MergedPartition;
use super::matcher::LeafChanges;

/// One partition read: what the change decided for its rows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct LeafTally {
    /// Rows updated (moved ones included).
    pub(crate) updated: u64,
    /// Rows deleted by a delete clause.
    pub(crate) deleted: u64,
    /// Updated rows that stayed in the partition.
    pub(crate) in_place: u64,
}

/// The counts of one change; see the module docs.
#[derive(Debug, Default)]
pub(crate) struct Tally {
    /// Per leaf object id.
    pub(crate) leaves: HashMap<String, LeafTally>,
    /// Updated rows per destination partition key (current spec).
    pub(crate) landed: HashMap<Vec<ScalarValue>, u64>,
}

impl Tally {
    /// Counts the decisions of one change on `snap` (where its updated rows land under the
    /// current spec).
    ///
    /// # Errors
    /// `Spec`/`Expression` when the partition values of updated rows cannot be computed.
    pub(crate) fn of(snap: &Snapshot, results: &[LeafChanges]) -> Result<Self> {
        let ns = snap.schema();
        let spec = snap.current_spec();
        let compiled = CompiledSpec::compile(spec, &ns, false)?;
        let leaf = leaf_schema(&ns);
        let keys = snap.keys()?;
        let mut out = Self::default();
        for r in results {
            let own = (snap.leaves[r.leaf].spec_id == spec.id).then(|| &keys.leaf_values[r.leaf]);
            let mut counts = LeafTally {
                updated: r.updated,
                deleted: r.deleted_rows,
                in_place: 0,
            };
            for b in &r.updates {
                let values = compiled.partition_values(&align(b, &ns, &leaf)?)?;
                for row in 0..values.num_rows() {
                    let key = values
                        .columns()
                        .iter()
                        .map(|c| ScalarValue::try_from_array(c, row))
                        .collect::<std::result::Result<Vec<_>, _>>()?;
                    if own == Some(&key) {
                        counts.in_place += 1;
                    }
                    *out.landed.entry(key).or_default() += 1;
                }
            }
            out.add_leaf(&snap.leaves[r.leaf].object_id, counts);
        }
        Ok(out)
    }

    /// Adds one partition's counts (a distributed change's tasks may each read it).
    pub(crate) fn add_leaf(&mut self, object_id: &str, counts: LeafTally) {
        let t = self.leaves.entry(object_id.to_string()).or_default();
        t.updated += counts.updated;
        t.deleted += counts.deleted;
        t.in_place += counts.in_place;
    }

    /// Updated rows that stayed in their partition, over all partitions.
    pub(crate) fn in_place(&self) -> u64 {
        self.leaves.values().map(|t| t.in_place).sum()
    }

    /// The summary's per-partition lines for the leaves the commit `changed`.
    pub(crate) fn per_partition(
        &self,
        snap: &Snapshot,
        changed: &[ChangedLeaf],
    ) -> Vec<MergedPartition> {
        let current = snap.current_spec().id;
        changed
            .iter()
            .filter_map(|c| {
                let spec = snap.root_props.specs.get(&c.spec_id)?;
                let t = self.leaves.get(&c.object_id).copied().unwrap_or_default();
                let landed = if c.spec_id == current {
                    self.landed.get(&c.key).copied().unwrap_or(0)
                } else {
                    0
                };
                Some(MergedPartition {
                    partition: TouchedPartition::new(&c.object_id, &c.location, spec, &c.key),
                    inserted: c.added.saturating_sub(landed),
                    updated: t.in_place,
                    deleted: t.deleted,
                    moved_out: t.updated.saturating_sub(t.in_place),
                    moved_in: landed.saturating_sub(t.in_place),
                    created: c.created,
                    dropped: c.dropped,
                })
            })
            .collect()
    }
}
