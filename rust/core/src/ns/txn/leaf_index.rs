//! The declared scalar indexes of one leaf table brought up to date: every declared index
//! whose Lance index on the leaf is missing, on another column, of another kind, or does not
//! cover every fragment is built again over the whole leaf (Lance's builder, uncommitted), and
//! one `CreateIndex` commit (detached in strong mode) adds the new indexes and removes the
//! ones they replace and those of dropped declarations. Nothing here touches the manifest.

use std::sync::Arc;

use lance::dataset::transaction::{Operation, Transaction};
use lance::dataset::Dataset;
use lance::index::{CreateIndexBuilder, DatasetIndexExt};
use lance::table::format::IndexMetadata;
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
        let mut stale: Vec<(&IndexDef, String)> = Vec::new();
        for def in &self.defs {
            let Some(column) = def.column(&self.schema) else {
                continue; // dropped from the namespace schema
            };
            let Some(leaf_name) = names.get(column.name()) else {
                continue; // written before the column existed: nothing to index
            };
            if !is_current(&ds, &existing, def, leaf_name) {
                stale.push((def, leaf_name.clone()));
            }
        }
        let built_names: Vec<String> = stale.iter().map(|(d, _)| d.name.clone()).collect();
        let removed_indices: Vec<IndexMetadata> = existing
            .iter()
            .filter(|m| built_names.contains(&m.name) || self.dropped.contains(&m.name))
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
        for (def, leaf_name) in &stale {
            new_indices.push(build(&mut work, def, leaf_name).await?);
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

/// Whether the leaf's indexes named `def.name` are on `leaf_name`, of `def.kind`, and cover
/// every fragment of `ds`.
fn is_current(ds: &Dataset, existing: &[IndexMetadata], def: &IndexDef, leaf_name: &str) -> bool {
    let Some(field) = ds.schema().field(leaf_name) else {
        return false;
    };
    let segments: Vec<&IndexMetadata> = existing.iter().filter(|m| m.name == def.name).collect();
    if segments.is_empty()
        || segments
            .iter()
            .any(|m| m.fields.first() != Some(&field.id) || index_kind(m) != Some(def.kind))
    {
        return false;
    }
    ds.fragments().iter().all(|f| {
        segments.iter().any(|m| {
            m.fragment_bitmap
                .as_ref()
                .is_some_and(|b| u32::try_from(f.id).is_ok_and(|id| b.contains(id)))
        })
    })
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
