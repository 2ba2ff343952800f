//! Explicit SSE2 loops (4 lanes) for hashing 32- and 64-bit values on x86-64 CPUs without
//! AVX2. SSE2 is part of the x86-64 baseline, so these need no run-time detection. SSE2 has no
//! packed 32-bit multiply (`pmulld` is SSE4.1), so `mullo` multiplies even and odd lanes with
//! `pmuludq` and recombines; LLVM does not vectorise the scalar loop this way on its own.

use std::arch::x86_64::*;

use super::super::murmur::{self, FastRem, HashNative};

const C1: i32 = murmur::C1 as i32;
const C2: i32 = murmur::C2 as i32;
const N1: i32 = murmur::N1 as i32;
const F1: i32 = murmur::F1 as i32;
const F2: i32 = murmur::F2 as i32;

/// Low 32 bits of the lane-wise product.
#[inline]
#[target_feature(enable = "sse2")]
fn mullo(a: __m128i, b: __m128i) -> __m128i {
    let even = _mm_mul_epu32(a, b);
    let odd = _mm_mul_epu32(_mm_srli_epi64::<32>(a), _mm_srli_epi64::<32>(b));
    _mm_unpacklo_epi32(
        _mm_shuffle_epi32::<0b00_00_10_00>(even),
        _mm_shuffle_epi32::<0b00_00_10_00>(odd),
    )
}

#[inline]
#[target_feature(enable = "sse2")]
fn rotl<const L: i32, const R: i32>(x: __m128i) -> __m128i {
    _mm_or_si128(_mm_slli_epi32::<L>(x), _mm_srli_epi32::<R>(x))
}

#[inline]
#[target_feature(enable = "sse2")]
fn mix_h1(h: __m128i, k: __m128i) -> __m128i {
    let k = mullo(k, _mm_set1_epi32(C1));
    let k = rotl::<15, 17>(k);
    let k = mullo(k, _mm_set1_epi32(C2));
    let h = rotl::<13, 19>(_mm_xor_si128(h, k));
    // h * 5 + n
    _mm_add_epi32(_mm_add_epi32(_mm_slli_epi32::<2>(h), h), _mm_set1_epi32(N1))
}

#[inline]
#[target_feature(enable = "sse2")]
fn fmix(h: __m128i) -> __m128i {
    let h = _mm_xor_si128(h, _mm_srli_epi32::<16>(h));
    let h = mullo(h, _mm_set1_epi32(F1));
    let h = _mm_xor_si128(h, _mm_srli_epi32::<13>(h));
    let h = mullo(h, _mm_set1_epi32(F2));
    _mm_xor_si128(h, _mm_srli_epi32::<16>(h))
}

#[inline]
#[target_feature(enable = "sse2")]
fn hash_u64x4(a: __m128i, b: __m128i) -> __m128i {
    // a = [v0, v1], b = [v2, v3] as u64; gather low and high words of the 4 values
    let lo = _mm_castps_si128(_mm_shuffle_ps::<0b10_00_10_00>(
        _mm_castsi128_ps(a),
        _mm_castsi128_ps(b),
    ));
    let hi = _mm_castps_si128(_mm_shuffle_ps::<0b11_01_11_01>(
        _mm_castsi128_ps(a),
        _mm_castsi128_ps(b),
    ));
    let h = mix_h1(_mm_setzero_si128(), lo);
    let h = mix_h1(h, hi);
    fmix(_mm_xor_si128(h, _mm_set1_epi32(8)))
}

#[inline]
#[target_feature(enable = "sse2")]
fn hash_u32x4(v: __m128i) -> __m128i {
    fmix(_mm_xor_si128(
        mix_h1(_mm_setzero_si128(), v),
        _mm_set1_epi32(4),
    ))
}

/// `|h| mod d` per lane, `h` read as i32 (`|i32::MIN|` is 2^31, an unsigned value).
#[inline]
#[target_feature(enable = "sse2")]
fn bucket(h: __m128i, r: &Rem) -> __m128i {
    let sign = _mm_srai_epi32::<31>(h);
    let n = _mm_sub_epi32(_mm_xor_si128(h, sign), sign);
    if r.pow2 {
        _mm_and_si128(n, r.mask)
    } else {
        rem_short(n, r)
    }
}

