//! Which fragments the compaction after a write holds back, so that a stream's rows are not
//! rewritten again and again.
//!
//! A stream appends one small fragment per micro-batch; when a partition passes its fragment
//! limit, compacting every small fragment (as `optimize()` does) rewrites the partition's
//! growing partial file each time: a file of up to `target` rows for every `limit` commits,
//! which is what the slowest commits of a stream pay. The compaction after a write instead
//! rewrites only the newest run of fragments in which each older fragment has at most
//! [`RATIO`] times the live rows of all the newer ones in the run: a fragment is rewritten
//! only together with at least half as many new rows, so its size at least grows by half
//! each time it is (size-tiered compaction, as LSM trees do it). Every fragment before the
//! run is held back.
//!
//! The ratio is chosen by a model of the rule (`benches/compaction_tiers_model.py`): over
//! 10,000 micro-batches of 1,000 rows into one partition (limit 32, target 1,000,000 rows),
//! against compacting every small fragment, 35 million rows rewritten instead of 160 million,
//! the second-largest rewrite of each 100 commits 52,000 rows on average instead of 505,000,
//! and at most 4 extra fragments left after a compaction (a ratio of 1 leaves up to 32, so
//! compacts half again as often; 4 rewrites half again as many rows).

use lance::table::format::Fragment;

/// How many times the newer fragments' rows an older fragment may hold and still be
/// rewritten with them.
pub(crate) const RATIO: u64 = 2;

/// The ids of the fragments of `fragments` (in the dataset's order, oldest first) to leave
/// out of the compaction after a write, for files of `target` rows: every fragment before
/// the newest run (see the module docs). None when that run is shorter than two fragments,
/// which would compact nothing while the partition stays past its limit: then every small
/// fragment is compacted, as `optimize()` does.
pub(crate) fn held_back(fragments: &[Fragment], target: u64) -> Vec<u32> {
    let mut newer = 0u64;
    let mut run = 0usize;
    for f in fragments.iter().rev() {
        let rows = live_rows(std::slice::from_ref(f));
        if rows >= target || (run > 0 && rows > RATIO.saturating_mul(newer)) {
            break;
        }
        newer += rows;
        run += 1;
    }
    if run < 2 {
        return Vec::new();
    }
    let older = &fragments[..fragments.len() - run];
    older
        .iter()
        .filter_map(|f| u32::try_from(f.id).ok())
        .collect()
}

/// Rows of `fragments` not deleted.
pub(crate) fn live_rows(fragments: &[Fragment]) -> u64 {
    fragments
        .iter()
        .map(|f| {
            let deleted = f
                .deletion_file
                .as_ref()
                .and_then(|d| d.num_deleted_rows)
                .unwrap_or(0);
            f.physical_rows.unwrap_or(0).saturating_sub(deleted) as u64
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frags(rows: &[usize]) -> Vec<Fragment> {
        rows.iter()
            .enumerate()
            .map(|(id, &n)| {
                let mut f = Fragment::new(id as u64 + 10);
                f.physical_rows = Some(n);
                f
            })
            .collect()
    }

    #[test]
    fn a_large_partial_file_waits_until_the_new_rows_are_half_its_size() {
        // 31 micro-batches of 1,000 rows after a partial file of 100,000: held back.
        let mut rows = vec![100_000];
        rows.extend([1_000; 31]);
        assert_eq!(held_back(&frags(&rows), 1_000_000), vec![10]);
        // 50,000 new rows: 100,000 <= 2 x 50,000, rewritten with them.
        let mut rows = vec![100_000];
        rows.extend([1_000; 50]);
        assert_eq!(held_back(&frags(&rows), 1_000_000), Vec::<u32>::new());
    }

    #[test]
    fn tiers_stop_at_the_first_fragment_too_large_for_the_newer_rows() {
        // Each of 20k, 60k and 150k is at most twice the rows after it; 500k is more than
        // twice 240k: it and everything older (the small 5k too) stay.
        let rows = [5_000, 500_000, 150_000, 60_000, 20_000, 5_000, 5_000];
        assert_eq!(held_back(&frags(&rows), 1_000_000), vec![10, 11]);
        // With 480k, exactly twice the newer rows, the whole tail is one run.
        let rows = [480_000, 150_000, 60_000, 20_000, 5_000, 5_000];
        assert_eq!(held_back(&frags(&rows), 1_000_000), Vec::<u32>::new());
        // A full file ends the run too.
        let rows = [1_000, 1_000_000, 1_000, 1_000];
        assert_eq!(held_back(&frags(&rows), 1_000_000), vec![10, 11]);
    }

    #[test]
    fn deleted_rows_do_not_count_and_a_run_of_one_holds_nothing_back() {
        let mut fs = frags(&[10_000, 2_000, 1_000]);
        // 10,000 physical rows of which 6,000 deleted: 4,000 live <= 2 x 3,000 (the
        // physical 10,000 would be held back).
        fs[0].deletion_file = Some(lance::table::format::DeletionFile {
            read_version: 1,
            id: 1,
            file_type: lance::table::format::DeletionFileType::Array,
            num_deleted_rows: Some(6_000),
            base_id: None,
        });
        assert_eq!(held_back(&fs, 1_000_000), Vec::<u32>::new());
        assert_eq!(
            held_back(&frags(&[10_000, 2_000, 1_000]), 1_000_000),
            vec![10]
        );
        // The newest fragment alone after a large one: compact everything instead.
        assert_eq!(
            held_back(&frags(&[500_000, 1_000]), 1_000_000),
            Vec::<u32>::new()
        );
        assert_eq!(held_back(&frags(&[]), 1_000_000), Vec::<u32>::new());
    }
}
