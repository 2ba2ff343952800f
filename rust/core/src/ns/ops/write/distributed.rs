//! Distributed writes: tasks stage, one committer commits.
//!
//! The driver [`plan`]s the write (the manifest version every task writes against, the commit
//! mode) and draws a nonce. Every task runs [`stage`]: a [`PartitionWriter`] over the task's
//! rows, closed into [`StagedPart`]s and returned as one small [`StagedMessage`]. The driver
//! passes the messages of the final successful task attempts to `Namespace::commit_staged`,
//! which merges them per partition ([`merge_messages`]) and commits them in one
//! `WriteTransaction`, exactly like a local write. Outputs of failed or duplicate attempts are never named by a message, so they
//! are never committed; `cleanup()` removes their files.
//!
//! New partitions' ids derive from the nonce and the partition values, so tasks that see the
//! same new partition write into the same leaf table location.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use crate::arrow::array::RecordBatch;
use crate::datafusion::scalar::ScalarValue;
use crate::error::{Error, Result};
use crate::ns::infra::storage::Storage;
use crate::ns::manifest::{LeafColumnStats, Snapshot};
use crate::ns::write::message::{StagedMessage, WriteIdentity};
use crate::ns::write::options::WriteOptions;
use crate::ns::write::stage_all;
use crate::ns::write::staged::StagedPart;
use crate::ns::write::target::IdPlan;
use crate::ns::write::writer::PartitionWriter;
use crate::spec::CompiledSpec;

/// What a distributed write plans against: the manifest version (S0) and whether it commits
/// in strong mode.
#[derive(Debug, Clone, Copy)]
pub struct WritePlan {
    /// The manifest version.
    pub manifest_version: u64,
    /// Strong mode.
    pub strong: bool,
}

/// Resolves the manifest version a distributed write plans against and its commit mode.
///
/// # Errors
/// `NotFound`, `Corrupt` (a manifest another tool stripped; run repair).
pub(crate) async fn plan(storage: &Storage, strong: Option<bool>) -> Result<WritePlan> {
    let snap = Snapshot::load(storage, None).await?;
    snap.check_writable()?;
    Ok(WritePlan {
        manifest_version: snap.version,
        strong: snap.strong_mode(strong)?,
    })
}

/// The manifest version `version` a distributed write planned against.
///
/// # Errors
/// `CommitConflict` when `expire()` removed it while the write ran (its tasks staged, or will
/// stage, against it; nothing is committed); otherwise as [`Snapshot::load`].
pub(crate) async fn base_snapshot(storage: &Storage, version: u64) -> Result<Snapshot> {
    match Snapshot::load(storage, Some(version)).await {
        Err(Error::NotFound(m)) => Err(Error::CommitConflict(format!(
            "the manifest version {version} this distributed write planned against was removed \
             by expire() while the write ran ({m}); nothing was committed, start the write \
             again (keep expire()'s older_than longer than the longest write)"
        ))),
        other => other,
    }
}

/// Stages one task's rows: routes them, writes uncommitted fragments, commits nothing.
///
/// # Errors
/// As [`super::write`] for the input; `NotFound` if `manifest_version` is gone.
pub(crate) async fn stage(
    storage: &Storage,
    plan: WritePlan,
    nonce: &str,
    input: impl Iterator<Item = Result<RecordBatch>>,
    opts: &WriteOptions,
) -> Result<StagedMessage> {
    if nonce.len() < 16 {
        return Err(Error::InvalidArgument(
            "a staged write needs the write's nonce (new_nonce())".into(),
        ));
    }
    let staged_since = crate::ns::txn::cleanup_marks::now_ms()?;
    let snap = Arc::new(base_snapshot(storage, plan.manifest_version).await?);
    snap.check_writable()?;
    let ids = IdPlan::Derived(nonce.to_string());
    let mut writer = PartitionWriter::new(storage, Arc::clone(&snap), opts, plan.strong, ids)?;
    if let Err(e) = stage_all(&mut writer, input).await {
        writer.abort().await;
        return Err(e);
    }
    let rows = writer.rows();
    let parts = writer.close().await?;
    let id = WriteIdentity {
        manifest_version: plan.manifest_version,
        spec_id: snap.current_spec().id,
        nonce: nonce.to_string(),
        mode: opts.mode,
        strong: plan.strong,
    };
    StagedMessage::new(&id, rows, staged_since, parts)
}

