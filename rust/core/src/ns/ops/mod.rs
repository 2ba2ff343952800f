//! The operations on a namespace, one home each. Outside the crate they are reached only
//! through the [`crate::ns::namespace::Namespace`] handle; their entry points here are
//! crate-private. The option and result types they take and return are public, re-exported
//! below.
//!
//! - [`write`]: a local write (partitioning writer, then one transaction) and a distributed
//!   one ([`write::distributed`]: plan, stage in tasks, commit the messages).
//! - [`delete`]: drop covered partitions, delete rows inside the others.
//! - [`optimize`]: compact the small files of partitions, in one atomic commit.
//! - [`expire`]: remove old manifest versions and what only they read.
//! - [`cleanup`]: remove what failed writes left behind.
//! - [`update_schema`]: schema evolution by field id ([`update_schema::rules`]: what a change
//!   may do), committed as a root property change.
//! - [`evolve`]: add a partition spec version.
//! - [`sort_order`]: the order writers give the rows of each file.
//! - [`repair`]: add back manifest columns another tool dropped.
//! - [`index`]: scalar indexes per partition (`create_index`, `drop_index`), kept current by
//!   writes and `optimize()`.
//! - [`history`]: what each manifest version's commit did.
//! - [`tags`]: names for manifest versions, which `expire()` keeps.
//! - [`merge`]: row-level changes by key (`merge_insert`): update, delete, insert, in one
//!   atomic commit.
//! - [`join`]: storage-partitioned joins of two namespaces (`docs/join.md`).
//!
//! - [`after_commit`]: the maintenance a write or a merge runs after its commit.
//!
//! Every change commits through the transaction layer ([`crate::ns::txn`]), where the
//! conflict rules of writes, deletes and compactions live too ([`crate::ns::txn::conflict`]).

pub(crate) mod after_commit;
pub(crate) mod cleanup;
pub(crate) mod delete;
pub(crate) mod evolve;
pub(crate) mod expire;
pub(crate) mod history;
pub(crate) mod index;
pub(crate) mod join;
pub(crate) mod merge;
pub(crate) mod optimize;
pub(crate) mod repair;
pub(crate) mod sort_order;
pub(crate) mod tags;
pub(crate) mod update_schema;
pub(crate) mod write;

pub use after_commit::Maintenance;
pub use cleanup::{CleanupSummary, RETENTION_FLOOR};
pub use delete::DeleteSummary;
pub use expire::{ExpireOptions, ExpireSummary};
pub use index::{CreateIndexOptions, IndexCoverage, IndexRefresh};
pub use join::{JoinGroup, JoinHow, JoinPlan, JoinRequest, JoinStream, PreparedJoin};
pub use merge::{
    MergeClauses, MergeExplain, MergeMessage, MergeSource, MergeSummary, MergedPartition,
    WhenMatched, WhenNotMatched, WhenNotMatchedBySource,
};
pub use optimize::{OptimizeOptions, OptimizeSummary};
pub use write::distributed::WritePlan;
// The write's types are defined with the partitioning writer, which takes them too.
pub use crate::ns::write::{
    Mode, StagedMessage, WriteOptions, WriteSummary, DEFAULT_MAX_ATTEMPTS,
    DEFAULT_MAX_NEW_PARTITIONS,
};
