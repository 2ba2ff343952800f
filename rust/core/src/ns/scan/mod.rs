//! Reads: partition pruning through the manifest ([`prune()`]), then snapshot reads of the
//! kept leaves at their `read_version`s ([`scan()`]), following the read rules (namespace type
//! wins and is cast to; a column missing from a leaf reads as NULL; a leaf column unknown to
//! the namespace is ignored; an impossible cast is an error; see
//! [`crate::ns::leaf_io::read_rules`]).
//!
//! - `prune`: the user filter as one manifest predicate per spec version (`display`: its
//!   text, literals in their string form);
//! - `stats_prune`: then skipping kept leaves whose column statistics rule the filter out;
//! - `read`: the streaming read of the kept leaves;
//! - `index_probe`: before a kept leaf is scanned, whether its scalar indexes rule the
//!   filter's equalities out;
//! - `provider`, `exec`: the namespace as a DataFusion table and its execution plan.

mod display;
mod exec;
mod index_probe;
mod never_true;
mod prune;
mod prune_expr;
pub(crate) use prune_expr::other_zero;
mod provider;
mod read;
mod stats_prune;

pub use crate::ns::infra::filter::{evaluate_mask, Filter, FilterInput};
pub use exec::ScanRecord;
pub use provider::NamespaceTable;
pub use prune::{prune, Pruned, SpecPlan};
pub use read::{read_leaves, scan, ScanIter, ScanOptions};
pub use stats_prune::fragments_skipped;
