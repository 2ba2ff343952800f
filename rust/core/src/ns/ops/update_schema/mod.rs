//! A schema update as a commit: the caller's change (the schema it wants, written against the
//! schema it read) is rebased onto the latest schema at every attempt, validated there (field
//! ids, widening, partition sources of every spec version), and committed through
//! [`commit_root`] with the schema key, so a concurrent schema update or spec evolution makes
//! it plan again instead of one silently replacing the other.

pub(crate) mod rules;

use futures::future::BoxFuture;

use crate::arrow::datatypes::Schema;
use crate::error::{Error, Result};
use crate::ns::infra::storage::Storage;
use crate::ns::manifest::Snapshot;
use crate::ns::txn::root_commit::{commit_root, RootChange, RootUpdate, ROOT_ATTEMPTS};
use crate::ns::SCHEMA_KEY;
use crate::spec::{CompiledSpec, PartitionSpec};
use crate::types::JsonSchema;
use rules::{last_field_id, plan_update, rebase_update, LAST_FIELD_ID_KEY};

struct SchemaUpdate<'a> {
    base: &'a Schema,
    new: &'a Schema,
    /// The schema as stored by the last plan.
    stored: Option<Schema>,
}

impl RootUpdate for SchemaUpdate<'_> {
    fn plan<'a>(&'a mut self, latest: &'a Snapshot) -> BoxFuture<'a, Result<Option<RootChange>>> {
        Box::pin(async move {
            let current = latest.schema();
            let wanted = rebase_update(self.base, self.new, &current)?;
            let specs: Vec<&PartitionSpec> = latest.root_props.specs.values().collect();
            let (schema, last) = plan_update(&current, &wanted, &specs, last_field_id(latest))?;
            if schema == *current {
                self.stored = Some(schema);
                return Ok(None);
            }
            for spec in &specs {
                CompiledSpec::compile(spec, &schema, false)?;
            }
            let json = schema_json(&schema)?;
            self.stored = Some(schema);
            Ok(Some(vec![
                (SCHEMA_KEY.to_string(), Some(json)),
                (LAST_FIELD_ID_KEY.to_string(), Some(last.to_string())),
            ]))
        })
    }
}

/// The stored text of a namespace schema.
pub(crate) fn schema_json(schema: &Schema) -> Result<String> {
    serde_json::to_string(&JsonSchema::from_arrow(schema)?)
        .map_err(|e| Error::Internal(format!("cannot serialise the schema: {e}")))
}

/// Applies the change from `base` (the schema the caller read) to `new` onto the latest
/// schema of the namespace and commits it; returns the stored schema (ids assigned). Without
/// a change nothing is committed.
///
/// # Errors
/// `SchemaMismatch` for a refused change; `Spec` when a spec no longer compiles;
/// `CommitConflict` when a concurrent change touched the same columns (or retries ran out).
pub(crate) async fn update_schema(
    storage: &Storage,
    base: &Schema,
    new: &Schema,
) -> Result<Schema> {
    let mut update = SchemaUpdate {
        base,
        new,
        stored: None,
    };
    commit_root(storage, ROOT_ATTEMPTS, &mut update).await?;
    update
        .stored
        .ok_or_else(|| Error::Internal("a schema update committed without a plan".into()))
}
