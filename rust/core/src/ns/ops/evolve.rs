//! Spec evolution as a commit: the new spec version's id is allocated at commit time (the
//! largest on the latest manifest, plus one), it is validated against the latest schema and
//! spec versions, and committed through [`commit_root`] together with the schema key it was
//! validated against. Two evolutions racing for the same id, or an evolution racing a schema
//! change that drops its source column, conflict and plan again; neither lands unchecked.
//! The manifest columns and row the new version needs are committed first by
//! [`crate::ns::txn::prepare_spec`].

use futures::future::BoxFuture;

use crate::error::{Error, Result};
use crate::ns::infra::storage::Storage;
use crate::ns::manifest::{check_field_id_reuse, Snapshot};
use crate::ns::txn::prepare_spec::prepare_spec;
use crate::ns::txn::root_commit::{
    commit_root, schema_unchanged, RootChange, RootUpdate, ROOT_ATTEMPTS,
};
use crate::ns::SPEC_KEY_PREFIX;
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
            crate::ns::infra::naming::check_spec_fields(&spec)?;
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
            Ok(Some(vec![
                (
                    format!("{SPEC_KEY_PREFIX}{}", spec.id),
                    Some(spec.to_json()?),
                ),
                schema_unchanged(latest)?,
            ]))
        })
    }
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
