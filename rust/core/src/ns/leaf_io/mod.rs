//! Lance I/O on leaf tables that the partitioning writer ([`crate::ns::write`]) and the
//! transactions ([`crate::ns::txn`]) share; it commits nothing.
//!
//! - [`schema`]: the leaf schema, and the Lance schema fresh and rewritten leaves are
//!   committed with.
//! - [`fragments`]: the parameters of every leaf write, the fragments of an uncommitted insert
//!   and their data files.
//! - [`read_rules`]: how a leaf written under any schema version reads as the namespace schema
//!   (used by reads too); [`read`]: a leaf's rows adapted to the current leaf schema.

pub(crate) mod fragments;
pub(crate) mod read;
pub mod read_rules;
pub(crate) mod schema;

pub(crate) use fragments::{data_files, op_fragments, write_params};
pub(crate) use read::read_adapted;
pub use schema::leaf_schema;
pub(crate) use schema::{check_fresh_schema, fresh_lance_schema, Schemas};
