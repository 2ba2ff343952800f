//! Grouping rows and computing their destinations on several threads, over contiguous chunks
//! of rows, with results identical to the one-thread [`group_rows`] and [`destinations`].
//!
//! - Grouping: every chunk is grouped on its own thread (local ids in the chunk's order of
//!   first appearance). The local groups' first rows, listed chunk by chunk, are grouped once
//!   more by [`group_rows`] itself: listed in that order, their order of first appearance is
//!   the whole batch's, so the second grouping numbers the groups exactly as one pass over the
//!   batch would, with the same notion of equal keys. Each chunk then maps its local ids to
//!   those.
//! - Destinations: a stable counting sort whose histogram is taken per chunk; a group's rows
//!   from chunk `c` start after its rows from the chunks before `c`.

use crate::arrow::array::{ArrayRef, UInt32Array};
use crate::arrow::compute::take;
use crate::error::Result;
use crate::par::on_threads;

use super::group::{group_rows, Grouping};
use super::reorder::destinations;

/// Fewest rows a chunk gets: below that, a thread costs more than it saves.
const MIN_CHUNK_ROWS: usize = 1 << 16;

/// Contiguous row ranges of at least [`MIN_CHUNK_ROWS`], one per thread.
fn chunks(len: usize, threads: usize) -> Vec<(usize, usize)> {
    crate::par::chunks(len, threads, MIN_CHUNK_ROWS)
}

/// [`group_rows`] on up to `threads` threads; the same result.
///
/// # Errors
/// As [`group_rows`].
pub fn group_rows_with_threads(keys: &[ArrayRef], threads: usize) -> Result<Grouping> {
    let len = keys.first().map_or(0, |k| k.len());
    let ranges = chunks(len, threads);
    // One chunk, or input group_rows refuses (with its error).
    if ranges.len() == 1 || len > u32::MAX as usize || keys.iter().any(|k| k.len() != len) {
        return group_rows(keys);
    }
    let locals = on_threads(ranges.clone(), |(start, end)| {
        let sliced: Vec<ArrayRef> = keys.iter().map(|k| k.slice(start, end - start)).collect();
        group_rows(&sliced)
    })?
    .into_iter()
    .collect::<Result<Vec<_>>>()?;
    // The first row of every local group, chunk by chunk: grouped again, in this order.
    let firsts: Vec<u32> = ranges
        .iter()
        .zip(&locals)
        .flat_map(|(&(start, _), g)| g.first_row.iter().map(move |&r| start as u32 + r))
        .collect();
    let firsts = UInt32Array::from(firsts);
    let first_keys = keys
        .iter()
        .map(|k| take(k.as_ref(), &firsts, None))
        .collect::<std::result::Result<Vec<_>, _>>()?;
    let merged = group_rows(&first_keys)?;
    let first_row = merged
        .first_row
        .iter()
        .map(|&i| firsts.value(i as usize))
        .collect();
    // Local id -> global id, per chunk; then every row's id, each chunk on its own thread.
    let mut group_of_row = vec![0u32; len];
    let mut jobs = Vec::with_capacity(locals.len());
    let mut rest = group_of_row.as_mut_slice();
    let mut listed = 0;
    for local in &locals {
        let (mine, tail) = rest.split_at_mut(local.group_of_row.len());
        rest = tail;
        let global = &merged.group_of_row[listed..listed + local.num_groups()];
        listed += local.num_groups();
        jobs.push((mine, local, global));
    }
    on_threads(jobs, |(out, local, global)| {
        for (o, &l) in out.iter_mut().zip(&local.group_of_row) {
            *o = global[l as usize];
        }
    })?;
    Ok(Grouping {
        group_of_row,
        first_row,
    })
}

