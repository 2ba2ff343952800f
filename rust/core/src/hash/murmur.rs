//! Scalar MurmurHash3 (x86, 32-bit): the constants and mixing steps, the byte-slice
//! function, the per-value hash of fixed-width values ([`HashNative`]), the bucket
//! remainder ([`FastRem`]) and the scalar loops over whole slices.
//!
//! Everything here is plain Rust with no SIMD and no Arrow. The SIMD loops (`super::simd`)
//! take the constants, [`FastRem`] and the scalar loops and tails from here; nothing here
//! calls back into them.

use crate::error::{invalid_arg, Result};

// MurmurHash3 x86_32 constants, shared with the SIMD loops.
pub(super) const C1: u32 = 0xcc9e_2d51;
pub(super) const C2: u32 = 0x1b87_3593;
pub(super) const N1: u32 = 0xe654_6b64;
pub(super) const F1: u32 = 0x85eb_ca6b;
pub(super) const F2: u32 = 0xc2b2_ae35;

#[inline(always)]
pub(super) fn mix_k1(k: u32) -> u32 {
    k.wrapping_mul(C1).rotate_left(15).wrapping_mul(C2)
}

#[inline(always)]
pub(super) fn mix_h1(h: u32, k: u32) -> u32 {
    (h ^ mix_k1(k))
        .rotate_left(13)
        .wrapping_mul(5)
        .wrapping_add(N1)
}

#[inline(always)]
pub(super) fn fmix(mut h: u32) -> u32 {
    h ^= h >> 16;
    h = h.wrapping_mul(F1);
    h ^= h >> 13;
    h = h.wrapping_mul(F2);
    h ^= h >> 16;
    h
}

/// MurmurHash3 x86_32 of `data` with `seed`, as an unsigned 32-bit value.
///
/// Byte-for-byte equal to the reference implementation (the `murmur3` crate's
/// `murmur3_32`), which the tests check.
///
/// # Examples
/// ```
/// use lance_partitioned_core::hash::murmur3_x86_32;
/// assert_eq!(murmur3_x86_32(b"hello", 0) as i32, 613153351);
/// ```
#[inline]
pub fn murmur3_x86_32(data: &[u8], seed: u32) -> u32 {
    let mut h = seed;
    let mut chunks = data.chunks_exact(4);
    for c in &mut chunks {
        h = mix_h1(h, u32::from_le_bytes([c[0], c[1], c[2], c[3]]));
    }
    let tail = chunks.remainder();
    if !tail.is_empty() {
        let mut k = 0u32;
        for (i, b) in tail.iter().enumerate() {
            k |= (*b as u32) << (8 * i);
        }
        h ^= mix_k1(k);
    }
    fmix(h ^ data.len() as u32)
}

/// Longest input [`murmur3_short`] hashes.
pub(super) const SHORT: usize = 32;

/// [`murmur3_x86_32`] (seed 0) of the first `len <= SHORT` bytes held by `words` (little
/// endian), whatever bytes follow them. Always eight rounds, each kept only while inside
/// `len` (a mask, not a branch), and a tail word masked to its bytes: no branch depends on
/// the length, so the hashes of consecutive rows overlap in the pipeline instead of waiting
/// on mispredicted loop exits.
#[inline(always)]
pub(super) fn murmur3_short(words: &[u32; SHORT / 4], len: usize) -> u32 {
    debug_assert!(len <= SHORT);
    let word = |i: usize| words[i];
    let full = len / 4;
    let mut h = 0u32;
    for i in 0..SHORT / 4 {
        let keep = 0u32.wrapping_sub((i < full) as u32);
        h = (mix_h1(h, word(i)) & keep) | (h & !keep);
    }
    // The tail: the `len % 4` bytes after the full words (none: the mask is 0, and
    // mix_k1(0) == 0 leaves h as it is).
    let tail_mask = ((1u64 << (8 * (len % 4))) - 1) as u32;
    h ^= mix_k1(word(full.min(SHORT / 4 - 1)) & tail_mask);
    fmix(h ^ len as u32)
}

/// A fixed-width value whose little-endian bytes are hashed (integers, floats, dates and
/// timestamps hash their native-width bytes; see docs/design.md, "Hashed bytes per type").
pub(super) trait HashNative: Copy + 'static {
    /// MurmurHash3 (seed 0) of the value's little-endian bytes.
    fn murmur(self) -> u32;
}

