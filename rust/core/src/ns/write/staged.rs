//! [`StagedPart`]: what a writer produced for one partition (uncommitted fragments and where
//! they go), the unit a transaction commits.

use std::sync::Arc;

use lance::dataset::Dataset;
use lance::table::format::Fragment;

use crate::arrow::datatypes::{Schema, SchemaRef};
use crate::datafusion::scalar::ScalarValue;
use crate::error::{Error, Result};
use crate::ns::write::target::Target;

/// One partition's uncommitted rows.
#[derive(Debug, Clone)]
pub struct StagedPart {
    /// Partition values (typed as the spec's result types).
    pub key: Vec<ScalarValue>,
    /// The leaf the fragments go to.
    pub target: Target,
    /// Whether the fragments replace the leaf's rows: an overwrite, or an append to a leaf
    /// written under an older schema (the transaction rewrites its old rows first).
    pub rewrite: bool,
    /// The uncommitted fragments.
    pub fragments: Vec<Fragment>,
    /// Rows in them.
    pub rows: u64,
    /// The existing leaf at the version written against, when the writer already opened it
    /// (saves the transaction opening it again).
    pub dataset: Option<Arc<Dataset>>,
}

impl StagedPart {
    /// Data files and bytes of the fragments.
    pub fn data_files(&self) -> (u64, u64) {
        data_files(&self.fragments)
    }
}

/// Data files and bytes of `frags`.
pub(crate) fn data_files(frags: &[Fragment]) -> (u64, u64) {
    let files = frags.iter().map(|f| f.files.len() as u64).sum();
    let bytes = frags
        .iter()
        .flat_map(|f| f.files.iter())
        .filter_map(|d| d.file_size_bytes.get().map(|n| n.get()))
        .sum();
    (files, bytes)
}

/// The Lance schema a fresh leaf (or a rewritten one) is committed with: the leaf schema with
/// Lance field ids numbered from 0, exactly as a Lance write of that schema numbers them.
///
/// # Errors
/// `Lance` for a schema Lance cannot represent.
pub(crate) fn fresh_lance_schema(leaf: &SchemaRef) -> Result<lance::datatypes::Schema> {
    let mut s = lance::datatypes::Schema::try_from(leaf.as_ref())?;
    s.try_reassign_field_ids(None)?;
    Ok(s)
}

/// The transaction commits new and replaced leaves with [`fresh_lance_schema`] (it may run in
/// another process than the writer): the schema Lance chose for the fragments must be that one.
///
/// # Errors
/// `Internal` when they differ.
pub(crate) fn check_fresh_schema(
    written: &lance::datatypes::Schema,
    fresh: &lance::datatypes::Schema,
) -> Result<()> {
    if written.field_ids() == fresh.field_ids() && Schema::from(written) == Schema::from(fresh) {
        return Ok(());
    }
    Err(Error::Internal(format!(
        "a staged leaf schema differs from the committer's ({:?} vs {:?})",
        written.field_ids(),
        fresh.field_ids()
    )))
}
