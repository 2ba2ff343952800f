//! The AVX2 loops: the scalar loops of `murmur` compiled a second time with AVX2 enabled
//! (the compiler vectorises them with 8 lanes for 8-, 16- and 32-bit inputs), and an explicit
//! loop for 64-bit values.
//!
//! LLVM vectorises the scalar loop for 64-bit inputs with only 4 lanes (it narrows each u64 to
//! two 32-bit halves in xmm registers); the explicit loop gathers the low and high halves of 8
//! values with two shuffles, hashes them in full ymm registers, and restores the lane order
//! with one permute.
//!
//! Every function here needs a CPU with AVX2 (the caller checks, see `super::has_avx2`).

use std::arch::x86_64::*;

use super::super::murmur::{self, FastRem, HashNative};

// ------------------------------------------------------------------------------------------
// The scalar loops, compiled for AVX2.
// ------------------------------------------------------------------------------------------

#[target_feature(enable = "avx2")]
pub(super) unsafe fn hash_into(src: &[u64], out: &mut [i32]) {
    murmur::hash_into(src, out)
}

#[target_feature(enable = "avx2")]
pub(super) unsafe fn hash_loop<T: HashNative>(src: &[T]) -> Vec<i32> {
    murmur::hash_loop(src)
}

#[target_feature(enable = "avx2")]
pub(super) unsafe fn bucket_loop<T: HashNative, const POW2: bool>(
    src: &[T],
    r: &FastRem,
) -> Vec<i32> {
    murmur::bucket_loop::<T, POW2>(src, r)
}

#[target_feature(enable = "avx2")]
pub(super) unsafe fn rem_loop<const POW2: bool>(vals: &mut [i32], r: &FastRem) {
    murmur::rem_loop::<POW2>(vals, r)
}

// ------------------------------------------------------------------------------------------
// The explicit 8-lane loop for 64-bit values.
// ------------------------------------------------------------------------------------------

const C1: i32 = murmur::C1 as i32;
const C2: i32 = murmur::C2 as i32;
const N1: i32 = murmur::N1 as i32;
const F1: i32 = murmur::F1 as i32;
const F2: i32 = murmur::F2 as i32;

#[inline]
#[target_feature(enable = "avx2")]
fn rotl<const L: i32, const R: i32>(x: __m256i) -> __m256i {
    _mm256_or_si256(_mm256_slli_epi32::<L>(x), _mm256_srli_epi32::<R>(x))
}

#[inline]
#[target_feature(enable = "avx2")]
fn mix_h1(h: __m256i, k: __m256i) -> __m256i {
    let k = _mm256_mullo_epi32(k, _mm256_set1_epi32(C1));
    let k = _mm256_mullo_epi32(rotl::<15, 17>(k), _mm256_set1_epi32(C2));
    let h = rotl::<13, 19>(_mm256_xor_si256(h, k));
    _mm256_add_epi32(
        _mm256_add_epi32(_mm256_slli_epi32::<2>(h), h),
        _mm256_set1_epi32(N1),
    )
}

#[inline]
#[target_feature(enable = "avx2")]
fn fmix(h: __m256i) -> __m256i {
    let h = _mm256_xor_si256(h, _mm256_srli_epi32::<16>(h));
    let h = _mm256_mullo_epi32(h, _mm256_set1_epi32(F1));
    let h = _mm256_xor_si256(h, _mm256_srli_epi32::<13>(h));
    let h = _mm256_mullo_epi32(h, _mm256_set1_epi32(F2));
    _mm256_xor_si256(h, _mm256_srli_epi32::<16>(h))
}

/// Hashes 8 u64 values (`a` = values 0-3, `b` = values 4-7), in order.
#[inline]
#[target_feature(enable = "avx2")]
fn hash_u64x8(a: __m256i, b: __m256i) -> __m256i {
    let (fa, fb) = (_mm256_castsi256_ps(a), _mm256_castsi256_ps(b));
    // per 128-bit half: [a0, a1, b0, b1] words -> lanes hold values 0,1,4,5 | 2,3,6,7
    let lo = _mm256_castps_si256(_mm256_shuffle_ps::<0b10_00_10_00>(fa, fb));
    let hi = _mm256_castps_si256(_mm256_shuffle_ps::<0b11_01_11_01>(fa, fb));
    let h = mix_h1(_mm256_setzero_si256(), lo);
    let h = mix_h1(h, hi);
    let h = fmix(_mm256_xor_si256(h, _mm256_set1_epi32(8)));
    // 64-bit chunks (0,1)(4,5)(2,3)(6,7) -> (0,1)(2,3)(4,5)(6,7)
    _mm256_permute4x64_epi64::<0b11_01_10_00>(h)
}

