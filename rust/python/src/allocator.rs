//! The extension's allocator: mimalloc, keeping freed memory for reuse for ten seconds.
//!
//! With glibc's malloc every large block went back to the kernel when freed, so a query
//! that produces hundreds of megabytes page-faulted and cleared all of it again on every
//! run (30-50k page faults per 10M-row `lp.join`). mimalloc reuses freed pages; it gives
//! memory nobody took back to the system after its purge delay, which we set to ten
//! seconds (jemalloc's default decay, and how long `mem::recycled` keeps output buffers)
//! instead of one, so consecutive queries reuse warm pages. `MIMALLOC_PURGE_DELAY` in the
//! environment still wins. DataFusion's and polars' Python packages also bring their own
//! allocator.

use std::ffi::c_long;

use pyo3::prelude::*;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `mi_option_purge_delay`: its place in mimalloc's option enum (the same in v2 and v3;
/// `tests/test_allocator.py` checks it against the environment variable).
const PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;
/// How long freed memory waits for reuse before it goes back to the system.
const KEEP_FREED_MS: c_long = 10_000;

/// Sets the purge delay unless the environment names one.
pub fn keep_freed_memory() {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
        // SAFETY: setting an option is thread-safe in mimalloc and takes plain values.
        unsafe { libmimalloc_sys::mi_option_set(PURGE_DELAY, KEEP_FREED_MS) }
    }
}

/// The allocator's purge delay in milliseconds (registered for the test suite only).
#[pyfunction]
pub fn _allocator_purge_delay_ms() -> c_long {
    // SAFETY: reading an option is thread-safe in mimalloc.
    unsafe { libmimalloc_sys::mi_option_get(PURGE_DELAY) }
}
