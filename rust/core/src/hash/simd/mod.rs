//! The fixed-width entry points and their run-time dispatch.
//!
//! On x86-64 each scalar loop of `super::murmur` is also compiled for AVX2 (`avx2`), and
//! some widths have explicit SIMD loops where the compiler's vectorisation is not good
//! enough (`sse2` for CPUs without AVX2, `avx2` for 64-bit values). Which one runs is
//! decided once per process ([`has_avx2`]); `LANCE_PARTITIONED_PORTABLE=1` forces the
//! portable loops. Hashing and the modulo are fused, and the modulo uses the multiply-shift
//! reciprocal of [`FastRem`] instead of a division.

#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(target_arch = "x86_64")]
mod sse2;

use super::murmur::{self, FastRem, HashNative};

/// The explicit SIMD loops a value width has, on top of the compiler-vectorised scalar loop
/// (all `None` by default: the scalar loop is used).
pub(super) trait ExplicitSimd: HashNative {
    /// The explicit SSE2 loop for this width, when there is one (non-AVX2 x86-64).
    fn sse2_hash(_src: &[Self]) -> Option<Vec<i32>> {
        None
    }

    /// The explicit SSE2 bucket loop for this width, when there is one.
    fn sse2_bucket(_src: &[Self], _r: &FastRem) -> Option<Vec<i32>> {
        None
    }

    /// An explicit AVX2 hash loop for this width, when the compiler's is not good enough.
    ///
    /// # Safety
    /// The CPU must support AVX2.
    unsafe fn avx2_hash(_src: &[Self]) -> Option<Vec<i32>> {
        None
    }

    /// An explicit AVX2 bucket loop for this width.
    ///
    /// # Safety
    /// The CPU must support AVX2.
    unsafe fn avx2_bucket(_src: &[Self], _r: &FastRem) -> Option<Vec<i32>> {
        None
    }
}

impl ExplicitSimd for u8 {}
impl ExplicitSimd for u16 {}
impl ExplicitSimd for u32 {
    #[cfg(target_arch = "x86_64")]
    fn sse2_hash(src: &[Self]) -> Option<Vec<i32>> {
        Some(sse2::hash_u32(src))
    }
    #[cfg(target_arch = "x86_64")]
    fn sse2_bucket(src: &[Self], r: &FastRem) -> Option<Vec<i32>> {
        Some(sse2::bucket_u32(src, r))
    }
}
impl ExplicitSimd for u64 {
    #[cfg(target_arch = "x86_64")]
    fn sse2_hash(src: &[Self]) -> Option<Vec<i32>> {
        Some(sse2::hash_u64(src))
    }
    #[cfg(target_arch = "x86_64")]
    fn sse2_bucket(src: &[Self], r: &FastRem) -> Option<Vec<i32>> {
        Some(sse2::bucket_u64(src, r))
    }
    #[cfg(target_arch = "x86_64")]
    unsafe fn avx2_hash(src: &[Self]) -> Option<Vec<i32>> {
        // SAFETY: forwarded from the caller.
        Some(unsafe { avx2::hash_u64(src) })
    }
    #[cfg(target_arch = "x86_64")]
    unsafe fn avx2_bucket(src: &[Self], r: &FastRem) -> Option<Vec<i32>> {
        // SAFETY: forwarded from the caller.
        Some(unsafe { avx2::bucket_u64(src, r) })
    }
}

/// Whether the AVX2 loops are used: detected once per process at run time. Setting
/// `LANCE_PARTITIONED_PORTABLE=1` forces the portable loops (for benchmarks and tests).
#[inline]
fn has_avx2() -> bool {
    static AVX2: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *AVX2.get_or_init(|| {
        if std::env::var_os("LANCE_PARTITIONED_PORTABLE").is_some_and(|v| v == "1") {
            return false;
        }
        #[cfg(target_arch = "x86_64")]
        {
            std::arch::is_x86_feature_detected!("avx2")
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            false
        }
    })
}

/// Which SIMD level the fixed-width loops run at on this machine (for benchmarks and logs).
pub fn simd_level() -> &'static str {
    if has_avx2() {
        "avx2"
    } else {
        "portable"
    }
}

/// `murmur3` of every fixed-width value of `src`.
pub(super) fn hash_fixed<T: ExplicitSimd>(src: &[T]) -> Vec<i32> {
    #[cfg(target_arch = "x86_64")]
    if has_avx2() {
        // SAFETY: AVX2 support was just detected at run time.
        return unsafe { T::avx2_hash(src).unwrap_or_else(|| avx2::hash_loop(src)) };
    }
    if let Some(out) = T::sse2_hash(src) {
        return out;
    }
    murmur::hash_loop(src)
}

/// `bucket` of every fixed-width value of `src`.
pub(super) fn bucket_fixed<T: ExplicitSimd>(src: &[T], r: &FastRem) -> Vec<i32> {
    #[cfg(target_arch = "x86_64")]
    if has_avx2() {
        // SAFETY: AVX2 support was just detected at run time.
        return unsafe {
            if let Some(out) = T::avx2_bucket(src, r) {
                out
            } else if r.is_pow2() {
                avx2::bucket_loop::<T, true>(src, r)
            } else {
                avx2::bucket_loop::<T, false>(src, r)
            }
        };
    }
    if let Some(out) = T::sse2_bucket(src, r) {
        return out;
    }
    if r.is_pow2() {
        murmur::bucket_loop::<T, true>(src, r)
    } else {
        murmur::bucket_loop::<T, false>(src, r)
    }
}

/// Replaces every hash in `vals` by its bucket.
pub(super) fn rem_in_place(vals: &mut [i32], r: &FastRem) {
    #[cfg(target_arch = "x86_64")]
    if has_avx2() {
        // SAFETY: AVX2 support was just detected at run time.
        unsafe {
            if r.is_pow2() {
                avx2::rem_loop::<true>(vals, r)
            } else {
                avx2::rem_loop::<false>(vals, r)
            }
        }
        return;
    }
    if r.is_pow2() {
        murmur::rem_loop::<true>(vals, r)
    } else {
        murmur::rem_loop::<false>(vals, r)
    }
}

/// The compute limit of the int64 kernel: hashes a raw `u64` buffer into `out` with the same
/// dispatched loop (no Arrow, no nulls, no allocation). For benchmarks.
pub fn raw_hash_u64_into(src: &[u64], out: &mut [i32]) {
    #[cfg(target_arch = "x86_64")]
    if has_avx2() {
        // SAFETY: AVX2 support was just detected at run time.
        unsafe { avx2::hash_into(src, out) };
        return;
    }
    murmur::hash_into(src, out)
}
