//! The manifest commit that prepares a spec evolution ([`crate::ns::ops::evolve`]): the
//! manifest columns and the spec version row a new partition spec version needs.

use std::sync::Arc;

use lance::dataset::{MergeInsertBuilder, NewColumnTransform, WhenMatched, WhenNotMatched};

use crate::arrow::datatypes::{Schema, SchemaRef};
use crate::error::Result;
use crate::ns::manifest::{rows_to_batch, spec_preparation, Snapshot, OBJECT_ID};
use crate::spec::PartitionSpec;

/// Commits what the manifest lacks for `spec` ([`spec_preparation`]): the new columns (all
/// NULL), then the spec version's row (inserted only when still missing: a concurrent
/// preparation of the same id inserts nothing twice). Lance's own conflicts are lost races:
/// the evolution plans again.
///
/// # Errors
/// `Lance` for I/O errors or lost races.
pub(crate) async fn prepare_spec(snap: &Snapshot, spec: &PartitionSpec) -> Result<()> {
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
