//! Crash-test pause points. Compiled into every build (one build serves the tests, the demo
//! and the wheel) and reachable only through `LANCE_PARTITIONED_TEST_PAUSE`, which only the
//! test suite sets; without it a pause point is one environment lookup.

/// With `LANCE_PARTITIONED_TEST_PAUSE=<point>:<file>[,<point>:<file>...]` the process creates
/// `<file>` at `<point>` and waits until the file is removed (or 600 s pass), so a test can
/// kill it exactly there or change the namespace under it.
pub(crate) fn pause(point: &str) {
    use std::time::{Duration, Instant};
    let Some(v) = std::env::var_os("LANCE_PARTITIONED_TEST_PAUSE") else {
        return;
    };
    let v = v.to_string_lossy();
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
