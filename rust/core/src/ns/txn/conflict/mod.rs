//! The conflict rules: how each operation's manifest change is planned again on top of the
//! latest manifest, against the commits that landed since the operation's base version. Each
//! is a [`crate::ns::txn::manifest_commit::ManifestUpdate`] that the retried manifest commit
//! calls at every attempt.
//!
//! - [`write`]: a write's change (adopt, rebase or refuse; see there).
//! - [`delete`]: a delete's change (a partition changed since the base version conflicts).
//! - [`optimize`]: a compaction's change (rebased over appends, compacted again otherwise).
//! - [`index`]: an index build's change (built again from a partition's new version).
//! - [`row_change`]: a merge's or update's change (any partition it read changed since is a
//!   conflict; the operation runs again).
//! - `version_row`: the `table_version` row each of them writes for a leaf version, with the
//!   statistics carried from its base.

pub(crate) mod delete;
pub(crate) mod index;
pub(crate) mod optimize;
pub(crate) mod row_change;
mod version_row;
pub(crate) mod write;

pub(crate) use version_row::{carried_stats, version_row, Added, VersionStats};
