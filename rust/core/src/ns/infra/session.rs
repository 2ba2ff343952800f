//! Per-process state: the shared Lance session, and [`per_process`], the fork-aware slot it
//! lives in (the Python binding keeps its tokio runtime in one too); and the size of Lance's
//! compute pool ([`size_lance_compute_pool`]).
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

/// Environment variable Lance reads, once per process, for the size of its compute pool.
const LANCE_CPU_THREADS: &str = "LANCE_CPU_THREADS";

/// Sizes Lance's compute pool (the threads that encode pages) to every core of the machine,
/// unless the user set `LANCE_CPU_THREADS`. Returns the pool's size.
///
/// Lance reads the size on first use and by default holds two cores back for I/O, which on a
/// machine of two cores leaves one thread: every partition of a write would then be encoded
/// one after the other while the other core idles. The variable is set only while Lance
/// reads it, so another copy of Lance in the process (pylance) keeps its own default. Call it
/// once, early (the Python binding does so when it is imported); later calls, or calls after
/// Lance sized its pool, return the size already chosen.
pub fn size_lance_compute_pool() -> usize {
    use lance_core::utils::tokio::get_num_compute_intensive_cpus;
    static SIZED: std::sync::Once = std::sync::Once::new();
    SIZED.call_once(|| {
        if std::env::var_os(LANCE_CPU_THREADS).is_some() {
            return;
        }
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        // Lance reads the variable from the environment only; it is set just long enough for
        // that read. Done once, at import, before this library starts any thread.
        std::env::set_var(LANCE_CPU_THREADS, cores.to_string());
        get_num_compute_intensive_cpus();
        std::env::remove_var(LANCE_CPU_THREADS);
    });
    get_num_compute_intensive_cpus()
}