/// `n mod d` for `n <= 2^31` with a 32-bit multiplier, lanes kept in their 64-bit halves:
/// the even lanes and the odd lanes (shifted down) each get one `pmuludq` for the quotient
/// (the whole 64-bit product, shifted by `31 + l`: no add-and-halve step) and one for
/// quotient x d, and the two halves are merged once at the end.
#[inline]
#[target_feature(enable = "sse2")]
fn rem_short(n: __m128i, r: &Rem) -> __m128i {
    let odd = _mm_srli_epi64::<32>(n);
    let q_even = _mm_srl_epi64(_mm_mul_epu32(n, r.magic), r.shift);
    let q_odd = _mm_srl_epi64(_mm_mul_epu32(odd, r.magic), r.shift);
    let r_even = _mm_sub_epi32(n, _mm_mul_epu32(q_even, r.d));
    let r_odd = _mm_sub_epi32(odd, _mm_mul_epu32(q_odd, r.d));
    _mm_or_si128(
        _mm_and_si128(r_even, _mm_set_epi32(0, -1, 0, -1)),
        _mm_slli_epi64::<32>(r_odd),
    )
}

/// A [`FastRem`] broadcast to 4 lanes.
struct Rem {
    pow2: bool,
    mask: __m128i,
    magic: __m128i,
    shift: __m128i,
    d: __m128i,
}

/// The multiplier `m = ceil(2^(31+l) / d)` (`2^l` the next power of two above `d`, which is
/// not a power of two) and its shift `31 + l`. It divides every `n <= 2^31` exactly: with
/// `e = m d - 2^(31+l) < d <= 2^l`, `n m / 2^(31+l) = n / d + n e / (d 2^(31+l))` and the error
/// term is below `1/d` for `n <= 2^31`, too small to reach the next integer. `m < 2^32`
/// because `d > 2^(l-1)`.
fn short_magic(d: u32) -> (u32, u32) {
    let l = 32 - d.saturating_sub(1).leading_zeros();
    let shift = 31 + l;
    let m = (1u64 << shift).div_ceil(d.max(1) as u64);
    (m as u32, shift)
}

impl Rem {
    #[target_feature(enable = "sse2")]
    fn new(r: &FastRem) -> Self {
        let (d, _, _, pow2) = r.parts();
        let (magic, shift) = short_magic(d);
        Rem {
            pow2,
            mask: _mm_set1_epi32(d.wrapping_sub(1) as i32),
            magic: _mm_set1_epi32(magic as i32),
            shift: _mm_cvtsi32_si128(shift as i32),
            d: _mm_set1_epi32(d as i32),
        }
    }
}

#[inline]
#[target_feature(enable = "sse2")]
fn load(src: &[u32], i: usize) -> __m128i {
    let s: &[u32; 4] = src[i..i + 4].try_into().unwrap_or(&[0; 4]);
    // SAFETY: `s` is 16 readable bytes; the load is unaligned.
    unsafe { _mm_loadu_si128(s.as_ptr() as *const __m128i) }
}

#[inline]
#[target_feature(enable = "sse2")]
fn store(out: &mut [i32], i: usize, v: __m128i) {
    if let Some(d) = out.get_mut(i..i + 4) {
        // SAFETY: `d` is 16 writable bytes; the store is unaligned.
        unsafe { _mm_storeu_si128(d.as_mut_ptr() as *mut __m128i, v) }
    }
}

/// The value widths the SSE2 loop reads as 32-bit words: one word per `u32`, two (the
/// little-endian halves) per `u64`.
trait Words: HashNative {
    /// Two words per value.
    const WIDE: bool;
    fn words(src: &[Self]) -> &[u32];
}

impl Words for u32 {
    const WIDE: bool = false;
    fn words(src: &[u32]) -> &[u32] {
        src
    }
}

impl Words for u64 {
    const WIDE: bool = true;
    fn words(src: &[u64]) -> &[u32] {
        // SAFETY: u64 is two u32 in memory; alignment of u32 <= u64.
        unsafe { std::slice::from_raw_parts(src.as_ptr() as *const u32, src.len() * 2) }
    }
}

/// Hashes (and with `rem`, buckets) the values of `src` 4 at a time, reading them as 32-bit
/// words (see [`Words`]). The tail is scalar.
#[target_feature(enable = "sse2")]
fn run<T: Words>(src: &[T], rem: Option<(&Rem, &FastRem)>) -> Vec<i32> {
    let w = T::words(src);
    let n = src.len();
    let mut out = crate::mem::zeroed::<i32>(n);
    let full = n / 4 * 4;
    let mut i = 0;
    while i < full {
        let h = if T::WIDE {
            hash_u64x4(load(w, 2 * i), load(w, 2 * i + 4))
        } else {
            hash_u32x4(load(w, i))
        };
        let v = match rem {
            Some((rv, _)) => bucket(h, rv),
            None => h,
        };
        store(&mut out, i, v);
        i += 4;
    }
    murmur::tail_into(src, &mut out, full, rem.map(|(_, r)| r));
    out
}

