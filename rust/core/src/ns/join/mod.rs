//! Storage-partitioned joins: [`plan::plan_join`] finds the groups of leaves of two
//! namespaces that join only each other (docs/join.md).

pub mod plan;
#[cfg(test)]
mod tests;

pub use plan::{plan_join, JoinGroup, JoinPlan, JoinSide};
