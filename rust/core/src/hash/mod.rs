//! MurmurHash3 (x86, 32-bit, seed 0) over whole Arrow arrays, and the `bucket` /
//! `multi_bucket` transforms built on it.
//!
//! The bytes hashed for each Arrow type follow upstream Lance's encoding (see
//! docs/design.md, "Hashed bytes per type"):
//!
//! | Arrow type | bytes hashed |
//! |---|---|
//! | int8..int64, uint8..uint64, float16/32/64, date32, date64, timestamp (any unit, any tz) | the value's native-width little-endian bytes (timestamps: the raw i64 in its unit, timezone ignored) |
//! | utf8, large_utf8, utf8_view | the UTF-8 bytes |
//! | binary, large_binary, binary_view | the raw bytes |
//! | dictionary | the hash of the value the key points to |
//! | boolean, decimal32/64/128/256, time32/64, duration, fixed_size_binary | arrow's display string (`true`, `1.23`, `13:45:00`, lowercase hex, ...) |
//!
//! NULL hashes to NULL. `murmur3_multi` hashes the concatenation of the non-NULL arguments'
//! bytes and is NULL only when every argument is NULL.
//!
//! `bucket(x, N)` is `|murmur3(x)| mod N` computed in i64 (see docs/design.md, "Bucket
//! arithmetic"): it equals upstream Lance's `abs(murmur3(x)) % N` for every hash except
//! `i32::MIN`, where upstream's checked `abs` fails and we return `2147483648 mod N`.
//!
//! The fixed-width paths hash straight from the values buffer in a branch-free loop that the
//! compiler vectorises; on x86-64 a second copy of each loop is compiled for AVX2 and picked at
//! run time. Hashing and the modulo are fused, and the modulo uses a precomputed
//! multiply-shift reciprocal instead of a division.
//!
//! # Layout
//!
//! | module | what |
//! |---|---|
//! | `murmur` | the scalar hash: constants, mixing, [`murmur3_x86_32`], the per-value hash of fixed-width values, [`FastRem`], the scalar loops and the scalar tails of the SIMD loops |
//! | `simd` | run-time dispatch ([`simd_level`], `LANCE_PARTITIONED_PORTABLE`) and the fixed-width entry points; `simd::sse2` and `simd::avx2` hold the explicit SIMD loops |
//! | `arrow` | per-Arrow-type hashing: classification into bytes, display strings, dictionaries, nulls, [`murmur3`], [`bucket`], [`is_hashable`] |
//! | `multi` | [`murmur3_multi`] and [`multi_bucket`] with their per-row streaming state |
//!
//! Dependencies point one way only, with no cycles:
//! `multi -> arrow -> simd -> murmur` (and `multi -> simd`, `multi -> murmur`,
//! `arrow -> murmur`). `murmur` depends on none of the others, and `simd` knows nothing
//! about Arrow.

mod arrow;
mod multi;
mod murmur;
mod simd;

pub use arrow::{bucket, is_hashable, murmur3, murmur3_ref};
pub use multi::{multi_bucket, murmur3_multi};
pub use murmur::{murmur3_x86_32, FastRem};
pub use simd::{raw_hash_u64_into, simd_level};
