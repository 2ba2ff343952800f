//! The partitioning writer: the first half of a write, a transaction being the second.
//!
//! A [`PartitionWriter`] aligns each input batch to the namespace schema, computes partition
//! values, routes the rows and writes every partition's rows as uncommitted Lance fragments
//! (concurrently, within a memory budget); closing it yields one [`StagedPart`] per partition.
//! A `WriteTransaction` (`crate::ns::txn`, which builds on this module) commits staged
//! parts: every leaf, then one atomic manifest commit. The write operation
//! (`crate::ns::ops::write`) is exactly that in one process; a distributed write
//! (`crate::ns::ops::write::distributed`) stages in tasks, sends the parts as
//! [`StagedMessage`]s, and merges and commits them on the driver.
//!
//! - [`options`]: modes, options, the summary.
//! - [`align`]: input batches against the namespace schema (the leaf schema is
//!   [`crate::ns::leaf_io::leaf_schema`]).
//! - [`target`]: which leaf a partition's rows go to (and new partitions' ids).
//! - [`writer`]: routing and buffering; [`flush`]: buffers to fragments.
//! - [`staged`], [`message`]: the staged part and its wire form.
//! - [`key_hasher`]: the shuffle key of a clustered Spark write.

pub mod align;
pub(crate) mod flush;
pub mod key_hasher;
pub mod message;
pub mod options;
pub mod staged;
pub mod target;
pub mod writer;

use crate::arrow::array::RecordBatch;
use crate::error::Result;

pub use align::{align, check_input_schema};
pub use message::StagedMessage;
pub use options::{
    Mode, WriteOptions, WriteSummary, DEFAULT_MAX_ATTEMPTS, DEFAULT_MAX_NEW_PARTITIONS,
};
pub use staged::StagedPart;
pub use target::{IdPlan, Target};
pub use writer::PartitionWriter;

/// Feeds every batch of `input` to `writer`.
///
/// # Errors
/// The first input or writer error.
pub async fn stage_all(
    writer: &mut PartitionWriter,
    input: impl Iterator<Item = Result<RecordBatch>>,
) -> Result<()> {
    for batch in input {
        writer.write(batch?).await?;
    }
    Ok(())
}
