//! The partitioned namespace: on-disk format (`__manifest` + one Lance dataset per leaf
//! partition), atomic commits, pruning and snapshot reads.
//!
//! - [`namespace`]: the `Namespace` handle, the entry point of every operation.
//! - [`session`]: the shared Lance session of the process (fork-aware).
//! - [`ids`]: random namespace ids and table locations (`docs/design.md`, "Namespace ids and
//!   table locations").
//! - [`values`]: partition values as strings (`partition.<field_id>` properties, from which a
//!   manifest stripped of its partition columns is rebuilt; `docs/design.md`, "Manifest
//!   columns other tools drop").
//! - [`naming`]: which column and partition field names a namespace accepts.
//! - [`manifest`]: the `__manifest` table: create, load a snapshot, index it.
//! - [`write`]: the partitioning writer (route, buffer, write fragments), local and
//!   distributed writes.
//! - [`txn`]: transactions: leaf commits, conflict resolution, the atomic manifest commit.
//! - [`delete`]: drop covered partitions, delete rows inside the others.
//! - [`optimize`]: compact the small files of partitions, in one atomic commit.
//! - [`expire`]: remove old manifest versions and what only they read.
//! - [`cleanup`]: remove what failed writes left behind; `cleanup_marks`: when deleting
//!   cleanups ran, so commits check their staged files only when one could have removed them.
//! - [`filter`]: user filters, parsed and validated once for every entry point.
//! - [`touched`]: the partitions a write or delete touched, with their values as text (for
//!   lineage).
//! - [`scan`]: pruning through the manifest and snapshot reads of the leaves.
//! - [`schema`]: schema evolution by field id, and the read rules (how a leaf written under
//!   any schema version reads as the namespace schema).
//!
//! Field ids (`lance:field_id`, assignment, the largest id ever assigned) live in
//! [`crate::field_ids`], below everything here.
//!
//! Module dependencies point one way: each layer uses only the layers below it.
//! 1. `write`, `txn`, `delete`, `optimize`, `expire`, `cleanup`: the entry points. Within
//!    this layer `txn` uses `write` (staged parts, fragment writes), `delete`, `optimize`,
//!    `expire` and `cleanup` use `txn` (the manifest and root commits, the commit point), and
//!    `write` uses none of them.
//! 2. `scan`.
//! 3. `schema`: a schema update loads and commits a manifest snapshot, so `schema` uses
//!    `manifest`, never the other way round. Its `read_rules` (used by `scan` and the writers)
//!    use neither.
//! 4. `manifest`.
//! 5. `ids` (uses `values`), `values`, `naming`, `filter`, `session`; below the namespace, [`crate::field_ids`],
//!    [`crate::spec`] and [`crate::types`].

pub mod cleanup;
pub(crate) mod cleanup_marks;
pub mod delete;
pub mod expire;
pub mod filter;
pub mod ids;
pub mod join;
pub mod manifest;
pub mod namespace;
pub mod naming;
pub mod optimize;
pub mod scan;
pub mod schema;
pub mod session;
pub mod storage;
pub mod touched;
pub mod txn;
pub mod values;
pub(crate) mod versions;
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
/// `cleanup::fence`).
pub const CLEANUP_FENCE_PREFIX: &str = "lance_partitioned.cleanup.";
/// Name of the leaf table of every partition.
pub const LEAF_TABLE: &str = "dataset";
pub use crate::field_ids::LEAF_FIELD_ID_KEY;
