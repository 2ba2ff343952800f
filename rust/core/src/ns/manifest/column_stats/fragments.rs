//! Statistics of groups of a leaf version's fragments: each group is the fragments one change
//! added (a write's rows in that partition, a merge's new rows), with the statistics of those
//! rows. A read skips the fragments of a group whose statistics rule the filter out, inside a
//! leaf its own statistics keep: a partition appended to by a stream of micro-batches keeps
//! each batch's bounds apart instead of one range over them all.
//!
//! A version's groups are carried from its base version's: the base's groups keep their
//! fragments still present, the change's new fragments form a group of their own, the
//! fragments a compaction wrote in place of some of the base's form a group with the merged
//! statistics of the groups those held ([`Rewritten`]: a stream compacted into several files
//! keeps each file's span of the stream), and the fragments that are none of these (the rows
//! of a base without groups) take the base version's leaf statistics, which bound every row
//! it held. A fragment in no
//! group has unknown statistics and is always read. Like the leaf's, a group's statistics are
//! conservative (rows deleted since still count), so they can keep a fragment without a
//! matching row, never skip one with a match.
//!
//! The recorded form is bounded: past [`MAX_GROUPS`] groups the two neighbouring groups of
//! fewest rows are merged (their bounds widened), and a version of more than [`MAX_FRAGMENTS`] fragments records none
//! (`optimize` compacts such a partition).

use std::collections::{BTreeSet, HashMap};

use serde_json::{json, Value};

use super::LeafColumnStats;

/// The `table_version` property holding the statistics of the version's fragment groups.
pub const FRAGMENT_STATS_KEY: &str = "fragment_stats";

/// Version of the recorded form; other versions are ignored (read as no groups).
const FORMAT: u64 = 1;

/// Groups recorded at most; past it, two neighbours are merged into one. Each group holds
/// the statistics of every column, so this bounds the size of a version row (and every
/// retained version has its row).
pub const MAX_GROUPS: usize = 8;

/// Fragments a version may have for its groups to be recorded.
pub const MAX_FRAGMENTS: usize = 4096;

/// The fragments one change added to a leaf, and the statistics of their rows.
#[derive(Debug, Clone, PartialEq)]
pub struct FragmentGroup {
    /// Lance fragment ids of the version, ascending.
    pub ids: Vec<u64>,
    /// Statistics of the rows the group's fragments were written with.
    pub stats: LeafColumnStats,
}

/// Fragments a compaction wrote (`new`: ids in the version it made) in place of fragments of
/// its base version (`old`: ids in the base). Lance's compaction and ours write only rows of
/// the old fragments into the new ones, so the old fragments' statistics bound the new.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rewritten {
    /// The base version's fragments rewritten.
    pub old: Vec<u64>,
    /// The fragments written in their place.
    pub new: Vec<u64>,
}

/// The fragment groups of one leaf version: disjoint, ordered by their first fragment id.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FragmentStats {
    /// The groups.
    pub groups: Vec<FragmentGroup>,
}

impl FragmentStats {
    /// Adds the groups to the properties of the version's `table_version` row.
    pub fn record(&self, props: &mut HashMap<String, String>) {
        props.insert(FRAGMENT_STATS_KEY.to_string(), self.to_json());
    }

    /// The groups recorded in `props`; `None` when there are none, or in a form this release
    /// does not read (the leaf's fragments are then all read).
    #[must_use]
    pub fn recorded(props: &HashMap<String, String>) -> Option<Self> {
        Self::from_json(props.get(FRAGMENT_STATS_KEY)?)
    }

    /// The recorded form (JSON): fragment ids as ranges (a change's fragments are numbered
    /// one after the other).
    #[must_use]
    pub fn to_json(&self) -> String {
        let groups: Vec<Value> = self
            .groups
            .iter()
            .map(|g| json!({"ids": ranges(&g.ids), "stats": g.stats.to_value()}))
            .collect();
        json!({"format": FORMAT, "groups": groups}).to_string()
    }