/// `|h| mod d` per lane, `h` read as i32 (`|i32::MIN|` is 2^31, an unsigned value).
#[inline]
#[target_feature(enable = "avx2")]
fn bucket(h: __m256i, r: &Rem) -> __m256i {
    let n = _mm256_abs_epi32(h); // i32::MIN stays 0x8000_0000 = 2^31 unsigned
    if r.pow2 {
        return _mm256_and_si256(n, r.mask);
    }
    let even = _mm256_mul_epu32(n, r.magic);
    let odd = _mm256_mul_epu32(_mm256_srli_epi64::<32>(n), r.magic);
    let q = _mm256_blend_epi32::<0b1010_1010>(_mm256_srli_epi64::<32>(even), odd);
    let t = _mm256_add_epi32(_mm256_srli_epi32::<1>(_mm256_sub_epi32(n, q)), q);
    let quot = _mm256_srl_epi32(t, r.shift);
    _mm256_sub_epi32(n, _mm256_mullo_epi32(quot, r.d))
}

/// A [`FastRem`] broadcast to 8 lanes.
struct Rem {
    pow2: bool,
    mask: __m256i,
    magic: __m256i,
    shift: __m128i,
    d: __m256i,
}

impl Rem {
    #[target_feature(enable = "avx2")]
    fn new(r: &FastRem) -> Self {
        let (d, magic, shift, pow2) = r.parts();
        Rem {
            pow2,
            mask: _mm256_set1_epi32(d.wrapping_sub(1) as i32),
            magic: _mm256_set1_epi32(magic as i32),
            shift: _mm_cvtsi32_si128(shift as i32),
            d: _mm256_set1_epi32(d as i32),
        }
    }
}

#[inline]
#[target_feature(enable = "avx2")]
fn load(src: &[u64], i: usize) -> __m256i {
    let s: &[u64; 4] = src[i..i + 4].try_into().unwrap_or(&[0; 4]);
    // SAFETY: `s` is 32 readable bytes; the load is unaligned.
    unsafe { _mm256_loadu_si256(s.as_ptr() as *const __m256i) }
}

/// Hashes (and with `rem`, buckets) `src` 8 values at a time. The tail is scalar.
#[target_feature(enable = "avx2")]
fn run(src: &[u64], rem: Option<(&Rem, &FastRem)>) -> Vec<i32> {
    let n = src.len();
    let mut out = crate::mem::zeroed::<i32>(n);
    let full = n / 8 * 8;
    let mut i = 0;
    while i < full {
        let h = hash_u64x8(load(src, i), load(src, i + 4));
        let v = match rem {
            Some((rv, _)) => bucket(h, rv),
            None => h,
        };
        if let Some(d) = out.get_mut(i..i + 8) {
            // SAFETY: `d` is 32 writable bytes; the store is unaligned.
            unsafe { _mm256_storeu_si256(d.as_mut_ptr() as *mut __m256i, v) }
        }
        i += 8;
    }
    murmur::tail_into(src, &mut out, full, rem.map(|(_, r)| r));
    out
}

/// `murmur3` of 64-bit values, 8 at a time.
///
/// # Safety
/// The CPU must support AVX2.
pub(super) unsafe fn hash_u64(src: &[u64]) -> Vec<i32> {
    run(src, None)
}

/// `bucket` of 64-bit values, 8 at a time.
///
/// # Safety
/// The CPU must support AVX2.
pub(super) unsafe fn bucket_u64(src: &[u64], r: &FastRem) -> Vec<i32> {
    let rv = Rem::new(r);
    run(src, Some((&rv, r)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn avx2_equals_scalar() {
        if !std::arch::is_x86_feature_detected!("avx2") {
            return; // nothing to compare on this CPU; the portable loops are tested elsewhere
        }
        let mut x = 0x0fed_cba9_8765_4321u64;
        let mut v = vec![0u64, 1, 5, u64::MAX, 2_841_062_569];
        for _ in 0..1010 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            v.push(x);
        }
        // SAFETY: AVX2 was detected above.
        let h = unsafe { hash_u64(&v) };
        for (a, b) in v.iter().zip(&h) {
            assert_eq!(*b, a.murmur() as i32);
        }
        for d in [1u32, 2, 3, 7, 16, 1000, 65_537, (1 << 31) - 1, 1 << 31] {
            let r = FastRem::new(d).unwrap();
            // SAFETY: AVX2 was detected above.
            let got = unsafe { bucket_u64(&v, &r) };
            for (g, hv) in got.iter().zip(&h) {
                assert_eq!(*g as u32, hv.unsigned_abs() % d, "d={d}");
            }
        }
    }
}
