//! Pure Rust core of lance-partitioned: the vectorised kernels (hashing, transforms,
//! expressions, routing), the partition spec model and the partitioned namespace (manifest,
//! writes and commits, pruning and reads). No Python here; the `rust/python`
//! crate binds this to `lance_partitioned._native`.
//!
//! Arrow and DataFusion are taken from the `lance` crate's re-exports so that one major of
//! each is in the dependency graph.

pub use datafusion_ffi;
pub use lance::deps::datafusion;
pub use lance::deps::datafusion::arrow;

mod conform;
pub mod error;
pub mod expr;
pub mod field_ids;
mod gather;
pub mod hash;
pub mod lineage;
mod mem;
pub mod ns;
mod par;
pub mod route;
pub mod spec;
pub mod transform;
pub mod types;
pub mod values;

pub use error::{Error, Result};