    /// Groups from [`Self::to_json`]'s form; `None` for anything else (also for groups that
    /// overlap or list more than [`MAX_FRAGMENTS`] fragments).
    #[must_use]
    pub fn from_json(text: &str) -> Option<Self> {
        let v: Value = serde_json::from_str(text).ok()?;
        if v.get("format")?.as_u64()? != FORMAT {
            return None;
        }
        let mut seen = 0usize;
        let mut groups = Vec::new();
        for g in v.get("groups")?.as_array()? {
            let mut ids = Vec::new();
            for r in g.get("ids")?.as_array()? {
                let (lo, hi) = (r.get(0)?.as_u64()?, r.get(1)?.as_u64()?);
                let n = usize::try_from(hi.checked_sub(lo)?).ok()?.checked_add(1)?;
                seen = seen.checked_add(n)?;
                if seen > MAX_FRAGMENTS {
                    return None;
                }
                ids.extend(lo..=hi);
            }
            let stats = LeafColumnStats::from_value(g.get("stats")?)?;
            groups.push(FragmentGroup { ids, stats });
        }
        let all: BTreeSet<u64> = groups.iter().flat_map(|g| g.ids.iter().copied()).collect();
        (all.len() == seen).then_some(Self { groups })
    }

    /// The groups of a version whose fragments are `present`, made from a base version with
    /// groups `base` and leaf statistics `base_leaf` by a change that added the fragments
    /// `added` (their rows' statistics, `None` when unknown) and compacted the fragments of
    /// `rewritten`. `None` when there is nothing to record: no group, or one group holding
    /// every fragment (the leaf's statistics say as much), or more than [`MAX_FRAGMENTS`]
    /// fragments.
    #[must_use]
    pub fn carried(
        base: Option<&Self>,
        base_leaf: Option<&LeafColumnStats>,
        present: &[u64],
        (added, added_stats): (&[u64], Option<&LeafColumnStats>),
        rewritten: &[Rewritten],
    ) -> Option<Self> {
        if present.len() > MAX_FRAGMENTS {
            return None;
        }
        let present: BTreeSet<u64> = present.iter().copied().collect();
        let added: BTreeSet<u64> = added
            .iter()
            .copied()
            .filter(|i| present.contains(i))
            .collect();
        // Fragments placed in a group, or added with unknown statistics (in no group).
        let mut placed = added.clone();
        let mut groups = Vec::new();
        for g in base.map(|b| b.groups.as_slice()).unwrap_or_default() {
            let ids: Vec<u64> = g
                .ids
                .iter()
                .copied()
                .filter(|i| present.contains(i) && !placed.contains(i))
                .collect();
            if !ids.is_empty() {
                placed.extend(&ids);
                groups.push(FragmentGroup {
                    ids,
                    stats: g.stats.clone(),
                });
            }
        }
        for r in rewritten {
            let ids: Vec<u64> = r
                .new
                .iter()
                .copied()
                .filter(|i| present.contains(i) && !placed.contains(i))
                .collect();
            let Some(stats) = bounds_of(base, base_leaf, &r.old) else {
                continue; // left to the rest
            };
            if !ids.is_empty() {
                placed.extend(&ids);
                let mut ids = ids;
                ids.sort_unstable();
                groups.push(FragmentGroup { ids, stats });
            }
        }
        if let (Some(s), false) = (added_stats, added.is_empty()) {
            groups.push(FragmentGroup {
                ids: added.iter().copied().collect(),
                stats: s.clone(),
            });
        }
        // The rest held only rows of the base version (a compaction rewrote them, or the base
        // recorded no groups): its leaf statistics bound them.
        let rest: Vec<u64> = present.difference(&placed).copied().collect();
        let mut unknown = added_stats.is_none() && !added.is_empty();
        match base_leaf {
            Some(s) if !rest.is_empty() => groups.push(FragmentGroup {
                ids: rest,
                stats: s.clone(),
            }),
            _ => unknown |= !rest.is_empty(),
        }
        groups.sort_by_key(|g| g.ids.first().copied());
        while groups.len() > MAX_GROUPS {
            merge_smallest_neighbours(&mut groups);
        }
        (groups.len() + usize::from(unknown) >= 2).then_some(Self { groups })
    }
}

