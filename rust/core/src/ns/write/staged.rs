//! [`StagedPart`]: what a writer produced for one partition (uncommitted fragments and where
//! they go), the unit a transaction commits.

use std::sync::Arc;

use lance::dataset::Dataset;
use lance::table::format::Fragment;

use crate::datafusion::scalar::ScalarValue;
use crate::ns::leaf_io::data_files;
use crate::ns::manifest::LeafColumnStats;
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
    /// Column statistics of those rows (`None`: not taken).
    pub stats: Option<LeafColumnStats>,
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
