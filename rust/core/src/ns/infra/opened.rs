//! Leaf datasets opened for reading at a fixed version, kept for the rest of the process: a
//! version of a table never changes, so a later read of the same leaf version (the next query
//! of a dashboard, a lookup in every partition) takes the opened dataset instead of resolving
//! and decoding its manifest again. Reads only: writers and commits open what they change
//! themselves ([`super::storage::Storage::open`]).
//!
//! Bounded by [`CAPACITY`] entries; when full, the older half (by last use) goes. Keyed by the
//! table's URI, the version and the storage options (a dataset holds the object store its
//! options built). Fork-aware like the session ([`super::session::per_process`]).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use lance::Dataset;

use super::session::per_process;

/// Leaf versions kept open at most.
pub const CAPACITY: usize = 4096;

/// What an opened dataset is found by: table URI, version, storage options (sorted).
pub type Key = (String, u64, Vec<(String, String)>);

#[derive(Default)]
struct Opened {
    /// The dataset and when it was last used.
    map: HashMap<Key, (Arc<Dataset>, u64)>,
    clock: u64,
}

static OPENED: Mutex<Option<(u32, Arc<Mutex<Opened>>)>> = Mutex::new(None);

fn with<R>(f: impl FnOnce(&mut Opened) -> R) -> Option<R> {
    let slot = per_process(&OPENED, || Ok(Mutex::new(Opened::default()))).ok()?;
    let mut opened = slot
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    Some(f(&mut opened))
}

/// The dataset opened for `key`, when it is kept.
pub fn get(key: &Key) -> Option<Arc<Dataset>> {
    with(|o| {
        o.clock += 1;
        let now = o.clock;
        o.map.get_mut(key).map(|(ds, used)| {
            *used = now;
            Arc::clone(ds)
        })
    })
    .flatten()
}

/// Keeps `ds`, opened for `key`.
pub fn put(key: Key, ds: &Arc<Dataset>) {
    with(|o| {
        if o.map.len() >= CAPACITY {
            let mut used: Vec<u64> = o.map.values().map(|(_, u)| *u).collect();
            let (_, median, _) = used.select_nth_unstable(CAPACITY / 2);
            let cut = *median;
            o.map.retain(|_, (_, u)| *u > cut);
        }
        o.clock += 1;
        let now = o.clock;
        o.map.insert(key, (Arc::clone(ds), now));
    });
}

/// Leaf versions kept open now.
pub fn len() -> usize {
    with(|o| o.map.len()).unwrap_or(0)
}
