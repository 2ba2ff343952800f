//! Scalar indexes per partition: what `create_index()`/`drop_index()` did (`IndexResult`) and
//! how much of each declared index is current (`IndexInfo`).

use lance_partitioned_core::ns::ops::{IndexCoverage, IndexRefresh};
use pyo3::prelude::*;

/// What building (or dropping) an index did.
#[pyclass(module = "lance_partitioned._native", frozen, eq, get_all)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexResult {
    /// The index name.
    pub name: String,
    /// Partitions whose leaf got a new version (indexes built or removed).
    pub partitions: u64,
    /// Indexes built, over all partitions.
    pub indexes_built: u64,
    /// Partitions indexed again because a concurrent commit changed them.
    pub rebuilt: u64,
    /// The `__manifest` version after the commit (unchanged when nothing was committed).
    pub manifest_version: u64,
    /// Manifest commit attempts.
    pub attempts: u32,
}

#[pymethods]
impl IndexResult {
    fn __repr__(&self) -> String {
        format!(
            "IndexResult(name={:?}, partitions={}, indexes_built={}, rebuilt={}, \
             manifest_version={})",
            self.name, self.partitions, self.indexes_built, self.rebuilt, self.manifest_version
        )
    }
}

impl IndexResult {
    pub(crate) fn of(name: String, r: &IndexRefresh) -> Self {
        Self {
            name,
            partitions: r.partitions,
            indexes_built: r.indexes_built,
            rebuilt: r.rebuilt,
            manifest_version: r.manifest_version,
            attempts: r.attempts,
        }
    }
}

/// One declared index and how much of it is current.
#[pyclass(module = "lance_partitioned._native", frozen, eq, get_all)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexInfo {
    /// The index name.
    pub name: String,
    /// The indexed column (`None`: dropped from the schema).
    pub column: Option<String>,
    /// `btree`, `bitmap` or `zonemap`.
    pub kind: String,
    /// Partitions holding the column.
    pub partitions: u64,
    /// Of those, partitions whose every row the index covers.
    pub partitions_indexed: u64,
    /// Rows of the partitions holding the column.
    pub rows: u64,
    /// Of those, rows the index covers (the others are read without it).
    pub rows_indexed: u64,
}

#[pymethods]
impl IndexInfo {
    fn __repr__(&self) -> String {
        format!(
            "IndexInfo(name={:?}, column={:?}, kind={:?}, partitions_indexed={}/{}, \
             rows_indexed={}/{})",
            self.name,
            self.column,
            self.kind,
            self.partitions_indexed,
            self.partitions,
            self.rows_indexed,
            self.rows
        )
    }
}

impl From<IndexCoverage> for IndexInfo {
    fn from(c: IndexCoverage) -> Self {
        Self {
            name: c.name,
            column: c.column,
            kind: c.kind,
            partitions: c.partitions,
            partitions_indexed: c.partitions_indexed,
            rows: c.rows,
            rows_indexed: c.rows_indexed,
        }
    }
}
