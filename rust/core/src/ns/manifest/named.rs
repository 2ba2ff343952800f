//! What one version of the manifest names: its table rows (location, read version) and its
//! `table_version` rows, read with only the columns that hold them. `expire()` and
//! `cleanup()` go through every version of the manifest this way.

use lance::dataset::Dataset;

use crate::arrow::array::{Array, AsArray};
use crate::arrow::compute::cast;
use crate::arrow::datatypes::{DataType, UInt64Type};
use crate::error::Result;

use super::format::{required_string, scan_rows};
use super::{LOCATION, OBJECT_ID, OBJECT_TYPE, READ_VERSION, TABLE, TABLE_VERSION};

/// A `table` or `table_version` row of one manifest version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamedTable {
    pub object_id: String,
    /// `true` for a `table_version` row.
    pub is_version: bool,
    /// The table's directory (table rows only), without a trailing `/`.
    pub location: Option<String>,
    pub read_version: Option<u64>,
}

/// The `table` and `table_version` rows of `ds` (one version of the manifest).
///
/// # Errors
/// `Corrupt` without our columns; `Lance` for I/O errors.
pub async fn named_tables(ds: &Dataset) -> Result<Vec<NamedTable>> {
    let has_rv = ds.schema().field(READ_VERSION).is_some();
    let mut cols = vec![OBJECT_ID, LOCATION, OBJECT_TYPE];
    if has_rv {
        cols.push(READ_VERSION);
    }
    let filter = format!("{OBJECT_TYPE} = '{TABLE}' OR {OBJECT_TYPE} = '{TABLE_VERSION}'");
    let batch = scan_rows(ds, &cols, &filter).await?;
    let ids = required_string(&batch, OBJECT_ID)?;
    let locs = required_string(&batch, LOCATION)?;
    let types = required_string(&batch, OBJECT_TYPE)?;
    let rvs = match batch.column_by_name(READ_VERSION) {
        Some(c) => Some(cast(c, &DataType::UInt64)?),
        None => None,
    };
    let rvs = rvs.as_ref().map(|c| c.as_primitive::<UInt64Type>());
    Ok((0..batch.num_rows())
        .map(|r| NamedTable {
            object_id: ids.value(r).to_string(),
            is_version: types.value(r) == TABLE_VERSION,
            location: (!locs.is_null(r)).then(|| locs.value(r).trim_end_matches('/').to_string()),
            read_version: rvs.and_then(|c| (!c.is_null(r)).then(|| c.value(r))),
        })
        .collect())
}
