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

/// The Lance session every dataset of this process opens with: one object-store registry
/// and one bounded set of caches instead of a fresh session (and store) per leaf table.
/// Like the runtime, a session inherited across `fork` is replaced.
///
/// # Errors
/// Never in practice; `Result` for symmetry with [`runtime`].
pub fn session() -> Result<Arc<Session>> {
    let pid = std::process::id();
    let mut guard = SESSION.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((owner, s)) = guard.as_ref() {
        if *owner == pid {
            return Ok(Arc::clone(s));
        }
    }
    if let Some((_, inherited)) = guard.take() {
        std::mem::forget(inherited);
    }
    let s = Arc::new(Session::new(
        INDEX_CACHE_BYTES,
        METADATA_CACHE_BYTES,
        Arc::new(ObjectStoreRegistry::default()),
    ));
    *guard = Some((pid, Arc::clone(&s)));
    Ok(s)
}

/// The runtime of this process.
///
/// # Errors
/// `Internal` if the runtime cannot be built.
pub fn runtime() -> Result<Arc<Runtime>> {
    let pid = std::process::id();
    let mut guard = RUNTIME.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((owner, rt)) = guard.as_ref() {
        if *owner == pid {
            return Ok(Arc::clone(rt));
        }
    }
    if let Some((_, inherited)) = guard.take() {
        // Built by the parent before a fork: its worker threads do not exist here.
        std::mem::forget(inherited);
    }
    let rt = Arc::new(
        Builder::new_multi_thread()
            .enable_all()
            .thread_name("lance-partitioned")
            .build()
            .map_err(|e| Error::Internal(format!("cannot start the tokio runtime: {e}")))?,
    );
    *guard = Some((pid, Arc::clone(&rt)));
    Ok(rt)
}

/// Runs a future to completion on the runtime (from a thread that is not a runtime worker).
///
/// # Errors
/// The future's error, or `Internal` if the runtime cannot be built.
pub fn block_on<T>(f: impl Future<Output = Result<T>>) -> Result<T> {
    runtime()?.block_on(f)
}
