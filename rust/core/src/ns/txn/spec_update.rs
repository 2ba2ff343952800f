//! Spec evolution as a commit: the new spec version's id is allocated at commit time (the
//! largest on the latest manifest, plus one), it is validated against the latest schema and
//! spec versions, and committed through [`commit_root`] together with the schema key it was
//! validated against. Two evolutions racing for the same id, or an evolution racing a schema
//! change that drops its source column, conflict and plan again; neither lands unchecked.

use futures::future::BoxFuture;

use crate::error::{Error, Result};
use std::sync::Arc;

use lance::dataset::{MergeInsertBuilder, NewColumnTransform, WhenMatched, WhenNotMatched};

use crate::arrow::datatypes::{Schema, SchemaRef};
use crate::ns::manifest::{
    check_field_id_reuse, rows_to_batch, spec_preparation, Snapshot, OBJECT_ID,
};
use crate::ns::storage::Storage;
use crate::ns::txn::root_commit::{commit_root, RootChange, RootUpdate};
use crate::ns::txn::schema_update::ROOT_ATTEMPTS;
use crate::ns::{SCHEMA_KEY, SPEC_KEY_PREFIX};
use crate::spec::{CompiledSpec, PartitionSpec};

struct SpecUpdate<'a> {
    spec: &'a PartitionSpec,
    /// The id the last plan gave the new spec version.
    id: i32,
}

impl RootUpdate for SpecUpdate<'_> {
    fn plan<'a>(&'a mut self, latest: &'a Snapshot) -> BoxFuture<'a, Result<Option<RootChange>>> {
        Box::pin(async move {
            let mut spec = self.spec.with_storage_types()?;
            spec.id = latest.root_props.specs.keys().max().copied().unwrap_or(0) + 1;
            crate::ns::naming::check_spec_fields(&spec)?;
            CompiledSpec::compile(&spec, &latest.schema(), false)?.check_value_types()?;
            let current = latest.current_spec();
            if current.fields == spec.fields {
                return Err(Error::Spec(format!(
                    "the new spec is identical to the current spec v{}",
                    current.id
                )));
            }
            let existing: Vec<&PartitionSpec> = latest.root_props.specs.values().collect();
            check_field_id_reuse(&existing, &spec)?;
            prepare_spec(latest, &spec).await?;
            self.id = spec.id;
            // The schema this spec was validated against, set again unchanged: a concurrent
            // schema change conflicts with this commit.
            let schema = latest
                .root_props
                .props
                .get(SCHEMA_KEY)
                .cloned()
                .ok_or_else(|| Error::Corrupt("the namespace has no schema property".into()))?;
            Ok(Some(vec![
                (
                    format!("{SPEC_KEY_PREFIX}{}", spec.id),
                    Some(spec.to_json()?),
                ),
                (SCHEMA_KEY.to_string(), Some(schema)),
            ]))
        })
    }
}

/// Commits what the manifest lacks for `spec` ([`spec_preparation`]): the new columns (all
/// NULL), then the spec version's row (inserted only when still missing: a concurrent
/// preparation of the same id inserts nothing twice). Lance's own conflicts are lost races:
/// the evolution plans again.
///
/// # Errors
/// `Lance` for I/O errors or lost races.
async fn prepare_spec(snap: &Snapshot, spec: &PartitionSpec) -> Result<()> {
    let (new_cols, row) = spec_preparation(snap, spec)?;
    let mut ds = (*snap.dataset).clone();
    if !new_cols.is_empty() {
        ds.add_columns(
            NewColumnTransform::AllNulls(Arc::new(Schema::new(new_cols))),
            None,
            None,
        )
        .await?;
    }
    if let Some(row) = row {
        let ds = Arc::new(ds);
        let mschema: SchemaRef = Arc::new(Schema::from(ds.schema()));
        let batch = rows_to_batch(&mschema, &[row])?;
        let mut b = MergeInsertBuilder::try_new(Arc::clone(&ds), vec![OBJECT_ID.to_string()])?;
        b.when_matched(WhenMatched::DoNothing)
            .when_not_matched(WhenNotMatched::InsertAll)
            .conflict_retries(0);
        b.try_build()?.execute_batches(vec![batch]).await?;
    }
    Ok(())
}

/// Adds spec version `max + 1` (the id in `spec` is replaced) and makes it current; returns
/// its id.
///
/// # Errors
/// `Spec` for an invalid spec, one equal to the current spec, or one whose source columns a
/// concurrent schema change dropped; `CommitConflict` when retries ran out.
pub(crate) async fn evolve(storage: &Storage, spec: &PartitionSpec) -> Result<i32> {
    let mut update = SpecUpdate { spec, id: 0 };
    commit_root(storage, ROOT_ATTEMPTS, &mut update).await?;
    Ok(update.id)
}
