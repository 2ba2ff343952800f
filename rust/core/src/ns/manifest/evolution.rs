//! Partition spec evolution: adding spec version `N + 1`, and the field id rule that holds
//! across spec versions.

use crate::arrow::datatypes::Field;
use crate::error::{Error, Result};
use crate::spec::PartitionSpec;

use super::format::{manifest_schema, Row, NAMESPACE};
use super::Snapshot;

/// Checks the spec's field id rule across versions: a field with the same `source_ids` and
/// `transform`/`expression` as an existing field must reuse its `field_id`; a `field_id` is
/// never reused for anything else.
///
/// # Errors
/// `Spec` naming the field.
pub fn check_field_id_reuse(existing: &[&PartitionSpec], new: &PartitionSpec) -> Result<()> {
    let same_def = |f: &crate::spec::PartitionField, g: &crate::spec::PartitionField| {
        g.source_ids == f.source_ids && g.transform == f.transform && g.expression == f.expression
    };
    for f in &new.fields {
        for spec in existing {
            for g in spec.fields.iter().filter(|g| g.field_id == f.field_id) {
                if !same_def(f, g) {
                    return Err(Error::Spec(format!(
                        "partition field id {:?} was defined differently in spec v{}; field ids \
                         are never reused (pick a new id)",
                        f.field_id, spec.id
                    )));
                }
                if g.result_type != f.result_type {
                    return Err(Error::Spec(format!(
                        "partition field {:?} changes its result_type",
                        f.field_id
                    )));
                }
            }
        }
    }
    for f in &new.fields {
        for spec in existing {
            for g in spec.fields.iter().filter(|g| g.field_id != f.field_id) {
                if same_def(f, g) {
                    return Err(Error::Spec(format!(
                        "partition field {:?} has the same sources and transform as field {:?} of \
                         spec v{}; it must reuse that field_id",
                        f.field_id, g.field_id, spec.id
                    )));
                }
            }
        }
    }
    Ok(())
}

/// What the manifest lacks for spec version `spec` (its id final): the `partition_field_*`
/// columns it needs, and its `v<N>` namespace row when missing. Both empty when prepared
/// already (a retried evolution, or one that died before its spec property was committed).
/// The transaction layer commits them (`txn::prepare_spec`); nothing becomes visible, as spec
/// `N` exists only once its `partition_spec_v<N>` property is committed.
///
/// # Errors
/// `Spec` for a spec whose columns cannot be built.
pub fn spec_preparation(
    snap: &Snapshot,
    spec: &PartitionSpec,
) -> Result<(Vec<Field>, Option<Row>)> {
    let existing: Vec<&PartitionSpec> = snap.root_props.specs.values().collect();
    let wanted = manifest_schema(existing.iter().copied().chain([spec]))?;
    let stored = snap.dataset.schema();
    let new_cols: Vec<Field> = wanted
        .fields()
        .iter()
        .filter(|f| stored.field(f.name()).is_none())
        .map(|f| f.as_ref().clone())
        .collect();
    let row_id = format!("v{}", spec.id);
    let row = lacks_row(snap, &row_id).then(|| Row {
        object_id: row_id,
        object_type: NAMESPACE.into(),
        ..Default::default()
    });
    Ok((new_cols, row))
}

/// Whether the snapshot lacks the namespace row `row_id`.
fn lacks_row(snap: &Snapshot, row_id: &str) -> bool {
    snap.keys()
        .map(|k| !k.row_by_id.contains_key(row_id))
        .unwrap_or(true)
}
