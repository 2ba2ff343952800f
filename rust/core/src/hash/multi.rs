//! `murmur3_multi` and `multi_bucket`: one MurmurHash3 per row over the concatenated bytes
//! of several columns, computed by a streaming hasher per row (no scratch copy of the row
//! bytes).

use crate::arrow::array::{Array, ArrayRef, BooleanArray, Int32Array};
use crate::arrow::buffer::NullBuffer;
use crate::arrow::compute::kernels::cast::cast;
use crate::arrow::datatypes::DataType;
use crate::error::{invalid_arg, Result};

use super::arrow::{check_buckets, check_hashable, classify, with_nulls, Source};
use super::murmur::{fmix, mix_h1, mix_k1};
use super::simd::rem_in_place;

/// Per-row streaming MurmurHash3 state.
#[derive(Clone, Copy, Default)]
struct Stream {
    h: u32,
    tail: u32,
    tail_len: u32,
    len: u32,
}

impl Stream {
    #[inline]
    fn feed(&mut self, mut data: &[u8]) {
        self.len = self.len.wrapping_add(data.len() as u32);
        if self.tail_len != 0 {
            let need = (4 - self.tail_len) as usize;
            if data.len() < need {
                for b in data {
                    self.tail |= (*b as u32) << (8 * self.tail_len);
                    self.tail_len += 1;
                }
                return;
            }
            for (i, b) in data[..need].iter().enumerate() {
                self.tail |= (*b as u32) << (8 * (self.tail_len as usize + i));
            }
            self.h = mix_h1(self.h, self.tail);
            data = &data[need..];
        }
        let mut chunks = data.chunks_exact(4);
        for c in &mut chunks {
            self.h = mix_h1(self.h, u32::from_le_bytes([c[0], c[1], c[2], c[3]]));
        }
        let rem = chunks.remainder();
        let mut k = 0u32;
        for (i, b) in rem.iter().enumerate() {
            k |= (*b as u32) << (8 * i);
        }
        self.tail = k;
        self.tail_len = rem.len() as u32;
    }

    #[inline]
    fn feed_u32(&mut self, v: u32) {
        if self.tail_len == 0 {
            self.h = mix_h1(self.h, v);
            self.len = self.len.wrapping_add(4);
        } else {
            self.feed(&v.to_le_bytes());
        }
    }

    #[inline]
    fn feed_u64(&mut self, v: u64) {
        if self.tail_len == 0 {
            self.h = mix_h1(mix_h1(self.h, v as u32), (v >> 32) as u32);
            self.len = self.len.wrapping_add(8);
        } else {
            self.feed(&v.to_le_bytes());
        }
    }

    #[inline]
    fn finish(&self) -> u32 {
        let mut h = self.h;
        if self.tail_len > 0 {
            h ^= mix_k1(self.tail);
        }
        fmix(h ^ self.len)
    }
}

/// Decodes dictionaries (to their value type) so every column is a plain array.
fn undictionary(array: &dyn Array) -> Result<ArrayRef> {
    match array.data_type() {
        DataType::Dictionary(_, v) => Ok(cast(array, v)?),
        _ => Ok(crate::arrow::array::make_array(array.to_data())),
    }
}

