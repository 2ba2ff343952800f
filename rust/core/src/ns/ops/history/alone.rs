//! What a manifest version did when `expire()` removed the version before it: there is no
//! predecessor to compare with, so its own Lance transaction (kept with the version) says it.
//! The fragments a commit added hold the `table_version` rows it wrote; a metadata update
//! names the properties it set; a rewrite is a compaction of the manifest's fragments.

use std::collections::BTreeSet;

use lance::dataset::transaction::Operation;
use lance::dataset::Dataset;

use crate::error::Result;
use crate::ns::{CLEANUP_FENCE_PREFIX, PARTITION_COLUMN_PREFIX, SCHEMA_KEY, SPEC_KEY_PREFIX};

use super::{rows_state, table_changes, State};
use crate::ns::manifest::{INDEX_KEY_PREFIX, METADATA, OBJECT_ID, OBJECT_TYPE, TABLE_VERSION};

/// The operation, partitions changed and rows written of the commit that made `ds`'s version.
///
/// # Errors
/// `Lance` for I/O errors.
pub(super) async fn describe(ds: &Dataset) -> Result<(String, Option<i64>, Option<i64>)> {
    let Some(txn) = ds.read_transaction().await? else {
        return Ok(("commit".into(), None, None));
    };
    let mut ops: BTreeSet<String> = BTreeSet::new();
    let (partitions, rows) = match &txn.operation {
        Operation::Update { new_fragments, .. }
        | Operation::Append {
            fragments: new_fragments,
        } => {
            let now = added_rows(ds, new_fragments.clone()).await?;
            let (added, touched, rows) = table_changes(&State::default(), &now);
            ops.extend(added.iter().map(|s| s.to_string()));
            (Some(touched.len() as i64), rows)
        }
        Operation::Rewrite { .. } | Operation::ReserveFragments { .. } => {
            ops.insert("compact_manifest".into());
            (None, None)
        }
        Operation::UpdateConfig {
            table_metadata_updates: Some(updates),
            ..
        } => {
            ops.extend(
                updates
                    .update_entries
                    .iter()
                    .filter_map(|e| property_op(&e.key))
                    .map(String::from),
            );
            // Spec evolutions and index declarations set the schema again unchanged.
            if ops.contains("evolve") || ops.contains("index") {
                ops.remove("schema");
            }
            (Some(0), None)
        }
        Operation::Merge { schema, .. } => {
            // The commit added manifest columns; the newest (the largest field id) says
            // which: a new spec's partition column, or one that `repair()` brought back.
            let partition_columns = schema
                .fields
                .iter()
                .max_by_key(|f| f.id)
                .is_some_and(|f| f.name.starts_with(PARTITION_COLUMN_PREFIX));
            ops.insert(
                if partition_columns {
                    "evolve_prepare"
                } else {
                    "repair"
                }
                .into(),
            );
            (Some(0), None)
        }
        _ => (None, None),
    };
    let operation = if ops.is_empty() {
        "commit".to_string()
    } else {
        ops.into_iter().collect::<Vec<_>>().join("+")
    };
    Ok((operation, partitions, rows))
}

/// The rows of `fragments` (the ones a commit added), as a history state.
async fn added_rows(ds: &Dataset, fragments: Vec<lance::table::format::Fragment>) -> Result<State> {
    let mut scan = ds.scan();
    scan.with_fragments(fragments);
    scan.project(&[OBJECT_ID, OBJECT_TYPE, METADATA])?;
    scan.filter(&format!("{OBJECT_TYPE} = '{TABLE_VERSION}'"))?;
    rows_state(&scan.try_into_batch().await?)
}

/// Which operation sets a namespace property (`None`: one that goes with others, such as the
/// largest field id).
fn property_op(key: &str) -> Option<&'static str> {
    if key == SCHEMA_KEY {
        Some("schema")
    } else if key.starts_with(SPEC_KEY_PREFIX) {
        Some("evolve")
    } else if key.starts_with(CLEANUP_FENCE_PREFIX) {
        Some("cleanup")
    } else if key.starts_with(INDEX_KEY_PREFIX) {
        Some("index")
    } else {
        None
    }
}
