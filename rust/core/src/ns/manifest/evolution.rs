//! Partition spec evolution: adding spec version `N + 1`, and the field id rule that holds
//! across spec versions.

use std::sync::Arc;

use crate::arrow::datatypes::{Field, Schema, SchemaRef};
use crate::error::{Error, Result};
use crate::ns::storage::Storage;
use crate::ns::SPEC_KEY_PREFIX;
use crate::spec::{CompiledSpec, PartitionSpec};

use super::format::{manifest_schema, rows_to_batch, Row, NAMESPACE, OBJECT_ID};
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

/// Adds spec version `max + 1` (the id in `spec` is replaced): validates it (`docs/design.md`,
/// "Partition expressions", and the field id reuse rule), adds the new `partition_field_*`
/// manifest columns, the `v<N>` namespace row, then the `partition_spec_v<N>` property (the
/// last step makes it current). Returns the new spec id.
///
/// # Errors
/// `Spec` for an invalid spec or one equal to the current spec.
pub async fn evolve(storage: &Storage, spec: &PartitionSpec) -> Result<i32> {
    use lance::dataset::NewColumnTransform;
    use lance::dataset::{MergeInsertBuilder, WhenMatched, WhenNotMatched};
    let snap = Snapshot::load(storage, None).await?;
    snap.check_writable()?;
    let mut spec = spec.clone();
    spec.id = snap.root_props.specs.keys().max().copied().unwrap_or(0) + 1;
    crate::ns::naming::check_spec_fields(&spec)?;
    CompiledSpec::compile(&spec, &snap.schema(), false)?;
    let current = snap.current_spec();
    if current.fields == spec.fields {
        return Err(Error::Spec(format!(
            "the new spec is identical to the current spec v{}",
            current.id
        )));
    }
    let existing: Vec<&PartitionSpec> = snap.root_props.specs.values().collect();
    check_field_id_reuse(&existing, &spec)?;
    let mut ds = (*snap.dataset).clone();
    let wanted = manifest_schema(existing.iter().copied().chain([&spec]))?;
    let new_cols: Vec<Field> = wanted
        .fields()
        .iter()
        .filter(|f| ds.schema().field(f.name()).is_none())
        .map(|f| f.as_ref().clone())
        .collect();
    if !new_cols.is_empty() {
        ds.add_columns(
            NewColumnTransform::AllNulls(Arc::new(Schema::new(new_cols))),
            None,
            None,
        )
        .await?;
    }
    let ds = Arc::new(ds);
    let mschema: SchemaRef = Arc::new(Schema::from(ds.schema()));
    let row = Row {
        object_id: format!("v{}", spec.id),
        object_type: NAMESPACE.into(),
        ..Default::default()
    };
    let batch = rows_to_batch(&mschema, &[row])?;
    let mut b = MergeInsertBuilder::try_new(Arc::clone(&ds), vec![OBJECT_ID.to_string()])?;
    b.when_matched(WhenMatched::DoNothing)
        .when_not_matched(WhenNotMatched::InsertAll);
    let (ds, _) = b.try_build()?.execute_batches(vec![batch]).await?;
    let mut ds = (*ds).clone();
    ds.update_metadata([(format!("{SPEC_KEY_PREFIX}{}", spec.id), spec.to_json()?)])
        .await?;
    Ok(spec.id)
}