/// Statistics bounding the rows of the base version's fragments `old`: the merge of the
/// groups holding them, with the base's leaf statistics when one is in no group (`None`
/// when that is unknown too, or `old` is empty).
fn bounds_of(
    base: Option<&FragmentStats>,
    base_leaf: Option<&LeafColumnStats>,
    old: &[u64],
) -> Option<LeafColumnStats> {
    let groups = base.map(|b| b.groups.as_slice()).unwrap_or_default();
    let mut holding: Vec<&LeafColumnStats> = Vec::new();
    for id in old {
        let stats = match groups.iter().find(|g| g.ids.binary_search(id).is_ok()) {
            Some(g) => &g.stats,
            None => base_leaf?,
        };
        if !holding.iter().any(|h| std::ptr::eq(*h, stats)) {
            holding.push(stats);
        }
    }
    let (first, rest) = holding.split_first()?;
    Some(
        rest.iter()
            .fold((*first).clone(), |acc, s| LeafColumnStats::merge(&acc, s)),
    )
}

/// Merges the two neighbouring groups (by fragment id, so by age) that cover the fewest rows
/// together: groups stay of like sizes, so a partition written by a long stream keeps bounds
/// over spans of like length rather than one over all but the newest writes.
fn merge_smallest_neighbours(groups: &mut Vec<FragmentGroup>) {
    let Some(i) = (0..groups.len().saturating_sub(1)).min_by_key(|&i| {
        groups[i]
            .stats
            .rows
            .saturating_add(groups[i + 1].stats.rows)
    }) else {
        return;
    };
    let newer = groups.remove(i + 1);
    let older = &mut groups[i];
    older.stats = LeafColumnStats::merge(&older.stats, &newer.stats);
    older.ids.extend(newer.ids);
    older.ids.sort_unstable();
}

