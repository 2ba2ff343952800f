//! Routing: group the rows of a batch by their partition key tuple.
//!
//! [`group_rows`] assigns every row a dense group id (groups numbered in order of first
//! appearance; NULL is a key like any other). [`route`] then builds one stable permutation with
//! a counting sort, gathers the batch once, and describes each group as a contiguous slice of
//! the permuted batch, so a writer gets one batch per partition with no per-row work beyond a
//! single gather.
//!
//! Per key column, values are first mapped to dense codes with the cheapest method the type
//! allows (a direct table for small integer ranges and booleans, a hash table over the raw
//! bytes for strings and binaries, dictionary keys for dictionaries, Arrow's row format for
//! anything else); the per-column codes are then combined into one group id.
//!
//! `group` assigns the group ids; `reorder` computes the destinations and moves the columns;
//! `parallel` runs the grouping and the destinations over chunks of rows on several threads.
//! `reorder` uses `group`'s [`Grouping`], `parallel` uses both, never the other way round.

mod group;
mod parallel;
mod reorder;

use std::sync::Arc;

use crate::arrow::array::{ArrayRef, RecordBatch, RecordBatchOptions, UInt32Array};
use crate::arrow::compute::take;
use crate::arrow::datatypes::Schema;
use crate::error::{invalid_arg, Result};

pub use group::{group_rows, Grouping};
pub use parallel::{destinations_with_threads, group_rows_with_threads};
pub use reorder::destinations;

/// A batch grouped by partition key: `batch` holds the rows reordered so that each group is
/// contiguous (stable order inside a group); group `g` is rows `offsets[g]..offsets[g + 1]`
/// and has key `keys.slice(g, 1)`.
#[derive(Debug, Clone)]
pub struct Routed {
    /// One row per distinct key tuple, in order of first appearance.
    pub keys: RecordBatch,
    /// The input rows, permuted so that groups are contiguous.
    pub batch: RecordBatch,
    /// Group boundaries into `batch`; `offsets.len() == keys.num_rows() + 1`.
    pub offsets: Vec<usize>,
}

impl Routed {
    /// The rows of group `g` (a zero-copy slice).
    pub fn group(&self, g: usize) -> RecordBatch {
        self.batch
            .slice(self.offsets[g], self.offsets[g + 1] - self.offsets[g])
    }
}

/// Groups the rows of `batch` by the key columns `keys` (one value per row each; typically
/// the output of [`crate::spec::CompiledSpec::partition_values`]).
///
/// `key_schema` names the key columns in the returned `keys` batch.
///
/// # Errors
/// `InvalidArgument` when the key columns do not have one value per row of `batch`.
pub fn route(batch: &RecordBatch, keys: &[ArrayRef], key_schema: Arc<Schema>) -> Result<Routed> {
    route_with_threads(batch, keys, key_schema, 1)
}

/// Rows from which [`auto_threads`] moves columns on every core.
const PARALLEL_ROUTE_ROWS: usize = 100_000;

/// The threads to route a batch of `rows` rows with when the caller did not choose: every
/// core for batches of [`PARALLEL_ROUTE_ROWS`] rows or more, else the calling thread.
pub fn auto_threads(rows: usize) -> usize {
    if rows >= PARALLEL_ROUTE_ROWS {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        1
    }
}

/// [`route`] on up to `threads` threads: the grouping and the destinations over chunks of
/// rows, the moves column by column (columns are independent). `threads <= 1` does everything on the calling thread: use
/// that where one task per core already runs (Spark executors).
///
/// # Errors
/// As [`route`].
pub fn route_with_threads(
    batch: &RecordBatch,
    keys: &[ArrayRef],
    key_schema: Arc<Schema>,
    threads: usize,
) -> Result<Routed> {
    check_keys(batch, keys, &key_schema)?;
    if batch.num_rows() == 0 {
        return Ok(Routed {
            keys: RecordBatch::new_empty(key_schema),
            batch: batch.clone(),
            offsets: vec![0],
        });
    }
    let g = group_rows_with_threads(keys, threads)?;
    let firsts = UInt32Array::from(g.first_row.clone());
    let key_cols = keys
        .iter()
        .map(|k| take(k.as_ref(), &firsts, None))
        .collect::<std::result::Result<Vec<_>, _>>()?;
    let keys_batch = RecordBatch::try_new(key_schema, key_cols)?;
    if g.num_groups() == 1 {
        return Ok(Routed {
            keys: keys_batch,
            batch: batch.clone(),
            offsets: vec![0, batch.num_rows()],
        });
    }
    let (dest, offsets) = destinations_with_threads(&g, threads)?;
    let columns = reorder::reorder_columns(batch.columns(), &dest, &g, &offsets, threads)?;
    let permuted = RecordBatch::try_new_with_options(
        batch.schema(),
        columns,
        &RecordBatchOptions::new().with_row_count(Some(batch.num_rows())),
    )?;
    Ok(Routed {
        keys: keys_batch,
        batch: permuted,
        offsets,
    })
}

/// Checks that every key column has one value per row of `batch` and that `key_schema` has
/// one field per key column.
fn check_keys(batch: &RecordBatch, keys: &[ArrayRef], key_schema: &Schema) -> Result<()> {
    for (i, k) in keys.iter().enumerate() {
        if k.len() != batch.num_rows() {
            return invalid_arg!(
                "key column {i} has {} rows but the batch has {}",
                k.len(),
                batch.num_rows()
            );
        }
    }
    if key_schema.fields().len() != keys.len() {
        return invalid_arg!("key schema does not match the key columns");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arrow::array::{AsArray, Float64Array, Int64Array};
    use crate::arrow::datatypes::{DataType, Field};

    #[test]
    fn route_permutes_stably() {
        let k: ArrayRef = Arc::new(Int64Array::from(vec![3, 1, 3, 1, 1_000_000_000]));
        let f: ArrayRef = Arc::new(Float64Array::from(vec![0.0, 1.0, 2.0, 3.0, 4.0]));
        let batch = RecordBatch::try_from_iter(vec![("v", f)]).unwrap();
        let schema = Arc::new(Schema::new(vec![Field::new("k", DataType::Int64, true)]));
        let r = route(&batch, &[k], schema).unwrap();
        assert_eq!(r.offsets, vec![0, 2, 4, 5]);
        let v = r
            .batch
            .column(0)
            .as_primitive::<crate::arrow::datatypes::Float64Type>();
        assert_eq!(v.values().to_vec(), vec![0.0, 2.0, 1.0, 3.0, 4.0]);
        assert_eq!(r.group(1).num_rows(), 2);
    }
}
