//! Writes, as a partitioning writer plus a transaction.
//!
//! A [`PartitionWriter`] aligns each input batch to the namespace schema, computes partition
//! values, routes the rows and writes every partition's rows as uncommitted Lance fragments
//! (concurrently, within a memory budget); closing it yields one [`StagedPart`] per partition.
//! A [`crate::ns::txn::WriteTransaction`] commits staged parts: every leaf, then one atomic
//! manifest commit. A local [`write`] is exactly that in one process; a distributed write
//! ([`distributed`]) stages in tasks, sends the parts as [`StagedMessage`]s and commits them on
//! the driver.
//!
//! - [`options`]: modes, options, the summary.
//! - [`align`]: input batches against the namespace schema; the leaf schema.
//! - [`target`]: which leaf a partition's rows go to (and new partitions' ids).
//! - [`writer`]: routing and buffering; [`flush`]: buffers to fragments.
//! - [`staged`], [`message`]: the staged part and its wire form.
//! - [`distributed`]: plan, stage, commit of a distributed write; [`key_hasher`]: the shuffle
//!   key of a clustered Spark write.

pub mod align;
pub mod distributed;
pub(crate) mod flush;
pub mod key_hasher;
pub mod message;
pub mod options;
pub mod staged;
pub mod target;
pub mod writer;

use std::collections::HashMap;
use std::sync::Arc;

use crate::arrow::array::RecordBatch;
use crate::error::Result;
use crate::ns::manifest::Snapshot;
use crate::ns::txn::{hooks, WriteTransaction};

pub use align::{align, leaf_schema};
pub use message::StagedMessage;
pub use options::{Mode, WriteOptions, WriteSummary, DEFAULT_MAX_NEW_PARTITIONS};
pub use staged::StagedPart;
pub use target::{IdPlan, Target};
pub use writer::PartitionWriter;

/// Writes `input` into the namespace at `root`: stage in this process, then commit.
///
/// # Errors
/// `SchemaMismatch` for input that does not fit the schema; `CommitConflict` when a
/// concurrent commit makes this one impossible; `Lance` for I/O errors. On error nothing
/// becomes visible to readers (strong mode); written files are left for `cleanup`.
pub async fn write(
    root: &str,
    input: impl Iterator<Item = Result<RecordBatch>>,
    opts: &WriteOptions,
) -> Result<WriteSummary> {
    let snap = Arc::new(Snapshot::load(root, None).await?);
    snap.check_writable()?;
    let strong = snap.strong_mode(opts.strong)?;
    let ids = IdPlan::Random(HashMap::new());
    let mut writer = PartitionWriter::new(root, Arc::clone(&snap), opts, strong, ids)?;
    let parts = stage_all(&mut writer, input).await;
    let parts = match parts {
        Ok(()) => writer.close().await?,
        Err(e) => {
            writer.abort().await;
            return Err(e);
        }
    };
    let rows = parts.iter().map(|p| p.rows).sum();
    hooks::pause("after_fragments");
    let mut summary = WriteTransaction::new(root, snap, strong, opts)
        .commit(parts)
        .await?;
    summary.rows = rows;
    Ok(summary)
}

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
