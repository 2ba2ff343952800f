//! The scalar indexes a namespace declares: one root property per index,
//! `lance_partitioned.index.<name>` = `{"field_id": 3, "kind": "btree"}`. The declaration names
//! the column by field id (a rename keeps the index); every leaf holding that column carries a
//! Lance index of that name and kind, built by `create_index()` and kept current by
//! `optimize()` and by writes (`crate::ns::ops::index`).

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};

use crate::arrow::datatypes::{DataType, Field, Schema};
use crate::error::{Error, Result};
use crate::field_ids::field_id;

/// The root property prefix of index declarations.
pub const INDEX_KEY_PREFIX: &str = "lance_partitioned.index.";

/// The kinds of scalar index a namespace builds on its leaves (Lance's own).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum IndexKind {
    /// A B-tree: range and point lookups on high-cardinality columns.
    Btree,
    /// A bitmap per value: equality and `IN` on low-cardinality columns.
    Bitmap,
    /// Min and max per zone of rows: ranges on data clustered by the column.
    Zonemap,
}

impl IndexKind {
    /// Every kind, in the order errors list them.
    pub const ALL: [IndexKind; 3] = [IndexKind::Btree, IndexKind::Bitmap, IndexKind::Zonemap];

    /// The kind's name (Lance's scalar index type name).
    pub fn as_str(self) -> &'static str {
        match self {
            IndexKind::Btree => "btree",
            IndexKind::Bitmap => "bitmap",
            IndexKind::Zonemap => "zonemap",
        }
    }

    /// Parses a kind name (case-insensitive).
    ///
    /// # Errors
    /// `InvalidArgument` naming the kinds there are.
    pub fn parse(name: &str) -> Result<Self> {
        Self::ALL
            .into_iter()
            .find(|k| k.as_str().eq_ignore_ascii_case(name.trim()))
            .ok_or_else(|| {
                let kinds: Vec<&str> = Self::ALL.iter().map(|k| k.as_str()).collect();
                Error::InvalidArgument(format!(
                    "unknown index kind {name:?}: expected one of {}",
                    kinds.join(", ")
                ))
            })
    }

    /// Whether a column of type `dt` can carry an index (every kind takes the same types:
    /// numbers, strings, booleans, dates, times, timestamps, decimals).
    pub fn supports(dt: &DataType) -> bool {
        use DataType as D;
        dt.is_integer()
            || dt.is_floating()
            || matches!(
                dt,
                D::Utf8
                    | D::LargeUtf8
                    | D::Boolean
                    | D::Date32
                    | D::Date64
                    | D::Timestamp(_, _)
                    | D::Time32(_)
                    | D::Time64(_)
                    | D::Decimal128(_, _)
            )
    }
}

/// One declared index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexDef {
    /// The index name (the Lance index name on every leaf).
    pub name: String,
    /// The field id of the indexed top-level column.
    pub field_id: i32,
    /// The kind.
    pub kind: IndexKind,
}

#[derive(Serialize, Deserialize)]
struct Stored {
    field_id: i32,
    kind: IndexKind,
}

impl IndexDef {
    /// The root property that declares this index.
    ///
    /// # Errors
    /// `Internal` if it does not serialize (it always does).
    pub fn to_prop(&self) -> Result<(String, String)> {
        let stored = Stored {
            field_id: self.field_id,
            kind: self.kind,
        };
        let text = serde_json::to_string(&stored)
            .map_err(|e| Error::Internal(format!("index declaration: {e}")))?;
        Ok((format!("{INDEX_KEY_PREFIX}{}", self.name), text))
    }

    /// The namespace column this index is on (`None` when no column has its field id).
    pub fn column<'a>(&self, schema: &'a Schema) -> Option<&'a Field> {
        schema
            .fields()
            .iter()
            .find(|f| field_id(f) == Some(self.field_id))
            .map(|f| f.as_ref())
    }
}

/// The indexes declared in root properties `props`, by name.
///
/// # Errors
/// `Corrupt` for a malformed declaration.
pub fn declared_indexes(props: &HashMap<String, String>) -> Result<BTreeMap<String, IndexDef>> {
    let mut out = BTreeMap::new();
    for (k, v) in props {
        let Some(name) = k.strip_prefix(INDEX_KEY_PREFIX) else {
            continue;
        };
        let stored: Stored = serde_json::from_str(v)
            .map_err(|e| Error::Corrupt(format!("malformed index declaration {k}: {e}")))?;
        out.insert(
            name.to_string(),
            IndexDef {
                name: name.to_string(),
                field_id: stored.field_id,
                kind: stored.kind,
            },
        );
    }
    Ok(out)
}

/// The namespace property that turns the build after writes off (`"false"`).
pub const INDEXES_ON_WRITE_KEY: &str = "lance_partitioned.indexes_on_write";

/// Whether writes build the declared indexes of the partitions they write (default yes).
///
/// # Errors
/// `InvalidArgument` for a value other than `true` or `false`.
pub fn indexes_on_write(props: &HashMap<String, String>) -> Result<bool> {
    match props.get(INDEXES_ON_WRITE_KEY).map(|v| v.trim()) {
        None | Some("true") => Ok(true),
        Some("false") => Ok(false),
        Some(v) => Err(Error::InvalidArgument(format!(
            "{INDEXES_ON_WRITE_KEY} must be true or false, not {v:?}"
        ))),
    }
}

/// Checks an index name: letters, digits, `_` and `-`, 1 to 128 characters.
///
/// # Errors
/// `InvalidArgument` otherwise.
pub fn check_index_name(name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name.len() <= 128
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if ok {
        Ok(())
    } else {
        Err(Error::InvalidArgument(format!(
            "index name {name:?} must be 1 to 128 letters, digits, '_' or '-'"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn declarations_round_trip() {
        let def = IndexDef {
            name: "id_idx".into(),
            field_id: 7,
            kind: IndexKind::Bitmap,
        };
        let (k, v) = def.to_prop().unwrap();
        assert_eq!(k, "lance_partitioned.index.id_idx");
        let props = HashMap::from([(k, v), ("schema".to_string(), "{}".to_string())]);
        let got = declared_indexes(&props).unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(got["id_idx"], def);
    }

    #[test]
    fn kinds_and_names_are_checked() {
        assert_eq!(IndexKind::parse("BTree").unwrap(), IndexKind::Btree);
        assert!(matches!(
            IndexKind::parse("vector"),
            Err(Error::InvalidArgument(m)) if m.contains("btree, bitmap, zonemap")
        ));
        assert!(check_index_name("a-b_1").is_ok());
        assert!(check_index_name("").is_err());
        assert!(check_index_name("a.b").is_err());
        let props = HashMap::from([(format!("{INDEX_KEY_PREFIX}x"), "{".to_string())]);
        assert!(matches!(declared_indexes(&props), Err(Error::Corrupt(_))));
        assert!(IndexKind::supports(&DataType::Int64));
        assert!(!IndexKind::supports(&DataType::new_list(
            DataType::Int64,
            true
        )));
    }
}
