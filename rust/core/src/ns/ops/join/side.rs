//! One side of a group's join: the batches read from its leaves and where its keys are.

use crate::arrow::array::RecordBatch;
use crate::arrow::datatypes::SchemaRef;

/// The columns one side read (keys included) and the positions of its key columns, in the
/// order of the join's key pairs.
pub(super) struct Side {
    pub schema: SchemaRef,
    pub batches: Vec<RecordBatch>,
    pub keys: Vec<usize>,
}

impl Side {
    /// Rows over all batches.
    pub fn rows(&self) -> usize {
        self.batches.iter().map(RecordBatch::num_rows).sum()
    }
}
