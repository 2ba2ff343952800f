//! How much of each declared index is current at one manifest version: per index, the
//! partitions holding its column and the rows in them, and how many of those an index of
//! the declared kind on the right column covers (rows outside it are read without it).

use futures::stream::{self, StreamExt, TryStreamExt};

use crate::arrow::datatypes::Schema;
use crate::error::Result;
use crate::ns::leaf_io::read_rules::leaf_columns;
use crate::ns::manifest::{declared_indexes, Snapshot};
use crate::ns::txn::leaf_index::index_kind;
use lance::index::DatasetIndexExt;

/// Leaves opened at a time.
const CONCURRENCY: usize = 16;

/// The coverage of one declared index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexCoverage {
    /// The index name.
    pub name: String,
    /// The indexed column's current name (`None`: the column was dropped).
    pub column: Option<String>,
    /// The kind (`btree`, `bitmap`, `zonemap`).
    pub kind: String,
    /// Partitions holding the column.
    pub partitions: u64,
    /// Of those, partitions whose every row the index covers.
    pub partitions_indexed: u64,
    /// Rows (stored, deleted ones included) of the partitions holding the column.
    pub rows: u64,
    /// Of those, rows the index covers.
    pub rows_indexed: u64,
}

/// The coverage of every declared index at `snap` (by name).
///
/// # Errors
/// `Lance` when a leaf cannot be opened; `Corrupt` for a malformed declaration.
pub(crate) async fn index_coverage(snap: &Snapshot) -> Result<Vec<IndexCoverage>> {
    let defs: Vec<_> = declared_indexes(&snap.root_props.props)?
        .into_values()
        .collect();
    let schema = snap.schema();
    let mut out: Vec<IndexCoverage> = defs
        .iter()
        .map(|d| IndexCoverage {
            name: d.name.clone(),
            column: d.column(&schema).map(|f| f.name().clone()),
            kind: d.kind.as_str().to_string(),
            partitions: 0,
            partitions_indexed: 0,
            rows: 0,
            rows_indexed: 0,
        })
        .collect();
    if defs.is_empty() {
        return Ok(out);
    }
    let per_leaf: Vec<Vec<Option<(u64, u64)>>> = stream::iter(snap.leaves.iter().map(|leaf| {
        let (defs, schema) = (&defs, &schema);
        async move {
            let ds = snap.storage.open(&leaf.location, leaf.read_version).await?;
            let indexes = ds.load_indices().await?;
            let names = leaf_columns(&Schema::from(ds.schema()), schema);
            let counts = defs
                .iter()
                .map(|d| {
                    let leaf_name = names.get(d.column(schema)?.name())?;
                    let field = ds.schema().field(leaf_name)?;
                    let segments: Vec<_> = indexes
                        .iter()
                        .filter(|m| {
                            m.name == d.name
                                && m.fields.first() == Some(&field.id)
                                && index_kind(m) == Some(d.kind)
                        })
                        .collect();
                    let (mut rows, mut covered) = (0u64, 0u64);
                    for f in ds.fragments().iter() {
                        let n = f.physical_rows.unwrap_or(0) as u64;
                        rows += n;
                        let id = u32::try_from(f.id).ok();
                        let hit = segments.iter().any(|m| {
                            m.fragment_bitmap
                                .as_ref()
                                .zip(id)
                                .is_some_and(|(b, id)| b.contains(id))
                        });
                        if hit {
                            covered += n;
                        }
                    }
                    Some((rows, covered))
                })
                .collect();
            Ok::<_, crate::error::Error>(counts)
        }
    }))
    .buffered(CONCURRENCY)
    .try_collect()
    .await?;
    for counts in per_leaf {
        for (cov, c) in out.iter_mut().zip(counts) {
            let Some((rows, covered)) = c else { continue };
            cov.partitions += 1;
            cov.partitions_indexed += u64::from(covered == rows);
            cov.rows += rows;
            cov.rows_indexed += covered;
        }
    }
    Ok(out)
}
