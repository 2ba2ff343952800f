//! Scalar indexes per partition: `create_index()` declares an index on a column (a root
//! property, [`crate::ns::manifest::IndexDef`]) and builds Lance's B-tree, bitmap or zone map
//! on every leaf; `drop_index()` removes the declaration and the leaves' indexes. Later writes
//! and `optimize()` keep the declared indexes current ([`refresh`]); scans use them through
//! the filter they push into Lance. [`coverage`] reports how much of each index is current.
//!
//! The declaration and the leaves' indexes are two commits: the declaration first, so that a
//! build that fails halfway (or races a write) leaves a declared index that `optimize()` and
//! the next writes complete. Reads are right at every step: rows outside an index are read
//! without it.

pub(crate) mod after_commit;
pub(crate) mod coverage;
pub(crate) mod refresh;

use futures::future::BoxFuture;

use crate::error::{Error, Result};
use crate::field_ids::field_id;
use crate::ns::infra::storage::Storage;
use crate::ns::manifest::{check_index_name, declared_indexes, IndexDef, IndexKind, Snapshot};
use crate::ns::txn::root_commit::{
    commit_root, schema_unchanged, RootChange, RootUpdate, ROOT_ATTEMPTS,
};

pub use coverage::IndexCoverage;
pub use refresh::IndexRefresh;

/// What `create_index()` is asked to do.
#[derive(Debug, Clone)]
pub struct CreateIndexOptions {
    /// The top-level column to index.
    pub column: String,
    /// The kind of index.
    pub kind: IndexKind,
    /// The index name (`<column>_idx` when `None`).
    pub name: Option<String>,
    /// Replace a declaration of the same name on another column or of another kind.
    pub replace: bool,
    /// Leaves indexed at a time.
    pub concurrency: usize,
    /// Manifest commit attempts.
    pub max_attempts: u32,
}

/// Declares the index (see the module docs) and builds it on every leaf; returns the index
/// name and what the build did.
///
/// # Errors
/// `InvalidArgument` for an unknown column, a type no index takes, a bad name, or a name or
/// column already indexed otherwise (without `replace`); `CommitConflict` after too many lost
/// races; `Lance` for I/O errors.
pub(crate) async fn create_index(
    storage: &Storage,
    opts: &CreateIndexOptions,
) -> Result<(String, IndexRefresh)> {
    let name = opts
        .name
        .clone()
        .unwrap_or_else(|| format!("{}_idx", opts.column));
    check_index_name(&name)?;
    let mut declare = Declare { opts, name: &name };
    commit_root(storage, ROOT_ATTEMPTS, &mut declare).await?;
    let refresh = refresh::refresh_indexes(
        storage,
        &refresh::RefreshOptions {
            only: None,
            dropped: Vec::new(),
            concurrency: opts.concurrency,
            max_attempts: opts.max_attempts,
            dry_run: false,
        },
    )
    .await?;
    Ok((name, refresh))
}

/// Removes the declaration of index `name` and its Lance indexes from every leaf.
///
/// # Errors
/// `InvalidArgument` when no index has that name; as [`create_index`].
pub(crate) async fn drop_index(
    storage: &Storage,
    name: &str,
    max_attempts: u32,
) -> Result<IndexRefresh> {
    commit_root(storage, ROOT_ATTEMPTS, &mut Undeclare { name }).await?;
    refresh::refresh_indexes(
        storage,
        &refresh::RefreshOptions {
            only: None,
            dropped: vec![name.to_string()],
            concurrency: refresh::DEFAULT_CONCURRENCY,
            max_attempts,
            dry_run: false,
        },
    )
    .await
}

/// The declaration, planned on the latest manifest.
struct Declare<'a> {
    opts: &'a CreateIndexOptions,
    name: &'a str,
}

impl RootUpdate for Declare<'_> {
    fn plan<'a>(&'a mut self, latest: &'a Snapshot) -> BoxFuture<'a, Result<Option<RootChange>>> {
        Box::pin(async move {
            let schema = latest.schema();
            let column = &self.opts.column;
            let Ok(field) = schema.field_with_name(column) else {
                return Err(Error::InvalidArgument(format!(
                    "column {column:?} is not a top-level column of the namespace schema \
                     (indexes are built on top-level columns)"
                )));
            };
            if !IndexKind::supports(field.data_type()) {
                return Err(Error::InvalidArgument(format!(
                    "column {column:?} is {}: indexes take numbers, strings, booleans, dates, \
                     times, timestamps and decimals",
                    field.data_type()
                )));
            }
            let id = field_id(field)
                .ok_or_else(|| Error::Corrupt(format!("column {column:?} carries no field id")))?;
            let def = IndexDef {
                name: self.name.to_string(),
                field_id: id,
                kind: self.opts.kind,
            };
            let declared = declared_indexes(&latest.root_props.props)?;
            if let Some(other) = declared
                .values()
                .find(|d| d.field_id == id && d.name != def.name)
            {
                return Err(Error::InvalidArgument(format!(
                    "column {column:?} already has index {:?} ({}): drop it first",
                    other.name,
                    other.kind.as_str()
                )));
            }
            match declared.get(self.name) {
                Some(d) if *d == def => return Ok(None), // declared already: build what is missing
                Some(d) if !self.opts.replace => {
                    let on = d.column(&schema).map_or("a dropped column", |f| f.name());
                    return Err(Error::InvalidArgument(format!(
                        "index {:?} exists ({} on {on:?}): pass replace=True to replace it",
                        self.name,
                        d.kind.as_str()
                    )));
                }
                _ => {}
            }
            let (key, value) = def.to_prop()?;
            Ok(Some(vec![(key, Some(value)), schema_unchanged(latest)?]))
        })
    }
}

/// Removing a declaration, planned on the latest manifest.
struct Undeclare<'a> {
    name: &'a str,
}

impl RootUpdate for Undeclare<'_> {
    fn plan<'a>(&'a mut self, latest: &'a Snapshot) -> BoxFuture<'a, Result<Option<RootChange>>> {
        Box::pin(async move {
            let declared = declared_indexes(&latest.root_props.props)?;
            let Some(def) = declared.get(self.name) else {
                let names: Vec<&String> = declared.keys().collect();
                return Err(Error::InvalidArgument(format!(
                    "no index is named {:?} (declared: {names:?})",
                    self.name
                )));
            };
            let (key, _) = def.to_prop()?;
            Ok(Some(vec![(key, None)]))
        })
    }
}
