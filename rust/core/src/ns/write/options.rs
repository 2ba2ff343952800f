//! What a write is asked to do ([`Mode`], [`WriteOptions`]) and what it did ([`WriteSummary`]).

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// How a write treats existing data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Add rows.
    Append,
    /// Replace exactly the partitions the input touches (dynamic partition overwrite).
    Overwrite,
    /// Replace everything: partitions the input does not touch are dropped.
    OverwriteAll,
}

impl Mode {
    /// Parses `append`, `overwrite` or `overwrite_all`.
    ///
    /// # Errors
    /// `InvalidArgument` for anything else.
    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "append" => Ok(Self::Append),
            "overwrite" => Ok(Self::Overwrite),
            "overwrite_all" => Ok(Self::OverwriteAll),
            other => Err(Error::InvalidArgument(format!(
                "mode must be 'append', 'overwrite' or 'overwrite_all', not {other:?}"
            ))),
        }
    }

    /// The name [`Mode::parse`] reads.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Append => "append",
            Self::Overwrite => "overwrite",
            Self::OverwriteAll => "overwrite_all",
        }
    }

    /// Whether the written rows replace a partition's rows.
    pub fn replaces(self) -> bool {
        self != Self::Append
    }
}

/// Default of [`WriteOptions::max_attempts`] and of a delete's attempts: how many lost races
/// a manifest commit retries before it gives up.
pub const DEFAULT_MAX_ATTEMPTS: u32 = 20;

/// Default of [`WriteOptions::max_new_partitions`]: the most partitions one write (one task
/// of a distributed write) may create, like Hive's limit on dynamic partitions per node.
pub const DEFAULT_MAX_NEW_PARTITIONS: usize = 1000;

/// Default of [`WriteOptions::max_rows_per_file`]: rows of one partition buffered before they
/// are written as a file.
pub const MAX_ROWS_PER_FILE: usize = 1 << 20;

/// The rows of the files a compaction of the namespace whose root properties are `props`
/// writes when not told otherwise: its `lance_partitioned.partition.target_rows_per_file`,
/// else [`MAX_ROWS_PER_FILE`].
///
/// # Errors
/// `InvalidArgument` when the property is not a positive whole number.
pub fn compaction_target(props: &std::collections::HashMap<String, String>) -> Result<usize> {
    Ok(crate::ns::manifest::target_rows_per_file(props)?.unwrap_or(MAX_ROWS_PER_FILE))
}

/// Default of [`WriteOptions::concurrency`]: partitions a write (and a commit) writes
/// concurrently on a local disk.
pub const WRITE_CONCURRENCY: usize = 8;

/// Default of [`WriteOptions::max_buffer_bytes`]: the memory budget of a local write's
/// buffers.
pub const WRITE_BUFFER_BYTES: usize = 1 << 30;

/// Options of a write.
#[derive(Debug, Clone)]
pub struct WriteOptions {
    /// Append or overwrite.
    pub mode: Mode,
    /// Strong (detached commits + one manifest commit) or weak (direct commits); `None`
    /// takes the namespace's mode.
    pub strong: Option<bool>,
    /// Rows buffered per partition before a fragment is written.
    pub max_rows_per_file: usize,
    /// Partitions written (and committed) concurrently.
    pub concurrency: usize,
    /// Threads that compute the partition values of one batch and route it (1 inside Spark
    /// tasks); `None`: [`crate::route::auto_threads`].
    pub route_threads: Option<usize>,
    /// Manifest commit attempts before giving up with `CommitConflict`.
    pub max_attempts: u32,
    /// Most partitions one write (one task of a distributed write) may create: a guard
    /// against a spec that makes a partition of almost every row (like Hive's limit on
    /// dynamic partitions per node).
    pub max_new_partitions: usize,
    /// The id of a distributed write (its nonce, or the caller's, such as a stream's
    /// micro-batch): recorded on the `table_version` rows of its strong-mode commit, so that
    /// committing the same write again is a no-op.
    pub write_id: Option<String>,
    /// Memory budget of a write's buffers, in bytes: rows routed but not yet written plus
    /// rows being written. When the routed rows reach half of it, the largest partitions are
    /// written out (a partition may then get more than one file) and the rest compacted;
    /// when the writes in flight reach the other half, routing waits for them.
    pub max_buffer_bytes: usize,
}

impl Default for WriteOptions {
    fn default() -> Self {
        Self {
            mode: Mode::Append,
            strong: None,
            max_rows_per_file: MAX_ROWS_PER_FILE,
            concurrency: WRITE_CONCURRENCY,
            route_threads: None,
            max_attempts: DEFAULT_MAX_ATTEMPTS,
            max_new_partitions: DEFAULT_MAX_NEW_PARTITIONS,
            write_id: None,
            max_buffer_bytes: WRITE_BUFFER_BYTES,
        }
    }
}

/// What a write did.
#[derive(Debug, Clone, Default)]
pub struct WriteSummary {
    /// Rows written.
    pub rows: u64,
    /// Partitions written to.
    pub partitions: u64,
    /// Partitions created.
    pub created: u64,
    /// Partitions dropped (overwrite_all).
    pub dropped: u64,
    /// Data files written.
    pub files: u64,
    /// Bytes written.
    pub bytes: u64,
    /// Manifest version after the commit.
    pub manifest_version: u64,
    /// Manifest commit attempts.
    pub attempts: u32,
    /// Partitions an append rewrote because they were written under an older schema.
    pub rewritten: u64,
    /// Rebases: a partition's fragments re-committed on top of a concurrent commit to it.
    pub rebased: u64,
    /// Partitions a concurrent write created with the same values, into which this write's
    /// rows were copied.
    pub adopted: u64,
    /// The most input bytes the writer held at once (buffered and being written); bounded by
    /// `max_buffer_bytes` plus one input batch, where a batch larger than the whole budget is
    /// routed a quarter of the budget at a time.
    pub peak_buffered_bytes: u64,
    /// The write had already been committed (a repeated commit of a distributed write):
    /// nothing was done.
    pub already_committed: bool,
    /// The partitions written (empty when nothing was committed).
    pub touched: Vec<crate::ns::infra::touched::TouchedPartition>,
    /// The partitions the write left with more small fragments than the namespace's policy
    /// allows (object ids; see `manifest::LEAF_MAX_FRAGMENTS_KEY`).
    pub fragmented: Vec<String>,
    /// Of those, the partitions compacted after the commit.
    pub compacted: u64,
    /// Partitions whose declared indexes were built again after the commit, over the rows
    /// the write added (see `ops::index`).
    pub indexed: u64,
    /// Old manifest versions the namespace's automatic expiry removed after the commit
    /// (see `manifest::auto_expire`).
    pub expired: u64,
    /// The maintenance steps after the commit that failed, each `"<step>: <error>"`
    /// (`compaction`, `indexes`, `expiry`; see `ops::after_commit`). The write is committed
    /// whatever they say.
    pub maintenance_errors: Vec<String>,
}
