//! The partitioned namespace: on-disk format (`__manifest` + one Lance dataset per leaf
//! partition), atomic commits, pruning and snapshot reads.
//!
//! The folders are the layers, top to bottom:
//!
//! 1. [`namespace`]: the `Namespace` handle, the one entry point of every operation (and the
//!    only way to them from outside the crate).
//! 2. [`ops`]: the operations, one home each: `write` (local and distributed), `delete`,
//!    `optimize`, `expire`, `cleanup`, `update_schema`, `evolve`, `repair`, `history`,
//!    `join`. Their option and result types are re-exported there.
//! 3. [`txn`]: transactions, the only commit path to `__manifest` and the leaf tables: leaf
//!    commits, the conflict rules of writes, deletes and compactions (`txn::conflict`), the
//!    atomic manifest commit, root property commits, namespace creation.
//! 4. [`write`]: the partitioning writer (align, route, buffer, write uncommitted fragments)
//!    and the staged parts and messages it hands to `txn`; [`scan`]: pruning through the
//!    manifest and snapshot reads of the leaves. Neither uses the other.
//! 5. [`leaf_io`]: Lance I/O on leaf tables shared by `write`, `txn` and `scan` (write
//!    parameters, leaf schemas, the read rules); it commits nothing. [`manifest`]: the
//!    `__manifest` table: load a snapshot, index it.
//! 6. [`infra`]: storage, the Lance session, ids and table locations, partition values as
//!    text, name checks, version listings, user filters, touched partitions.
//!
//! Field ids (`lance:field_id`, assignment, the largest id ever assigned) live in
//! [`crate::field_ids`], below everything here, with [`crate::spec`] and [`crate::types`].
//!
//! Module dependencies point one way: each layer uses only the layers below it. `ops` uses
//! `txn`, `write`, `scan` and everything under them; `txn` uses `write` only for what a
//! writer hands over (staged parts, their targets, the write options), never the writer
//! itself; `leaf_io` and `manifest` use only `infra`; `infra` uses only itself and the
//! constants below.

pub mod infra;
pub mod leaf_io;
pub mod manifest;
pub mod namespace;
pub mod ops;
pub mod scan;
pub mod txn;
pub mod write;

/// Name of the manifest table under the root.
pub const MANIFEST_DIR: &str = "__manifest";
/// The root's scratch prefix: commit locks (weak mode), cleanup marks, the conditional-write
/// probe. `create()` does not count it when it checks that a location is empty.
pub const SCRATCH_DIR: &str = "_lance_partitioned";
/// Prefix of the typed partition value columns of `__manifest`.
pub const PARTITION_COLUMN_PREFIX: &str = "partition_field_";
/// Prefix of the root property holding spec version `N`.
pub const SPEC_KEY_PREFIX: &str = "partition_spec_v";
/// Root property holding the namespace schema (JsonArrowSchema).
pub const SCHEMA_KEY: &str = "schema";
/// Root property naming the default transaction mode (`strong` or `weak`).
pub const MODE_KEY: &str = "lance_partitioned.transaction_mode";
/// Root property prefix of a running deleting cleanup's fence (`<prefix><nonce>`, see
/// `ops::cleanup::fence`).
pub const CLEANUP_FENCE_PREFIX: &str = "lance_partitioned.cleanup.";
/// Name of the leaf table of every partition.
pub const LEAF_TABLE: &str = "dataset";
pub use crate::field_ids::LEAF_FIELD_ID_KEY;
