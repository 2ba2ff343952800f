//! The binding's tokio runtime: every async core operation runs on it, from a thread that has
//! released the GIL (see `errors::run`). Fork-aware: a runtime inherited across `fork`
//! (PySpark forks its Python workers) has no threads behind it and is replaced.

use std::future::Future;
use std::sync::{Arc, Mutex};

use lance_partitioned_core::ns::session::per_process;
use lance_partitioned_core::{Error, Result};
use tokio::runtime::{Builder, Runtime};

static RUNTIME: Mutex<Option<(u32, Arc<Runtime>)>> = Mutex::new(None);

/// The runtime of this process.
///
/// # Errors
/// `Internal` if the runtime cannot be built.
pub fn runtime() -> Result<Arc<Runtime>> {
    per_process(&RUNTIME, || {
        Builder::new_multi_thread()
            .enable_all()
            .thread_name("lance-partitioned")
            .build()
            .map_err(|e| Error::Internal(format!("cannot start the tokio runtime: {e}")))
    })
}

/// Runs a future to completion on the runtime, from any thread: also from inside a runtime,
/// as when a write pulls its input from one of our own scans, or from a Python generator that
/// calls the library (`block_in_place` hands the thread's runtime work to another thread
/// while this one blocks). Only a single-threaded runtime cannot wait on this thread: that is
/// an error, never a panic.
///
/// # Errors
/// The future's error, or `Internal` if the runtime cannot be built.
pub fn block_on<T>(f: impl Future<Output = Result<T>>) -> Result<T> {
    let rt = runtime()?;
    match tokio::runtime::Handle::try_current() {
        Err(_) => rt.block_on(f),
        Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(|| rt.block_on(f))
        }
        Ok(_) => Err(Error::InvalidArgument(
            "lance_partitioned was called from inside a single-threaded tokio runtime, which \
             cannot wait for it; call it from a thread of its own"
                .into(),
        )),
    }
}
