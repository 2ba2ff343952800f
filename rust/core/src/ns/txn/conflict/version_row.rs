//! The `table_version` row a commit writes for each leaf version it makes: what the version
//! did (`operation`, `base_version`, rows), its totals, and its statistics for pruning, carried
//! from the version it was made from ([`carried_stats`]).

use std::collections::HashMap;

use crate::error::Result;
use crate::ns::manifest::{
    FragmentStats, LeafColumnStats, LeafVersion, Rewritten, Row, Snapshot, ROWS_KEY, TABLE_VERSION,
};

/// What a version row records for pruning: the leaf's column statistics and its fragment
/// groups (`None` when unknown, or nothing to record).
#[derive(Debug, Default)]
pub(crate) struct VersionStats {
    pub(crate) leaf: Option<LeafColumnStats>,
    pub(crate) fragments: Option<FragmentStats>,
}

impl VersionStats {
    /// Statistics of a version whose every row this change wrote (no groups: one would hold
    /// every fragment).
    pub(crate) fn written(leaf: Option<&LeafColumnStats>) -> Self {
        Self {
            leaf: leaf.cloned(),
            fragments: None,
        }
    }
}

/// The rows a change added to a leaf version: their statistics (`None`: unknown), their
/// count and the ids the version gave their fragments.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Added<'a> {
    pub(crate) stats: Option<&'a LeafColumnStats>,
    pub(crate) rows: u64,
    pub(crate) ids: &'a [u64],
}

impl Added<'_> {
    /// A change that added no rows (a delete, a compaction, an index build).
    pub(crate) const NONE: Added<'static> = Added {
        stats: None,
        rows: 0,
        ids: &[],
    };
}

/// The `table_version` row recording `version` of `table`, made by `operation` from `base`;
/// `rows` are the rows it wrote (appended, rewritten) or deleted, for `history()`, `totals`
/// what the version holds, for `stats()`, and `stats` its column statistics and fragment
/// groups, for pruning.
pub(crate) fn version_row(
    table: &str,
    leaf: &LeafVersion,
    (operation, base): (&str, Option<u64>),
    rows: u64,
    stats: &VersionStats,
) -> Row {
    let mut props = HashMap::from([
        ("operation".to_string(), operation.to_string()),
        (ROWS_KEY.to_string(), rows.to_string()),
    ]);
    leaf.totals.record(&mut props);
    if let Some(s) = &stats.leaf {
        s.record(&mut props);
    }
    if let Some(g) = &stats.fragments {
        g.record(&mut props);
    }
    if let Some(b) = base {
        props.insert("base_version".into(), b.to_string());
    }
    Row {
        object_id: format!("{table}${}", leaf.version),
        object_type: TABLE_VERSION.into(),
        location: None,
        props,
        read_version: Some(leaf.version),
        values: Vec::new(),
    }
}

/// The statistics of `committed`, a version of `table` made from its version `base` (as
/// `latest` records it) by a change that removed rows or `added` some: the base's column
/// statistics widened by the added rows' (`None` when the base has none recorded or the added
/// rows' are unknown), and the base's fragment groups carried, with the added fragments as a
/// group of their own and the fragments a compaction wrote (`rewritten`) bounded by those
/// they replace ([`FragmentStats::carried`]).
///
/// # Errors
/// `Corrupt` for a malformed `table_version` row.
pub(crate) fn carried_stats(
    latest: &Snapshot,
    table: &str,
    base: Option<u64>,
    committed: &LeafVersion,
    added: Added<'_>,
    rewritten: &[Rewritten],
) -> Result<VersionStats> {
    let Some(base) = base else {
        return Ok(VersionStats::default());
    };
    // One row parsed, not the partition's every version row: this runs on every commit.
    let Some(recorded) = latest.table_version(table, base)? else {
        return Ok(VersionStats::default());
    };
    let prev = LeafColumnStats::recorded(&recorded.props);
    let leaf = match (&prev, added.rows) {
        (Some(p), 0) => Some(p.clone()),
        (Some(p), _) => added.stats.map(|a| LeafColumnStats::merge(p, a)),
        (None, _) => None,
    };
    let fragments = FragmentStats::carried(
        FragmentStats::recorded(&recorded.props).as_ref(),
        prev.as_ref(),
        &committed.fragment_ids(),
        (added.ids, added.stats),
        rewritten,
    );
    Ok(VersionStats { leaf, fragments })
}
