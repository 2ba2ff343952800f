//! Per-process state: the shared Lance session, and [`per_process`], the fork-aware slot it
//! lives in (the Python binding keeps its tokio runtime in one too).
//!
//! Created lazily in the process that uses it. PySpark forks Python workers from a daemon:
//! state inherited across `fork` has no threads behind it, so when the process id changes the
//! old value is leaked (never touched again) and a fresh one is built.

use std::sync::{Arc, Mutex};

use lance::io::ObjectStoreRegistry;
use lance::session::Session;

use crate::error::Result;

static SESSION: Mutex<Option<(u32, Arc<Session>)>> = Mutex::new(None);

/// Metadata cache of the shared session (manifests, fragment metadata of opened leaves).
const METADATA_CACHE_BYTES: usize = 256 << 20;
/// Index cache of the shared session.
const INDEX_CACHE_BYTES: usize = 1 << 30;

/// The value in `slot` built by this process, building it on first use. A value inherited
/// across `fork` (built by the parent: its threads do not exist here) is leaked, never
/// touched again, and replaced.
pub fn per_process<T>(
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
/// Never in practice.
pub fn session() -> Result<Arc<Session>> {
    per_process(&SESSION, || {
        Ok(Session::new(
            INDEX_CACHE_BYTES,
            METADATA_CACHE_BYTES,
            Arc::new(ObjectStoreRegistry::default()),
        ))
    })
}
