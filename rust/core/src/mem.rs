//! Output buffers for the kernels.
//!
//! Large outputs are fresh memory that the kernel writes once: on Linux we ask for
//! transparent huge pages (`MADV_HUGEPAGE`) before the first write, so a 40 MB output takes
//! ~20 page faults instead of ~10,000 and the scattered writes of routing miss the TLB less.
//! Where the kernel refuses (THP disabled), nothing changes.

/// A zero-filled `Vec` of `n` elements (calloc: untouched pages cost nothing until written),
/// advised to use huge pages when it is large.
pub(crate) fn zeroed<T: Copy + Default>(n: usize) -> Vec<T> {
    let v = vec![T::default(); n];
    advise_huge(v.as_ptr() as usize, n * std::mem::size_of::<T>());
    v
}

#[cfg(target_os = "linux")]
fn advise_huge(start: usize, len: usize) {
    const HUGE: usize = 2 << 20;
    if len < 4 * HUGE {
        return;
    }
    let first = (start + HUGE - 1) & !(HUGE - 1);
    let end = (start + len) & !(HUGE - 1);
    if end > first {
        // SAFETY: the range lies inside an allocation this process owns and has not touched
        // yet; MADV_HUGEPAGE only changes how its pages are backed, never their contents.
        unsafe {
            libc::madvise(first as *mut libc::c_void, end - first, libc::MADV_HUGEPAGE);
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn advise_huge(_start: usize, _len: usize) {}

/// Large output buffers that come back when their last reader drops them, for the next kernel
/// call to reuse.
///
/// A fresh buffer of hundreds of megabytes costs a page fault and the kernel's clearing of
/// every page it touches (a third of `values.to_strings`'s time on int64); the allocators
/// pyarrow uses keep freed memory for a while for the same reason. Outputs of at least
/// [`RECYCLE_MIN`] bytes go back here when the Arrow buffer wrapping them is dropped (in Rust
/// or, through the C data interface, by pyarrow), at most [`KEEP_BYTES`] in all; a buffer
/// nobody took for [`KEEP_FOR`] is freed by a reaper thread, so an idle process holds nothing.
pub(crate) mod recycled {
    use std::sync::{Arc, Mutex, OnceLock};
    use std::time::{Duration, Instant};

    use crate::arrow::buffer::{Buffer, MutableBuffer};

    /// Smaller outputs use the allocator directly.
    pub(crate) const RECYCLE_MIN: usize = 1 << 20;
    /// The most memory kept for reuse.
    pub(crate) const KEEP_BYTES: usize = 1 << 30;
    /// How long a returned buffer waits for a taker before it is freed (jemalloc's default decay
    /// time for freed memory).
    pub(crate) const KEEP_FOR: Duration = Duration::from_secs(10);

    struct Kept {
        since: Instant,
        buf: MutableBuffer,
    }

    /// Who frees the buffers a pool kept too long.
    enum Reaping {
        /// The reaper thread (the process's pool).
        Thread,
        /// Whoever calls [`Pool::reap`] (a test's own pool).
        #[cfg(test)]
        Manual,
    }

    /// Returned buffers waiting for reuse.
    pub(crate) struct Pool {
        kept: Mutex<Vec<Kept>>,
        reaping: Reaping,
    }

    /// The process's pool, emptied by the reaper thread.
    fn global() -> &'static Arc<Pool> {
        static POOL: OnceLock<Arc<Pool>> = OnceLock::new();
        POOL.get_or_init(|| {
            Arc::new(Pool {
                kept: Mutex::new(Vec::new()),
                reaping: Reaping::Thread,
            })
        })
    }

    /// A buffer of `len` bytes for a kernel that writes every one of them: a kept buffer of
    /// enough capacity (its old bytes still there), else fresh zeroed memory.
    pub(crate) fn take(len: usize) -> MutableBuffer {
        global().take(len)
    }

    /// The immutable Arrow buffer of `buf`; large ones come back for reuse when dropped.
    pub(crate) fn share(buf: MutableBuffer) -> Buffer {
        global().share(buf)
    }

    impl Pool {
        fn take(&self, len: usize) -> MutableBuffer {
            if len >= RECYCLE_MIN {
                let mut kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
                // The smallest that fits and is at most twice the request: a small output
                // never pins a huge buffer for as long as it lives.
                let best = (0..kept.len())
                    .filter(|&i| (len..=len.saturating_mul(2)).contains(&kept[i].buf.capacity()))
                    .min_by_key(|&i| kept[i].buf.capacity());
                if let Some(i) = best {
                    let mut buf = kept.swap_remove(i).buf;
                    drop(kept);
                    buf.resize(len, 0);
                    return buf;
                }
            }
            let buf = MutableBuffer::from_len_zeroed(len);
            super::advise_huge(buf.as_ptr() as usize, len);
            buf
        }

        fn share(self: &Arc<Self>, mut buf: MutableBuffer) -> Buffer {
            if buf.capacity() < RECYCLE_MIN {
                return buf.into();
            }
            let len = buf.len();
            let Some(ptr) = std::ptr::NonNull::new(buf.as_mut_ptr()) else {
                return buf.into();
            };
            let owner = Returns {
                buf: Mutex::new(Some(buf)),
                pool: Arc::clone(self),
            };
            // SAFETY: `ptr` points at `len` initialised bytes of the heap allocation `buf`
            // owns; moving `buf` into the owner does not move that allocation, and the owner
            // keeps it alive (unchanged: nobody else can reach it) until the last clone of the
            // returned buffer is dropped.
            unsafe { Buffer::from_custom_allocation(ptr, len, Arc::new(owner)) }
        }

        fn give_back(&self, buf: MutableBuffer) {
            let mut kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
            let held: usize = kept.iter().map(|k| k.buf.capacity()).sum();
            if held + buf.capacity() > KEEP_BYTES {
                return; // dropped here: freed
            }
            let reaper = match self.reaping {
                // Without a reaper nothing would free it later: free it now.
                Reaping::Thread => match reaper() {
                    Some(r) => Some(r),
                    None => return,
                },
                #[cfg(test)]
                Reaping::Manual => None,
            };
            kept.push(Kept {
                since: Instant::now(),
                buf,
            });
            drop(kept);
            if let Some(r) = reaper {
                r.unpark();
            }
        }

        /// Frees the buffers kept for [`KEEP_FOR`] or longer at `now`; whether none is left.
        fn reap(&self, now: Instant) -> bool {
            let (stale, empty) = {
                let mut kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
                let (stale, fresh): (Vec<Kept>, Vec<Kept>) = kept
                    .drain(..)
                    .partition(|k| now.saturating_duration_since(k.since) >= KEEP_FOR);
                *kept = fresh;
                (stale, kept.is_empty())
            };
            drop(stale); // freed outside the lock
            empty
        }

        /// Bytes kept for reuse now.
        #[cfg(test)]
        fn held(&self) -> usize {
            self.kept
                .lock()
                .map(|k| k.iter().map(|k| k.buf.capacity()).sum())
                .unwrap_or(0)
        }
    }

    /// Owns a shared buffer's memory and gives it back to its pool when Arrow drops the last
    /// reference.
    struct Returns {
        buf: Mutex<Option<MutableBuffer>>,
        pool: Arc<Pool>,
    }

    impl Drop for Returns {
        fn drop(&mut self) {
            let buf = self.buf.get_mut().unwrap_or_else(|p| p.into_inner()).take();
            if let Some(buf) = buf {
                self.pool.give_back(buf);
            }
        }
    }

    /// The thread that frees the process pool's buffers kept longer than [`KEEP_FOR`]; it
    /// sleeps while nothing is kept.
    fn reaper() -> Option<&'static std::thread::Thread> {
        static REAPER: OnceLock<Option<std::thread::Thread>> = OnceLock::new();
        REAPER
            .get_or_init(|| {
                let spawned = std::thread::Builder::new()
                    .name("lance-partitioned-buffers".into())
                    .spawn(|| loop {
                        let empty = global().reap(Instant::now());
                        if empty {
                            std::thread::park();
                        } else {
                            std::thread::park_timeout(KEEP_FOR / 4);
                        }
                    });
                spawned.ok().map(|handle| handle.thread().clone())
            })
            .as_ref()
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        /// A pool of the test's own (no state shared with other tests or the process pool).
        fn pool() -> Arc<Pool> {
            Arc::new(Pool {
                kept: Mutex::new(Vec::new()),
                reaping: Reaping::Manual,
            })
        }

        #[test]
        fn a_dropped_large_buffer_is_reused_then_freed_when_idle() {
            let pool = pool();
            let mut buf = pool.take(4 << 20);
            buf.as_slice_mut().fill(7);
            let ptr = buf.as_ptr();
            let shared = pool.share(buf);
            let clone = shared.clone();
            drop(shared);
            assert_eq!(pool.held(), 0, "kept while a clone is alive");
            drop(clone);
            // Kept: the next large request of at most that size gets the same memory back.
            let again = pool.take(3 << 20);
            assert_eq!(again.as_ptr(), ptr);
            assert_eq!(again.len(), 3 << 20);
            drop(pool.share(again));
            assert_eq!(pool.held(), 4 << 20);
            // Still kept just before its time, freed at it.
            pool.reap(Instant::now() + KEEP_FOR / 2);
            assert_eq!(pool.held(), 4 << 20);
            pool.reap(Instant::now() + KEEP_FOR);
            assert_eq!(pool.held(), 0, "idle buffers must be freed");
        }

        #[test]
        fn a_small_request_does_not_take_a_much_larger_buffer() {
            let pool = pool();
            let big = pool.take(64 << 20);
            let ptr = big.as_ptr();
            drop(pool.share(big));
            assert_eq!(pool.held(), 64 << 20);
            let small = pool.take(2 << 20);
            assert_ne!(small.as_ptr(), ptr);
            assert_eq!(small.len(), 2 << 20);
            assert_eq!(pool.held(), 64 << 20, "the big buffer stays kept");
        }

        #[test]
        fn small_buffers_are_not_kept() {
            let pool = pool();
            drop(pool.share(pool.take(1024)));
            assert_eq!(pool.held(), 0);
        }

        #[test]
        fn the_pool_keeps_at_most_its_budget() {
            let pool = pool();
            let a = pool.share(pool.take(KEEP_BYTES / 2 + 1));
            let b = pool.share(pool.take(KEEP_BYTES / 2 + 1));
            drop(a);
            drop(b);
            let held = pool.held();
            assert!(
                held > KEEP_BYTES / 2 && held < KEEP_BYTES,
                "the second one is freed"
            );
        }
    }
}