/// [`destinations`] on up to `threads` threads; the same result.
///
/// # Errors
/// `Internal` if a thread fails.
pub fn destinations_with_threads(g: &Grouping, threads: usize) -> Result<(Vec<u32>, Vec<usize>)> {
    let len = g.group_of_row.len();
    let ranges = chunks(len, threads);
    if ranges.len() == 1 {
        return Ok(destinations(g));
    }
    let n = g.num_groups();
    let rows = |(start, end): (usize, usize)| &g.group_of_row[start..end];
    // Rows of every group in every chunk.
    let counts = on_threads(ranges.clone(), |r| {
        let mut count = vec![0u32; n];
        for &c in rows(r) {
            count[c as usize] += 1;
        }
        count
    })?;
    let mut offsets = vec![0usize; n + 1];
    for count in &counts {
        for (o, &c) in offsets[1..].iter_mut().zip(count) {
            *o += c as usize;
        }
    }
    for i in 0..n {
        offsets[i + 1] += offsets[i];
    }
    // Where each chunk's rows of each group start: the group's offset plus the rows it has
    // in the chunks before.
    let mut starts = Vec::with_capacity(counts.len());
    let mut next: Vec<u32> = offsets[..n].iter().map(|&o| o as u32).collect();
    for count in &counts {
        starts.push(next.clone());
        for (s, &c) in next.iter_mut().zip(count) {
            *s += c;
        }
    }
    let mut dest = vec![0u32; len];
    let mut jobs = Vec::with_capacity(ranges.len());
    let mut rest = dest.as_mut_slice();
    for (&r, pos) in ranges.iter().zip(starts) {
        let (mine, tail) = rest.split_at_mut(r.1 - r.0);
        rest = tail;
        jobs.push((mine, r, pos));
    }
    on_threads(jobs, |(out, r, mut pos)| {
        for (o, &c) in out.iter_mut().zip(rows(r)) {
            let p = &mut pos[c as usize];
            *o = *p;
            *p += 1;
        }
    })?;
    Ok((dest, offsets))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use proptest::prelude::*;

    use super::*;
    use crate::arrow::array::{Float64Array, Int32Array, StringArray};

    fn keys(a: &[Option<u8>], b: &[i32], f: &[f64]) -> Vec<ArrayRef> {
        let s: StringArray = a.iter().map(|v| v.map(|x| format!("k{}", x % 5))).collect();
        vec![
            Arc::new(s),
            Arc::new(Int32Array::from(b.to_vec())),
            Arc::new(Float64Array::from(f.to_vec())),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]
        /// Over several chunks (rows above MIN_CHUNK_ROWS), the threaded grouping and
        /// destinations equal the one-thread ones, NULLs and -0.0/0.0 included.
        #[test]
        fn threads_change_nothing(
            seed in any::<u64>(),
            len in (MIN_CHUNK_ROWS * 2)..(MIN_CHUNK_ROWS * 5),
            threads in 2usize..6,
            spread in 1u64..40,
        ) {
            let mut x = seed | 1;
            let mut next = || { x ^= x << 13; x ^= x >> 7; x ^= x << 17; x };
            let mut a = Vec::with_capacity(len);
            let mut b = Vec::with_capacity(len);
            let mut f = Vec::with_capacity(len);
            for i in 0..len {
                let r = next();
                // Keys that first appear late (i / 50_000) cross chunk borders.
                a.push(if r % 17 == 0 { None } else { Some((r % spread) as u8) });
                b.push(((r >> 8) % 3) as i32 + (i / 50_000) as i32);
                f.push(if (r >> 16) % 2 == 0 { 0.0 } else { -0.0 });
            }
            let k = keys(&a, &b, &f);
            let one = group_rows(&k).unwrap();
            let many = group_rows_with_threads(&k, threads).unwrap();
            prop_assert_eq!(&one.group_of_row, &many.group_of_row);
            prop_assert_eq!(&one.first_row, &many.first_row);
            prop_assert_eq!(destinations(&one), destinations_with_threads(&many, threads).unwrap());
        }
    }
}
