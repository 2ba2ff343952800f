//! Reading a leaf's rows adapted to the current leaf schema, for rewriting it.

use std::sync::Arc;

use futures::TryStreamExt;
use lance::dataset::Dataset;

use crate::arrow::array::{RecordBatch, RecordBatchOptions};
use crate::arrow::datatypes::Schema;
use crate::error::Result;
use crate::ns::leaf_io::read_rules::{adapt, leaf_columns};
use crate::ns::leaf_io::schema::Schemas;

/// The rows of a leaf at its read version, adapted to the current leaf schema (read rules).
pub(crate) async fn read_adapted(ds: &Dataset, schemas: &Schemas) -> Result<Vec<RecordBatch>> {
    let stored = Schema::from(ds.schema());
    let map = leaf_columns(&stored, &schemas.ns);
    let batches: Vec<RecordBatch> = ds.scan().try_into_stream().await?.try_collect().await?;
    batches
        .iter()
        .map(|b| {
            let adapted = adapt(b, &schemas.ns, &map)?;
            Ok(RecordBatch::try_new_with_options(
                Arc::clone(&schemas.leaf),
                adapted.columns().to_vec(),
                &RecordBatchOptions::new().with_row_count(Some(adapted.num_rows())),
            )?)
        })
        .collect()
}
