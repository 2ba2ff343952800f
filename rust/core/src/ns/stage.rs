//! Distributed writes: tasks stage, one committer commits.
//!
//! A distributed write (Spark) runs [`stage`] in every task: route the task's rows, write each
//! partition's rows as uncommitted Lance fragments, and return a small [`Staged`] message
//! (partition values, target table, fragment metadata). The driver passes the messages of
//! the final successful task attempts to [`commit_staged`], which commits every leaf table
//! once and then the manifest once (strong mode: one atomic `merge_insert`), exactly like a
//! local write. Outputs of failed or duplicate attempts are never named by a message, so they
//! are never committed; `cleanup()` removes their files.
//!
//! Every task plans against the same manifest version and derives the ids of new partitions
//! from the write's random nonce, so tasks that see the same new partition value write into
//! the same leaf table location.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use lance::dataset::{InsertBuilder, WriteMode};
use lance::io::ObjectStore;
use lance::table::format::Fragment;
use serde::{Deserialize, Serialize};
use tokio::sync::OnceCell;

use crate::arrow::array::RecordBatch;
use crate::arrow::datatypes::{Schema, SchemaRef};
use crate::datafusion::scalar::ScalarValue;
use crate::error::{Error, Result};
use crate::ns::ids::random_id;
use crate::ns::manifest::Snapshot;
use crate::ns::runtime::runtime;
use crate::ns::values;
use crate::ns::write::{
    commit_parts, leaf_schema, op_fragments, open_at, read_adapted, route_input, write_params,
    IdPlan, Mode, Part, PartShared, Schemas, Target, WriteOptions, WriteSummary,
};
use crate::spec::CompiledSpec;

/// Version of the [`Staged`] message layout.
const FORMAT: u32 = 1;

/// What one task wrote for one partition.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StagedPart {
    /// Partition values, serialised per the partition value serialization spec; None is NULL
    /// and an empty string is `Some("")` (unlike the spec's string form, which maps both to
    /// absent).
    pub key: Vec<Option<String>>,
    /// Existing leaf: its object id; None for a new partition.
    pub object_id: Option<String>,
    /// Leaf table location relative to the root.
    pub location: String,
    /// New partition: the namespace id segment of every level.
    pub path: Vec<String>,
    /// Existing leaf: the version the rows were written against (strong mode).
    pub base: Option<u64>,
    /// Whether the fragments replace the leaf's content (overwrite, or a leaf written under an
    /// older schema whose old rows the committer rewrites).
    pub rewrite: bool,
    /// The uncommitted fragments.
    pub fragments: Vec<Fragment>,
    /// Rows in them.
    pub rows: u64,
}

/// One task's output: everything it wrote, against which manifest version.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Staged {
    /// Message layout version.
    pub format: u32,
    /// The manifest version every task planned against (the write's S0).
    pub manifest_version: u64,
    /// The spec version the rows were partitioned by.
    pub spec_id: i32,
    /// The write's nonce (all messages of one write share it).
    pub nonce: String,
    /// `append`, `overwrite` or `overwrite_all`.
    pub mode: String,
    /// Strong or weak commits.
    pub strong: bool,
    /// Rows staged.
    pub rows: u64,
    /// Partitions written.
    pub parts: Vec<StagedPart>,
}

impl Staged {
    /// Serialises the message (JSON).
    ///
    /// # Errors
    /// `Internal` if serialisation fails.
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        serde_json::to_vec(self).map_err(|e| Error::Internal(format!("staged message: {e}")))
    }

    /// Parses a message made by [`Staged::to_bytes`].
    ///
    /// # Errors
    /// `InvalidArgument` for anything else.
    pub fn from_bytes(b: &[u8]) -> Result<Self> {
        let s: Self = serde_json::from_slice(b)
            .map_err(|e| Error::InvalidArgument(format!("not a staged write message: {e}")))?;
        if s.format != FORMAT {
            return Err(Error::InvalidArgument(format!(
                "staged write message format {} is not supported (expected {FORMAT})",
                s.format
            )));
        }
        Ok(s)
    }
}

