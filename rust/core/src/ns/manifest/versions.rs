//! The `table_version` rows of a snapshot: indexed by table when the writers' lookups are
//! built ([`VersionRow`]: version and row only), their properties parsed only for the tables
//! that need them ([`Snapshot::table_versions`]).

use std::collections::HashMap;

use super::format::{parse_props, string_column, METADATA};
use super::Snapshot;
use crate::arrow::array::Array;
use crate::error::Result;

/// A `<table>$<version>` row: the version it records and its row in [`Snapshot::batch`] (its
/// properties are parsed on demand: [`Snapshot::table_versions`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VersionRow {
    /// The version.
    pub version: u64,
    /// The row.
    pub row: usize,
}

/// A recorded table version (`<table>$<version>` row) with its properties.
#[derive(Debug, Clone)]
pub struct TableVersion {
    /// The version.
    pub version: u64,
    /// Its properties (`operation`, `base_version`).
    pub props: HashMap<String, String>,
}

impl Snapshot {
    /// The recorded versions of table `table` with their properties (none in a light
    /// snapshot).
    ///
    /// # Errors
    /// As [`Snapshot::keys`]; `Corrupt` for malformed properties.
    pub fn table_versions(&self, table: &str) -> Result<Vec<TableVersion>> {
        let Some(rows) = self.keys()?.versions.get(table) else {
            return Ok(Vec::new());
        };
        rows.iter().map(|v| self.table_version_at(*v)).collect()
    }

    /// The recorded version `version` of table `table` with its properties, parsing that row
    /// only (`None` when it is not recorded).
    ///
    /// # Errors
    /// As [`Snapshot::table_versions`].
    pub fn table_version(&self, table: &str, version: u64) -> Result<Option<TableVersion>> {
        let rows = self.keys()?.versions.get(table);
        let found = rows.and_then(|r| r.iter().find(|v| v.version == version));
        found.map(|v| self.table_version_at(*v)).transpose()
    }

    fn table_version_at(&self, v: VersionRow) -> Result<TableVersion> {
        let props = match string_column(&self.batch, METADATA)? {
            Some(m) if !m.is_null(v.row) => parse_props(Some(m.value(v.row)))?,
            _ => HashMap::new(),
        };
        Ok(TableVersion {
            version: v.version,
            props,
        })
    }
}