/// The staged outputs of one distributed write, checked and merged: one part per partition,
/// the rows staged, and the write they belong to. The snapshot is the one the tasks planned
/// against.
///
/// # Errors
/// `InvalidArgument` for messages of different writes, naming one file twice, or staged
/// against another spec.
pub(crate) fn merge_messages(
    snap: &Snapshot,
    messages: &[StagedMessage],
) -> Result<(Vec<StagedPart>, u64, WriteIdentity)> {
    let Some(first) = messages.first() else {
        return Err(Error::InvalidArgument(
            "no staged messages to commit".into(),
        ));
    };
    let id = first.identity();
    if messages.iter().any(|m| m.identity() != id) {
        return Err(Error::InvalidArgument(
            "staged messages of different writes cannot be committed together".into(),
        ));
    }
    let spec = snap.current_spec();
    if snap.version != id.manifest_version || spec.id != id.spec_id {
        return Err(Error::InvalidArgument(format!(
            "staged against spec {} of manifest version {} but version {} has spec {}",
            id.spec_id, id.manifest_version, snap.version, spec.id
        )));
    }
    let unique = dedupe(messages)?;
    let key_types = CompiledSpec::compile(spec, &snap.schema(), false)?.output_schema();
    let parts = merge(&unique, &key_types)?;
    let rows = unique.iter().map(|m| m.rows).sum();
    Ok((parts, rows, id))
}

/// The same message passed twice (a retried driver step) counts once; two messages naming the
/// same data file are refused.
fn dedupe(messages: &[StagedMessage]) -> Result<Vec<&StagedMessage>> {
    let mut seen = HashSet::new();
    let mut unique = Vec::with_capacity(messages.len());
    for m in messages {
        if seen.insert(m.to_bytes()?) {
            unique.push(m);
        }
    }
    let mut files: HashSet<&str> = HashSet::new();
    for m in &unique {
        for f in m
            .parts
            .iter()
            .flat_map(|p| &p.fragments)
            .flat_map(|f| &f.files)
        {
            if !files.insert(f.path.as_str()) {
                return Err(Error::InvalidArgument(format!(
                    "two staged messages name the same data file {:?} (one part staged \
                     twice under different messages?)",
                    f.path
                )));
            }
        }
    }
    Ok(unique)
}

/// One staged part per partition, merged from every task's messages.
fn merge(
    messages: &[&StagedMessage],
    key_types: &crate::arrow::datatypes::Schema,
) -> Result<Vec<StagedPart>> {
    let mut merged: HashMap<Vec<ScalarValue>, StagedPart> = HashMap::new();
    for p in messages.iter().flat_map(|m| &m.parts) {
        let part = p.to_part(key_types)?;
        match merged.get_mut(&part.key) {
            Some(m) => {
                if m.target.location() != part.target.location() {
                    return Err(Error::Internal(format!(
                        "tasks staged one partition into two tables ({} and {})",
                        m.target.location(),
                        part.target.location()
                    )));
                }
                m.rewrite |= part.rewrite;
                m.fragments.extend(part.fragments);
                m.rows += part.rows;
                m.stats = match (m.stats.take(), part.stats) {
                    (Some(a), Some(b)) => Some(LeafColumnStats::merge(&a, &b)),
                    _ => None,
                };
            }
            None => {
                merged.insert(part.key.clone(), part);
            }
        }
    }
    Ok(merged.into_values().collect())
}