// SAFETY (all four below): SSE2 is part of the x86-64 baseline, so the target feature of the
// called functions is always present.

/// `murmur3` of 64-bit values, 4 at a time.
pub(super) fn hash_u64(src: &[u64]) -> Vec<i32> {
    unsafe { run(src, None) }
}

/// `murmur3` of 32-bit values, 4 at a time.
pub(super) fn hash_u32(src: &[u32]) -> Vec<i32> {
    unsafe { run(src, None) }
}

/// `bucket` of 64-bit values, 4 at a time.
pub(super) fn bucket_u64(src: &[u64], r: &FastRem) -> Vec<i32> {
    unsafe {
        let rv = Rem::new(r);
        run(src, Some((&rv, r)))
    }
}

/// `bucket` of 32-bit values, 4 at a time.
pub(super) fn bucket_u32(src: &[u32], r: &FastRem) -> Vec<i32> {
    unsafe {
        let rv = Rem::new(r);
        run(src, Some((&rv, r)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bucket_is_exact_at_every_edge() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut divisors: Vec<u32> = vec![3, 5, 6, 7, 10, 11, 100, 641, 1000, 6700417];
        divisors.extend([
            65_535,
            65_537,
            (1 << 30) + 1,
            (1 << 31) - 1,
            (1 << 31) + 1,
            u32::MAX,
        ]);
        for _ in 0..200 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            divisors.push((x as u32 >> (x % 31)).max(1));
        }
        for d in divisors {
            let r = FastRem::new(d).unwrap();
            // SAFETY: SSE2 is part of the x86-64 baseline.
            let rv = unsafe { Rem::new(&r) };
            let mut hs: Vec<i32> = vec![i32::MIN, i32::MIN + 1, i32::MAX, -1, 0, 1];
            for k in [1u64, 2, 3, 1000, (1u64 << 31) / d as u64] {
                let m = (k * d as u64).min(1 << 31) as i64;
                for v in [m - 1, m, m + 1] {
                    hs.extend([v, -v].map(|v| v.clamp(i32::MIN as i64, i32::MAX as i64) as i32));
                }
            }
            for _ in 0..64 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                hs.push(x as i32);
            }
            for c in hs.chunks(4) {
                let mut lanes = [0i32; 4];
                lanes[..c.len()].copy_from_slice(c);
                let mut got = [0i32; 4];
                // SAFETY: 16-byte unaligned load and store of local arrays; SSE2 is baseline.
                unsafe {
                    let v = _mm_loadu_si128(lanes.as_ptr() as *const __m128i);
                    _mm_storeu_si128(got.as_mut_ptr() as *mut __m128i, bucket(v, &rv));
                }
                for (h, g) in lanes.iter().zip(got) {
                    assert_eq!(g as u32, h.unsigned_abs() % d, "d={d} h={h}");
                }
            }
        }
    }

    #[test]
    fn sse2_equals_scalar() {
        let mut x = 0x1234_5678_9abc_def0u64;
        let mut v64 = vec![0u64, 1, 5, u64::MAX, 2_841_062_569];
        for _ in 0..1001 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            v64.push(x);
        }
        let v32: Vec<u32> = v64
            .iter()
            .map(|v| *v as u32)
            .chain([(-2_089_875_627i32) as u32])
            .collect();
        let h64 = hash_u64(&v64);
        let h32 = hash_u32(&v32);
        for (v, h) in v64.iter().zip(&h64) {
            assert_eq!(*h, v.murmur() as i32);
        }
        for (v, h) in v32.iter().zip(&h32) {
            assert_eq!(*h, v.murmur() as i32);
        }
        for d in [1u32, 2, 3, 7, 16, 1000, 65_537, (1 << 31) - 1, 1 << 31] {
            let r = FastRem::new(d).unwrap();
            for (got, h) in bucket_u64(&v64, &r).iter().zip(&h64) {
                assert_eq!(*got as u32, h.unsigned_abs() % d, "d={d}");
            }
            for (got, h) in bucket_u32(&v32, &r).iter().zip(&h32) {
                assert_eq!(*got as u32, h.unsigned_abs() % d, "d={d}");
            }
        }
    }
}
