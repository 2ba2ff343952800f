//! How many `table_version` rows the manifest keeps per partition.
//!
//! Every strong-mode commit adds one `table_version` row per partition it changed; a stream
//! committing every minute into the same partition would add half a million rows a year,
//! and every commit and open loads them all. So a commit that adds a partition's row also
//! removes (in the same manifest commit) that partition's oldest rows once it records more
//! than twice [`versions_kept`] versions, keeping the newest `versions_kept` along the
//! partition's chain of versions (each row names the version it was made from). Removing
//! rows changes nothing a reader sees: the partition's `read_version` is on its `table` row,
//! older manifest versions keep their rows (`as_of`, `history()`), and a writer rebasing over
//! versions the manifest no longer records reads what they did from the leaf's own Lance
//! transactions.
//!
//! A row carrying the newest batch id of a stream is never removed (see `write_ids`: it
//! stands for every earlier batch of the stream, so replays stay recognised however long
//! ago they committed). Other write ids are recognised while a row carrying them is kept.
//!
//! The number comes from the root property [`VERSIONS_KEPT_KEY`] (default
//! [`DEFAULT_VERSIONS_KEPT`]; `0` keeps every row).

use std::collections::{HashMap, HashSet};

use crate::error::Result;

use super::compact::whole_number;

use super::format::{TABLE_VERSION, WRITE_ID_KEY};
use super::index::Keys;
use super::versions::TableVersion;
use super::{Row, Snapshot};

/// Root property: the `table_version` rows a commit keeps per partition it changes.
pub const VERSIONS_KEPT_KEY: &str = "lance_partitioned.manifest.versions_kept";

/// The rows kept when [`VERSIONS_KEPT_KEY`] is not set.
pub const DEFAULT_VERSIONS_KEPT: usize = 16;

/// The number of rows the root properties `props` keep per partition (`0`: all).
///
/// # Errors
/// `InvalidArgument` when the property is not a whole number.
pub fn versions_kept(props: &HashMap<String, String>) -> Result<usize> {
    whole_number(
        props,
        VERSIONS_KEPT_KEY,
        DEFAULT_VERSIONS_KEPT,
        "versions (0: keep every table_version row)",
    )
}

/// The object ids of the `table_version` rows of `latest` that a commit adding `new` rows
/// removes (see the module docs).
///
/// # Errors
/// As [`Snapshot::keys`]; `InvalidArgument` for a malformed [`VERSIONS_KEPT_KEY`].
pub fn trimmed_versions(latest: &Snapshot, new: &[Row]) -> Result<Vec<String>> {
    let keep = versions_kept(&latest.root_props.props)?;
    if keep == 0 {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    for row in new.iter().filter(|r| r.object_type == TABLE_VERSION) {
        let Some((table, _)) = row.object_id.rsplit_once('$') else {
            continue;
        };
        // The new row is the newest: keep `keep - 1` more along the chain it extends.
        let base = row.props.get("base_version").and_then(|b| b.parse().ok());
        out.extend(trimmed_of_table(latest, table, base, keep - 1, 2 * keep)?);
    }
    Ok(out)
}

/// The object ids of the `table_version` rows of the leaves `leaves` (indices into
/// `latest.leaves`) beyond the newest [`versions_kept`] along the chain ending at each leaf's
/// read version: what `optimize()` removes from partitions no commit touches any more (a
/// commit keeps up to twice the limit, see the module docs). Rows of stream batches that are
/// their stream's newest stay.
///
/// # Errors
/// As [`trimmed_versions`].
pub fn surplus_versions(latest: &Snapshot, leaves: &[usize]) -> Result<Vec<String>> {
    let keep = versions_kept(&latest.root_props.props)?;
    if keep == 0 {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    for &i in leaves {
        let leaf = &latest.leaves[i];
        out.extend(trimmed_of_table(
            latest,
            &leaf.object_id,
            leaf.read_version,
            keep,
            keep + 1,
        )?);
    }
    Ok(out)
}

/// The object ids of the rows of `table` a trim removes once it holds `from_rows` rows or
/// more: all but the `keep` newest along the chain ending at `head` and the newest batch of
/// each stream.
fn trimmed_of_table(
    latest: &Snapshot,
    table: &str,
    head: Option<u64>,
    keep: usize,
    from_rows: usize,
) -> Result<Vec<String>> {
    let keys = latest.keys()?;
    match keys.versions.get(table) {
        Some(recorded) if recorded.len() >= from_rows => {}
        _ => return Ok(Vec::new()),
    }
    let recorded = latest.table_versions(table)?;
    let newest = newest_first(&recorded, head, keep);
    let write_ids = latest.write_ids()?;
    let mut out = Vec::new();
    for v in &recorded {
        let id = v.props.get(WRITE_ID_KEY).map(String::as_str);
        if newest.contains(&v.version) || id.is_some_and(|i| write_ids.is_newest_batch(i)) {
            continue;
        }
        out.push(version_row_id(keys, table, v.version));
    }
    Ok(out)
}

/// Up to `n` of `recorded`, newest first along the chain that ends at `head`.
fn newest_first(recorded: &[TableVersion], head: Option<u64>, n: usize) -> HashSet<u64> {
    let by_version: HashMap<u64, &TableVersion> = recorded.iter().map(|v| (v.version, v)).collect();
    let mut out = HashSet::new();
    let mut at = head;
    while let Some(v) = at {
        if out.len() == n || !out.insert(v) {
            break;
        }
        at = by_version
            .get(&v)
            .and_then(|t| t.props.get("base_version"))
            .and_then(|b| b.parse().ok());
    }
    out
}

/// The object id of the row recording `version` of `table` (written as `<table>$<version>`,
/// or zero-padded by other tools).
pub fn version_row_id(keys: &Keys, table: &str, version: u64) -> String {
    let own = format!("{table}${version}");
    if keys.row_by_id.contains_key(&own) {
        own
    } else {
        format!("{table}${version:020}")
    }
}