/// Ascending `ids` as `[first, last]` runs of consecutive ids.
fn ranges(ids: &[u64]) -> Vec<[u64; 2]> {
    let mut out: Vec<[u64; 2]> = Vec::new();
    for &i in ids {
        match out.last_mut() {
            Some(r) if r[1].checked_add(1) == Some(i) => r[1] = i,
            _ => out.push([i, i]),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arrow::datatypes::DataType;
    use crate::datafusion::scalar::ScalarValue;
    use crate::ns::manifest::ColumnStats;

    fn stats(lo: i64, hi: i64, rows: u64) -> LeafColumnStats {
        let c = ColumnStats {
            data_type: DataType::Int64,
            min: Some(ScalarValue::Int64(Some(lo))),
            max: Some(ScalarValue::Int64(Some(hi))),
            nulls: 0,
            nans: 0,
        };
        LeafColumnStats {
            rows,
            columns: [(1, c)].into_iter().collect(),
        }
    }

    #[test]
    fn an_append_on_a_base_without_groups_makes_two() {
        let base = stats(0, 9, 10);
        let new = stats(100, 109, 10);
        let s = FragmentStats::carried(None, Some(&base), &[0, 1, 2], (&[2], Some(&new)), &[]);
        let s = s.expect("two groups");
        assert_eq!(s.groups.len(), 2);
        assert_eq!(s.groups[0].ids, vec![0, 1]);
        assert_eq!(s.groups[0].stats, base);
        assert_eq!(s.groups[1].ids, vec![2]);
        assert_eq!(FragmentStats::from_json(&s.to_json()), Some(s));
    }

    #[test]
    fn one_group_over_every_fragment_is_not_recorded() {
        let new = stats(1, 2, 3);
        assert_eq!(
            FragmentStats::carried(None, None, &[0, 1], (&[0, 1], Some(&new)), &[]),
            None
        );
    }

    #[test]
    fn unknown_added_fragments_stay_out_of_every_group() {
        let base = stats(0, 9, 10);
        let s =
            FragmentStats::carried(None, Some(&base), &[0, 1], (&[1], None), &[]).expect("kept");
        assert_eq!(s.groups.len(), 1);
        assert_eq!(s.groups[0].ids, vec![0]);
    }

    #[test]
    fn removed_fragments_leave_their_groups_and_many_groups_merge() {
        let mut cur: Option<FragmentStats> = None;
        let mut leaf = stats(0, 0, 1);
        let mut present = vec![0u64];
        for k in 1..=(MAX_GROUPS as i64 + 5) {
            let new = stats(k * 10, k * 10 + 9, 10);
            present.push(k as u64);
            cur = FragmentStats::carried(
                cur.as_ref(),
                Some(&leaf),
                &present,
                (&[k as u64], Some(&new)),
                &[],
            );
            leaf = LeafColumnStats::merge(&leaf, &new);
        }
        let s = cur.expect("groups");
        assert_eq!(s.groups.len(), MAX_GROUPS);
        let all: Vec<u64> = s.groups.iter().flat_map(|g| g.ids.clone()).collect();
        assert_eq!(all, present);
        // Neighbours of fewest rows merge: groups stay of like sizes.
        let most = 2 * present.len() / MAX_GROUPS;
        assert!(s.groups.iter().all(|g| g.ids.len() <= most), "{s:?}");
        // Each group's bounds hold the writes it merged.
        for g in &s.groups {
            let c = &g.stats.columns[&1];
            let lo = g
                .ids
                .iter()
                .map(|&k| if k == 0 { 0 } else { k as i64 * 10 })
                .min();
            assert_eq!(c.min, lo.map(|v| ScalarValue::Int64(Some(v))));
        }
        // A delete removed fragment 3: no group lists it any more.
        present.retain(|&i| i != 3);
        let after = FragmentStats::carried(Some(&s), Some(&leaf), &present, (&[], None), &[]);
        let after = after.expect("groups");
        assert!(after.groups.iter().all(|g| !g.ids.contains(&3)));
    }

    #[test]
    fn a_compaction_keeps_the_spans_of_the_groups_it_rewrote() {
        // Six writes of ten rows, each a group; a compaction rewrites 0-2 into 6 and 3-5
        // into 7, then an append adds 8.
        let mut cur: Option<FragmentStats> = None;
        let mut leaf = stats(0, 9, 10);
        let mut present = vec![0u64];
        for k in 1..6u64 {
            let new = stats(k as i64 * 10, k as i64 * 10 + 9, 10);
            present.push(k);
            cur = FragmentStats::carried(
                cur.as_ref(),
                Some(&leaf),
                &present,
                (&[k], Some(&new)),
                &[],
            );
            leaf = LeafColumnStats::merge(&leaf, &new);
        }
        let base = cur.expect("groups");
        let rewritten = [
            Rewritten {
                old: vec![0, 1, 2],
                new: vec![6],
            },
            Rewritten {
                old: vec![3, 4, 5],
                new: vec![7],
            },
        ];
        let s = FragmentStats::carried(Some(&base), Some(&leaf), &[6, 7], (&[], None), &rewritten)
            .expect("two groups");
        assert_eq!(s.groups.len(), 2);
        assert_eq!(s.groups[0].ids, vec![6]);
        assert_eq!(
            s.groups[0].stats.columns[&1].min,
            Some(ScalarValue::Int64(Some(0)))
        );
        assert_eq!(
            s.groups[0].stats.columns[&1].max,
            Some(ScalarValue::Int64(Some(29)))
        );
        assert_eq!(
            s.groups[1].stats.columns[&1].min,
            Some(ScalarValue::Int64(Some(30)))
        );
        assert_eq!(
            s.groups[1].stats.columns[&1].max,
            Some(ScalarValue::Int64(Some(59)))
        );
        assert_eq!(s.groups[0].stats.rows + s.groups[1].stats.rows, 60);
        // A rewrite of a fragment in no group takes the leaf's bounds; without them, the new
        // fragment is in no group (read always).
        let half = FragmentStats::carried(None, Some(&leaf), &[3, 6], (&[], None), &rewritten[..1])
            .expect("two groups");
        assert_eq!(half.groups[1].stats, leaf);
        let unknown = FragmentStats::carried(
            Some(&base),
            None,
            &[6, 9],
            (&[], None),
            &[Rewritten {
                old: vec![0, 42],
                new: vec![9],
            }],
        );
        assert!(unknown.is_none_or(|u| u.groups.iter().all(|g| !g.ids.contains(&9))));
    }

    #[test]
    fn malformed_forms_are_ignored() {
        for text in [
            "{}",
            r#"{"format":2,"groups":[]}"#,
            r#"{"format":1,"groups":[{"ids":[[5,1]],"stats":{}}]}"#,
            r#"{"format":1,"groups":[{"ids":[[0,99999999]],"stats":{}}]}"#,
        ] {
            assert_eq!(FragmentStats::from_json(text), None, "{text}");
        }
        let s = stats(0, 1, 2).to_value();
        let overlapping = json!({"format": 1, "groups": [
            {"ids": [[0, 2]], "stats": s}, {"ids": [[2, 3]], "stats": s}]});
        assert_eq!(FragmentStats::from_json(&overlapping.to_string()), None);
    }
}
