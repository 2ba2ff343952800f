//! The schemas of leaf tables: the leaf schema (the namespace schema with the namespace field
//! ids under their own key), and the Lance schema fresh and rewritten leaves are committed with.

use std::sync::Arc;

use crate::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use crate::error::{Error, Result};
use crate::ns::LEAF_FIELD_ID_KEY;
use crate::types::FIELD_ID_KEY;

/// The schemas a flush needs.
#[derive(Clone)]
pub(crate) struct Schemas {
    /// The namespace schema.
    pub(crate) ns: SchemaRef,
    /// The leaf schema new data is written with.
    pub(crate) leaf: SchemaRef,
}

/// The schema leaf tables are written with: the namespace schema with the namespace field id
/// kept under [`LEAF_FIELD_ID_KEY`] (Lance numbers its own field ids).
pub fn leaf_schema(ns: &Schema) -> SchemaRef {
    fn convert(f: &Field) -> Field {
        let mut md = f.metadata().clone();
        if let Some(id) = md.remove(FIELD_ID_KEY) {
            md.insert(LEAF_FIELD_ID_KEY.to_string(), id);
        }
        let f = f.clone().with_metadata(md);
        match f.data_type() {
            DataType::Struct(children) => {
                let kids: Vec<Field> = children.iter().map(|c| convert(c)).collect();
                f.clone().with_data_type(DataType::Struct(kids.into()))
            }
            _ => f,
        }
    }
    Arc::new(Schema::new(
        ns.fields().iter().map(|f| convert(f)).collect::<Vec<_>>(),
    ))
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
