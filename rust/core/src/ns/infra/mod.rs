//! The infrastructure every layer of the namespace stands on.
//!
//! - [`storage`]: where a namespace lives (root URI, object store, Lance store parameters).
//! - [`session`]: the shared Lance session of the process (fork-aware).
//! - [`opened`]: leaf datasets opened for reading at a fixed version, kept for the process.
//! - [`ids`]: random namespace ids and table locations (`docs/design.md`, "Namespace ids and
//!   table locations").
//! - [`values`]: partition values as strings (`partition.<field_id>` properties, from which a
//!   manifest stripped of its partition columns is rebuilt; `docs/design.md`, "Manifest
//!   columns other tools drop").
//! - [`naming`]: which column and partition field names a namespace accepts.
//! - [`versions`]: listing and opening the versions of a table while an `expire()` may be
//!   removing some.
//! - [`filter`]: user filters, parsed and validated once for every entry point.
//! - [`touched`]: the partitions a write or delete touched, with their values as text (for
//!   lineage).

pub mod filter;
pub mod ids;
pub mod naming;
pub mod opened;
pub mod session;
pub mod storage;
pub mod touched;
pub mod values;
pub(crate) mod versions;
