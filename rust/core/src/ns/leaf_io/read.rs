//! Reading a leaf's rows adapted to the current leaf schema, for rewriting it.

use std::collections::HashSet;
use std::sync::Arc;

use futures::TryStreamExt;
use lance::dataset::Dataset;

use crate::arrow::array::{AsArray, BooleanArray, RecordBatch, RecordBatchOptions};
use crate::arrow::compute::filter_record_batch;
use crate::arrow::datatypes::{Schema, UInt64Type};
use crate::error::{Error, Result};
use crate::ns::leaf_io::read_rules::{adapt, leaf_columns};
use crate::ns::leaf_io::schema::Schemas;

/// The rows of a leaf at its read version, adapted to the current leaf schema (read rules),
/// without the rows at the addresses in `except` (a row-level change's deleted rows).
pub(crate) async fn read_adapted(
    ds: &Dataset,
    schemas: &Schemas,
    except: &HashSet<u64>,
) -> Result<Vec<RecordBatch>> {
    let stored = Schema::from(ds.schema());
    let map = leaf_columns(&stored, &schemas.ns);
    let mut scanner = ds.scan();
    if !except.is_empty() {
        scanner.with_row_address();
    }
    let batches: Vec<RecordBatch> = scanner.try_into_stream().await?.try_collect().await?;
    batches
        .iter()
        .map(|b| {
            let kept = if except.is_empty() {
                b.clone()
            } else {
                let addr = b
                    .column_by_name(lance_core::ROW_ADDR)
                    .and_then(|c| c.as_primitive_opt::<UInt64Type>())
                    .ok_or_else(|| Error::Internal("the scan returned no row addresses".into()))?;
                let keep = BooleanArray::from_iter(
                    addr.values().iter().map(|a| Some(!except.contains(a))),
                );
                filter_record_batch(b, &keep)?
            };
            let adapted = adapt(&kept, &schemas.ns, &map)?;
            Ok(RecordBatch::try_new_with_options(
                Arc::clone(&schemas.leaf),
                adapted.columns().to_vec(),
                &RecordBatchOptions::new().with_row_count(Some(adapted.num_rows())),
            )?)
        })
        .collect()
}
