//! Which partitions a merge reads. A source row can only match inside the partition its key
//! determines, when every field of the partition's spec is computed from key columns only
//! (`bucket(order_id, 16)` keyed by `order_id`): then only the partitions holding the source's
//! keys are read. Under a spec the key does not determine (partitioned by day, keyed by id)
//! every partition of that spec is read, key columns only. The partitions a
//! not-matched-by-source delete can reach (pruned by its condition) are read too.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use crate::arrow::array::{RecordBatch, UInt32Array};
use crate::arrow::compute::take_record_batch;
use crate::datafusion::scalar::ScalarValue;
use crate::error::Result;
use crate::ns::manifest::Snapshot;
use crate::ns::scan::prune;
use crate::spec::{CompiledSpec, PartitionSpec};

use super::keys::KeyPath;
use super::source::Source;
use super::sql::Plan;

/// The partitions to read and why.
pub(crate) struct Candidates {
    /// Indexes into `snap.leaves`, ascending.
    pub(crate) leaves: Vec<usize>,
    /// Partitions not read.
    pub(crate) skipped: u64,
    /// One line per spec version: how its partitions were chosen.
    pub(crate) matching: Vec<String>,
}

/// The partitions a merge must read; see the module docs.
///
/// # Errors
/// `Spec`/`Expression` when partition values of the source cannot be computed; `Corrupt`
/// for a manifest that does not index.
pub(crate) async fn candidates(
    snap: &Snapshot,
    source: &Source,
    keys: &[KeyPath],
    plan: &Plan,
    matching_needed: bool,
) -> Result<Candidates> {
    let mut by_spec: BTreeMap<i32, Vec<usize>> = BTreeMap::new();
    for (i, l) in snap.leaves.iter().enumerate() {
        by_spec.entry(l.spec_id).or_default().push(i);
    }
    let key_ids: HashSet<i32> = keys.iter().filter_map(|k| k.field_id).collect();
    let keyed = keyed_rows(source)?;
    let position: HashMap<&str, usize> = snap
        .leaves
        .iter()
        .enumerate()
        .map(|(i, l)| (l.object_id.as_str(), i))
        .collect();
    let mut chosen: BTreeSet<usize> = BTreeSet::new();
    let mut matching = Vec::new();
    if matching_needed {
        for (spec_id, leaves) in &by_spec {
            let (found, why) = by_key(snap, *spec_id, leaves, (&key_ids, keys), &keyed, &position)?;
            chosen.extend(found);
            matching.extend(why);
        }
    }
    if !plan.by_source.is_empty() {
        let (reached, why) = by_source(snap, plan).await?;
        chosen.extend(reached);
        matching.push(why);
    }
    let leaves: Vec<usize> = chosen.into_iter().collect();
    Ok(Candidates {
        skipped: (snap.leaves.len() - leaves.len()) as u64,
        leaves,
        matching,
    })
}

/// The leaves of spec `spec_id` (`leaves`) that can hold a source key, and why.
fn by_key(
    snap: &Snapshot,
    spec_id: i32,
    leaves: &[usize],
    (key_ids, keys): (&HashSet<i32>, &[KeyPath]),
    keyed: &RecordBatch,
    position: &HashMap<&str, usize>,
) -> Result<(Vec<usize>, Option<String>)> {
    let Some(spec) = snap.root_props.specs.get(&spec_id) else {
        return Ok((leaves.to_vec(), None));
    };
    let determined = spec
        .fields
        .iter()
        .all(|f| f.source_ids.iter().all(|s| key_ids.contains(s)));
    let holding = if determined {
        holding_keys(snap, spec, keyed, position)?
    } else {
        None
    };
    Ok(match holding {
        Some(found) => {
            let why = format!(
                "spec v{spec_id}: the key determines the partition; {} of {} partition(s) \
                 hold source keys",
                found.len(),
                leaves.len()
            );
            (found, Some(why))
        }
        None => {
            let why = format!(
                "spec v{spec_id}: partitioned by {}, which the key ({}) does not determine; \
                 all {} partition(s) are read (key columns first)",
                describe_spec(spec),
                keys.iter()
                    .map(|k| k.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                leaves.len()
            );
            (leaves.to_vec(), Some(why))
        }
    })
}

/// The leaves a not-matched-by-source delete can reach, and why.
pub(crate) async fn by_source(snap: &Snapshot, plan: &Plan) -> Result<(BTreeSet<usize>, String)> {
    let Some(filters) = &plan.by_source_filter else {
        let why = "not matched by source: a delete without condition reads every partition";
        return Ok(((0..snap.leaves.len()).collect(), why.into()));
    };
    let mut reached = BTreeSet::new();
    for f in filters {
        reached.extend(prune(snap, Some(f)).await?.leaves);
    }
    let why = format!(
        "not matched by source: the delete condition reaches {} of {} partition(s)",
        reached.len(),
        snap.leaves.len()
    );
    Ok((reached, why))
}

/// The source rows whose key has no NULL (only they can match).
fn keyed_rows(source: &Source) -> Result<RecordBatch> {
    let mut idx = source.index.rows();
    idx.sort_unstable();
    Ok(take_record_batch(&source.batch, &UInt32Array::from(idx))?)
}

/// The leaves of `spec` holding the partition values of the `keyed` source rows; `None`
/// when they cannot be computed from the source (a source column of the spec is gone).
fn holding_keys(
    snap: &Snapshot,
    spec: &PartitionSpec,
    keyed: &RecordBatch,
    position: &HashMap<&str, usize>,
) -> Result<Option<Vec<usize>>> {
    let ns = snap.schema();
    let Ok(compiled) = CompiledSpec::compile(spec, &ns, false) else {
        return Ok(None);
    };
    if spec.fields.is_empty() {
        return Ok(Some(
            snap.leaf(spec.id, &[])?
                .and_then(|l| position.get(l.object_id.as_str()).copied())
                .into_iter()
                .collect(),
        ));
    }
    let Ok(values) = compiled.partition_values(keyed) else {
        return Ok(None);
    };
    let mut seen: HashSet<Vec<ScalarValue>> = HashSet::new();
    let mut out = Vec::new();
    for r in 0..values.num_rows() {
        let key = values
            .columns()
            .iter()
            .map(|c| ScalarValue::try_from_array(c, r))
            .collect::<std::result::Result<Vec<_>, _>>()?;
        if !seen.insert(key.clone()) {
            continue;
        }
        if let Some(i) = snap
            .leaf(spec.id, &key)?
            .and_then(|l| position.get(l.object_id.as_str()))
        {
            out.push(*i);
        }
    }
    Ok(Some(out))
}

/// `day(ts), bucket[16](id)`.
fn describe_spec(spec: &PartitionSpec) -> String {
    spec.fields
        .iter()
        .map(|f| match (&f.transform, &f.expression) {
            (Some(t), _) => format!("{}({})", t.kind, f.field_id),
            (None, Some(e)) => format!("{e} ({})", f.field_id),
            (None, None) => f.field_id.clone(),
        })
        .collect::<Vec<_>>()
        .join(", ")
}
