//! `write()`: a [`PartitionWriter`] stages the input in this process, a [`WriteTransaction`]
//! commits it; and the commit of a distributed write's staged messages ([`commit_staged`];
//! [`distributed`]: plan and stage). Both then run the maintenance after a commit
//! (`ops::after_commit`): compact the partitions they left fragmented (`compact_after`), bring
//! the declared indexes of the partitions they wrote up to date, expire when due.

pub(crate) mod compact_after;
pub(crate) mod distributed;
pub(crate) mod shared_plan;

use std::collections::HashMap;
use std::sync::Arc;

use crate::arrow::array::RecordBatch;
use crate::error::{Error, Result};
use crate::ns::infra::storage::Storage;
use crate::ns::manifest::{check_repeatable, Snapshot};
use crate::ns::ops::after_commit::AfterCommit;
use crate::ns::txn::{cleanup_marks, hooks, WriteTransaction};
use crate::ns::write::{
    stage_all, IdPlan, PartitionWriter, StagedMessage, WriteOptions, WriteSummary,
};

/// Writes `input` to the namespace at `storage`.
///
/// # Errors
/// `SchemaMismatch` for input that does not fit the schema; `CommitConflict` when a
/// concurrent commit makes this one impossible; `Lance` for I/O errors. On error nothing
/// becomes visible to readers (strong mode); written files are left for `cleanup`.
pub(crate) async fn write(
    storage: &Storage,
    input: impl Iterator<Item = Result<RecordBatch>>,
    opts: &WriteOptions,
) -> Result<WriteSummary> {
    let staged_since = cleanup_marks::now_ms()?;
    let snap = Arc::new(Snapshot::load(storage, None).await?);
    snap.check_writable()?;
    let strong = snap.strong_mode(opts.strong)?;
    let ids = IdPlan::Random(HashMap::new());
    let mut writer = PartitionWriter::new(storage, Arc::clone(&snap), opts, strong, ids)?;
    if let Err(e) = stage_all(&mut writer, input).await {
        writer.abort().await;
        return Err(e);
    }
    let peak = writer.peak_held_bytes();
    let parts = writer.close().await?;
    let rows = parts.iter().map(|p| p.rows).sum();
    hooks::pause("after_fragments");
    let from = snap.version;
    let props = snap.root_props.props.clone();
    let tx = WriteTransaction::new(storage, snap, strong, opts).staged_since(staged_since);
    let mut summary = tx.commit(parts).await?;
    summary.rows = rows;
    summary.peak_buffered_bytes = peak;
    maintain_after(storage, &mut summary, opts, &props, from).await;
    Ok(summary)
}

/// Commits the staged outputs of one distributed write: every leaf table once, then the
/// manifest once. The write mode and commit mode come from the messages; `opts` gives the
/// concurrency and retry limits, and the write id the commit records (`opts.write_id`;
/// default: the write's nonce). Idempotent per write id: a strong-mode commit whose id the
/// manifest already records commits nothing (a stream's micro-batch replayed after a crash
/// passes the id of its epoch, so its second run, with other staged files, is a no-op too).
///
/// # Errors
/// As [`distributed::merge_messages`] and [`WriteTransaction::commit`].
pub(crate) async fn commit_staged(
    storage: &Storage,
    messages: &[StagedMessage],
    opts: &WriteOptions,
) -> Result<WriteSummary> {
    let Some(first) = messages.first() else {
        return Err(Error::InvalidArgument(
            "no staged messages to commit".into(),
        ));
    };
    let write_id = match &opts.write_id {
        Some(id) => {
            check_repeatable(id, first.strong)?;
            id.clone()
        }
        None => first.nonce.clone(),
    };
    let snap = match distributed::base_snapshot(storage, first.manifest_version).await {
        Ok(s) => Arc::new(s),
        Err(e) => return committed_before(storage, first.strong, &write_id, e).await,
    };
    snap.check_writable()?;
    let (parts, rows, id) = distributed::merge_messages(&snap, messages)?;
    let staged_since = messages.iter().map(|m| m.staged_since_ms).min();
    let opts = WriteOptions {
        mode: id.mode,
        strong: Some(id.strong),
        write_id: Some(write_id),
        ..opts.clone()
    };
    let from = snap.version;
    let props = snap.root_props.props.clone();
    let mut tx = WriteTransaction::new(storage, snap, id.strong, &opts);
    if let Some(ms) = staged_since.filter(|ms| *ms > 0) {
        tx = tx.staged_since(ms);
    }
    let mut summary = tx.commit(parts).await?;
    if !summary.already_committed {
        summary.rows = rows;
    }
    maintain_after(storage, &mut summary, &opts, &props, from).await;
    Ok(summary)
}

/// The maintenance after a write's commit (from manifest version `from`, see
/// `ops::after_commit`), counted in `summary`.
async fn maintain_after(
    storage: &Storage,
    summary: &mut WriteSummary,
    opts: &WriteOptions,
    props: &HashMap<String, String>,
    from: u64,
) {
    if summary.already_committed {
        return;
    }
    let after = AfterCommit {
        storage,
        props,
        from,
        to: summary.manifest_version,
        opts,
    };
    let touched = summary
        .touched
        .iter()
        .map(|t| t.object_id.clone())
        .collect();
    let done = after.run(&summary.fragmented, touched).await;
    summary.compacted = done.compacted;
    summary.indexed = done.indexed;
    summary.expired = done.expired;
    summary.maintenance_errors = done.errors;
}

/// A distributed write whose base manifest version is gone (`error`): when a strong-mode
/// commit of the same write id already landed, this repeated commit is a no-op, as it is
/// while the base version exists; otherwise `error`.
async fn committed_before(
    storage: &Storage,
    strong: bool,
    write_id: &str,
    error: Error,
) -> Result<WriteSummary> {
    let latest = Snapshot::load(storage, None).await?;
    if strong && latest.has_write(write_id)? {
        return Ok(WriteSummary {
            manifest_version: latest.version,
            already_committed: true,
            ..Default::default()
        });
    }
    Err(error)
}