impl HashNative for u8 {
    #[inline(always)]
    fn murmur(self) -> u32 {
        fmix(mix_k1(self as u32) ^ 1)
    }
}
impl HashNative for u16 {
    #[inline(always)]
    fn murmur(self) -> u32 {
        fmix(mix_k1(self as u32) ^ 2)
    }
}
impl HashNative for u32 {
    #[inline(always)]
    fn murmur(self) -> u32 {
        fmix(mix_h1(0, self) ^ 4)
    }
}
impl HashNative for u64 {
    #[inline(always)]
    fn murmur(self) -> u32 {
        let h = mix_h1(0, self as u32);
        let h = mix_h1(h, (self >> 32) as u32);
        fmix(h ^ 8)
    }
}

/// `n mod d` for a fixed divisor `d` without a division instruction.
///
/// Uses the round-up multiply-shift reciprocal with a 33-bit multiplier (stored as 32 bits
/// plus an add-and-halve step), exact for every `u32` dividend. Powers of two use a mask.
#[derive(Clone, Copy, Debug)]
pub struct FastRem {
    d: u32,
    magic: u32,
    shift: u32,
    pow2: bool,
}

impl FastRem {
    /// A reciprocal for divisor `d`.
    ///
    /// # Errors
    /// `InvalidArgument` when `d` is 0.
    pub fn new(d: u32) -> Result<Self> {
        if d == 0 {
            return invalid_arg!("divisor must be positive");
        }
        if d.is_power_of_two() {
            return Ok(Self {
                d,
                magic: 0,
                shift: 0,
                pow2: true,
            });
        }
        // 2^k < d < 2^(k+1)
        let k = 31 - d.leading_zeros();
        let num = 1u64 << (32 + k);
        let mut m = (num / d as u64) as u32;
        let rem = (num % d as u64) as u32;
        m = m.wrapping_add(m);
        let twice_rem = rem.wrapping_add(rem);
        if twice_rem >= d || twice_rem < rem {
            m = m.wrapping_add(1);
        }
        Ok(Self {
            d,
            magic: m.wrapping_add(1),
            shift: k,
            pow2: false,
        })
    }

    /// The divisor.
    pub fn divisor(&self) -> u32 {
        self.d
    }

    /// Whether the divisor is a power of two (the remainder is then a mask).
    #[inline]
    pub(super) fn is_pow2(&self) -> bool {
        self.pow2
    }

    /// `(divisor, magic, shift, is_power_of_two)`, for the SIMD loops.
    pub(super) fn parts(&self) -> (u32, u32, u32, bool) {
        (self.d, self.magic, self.shift, self.pow2)
    }

    #[inline(always)]
    fn rem_generic<const POW2: bool>(&self, n: u32) -> u32 {
        if POW2 {
            n & (self.d - 1)
        } else {
            let q = ((self.magic as u64 * n as u64) >> 32) as u32;
            let t = ((n - q) >> 1).wrapping_add(q);
            let quot = t >> self.shift;
            n.wrapping_sub(quot.wrapping_mul(self.d))
        }
    }

    /// The bucket of a hash: `|h| mod d` with `h` read as i32 (see [`bucket_of`]). The
    /// scalar tails of the SIMD loops use it.
    #[inline]
    pub(super) fn bucket_of_hash(&self, h: u32) -> i32 {
        self.rem((h as i32).unsigned_abs()) as i32
    }

    /// `n mod d`.
    #[inline]
    pub fn rem(&self, n: u32) -> u32 {
        if self.pow2 {
            self.rem_generic::<true>(n)
        } else {
            self.rem_generic::<false>(n)
        }
    }
}

/// The bucket of a hash read as i32: `|h| mod n` computed in i64, so `|i32::MIN|` is 2^31
/// rather than an overflow (see docs/design.md, "Bucket arithmetic").
#[inline(always)]
pub(super) fn bucket_of<const POW2: bool>(h: u32, r: &FastRem) -> i32 {
    r.rem_generic::<POW2>((h as i32).unsigned_abs()) as i32
}

// ------------------------------------------------------------------------------------------
// Scalar loops over fixed-width slices. The compiler vectorises them; `super::simd` compiles
// a second copy of each for AVX2 and picks one at run time.
// ------------------------------------------------------------------------------------------

// The loops write into a zeroed `Vec` (calloc: the zero pages come from the OS lazily, so
// zeroing is free) through a slice; collecting from an iterator measured 3x slower here
// because the per-element length update blocks vectorisation.

