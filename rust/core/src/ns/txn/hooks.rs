//! Crash-test hooks, compiled only with the `test-hooks` cargo feature (the extension that
//! `make build` installs for the test suite); release wheels have none.

/// With `LANCE_PARTITIONED_TEST_PAUSE=<point>:<file>[,<point>:<file>...]` the process creates
/// `<file>` at `<point>` and waits until the file is removed (or 600 s pass), so a test can
/// kill it exactly there or change the namespace under it.
#[cfg(feature = "test-hooks")]
pub(crate) fn pause(point: &str) {
    use std::time::{Duration, Instant};
    let Ok(v) = std::env::var("LANCE_PARTITIONED_TEST_PAUSE") else {
        return;
    };
    for (p, file) in v.split(',').filter_map(|pf| pf.split_once(':')) {
        if p != point {
            continue;
        }
        let _ = std::fs::write(file, point);
        let until = Instant::now() + Duration::from_secs(600);
        while std::path::Path::new(file).exists() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Without the `test-hooks` feature: nothing.
#[cfg(not(feature = "test-hooks"))]
#[inline(always)]
pub(crate) fn pause(_point: &str) {}
