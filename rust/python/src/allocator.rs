//! The extension's allocator: mimalloc, keeping freed memory for reuse for ten seconds, and
//! no transparent huge pages in the process.
//!
//! With glibc's malloc every large block went back to the kernel when freed, so a query
//! that produces hundreds of megabytes page-faulted and cleared all of it again on every
//! run (30-50k page faults per 10M-row `lp.join`). mimalloc reuses freed pages; it gives
//! memory nobody took back to the system after its purge delay, which we set to ten
//! seconds (jemalloc's default decay, and how long `mem::recycled` keeps output buffers)
//! instead of one, so consecutive queries reuse warm pages. `MIMALLOC_PURGE_DELAY` in the
//! environment still wins. DataFusion's and polars' Python packages also bring their own
//! allocator.
//!
//! mimalloc 3 advises the kernel to back its 1 GiB arenas with transparent huge pages (as
//! pyarrow's own mimalloc does), so on a kernel whose THP mode is `madvise` (the common
//! default) every first touch of 2 MiB of fresh memory faults in and clears a whole huge
//! page. The first write of a process, whose buffers are all fresh memory, spent more time
//! there than in routing and encoding: 1 GB of TPC-H `lineitem` took 4.1 s as the first
//! write of a process and 2.1-2.3 s afterwards, 4.1 s of it in the kernel; with huge pages
//! off, 2.4 s first and 2.0-2.1 s afterwards (the measurements: docs/design.md, "The first
//! write of a process"). So the extension turns them off for the process, as mimalloc does
//! itself when `MIMALLOC_ALLOW_THP=0`: `prctl(PR_SET_THP_DISABLE)` (every mapping, pyarrow's
//! included; inherited by child processes). `MIMALLOC_ALLOW_THP` in the environment wins.

use std::ffi::c_long;

use pyo3::prelude::*;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `mi_option_purge_delay`: its place in mimalloc's option enum (the same in v2 and v3;
/// `tests/test_allocator.py` checks it against the environment variable).
const PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;
/// How long freed memory waits for reuse before it goes back to the system.
const KEEP_FREED_MS: c_long = 10_000;

/// `mi_option_allow_thp`: its place in mimalloc 3's option enum (`tests/test_allocator.py`
/// checks it against the environment variable).
const ALLOW_THP: libmimalloc_sys::mi_option_t = 43;

/// Sets the purge delay, and turns transparent huge pages off, unless the environment names
/// the option.
pub fn tune() {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
        // SAFETY: setting an option is thread-safe in mimalloc and takes plain values.
        unsafe { libmimalloc_sys::mi_option_set(PURGE_DELAY, KEEP_FREED_MS) }
    }
    if std::env::var_os("MIMALLOC_ALLOW_THP").is_none() {
        // SAFETY: as above.
        unsafe { libmimalloc_sys::mi_option_set(ALLOW_THP, 0) }
        no_huge_pages();
    }
}

/// Turns transparent huge pages off for the process (where the kernel has them).
fn no_huge_pages() {
    #[cfg(target_os = "linux")]
    // SAFETY: PR_SET_THP_DISABLE takes plain integers and touches no memory of ours; on a
    // kernel without it the call fails with EINVAL, which changes nothing.
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
}

/// The allocator's purge delay in milliseconds (registered for the test suite only).
#[pyfunction]
pub fn _allocator_purge_delay_ms() -> c_long {
    // SAFETY: reading an option is thread-safe in mimalloc.
    unsafe { libmimalloc_sys::mi_option_get(PURGE_DELAY) }
}

/// The allocator's `allow_thp` option (registered for the test suite only).
#[pyfunction]
pub fn _allocator_allow_thp() -> c_long {
    // SAFETY: reading an option is thread-safe in mimalloc.
    unsafe { libmimalloc_sys::mi_option_get(ALLOW_THP) }
}