/// Hashes every value of `src` into the same position of `out`.
#[inline(always)]
pub(super) fn hash_into<T: HashNative>(src: &[T], out: &mut [i32]) {
    for (d, s) in out.iter_mut().zip(src) {
        *d = s.murmur() as i32;
    }
}

/// The hash of every value of `src`.
#[inline(always)]
pub(super) fn hash_loop<T: HashNative>(src: &[T]) -> Vec<i32> {
    let mut out = crate::mem::zeroed::<i32>(src.len());
    hash_into(src, &mut out);
    out
}

/// The bucket of every value of `src`; `POW2` must equal `r.is_pow2()`.
#[inline(always)]
pub(super) fn bucket_loop<T: HashNative, const POW2: bool>(src: &[T], r: &FastRem) -> Vec<i32> {
    let mut out = crate::mem::zeroed::<i32>(src.len());
    for (d, s) in out.iter_mut().zip(src) {
        *d = bucket_of::<POW2>(s.murmur(), r);
    }
    out
}

/// Replaces every hash in `vals` by its bucket; `POW2` must equal `r.is_pow2()`.
#[inline(always)]
pub(super) fn rem_loop<const POW2: bool>(vals: &mut [i32], r: &FastRem) {
    for v in vals.iter_mut() {
        *v = bucket_of::<POW2>(*v as u32, r);
    }
}

/// The scalar tail of the SIMD loops: hashes (and with `rem`, buckets) the values of `src`
/// from index `from` on into the same positions of `out`.
#[inline(always)]
pub(super) fn tail_into<T: HashNative>(
    src: &[T],
    out: &mut [i32],
    from: usize,
    rem: Option<&FastRem>,
) {
    for (o, v) in out.iter_mut().zip(src).skip(from) {
        let h = v.murmur();
        *o = match rem {
            Some(r) => r.bucket_of_hash(h),
            None => h as i32,
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference(data: &[u8]) -> u32 {
        murmur3::murmur3_32(&mut std::io::Cursor::new(data), 0).unwrap()
    }

    #[test]
    fn scalar_matches_reference_for_all_lengths() {
        let data: Vec<u8> = (0..64u32).map(|i| (i * 37 + 11) as u8).collect();
        for len in 0..data.len() {
            assert_eq!(
                murmur3_x86_32(&data[..len], 0),
                reference(&data[..len]),
                "len {len}"
            );
        }
    }

    /// Every length up to SHORT, with bytes after the input that must not matter.
    #[test]
    fn short_path_matches_reference_whatever_follows() {
        for fill in [0u8, 0xff, 0x5a] {
            for len in 0..=SHORT {
                let mut buf = [fill; SHORT];
                for (i, b) in buf.iter_mut().take(len).enumerate() {
                    *b = (i as u8).wrapping_mul(37).wrapping_add(11);
                }
                let words: [u32; SHORT / 4] = std::array::from_fn(|i| {
                    u32::from_le_bytes([buf[4 * i], buf[4 * i + 1], buf[4 * i + 2], buf[4 * i + 3]])
                });
                assert_eq!(
                    murmur3_short(&words, len),
                    reference(&buf[..len]),
                    "len {len}"
                );
            }
        }
    }

    #[test]
    fn fixed_width_paths_match_byte_path() {
        for v in [0u64, 1, 5, u64::MAX, 0x0123_4567_89ab_cdef] {
            assert_eq!(v.murmur(), reference(&v.to_le_bytes()));
            assert_eq!((v as u32).murmur(), reference(&(v as u32).to_le_bytes()));
            assert_eq!((v as u16).murmur(), reference(&(v as u16).to_le_bytes()));
            assert_eq!((v as u8).murmur(), reference(&[(v as u8)]));
        }
    }

    #[test]
    fn fast_rem_is_exact() {
        let divisors = [
            1u32,
            2,
            3,
            5,
            6,
            7,
            10,
            16,
            17,
            100,
            641,
            1000,
            65_537,
            (1 << 31) - 1,
            1 << 31,
            u32::MAX,
        ];
        let mut dividends = vec![
            0u32,
            1,
            2,
            3,
            1 << 31,
            (1 << 31) - 1,
            u32::MAX,
            u32::MAX - 1,
        ];
        let mut x = 0x9e37_79b9u32;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            dividends.push(x);
        }
        for d in divisors {
            let r = FastRem::new(d).unwrap();
            for &n in &dividends {
                assert_eq!(r.rem(n), n % d, "{n} mod {d}");
            }
        }
        assert!(FastRem::new(0).is_err());
    }
}
