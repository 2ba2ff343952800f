//! The shuffle key of a clustered distributed write: a 32-bit hash of each row's partition
//! values, so that Spark can bring every partition's rows to one task.

use crate::arrow::array::RecordBatch;
use crate::error::Result;
use crate::ns::infra::storage::Storage;
use crate::ns::manifest::Snapshot;
use crate::spec::CompiledSpec;

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
    pub async fn new(storage: &Storage, manifest_version: u64) -> Result<Self> {
        let snap = Snapshot::load_with(storage, Some(manifest_version), true).await?;
        let compiled = CompiledSpec::compile(snap.current_spec(), &snap.schema(), false)?;
        let mut sources = Vec::new();
        for k in 0..snap.current_spec().fields.len() {
            for path in compiled.source_paths(k).into_iter().flatten() {
                if let Some(top) = path.into_iter().next() {
                    if !sources.contains(&top) {
                        sources.push(top);
                    }
                }
            }
        }
        Ok(Self { compiled, sources })
    }

    /// The top-level columns partition values are computed from (what a key pass needs to
    /// read; the whole struct for a source inside one).
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
