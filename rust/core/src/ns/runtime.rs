//! The process-wide tokio runtime.
//!
//! Created lazily in the process that uses it. PySpark forks Python workers from a daemon:
//! a runtime inherited across `fork` has no threads behind it, so when the process id changes
//! the old runtime is leaked (never touched again) and a fresh one is built.

use std::future::Future;
use std::sync::{Arc, Mutex};

use lance::io::ObjectStoreRegistry;
use lance::session::Session;
use tokio::runtime::{Builder, Runtime};

use crate::error::{Error, Result};

static RUNTIME: Mutex<Option<(u32, Arc<Runtime>)>> = Mutex::new(None);
static SESSION: Mutex<Option<(u32, Arc<Session>)>> = Mutex::new(None);

/// Metadata cache of the shared session (manifests, fragment metadata of opened leaves).
const METADATA_CACHE_BYTES: usize = 256 << 20;
/// Index cache of the shared session.
const INDEX_CACHE_BYTES: usize = 1 << 30;

/// The value in `slot` built by this process, building it on first use. A value inherited
/// across `fork` (built by the parent: its threads do not exist here) is leaked, never
/// touched again, and replaced.
fn per_process<T>(
    slot: &Mutex<Option<(u32, Arc<T>)>>,
    build: impl FnOnce() -> Result<T>,
) -> Result<Arc<T>> {
    let pid = std::process::id();
    let mut guard = slot.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((owner, v)) = guard.as_ref() {
        if *owner == pid {
            return Ok(Arc::clone(v));
        }
    }
    if let Some((_, inherited)) = guard.take() {
        std::mem::forget(inherited);
    }
    let v = Arc::new(build()?);
    *guard = Some((pid, Arc::clone(&v)));
    Ok(v)
}

/// The Lance session every dataset of this process opens with: one object-store registry
/// and one bounded set of caches instead of a fresh session (and store) per leaf table.
///
/// # Errors
/// Never in practice; `Result` for symmetry with [`runtime`].
pub fn session() -> Result<Arc<Session>> {
    per_process(&SESSION, || {
        Ok(Session::new(
            INDEX_CACHE_BYTES,
            METADATA_CACHE_BYTES,
            Arc::new(ObjectStoreRegistry::default()),
        ))
    })
}

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