fn mode_name(m: Mode) -> &'static str {
    match m {
        Mode::Append => "append",
        Mode::Overwrite => "overwrite",
        Mode::OverwriteAll => "overwrite_all",
    }
}

/// A fresh nonce for one distributed write.
///
/// # Errors
/// `Internal` without a random number source.
pub fn new_nonce() -> Result<String> {
    Ok(format!("{}{}", random_id()?, random_id()?))
}

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
pub fn plan(root: &str, strong: Option<bool>) -> Result<WritePlan> {
    let snap = runtime()?.block_on(Snapshot::load(root, None))?;
    snap.check_writable()?;
    Ok(WritePlan {
        manifest_version: snap.version,
        strong: snap.strong_mode(strong)?,
    })
}

/// The Lance schema a fresh leaf (or a rewritten one) is committed with: the leaf schema with
/// Lance field ids numbered from 0, exactly as a Lance write of that schema numbers them.
fn fresh_lance_schema(leaf: &SchemaRef) -> Result<lance::datatypes::Schema> {
    let mut s = lance::datatypes::Schema::try_from(leaf.as_ref())?;
    s.try_reassign_field_ids(None)?;
    Ok(s)
}

fn same_lance_schema(a: &lance::datatypes::Schema, b: &lance::datatypes::Schema) -> bool {
    a.field_ids() == b.field_ids() && Schema::from(a) == Schema::from(b)
}

