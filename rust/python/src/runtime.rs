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

/// Runs a future to completion on the runtime (from a thread that is not a runtime worker).
///
/// # Errors
/// The future's error, or `Internal` if the runtime cannot be built.
pub fn block_on<T>(f: impl Future<Output = Result<T>>) -> Result<T> {
    runtime()?.block_on(f)
}
