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