/// Feeds the bytes of every non-NULL value of `array` into its row's state and marks the
/// row in `any`.
fn feed_column(states: &mut [Stream], any: &mut [bool], array: &dyn Array) -> Result<()> {
    let nulls = array.logical_nulls().filter(|n| n.null_count() > 0);
    let src = classify(array)?;
    // The null check is hoisted out of the loop for columns without nulls.
    macro_rules! each {
        ($f:expr) => {
            match &nulls {
                None => {
                    any.fill(true);
                    for (i, s) in states.iter_mut().enumerate() {
                        #[allow(clippy::redundant_closure_call)]
                        $f(s, i);
                    }
                }
                Some(n) => {
                    for (i, s) in states.iter_mut().enumerate() {
                        if n.is_valid(i) {
                            any[i] = true;
                            #[allow(clippy::redundant_closure_call)]
                            $f(s, i);
                        }
                    }
                }
            }
        };
    }
    match src {
        Source::Null => {}
        Source::W1(v) => each!(|s: &mut Stream, i: usize| s.feed(&[v[i]])),
        Source::W2(v) => each!(|s: &mut Stream, i: usize| s.feed(&v[i].to_le_bytes())),
        Source::W4(v) => each!(|s: &mut Stream, i: usize| s.feed_u32(v[i])),
        Source::W8(v) => each!(|s: &mut Stream, i: usize| s.feed_u64(v[i])),
        Source::Bytes32(o, v) => {
            each!(|s: &mut Stream, i: usize| s.feed(&v[o[i] as usize..o[i + 1] as usize]))
        }
        Source::Bytes64(o, v) => {
            each!(|s: &mut Stream, i: usize| s.feed(&v[o[i] as usize..o[i + 1] as usize]))
        }
        Source::View(v) => each!(|s: &mut Stream, i: usize| s.feed(v.bytes(i))),
        Source::Display(d) => {
            let o = d.value_offsets();
            let v = d.value_data();
            each!(|s: &mut Stream, i: usize| s.feed(&v[o[i] as usize..o[i + 1] as usize]))
        }
    }
    Ok(())
}

fn check_multi(arrays: &[&dyn Array]) -> Result<usize> {
    let Some(first) = arrays.first() else {
        return invalid_arg!("murmur3_multi needs at least one column");
    };
    let n = first.len();
    for (i, a) in arrays.iter().enumerate() {
        if a.len() != n {
            return invalid_arg!(
                "all columns must have the same length: column 0 has {n} rows, column {i} has {}",
                a.len()
            );
        }
        check_hashable(*a)?;
    }
    Ok(n)
}

/// `murmur3_multi(x0, x1, ...)`: MurmurHash3 of the concatenated bytes of the non-NULL
/// arguments of each row; NULL when every argument is NULL.
///
/// # Errors
/// `InvalidArgument` for no columns or columns of different lengths; `UnsupportedType` as
/// for [`murmur3`](super::murmur3).
pub fn murmur3_multi(arrays: &[&dyn Array]) -> Result<Int32Array> {
    let n = check_multi(arrays)?;
    let mut states = vec![Stream::default(); n];
    let mut any = vec![false; n];
    for a in arrays {
        let a = undictionary(*a)?;
        feed_column(&mut states, &mut any, a.as_ref())?;
    }
    let values: Vec<i32> = states.iter().map(|s| s.finish() as i32).collect();
    let nulls = NullBuffer::from(BooleanArray::from(any).values().clone());
    let nulls = (nulls.null_count() > 0).then_some(nulls);
    Ok(with_nulls(values, nulls))
}

/// `multi_bucket([x0, x1, ...], n)`: `|murmur3_multi(x0, x1, ...)| mod n`, with the same
/// arithmetic as [`bucket`](super::bucket).
///
/// # Errors
/// As for [`murmur3_multi`] and [`bucket`](super::bucket).
pub fn multi_bucket(arrays: &[&dyn Array], n: i64) -> Result<Int32Array> {
    let r = check_buckets(n)?;
    let hashed = murmur3_multi(arrays)?;
    let (_, values, nulls) = hashed.into_parts();
    let mut v: Vec<i32> = values.into();
    rem_in_place(&mut v, &r);
    Ok(with_nulls(v, nulls))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference(data: &[u8]) -> u32 {
        murmur3::murmur3_32(&mut std::io::Cursor::new(data), 0).unwrap()
    }

    #[test]
    fn streaming_equals_concatenation() {
        let parts: [&[u8]; 5] = [b"a", b"bcd", b"", b"efghijk", b"lm"];
        let mut s = Stream::default();
        let mut all = Vec::new();
        for p in parts {
            s.feed(p);
            all.extend_from_slice(p);
        }
        assert_eq!(s.finish(), reference(&all));
        let mut s = Stream::default();
        s.feed(b"xyz");
        s.feed_u64(42);
        s.feed_u32(7);
        let mut all = b"xyz".to_vec();
        all.extend_from_slice(&42u64.to_le_bytes());
        all.extend_from_slice(&7u32.to_le_bytes());
        assert_eq!(s.finish(), reference(&all));
    }
}