/// Stages one task's rows: routes them, writes uncommitted fragments, commits nothing.
///
/// # Errors
/// As [`crate::ns::write::write`] for the input; `NotFound` if `manifest_version` is gone.
pub fn stage(
    root: &str,
    plan: WritePlan,
    nonce: &str,
    input: impl Iterator<Item = Result<RecordBatch>>,
    opts: &WriteOptions,
) -> Result<Staged> {
    if nonce.len() < 16 {
        return Err(Error::InvalidArgument(
            "a staged write needs the write's nonce (new_nonce())".into(),
        ));
    }
    let rt = runtime()?;
    let snap = rt.block_on(Snapshot::load(root, Some(plan.manifest_version)))?;
    snap.check_writable()?;
    let spec = snap.current_spec().clone();
    let mut ids = IdPlan::Derived(nonce.to_string());
    let (parts, rows) = route_input(root, &snap, &spec, input, opts, plan.strong, &mut ids, true)?;
    let fresh = fresh_lance_schema(&leaf_schema(&snap.schema()))?;
    let mut out = Vec::with_capacity(parts.len());
    for p in parts.into_values() {
        let fragments =
            std::mem::take(&mut *p.shared.fragments.lock().unwrap_or_else(|e| e.into_inner()));
        if let Some(s) = p
            .shared
            .schema
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
        {
            // The committer rebuilds this schema; make sure it would be the same one.
            if !same_lance_schema(s, &fresh) {
                return Err(Error::Internal(format!(
                    "a staged leaf schema differs from the committer's ({:?} vs {:?})",
                    s.field_ids(),
                    fresh.field_ids()
                )));
            }
        }
        let rewrite = opts.mode != Mode::Append || p.shared.rewrite.get().copied().unwrap_or(false);
        // NULL is None; every other value is Some (the string form alone maps '' to None).
        let key = p
            .key
            .iter()
            .map(|v| {
                Ok(if v.is_null() {
                    None
                } else {
                    Some(values::to_string(v)?.unwrap_or_default())
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let (object_id, location, path, base) = match p.target {
            Target::Existing {
                object_id,
                location,
                base,
            } => (Some(object_id), location, Vec::new(), base),
            Target::New { location, path } => (None, location, path, None),
        };
        out.push(StagedPart {
            key,
            object_id,
            location,
            path,
            base,
            rewrite,
            fragments,
            rows: p.rows,
        });
    }
    Ok(Staged {
        format: FORMAT,
        manifest_version: plan.manifest_version,
        spec_id: spec.id,
        nonce: nonce.to_string(),
        mode: mode_name(opts.mode).to_string(),
        strong: plan.strong,
        rows,
        parts: out,
    })
}

/// One partition merged from every task's staged output.
struct Merged {
    key: Vec<ScalarValue>,
    target: Target,
    rewrite: bool,
    fragments: Vec<Fragment>,
    rows: u64,
}

/// Commits the staged outputs of one distributed write: every leaf table once, then the
/// manifest once. `opts.mode` and `opts.strong` are taken from the messages.
///
/// # Errors
/// `InvalidArgument` for messages of different writes; `CommitConflict` and the errors of
/// [`crate::ns::write::write`]'s commit.
pub fn commit_staged(root: &str, staged: &[Staged], opts: &WriteOptions) -> Result<WriteSummary> {
    let Some(first) = staged.first() else {
        return Err(Error::InvalidArgument(
            "no staged messages to commit".into(),
        ));
    };
    for s in staged {
        if (s.manifest_version, s.spec_id, &s.nonce, &s.mode, s.strong)
            != (
                first.manifest_version,
                first.spec_id,
                &first.nonce,
                &first.mode,
                first.strong,
            )
        {
            return Err(Error::InvalidArgument(
                "staged messages of different writes cannot be committed together".into(),
            ));
        }
    }
    let mode = Mode::parse(&first.mode)?;
    let opts = WriteOptions {
        mode,
        strong: Some(first.strong),
        write_id: Some(first.nonce.clone()),
        ..opts.clone()
    };
    let rt = runtime()?;
    // The same message passed twice (a retried driver step) counts once.
    let mut seen = HashSet::new();
    let mut unique: Vec<&Staged> = Vec::with_capacity(staged.len());
    for s in staged {
        if seen.insert(s.to_bytes()?) {
            unique.push(s);
        }
    }
    let latest = rt.block_on(Snapshot::load(root, None))?;
    if first.strong && latest.has_write(&first.nonce)? {
        return Ok(WriteSummary {
            manifest_version: latest.version,
            already_committed: true,
            ..Default::default()
        });
    }
    let snap = rt.block_on(Snapshot::load(root, Some(first.manifest_version)))?;
    snap.check_writable()?;
    let spec = snap.current_spec().clone();
    if spec.id != first.spec_id {
        return Err(Error::InvalidArgument(format!(
            "staged against spec {} but manifest version {} has spec {}",
            first.spec_id, first.manifest_version, spec.id
        )));
    }
    let ns_schema = snap.schema();
    let compiled = CompiledSpec::compile(&spec, &ns_schema, false)?;
    let key_types = compiled.output_schema();
    let mut merged: HashMap<Vec<ScalarValue>, Merged> = HashMap::new();
    let mut total_rows = 0u64;
    let mut files_seen: HashSet<&str> = HashSet::new();
    for s in &unique {
        total_rows += s.rows;
        for p in &s.parts {
            for f in p.fragments.iter().flat_map(|f| f.files.iter()) {
                if !files_seen.insert(f.path.as_str()) {
                    return Err(Error::InvalidArgument(format!(
                        "two staged messages name the same data file {:?} (one part staged \
                         twice under different messages?)",
                        f.path
                    )));
                }
            }
            if p.key.len() != key_types.fields().len() {
                return Err(Error::InvalidArgument(format!(
                    "staged partition with {} values for a spec with {} fields",
                    p.key.len(),
                    key_types.fields().len()
                )));
            }
            let key = p
                .key
                .iter()
                .zip(key_types.fields())
                .map(|(v, f)| values::from_string(v.as_deref(), f.data_type()))
                .collect::<Result<Vec<_>>>()?;
            let target = match &p.object_id {
                Some(object_id) => Target::Existing {
                    object_id: object_id.clone(),
                    location: p.location.clone(),
                    base: p.base,
                },
                None => Target::New {
                    location: p.location.clone(),
                    path: p.path.clone(),
                },
            };
            match merged.get_mut(&key) {
                Some(m) => {
                    if target_location(&m.target) != p.location {
                        return Err(Error::Internal(format!(
                            "tasks staged one partition into two tables ({} and {})",
                            target_location(&m.target),
                            p.location
                        )));
                    }
                    m.rewrite |= p.rewrite;
                    m.fragments.extend(p.fragments.iter().cloned());
                    m.rows += p.rows;
                }
                None => {
                    merged.insert(
                        key.clone(),
                        Merged {
                            key,
                            target,
                            rewrite: p.rewrite,
                            fragments: p.fragments.clone(),
                            rows: p.rows,
                        },
                    );
                }
            }
        }
    }
    if !first.strong {
        // Weak mode records no write id: drop the parts an earlier commit of this write
        // already made visible.
        let before = merged.len();
        let done = rt.block_on(weak_committed(root, &latest, &merged))?;
        merged.retain(|k, _| !done.contains(k));
        if before > 0 && merged.is_empty() {
            return Ok(WriteSummary {
                manifest_version: latest.version,
                already_committed: true,
                ..Default::default()
            });
        }
    }
    rt.block_on(verify_staged_files(root, &merged))?;
    let leaf = leaf_schema(&ns_schema);
    let fresh = fresh_lance_schema(&leaf)?;
    let schemas = Schemas {
        ns: Arc::clone(&ns_schema),
        leaf: Arc::clone(&leaf),
    };
    let overwrite = mode != Mode::Append;
    // Appends to leaves written under an older schema: the committer rewrites the old rows
    // once (the tasks only wrote the new ones).
    let parts: Vec<Part> = rt.block_on(async {
        let mut parts = Vec::with_capacity(merged.len());
        for m in merged.into_values() {
            let dataset = OnceCell::new();
            let mut fragments = m.fragments;
            if let Target::Existing { location, base, .. } = &m.target {
                if m.rewrite && !overwrite {
                    let ds = open_at(&crate::ns::join_uri(root, location), *base).await?;
                    let old = read_adapted(&ds, &schemas).await?;
                    if !old.is_empty() {
                        let txn = InsertBuilder::new(Arc::clone(&ds))
                            .with_params(&write_params(WriteMode::Overwrite)?)
                            .execute_uncommitted(old)
                            .await?;
                        let (mut old_frags, _) = op_fragments(txn.operation)?;
                        old_frags.append(&mut fragments);
                        fragments = old_frags;
                    }
                    let _ = dataset.set(ds);
                }
            }
            let schema =
                (m.rewrite || matches!(m.target, Target::New { .. })).then(|| fresh.clone());
            parts.push(Part {
                key: m.key,
                target: m.target,
                buffer: Vec::new(),
                buffered: 0,
                buffered_bytes: 0,
                rows: m.rows,
                shared: Arc::new(PartShared {
                    dataset,
                    fragments: Mutex::new(fragments),
                    schema: Mutex::new(schema),
                    rewrite: OnceCell::new_with(Some(m.rewrite)),
                }),
            });
        }
        Ok::<_, Error>(parts)
    })?;
    let parts: HashMap<Vec<ScalarValue>, Part> =
        parts.into_iter().map(|p| (p.key.clone(), p)).collect();
    let mut summary = commit_parts(root, &spec, parts, first.strong, &opts)?;
    summary.rows = total_rows;
    Ok(summary)
}

/// Fails when a staged data file is gone (for example removed by `cleanup()` with a grace
/// period shorter than the write): committing it would make the partition unreadable.
async fn verify_staged_files(root: &str, merged: &HashMap<Vec<ScalarValue>, Merged>) -> Result<()> {
    use futures::stream::{self, StreamExt, TryStreamExt};
    let (store, base) = ObjectStore::from_uri(root).await?;
    let mut paths = Vec::new();
    for m in merged.values() {
        let dir = base.clone().join(target_location(&m.target)).join("data");
        for f in m.fragments.iter().flat_map(|f| f.files.iter()) {
            let mut p = dir.clone();
            for part in f.path.split('/') {
                p = p.join(part);
            }
            paths.push(p);
        }
    }
    let store = &store;
    let missing: Vec<String> =
        stream::iter(paths.into_iter().map(|p| async move {
            Ok::<_, Error>((!store.exists(&p).await?).then(|| p.to_string()))
        }))
        .buffer_unordered(16)
        .try_filter_map(|m| async move { Ok(m) })
        .try_collect()
        .await?;
    if let Some(first) = missing.first() {
        return Err(Error::CommitConflict(format!(
            "{} staged data file(s) of this write no longer exist (first: {first}); was \
             cleanup() run with a grace period shorter than the write? Nothing was committed; \
             run the write again",
            missing.len()
        )));
    }
    Ok(())
}

/// Weak mode: the partitions of `merged` that an earlier commit of the same write already
/// committed (their first data file is in the leaf's latest version, or the new leaf they
/// created is registered in the manifest).
async fn weak_committed(
    root: &str,
    latest: &Snapshot,
    merged: &HashMap<Vec<ScalarValue>, Merged>,
) -> Result<HashSet<Vec<ScalarValue>>> {
    let registered: HashSet<&str> = latest.leaves.iter().map(|l| l.location.as_str()).collect();
    let mut done = HashSet::new();
    for (key, m) in merged {
        let Some(first) = m.fragments.iter().flat_map(|f| f.files.iter()).next() else {
            continue;
        };
        let committed = match &m.target {
            Target::New { location, .. } => registered.contains(location.as_str()),
            Target::Existing { location, .. } => {
                let ds = open_at(&crate::ns::join_uri(root, location), None).await?;
                ds.get_fragments()
                    .iter()
                    .flat_map(|f| f.metadata().files.iter())
                    .any(|d| d.path == first.path)
            }
        };
        if committed {
            done.insert(key.clone());
        }
    }
    Ok(done)
}

fn target_location(t: &Target) -> &str {
    match t {
        Target::Existing { location, .. } | Target::New { location, .. } => location,
    }
}

/// Computes, per row, a 32-bit hash of the row's partition values under the current spec of
/// one manifest version: the key a distributed write repartitions by (rows of one partition
/// always get the same key; a collision only puts two partitions in the same task).
pub struct KeyHasher {
    compiled: CompiledSpec,
    sources: Vec<String>,
}

impl KeyHasher {
    /// The hasher of the spec current at `manifest_version`.
    ///
    /// # Errors
    /// `NotFound`; `Spec` if the spec does not compile.
    pub fn new(root: &str, manifest_version: u64) -> Result<Self> {
        let snap = runtime()?.block_on(Snapshot::load_with(root, Some(manifest_version), true))?;
        let compiled = CompiledSpec::compile(snap.current_spec(), &snap.schema(), false)?;
        let mut sources = Vec::new();
        for k in 0..snap.current_spec().fields.len() {
            for name in compiled.source_names(k).into_iter().flatten() {
                if !sources.contains(&name) {
                    sources.push(name);
                }
            }
        }
        Ok(Self { compiled, sources })
    }

    /// The columns partition values are computed from (what a key pass needs to read).
    pub fn source_columns(&self) -> &[String] {
        &self.sources
    }

    /// The key of every row of `batch` (columns matched by name, cast to the namespace types
    /// first, so the key never depends on how the input typed them).
    ///
    /// # Errors
    /// `InvalidArgument` for a column that does not cast losslessly.
    pub fn hash(&self, batch: &RecordBatch) -> Result<crate::arrow::array::Int32Array> {
        use crate::arrow::row::{RowConverter, SortField};
        let values = self.compiled.partition_values(batch)?;
        let conv = RowConverter::new(
            values
                .schema()
                .fields()
                .iter()
                .map(|f| SortField::new(f.data_type().clone()))
                .collect(),
        )?;
        let rows = conv.convert_columns(values.columns())?;
        Ok((0..rows.num_rows())
            .map(|i| crate::hash::murmur3_x86_32(rows.row(i).as_ref(), 0x5eed) as i32)
            .collect())
    }
}
