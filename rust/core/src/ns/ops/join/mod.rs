//! Storage-partitioned joins (docs/join.md): [`plan::plan_join`] finds the groups of leaves of
//! two namespaces that join only each other; [`execute::PreparedJoin`] runs them, group by
//! group.

pub(crate) mod execute;
mod hash;
mod key_map;
mod layout;
pub(crate) mod plan;
mod request;
mod side;
#[cfg(test)]
mod tests;
mod unique;
#[cfg(test)]
mod unique_tests;

pub use execute::{JoinStream, PreparedJoin};
pub(crate) use plan::{plan_join, JoinSide};
pub use plan::{JoinGroup, JoinPlan};
pub use request::{JoinHow, JoinRequest};
