//! The declared scalar indexes of one leaf table brought up to date, and one `CreateIndex`
//! commit (detached in strong mode) adding the new index segments and removing the ones they
//! replace and those of dropped declarations. Nothing here touches the manifest.
//!
//! - An index missing, on another column or of another kind is built over the whole leaf
//!   (Lance's builder, uncommitted).
//! - An index right in every other way but not covering the fragments written since is
//!   extended (Lance's index optimizer, uncommitted): a segment over the new fragments only is
//!   added while the index has fewer than [`MAX_SEGMENTS`] segments; then every segment is
//!   merged with the new rows into one, so a lookup searches few segments.

use std::sync::Arc;

use lance::dataset::transaction::{Operation, Transaction};
use lance::dataset::Dataset;
use lance::index::optimize::plan_optimize_indices;
use lance::index::{CreateIndexBuilder, DatasetIndexExt};
use lance::table::format::IndexMetadata;
use lance_index::optimize::OptimizeOptions;
use lance_index::scalar::ScalarIndexParams;
use lance_index::IndexType;

use crate::arrow::datatypes::Schema;
use crate::error::Result;
use crate::ns::infra::storage::Storage;
use crate::ns::leaf_io::read_rules::leaf_columns;
use crate::ns::manifest::{IndexDef, IndexKind, LeafVersion};

/// What bringing one leaf's indexes up to date did.
#[derive(Debug, Clone)]
pub(crate) enum IndexOutcome {
    /// Every declared index is current (or the leaf has no rows, or none of the columns).
    Current,
    /// The indexes a dry run would build.
    Planned(Vec<String>),
    /// Built and committed (detached in strong mode) on top of `base`.
    Built {
        base: u64,
        committed: LeafVersion,
        /// The names of the indexes built.
        names: Vec<String>,
    },
}

/// The indexes to keep current and how to commit them.
#[derive(Debug, Clone)]
pub(crate) struct LeafIndexing {
    pub(crate) defs: Vec<IndexDef>,
    /// Names of indexes to remove from the leaf (dropped declarations).
    pub(crate) dropped: Vec<String>,
    /// The namespace schema the declarations' field ids resolve in.
    pub(crate) schema: Arc<Schema>,
    pub(crate) strong: bool,
    pub(crate) dry_run: bool,
}

impl LeafIndexing {
    /// Brings the leaf at `location` as of `version` (the latest for `None`) up to date.
    ///
    /// # Errors
    /// `Lance` for I/O errors or an index Lance cannot build (nothing visible changes then).
    pub(crate) async fn run(
        &self,
        storage: &Storage,
        location: &str,
        version: Option<u64>,
    ) -> Result<IndexOutcome> {
        let ds = storage.open(location, version).await?;
        self.refresh(ds).await
    }

    /// Brings `ds` up to date (see the module docs).
    pub(crate) async fn refresh(&self, ds: Arc<Dataset>) -> Result<IndexOutcome> {
        if ds.fragments().is_empty() {
            return Ok(IndexOutcome::Current);
        }
        let existing = ds.load_indices().await?;
        let leaf_schema = Schema::from(ds.schema());
        let names = leaf_columns(&leaf_schema, &self.schema);
        let mut stale: Vec<(&IndexDef, String, Coverage)> = Vec::new();
        for def in &self.defs {
            let Some(column) = def.column(&self.schema) else {
                continue; // dropped from the namespace schema
            };
            let Some(leaf_name) = names.get(column.name()) else {
                continue; // written before the column existed: nothing to index
            };
            match coverage(&ds, &existing, def, leaf_name) {
                Coverage::Full => {}
                c => stale.push((def, leaf_name.clone(), c)),
            }
        }
        let built_names: Vec<String> = stale.iter().map(|(d, ..)| d.name.clone()).collect();
        let rebuilt: Vec<&String> = stale
            .iter()
            .filter(|(.., c)| *c == Coverage::Wrong)
            .map(|(d, ..)| &d.name)
            .collect();
        let mut removed_indices: Vec<IndexMetadata> = existing
            .iter()
            .filter(|m| rebuilt.contains(&&m.name) || self.dropped.contains(&m.name))
            .cloned()
            .collect();
        if stale.is_empty() && removed_indices.is_empty() {
            return Ok(IndexOutcome::Current);
        }
        if self.dry_run {
            return Ok(IndexOutcome::Planned(built_names));
        }
        let base = ds.version().version;
        let mut work = (*ds).clone();
        let mut new_indices = Vec::with_capacity(stale.len());
        for (def, leaf_name, c) in &stale {
            if let Coverage::Partial { segments } = c {
                let (added, replaced) = extend(&work, &def.name, *segments, &existing).await?;
                new_indices.extend(added);
                removed_indices.extend(replaced);
            } else {
                new_indices.push(build(&mut work, def, leaf_name).await?);
            }
        }
        let op = Operation::CreateIndex {
            new_indices,
            removed_indices,
        };
        let txn = Transaction::new(base, op, None);
        let committed =
            crate::ns::txn::leaf::commit_leaf_transaction(ds, txn, self.strong, |b| b).await?;
        Ok(IndexOutcome::Built {
            base,
            committed,
            names: built_names,
        })
    }
}

