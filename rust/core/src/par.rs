//! Data parallelism over contiguous chunks of rows, on scoped threads: what the router and
//! the transforms share.

use crate::error::{Error, Result};

/// Contiguous row ranges, one per thread: at most `threads`, each at least `min_rows` rows
/// (except a batch smaller than that, which is one range).
pub(crate) fn chunks(len: usize, threads: usize, min_rows: usize) -> Vec<(usize, usize)> {
    let n = threads.min(len / min_rows.max(1)).max(1);
    (0..n).map(|c| (c * len / n, (c + 1) * len / n)).collect()
}

/// Runs `f` on every item on its own scoped thread, keeping the order of `items`.
///
/// # Errors
/// `Internal` if a thread panicked.
pub(crate) fn on_threads<T: Send, R: Send>(
    items: Vec<T>,
    f: impl Fn(T) -> R + Sync,
) -> Result<Vec<R>> {
    let f = &f;
    std::thread::scope(|s| {
        let handles: Vec<_> = items.into_iter().map(|it| s.spawn(move || f(it))).collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .map_err(|_| Error::Internal("a worker thread failed".into()))
            })
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_cover_the_rows_and_respect_the_minimum() {
        assert_eq!(chunks(1000, 8, 1 << 16), vec![(0, 1000)]);
        assert_eq!(
            chunks(4 << 16, 2, 1 << 16),
            vec![(0, 2 << 16), (2 << 16, 4 << 16)]
        );
        assert_eq!(chunks(3 << 16, 8, 1 << 16).len(), 3);
        assert_eq!(chunks(0, 4, 1 << 16), vec![(0, 0)]);
    }

    #[test]
    fn results_keep_the_order_of_the_items() {
        assert_eq!(
            on_threads(vec![3, 1, 2], |x| x * 10).unwrap(),
            vec![30, 10, 20]
        );
    }
}