/// Segments an index may have before an extension merges them all with the new rows.
pub(crate) const MAX_SEGMENTS: usize = 8;

/// How a leaf's index answers a declaration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Coverage {
    /// On the right column, of the right kind, over every fragment.
    Full,
    /// Right, but some fragments are not covered: extended by them. `segments`: how many
    /// segments the index has now.
    Partial { segments: usize },
    /// Missing, on another column or of another kind: built again.
    Wrong,
}

/// How the leaf's indexes named `def.name` answer `def` on the column `leaf_name` of `ds`.
fn coverage(ds: &Dataset, existing: &[IndexMetadata], def: &IndexDef, leaf_name: &str) -> Coverage {
    let Some(field) = ds.schema().field(leaf_name) else {
        return Coverage::Wrong;
    };
    let segments: Vec<&IndexMetadata> = existing.iter().filter(|m| m.name == def.name).collect();
    if segments.is_empty()
        || segments
            .iter()
            .any(|m| m.fields.first() != Some(&field.id) || index_kind(m) != Some(def.kind))
    {
        return Coverage::Wrong;
    }
    let covered = ds.fragments().iter().all(|f| {
        segments.iter().any(|m| {
            m.fragment_bitmap
                .as_ref()
                .is_some_and(|b| u32::try_from(f.id).is_ok_and(|id| b.contains(id)))
        })
    });
    if covered {
        Coverage::Full
    } else {
        Coverage::Partial {
            segments: segments.len(),
        }
    }
}

/// Extends the index `name` of `ds` over the fragments it does not cover (uncommitted): the
/// new segments, and the segments of `existing` they replace (every segment of the index,
/// once it has [`MAX_SEGMENTS`]; none otherwise).
///
/// # Errors
/// `Lance` for I/O errors or an index Lance cannot extend.
async fn extend(
    ds: &Dataset,
    name: &str,
    segments: usize,
    existing: &[IndexMetadata],
) -> Result<(Vec<IndexMetadata>, Vec<IndexMetadata>)> {
    let merged = if segments >= MAX_SEGMENTS {
        segments
    } else {
        0
    };
    let options = OptimizeOptions::merge(merged).index_names(vec![name.to_string()]);
    let plan = plan_optimize_indices(ds, &options).await?;
    let mut built = Vec::with_capacity(plan.tasks.len());
    for task in &plan.tasks {
        built.extend(task.execute(ds).await?);
    }
    let mut added = Vec::new();
    let mut replaced = Vec::new();
    for merge in &plan.merges {
        if let Some(result) = merge.execute(ds, &built).await? {
            replaced.extend(result.replaces);
            added.push(result.segment);
        }
    }
    let removed = existing
        .iter()
        .filter(|m| replaced.contains(&m.uuid))
        .cloned()
        .collect();
    Ok((added, removed))
}

/// The kind of a Lance index, from its details' type (`None`: not one of ours).
pub(crate) fn index_kind(m: &IndexMetadata) -> Option<IndexKind> {
    let url = m.index_details.as_ref()?.type_url.to_ascii_lowercase();
    IndexKind::ALL
        .into_iter()
        .find(|k| url.contains(&format!("{}indexdetails", k.as_str())))
}

/// Builds `def` over every fragment of `ds` on its column `leaf_name` (uncommitted).
async fn build(ds: &mut Dataset, def: &IndexDef, leaf_name: &str) -> Result<IndexMetadata> {
    let (kind, params) = match def.kind {
        IndexKind::Btree => (IndexType::BTree, ScalarIndexParams::new("btree".into())),
        IndexKind::Bitmap => (IndexType::Bitmap, ScalarIndexParams::new("bitmap".into())),
        IndexKind::Zonemap => (IndexType::ZoneMap, ScalarIndexParams::new("zonemap".into())),
    };
    let meta = CreateIndexBuilder::new(ds, &[leaf_name], kind, &params)
        .name(def.name.clone())
        .replace(true)
        .execute_uncommitted()
        .await?;
    Ok(meta)
}
