//! `murmur3_multi` and `multi_bucket`: one MurmurHash3 per row over the concatenated bytes
//! of several columns, computed by a streaming hasher per row (no scratch copy of the row
//! bytes).

use crate::arrow::array::{Array, ArrayRef, BooleanArray, Int32Array};
use crate::arrow::buffer::NullBuffer;
use crate::arrow::compute::kernels::cast::cast;
use crate::arrow::datatypes::DataType;
use crate::error::{invalid_arg, Result};

use super::arrow::{check_buckets, check_hashable, classify, with_nulls, Source};
use super::murmur::{fmix, mix_h1, mix_k1, murmur3_short, murmur3_x86_32, SHORT};
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

/// Rows hashed together by the streaming path: their states (16 bytes each) stay in the L1
/// cache while every column feeds them, and the memory for states is bounded (16 KB instead
/// of 16 bytes per row of the whole array).
const BLOCK: usize = 1024;

/// Feeds the bytes of every non-NULL value of rows `start..start + states.len()` of a
/// column (its classified values and NULLs) into the rows' states and marks them in `any`.
fn feed_column(
    states: &mut [Stream],
    any: &mut [bool],
    src: &Source<'_>,
    nulls: Option<&NullBuffer>,
    start: usize,
) {
    // The null check is hoisted out of the loop for columns without nulls.
    macro_rules! each {
        ($f:expr) => {
            match nulls {
                None => {
                    any.fill(true);
                    for (j, s) in states.iter_mut().enumerate() {
                        #[allow(clippy::redundant_closure_call)]
                        $f(s, start + j);
                    }
                }
                Some(n) => {
                    for (j, s) in states.iter_mut().enumerate() {
                        if n.is_valid(start + j) {
                            any[j] = true;
                            #[allow(clippy::redundant_closure_call)]
                            $f(s, start + j);
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
    let columns = arrays
        .iter()
        .map(|a| undictionary(*a))
        .collect::<Result<Vec<_>>>()?;
    let sources = columns
        .iter()
        .map(|a| {
            let nulls = a.logical_nulls().filter(|n| n.null_count() > 0);
            Ok((classify(a.as_ref())?, nulls))
        })
        .collect::<Result<Vec<_>>>()?;
    let mut values = crate::mem::zeroed::<i32>(n);
    let mut any = vec![false; n];
    let byte_columns: Option<Vec<_>> = sources
        .iter()
        .map(|(src, nulls)| match src {
            Source::Bytes32(o, v) => Some((*o, *v, nulls.as_ref())),
            _ => None,
        })
        .collect();
    if let Some(cols) = byte_columns {
        hash_concatenated(&cols, &mut values, &mut any);
        return Ok(finish_multi(values, any));
    }
    let mut states = [Stream::default(); BLOCK];
    for start in (0..n).step_by(BLOCK) {
        let end = n.min(start + BLOCK);
        let block = &mut states[..end - start];
        block.fill(Stream::default());
        for (src, nulls) in &sources {
            feed_column(block, &mut any[start..end], src, nulls.as_ref(), start);
        }
        for (v, s) in values[start..end].iter_mut().zip(block.iter()) {
            *v = s.finish() as i32;
        }
    }
    Ok(finish_multi(values, any))
}

/// The hashes with NULL where no argument had a value.
fn finish_multi(values: Vec<i32>, any: Vec<bool>) -> Int32Array {
    let nulls = NullBuffer::from(BooleanArray::from(any).values().clone());
    let nulls = (nulls.null_count() > 0).then_some(nulls);
    with_nulls(values, nulls)
}

/// One byte column (utf8 or binary with 32-bit offsets): offsets, values, NULLs.
type ByteColumn<'a> = (&'a [i32], &'a [u8], Option<&'a NullBuffer>);

/// The longest concatenated row [`hash_concatenated`] hashes from its buffer.
const CAP: usize = 240;
/// Values up to this length are moved with one fixed-size copy.
const WIDE: usize = 16;

/// `murmur3_multi` of byte columns: each row's values are copied into a small buffer (short
/// values with one fixed 16-byte move) and hashed in one pass, which avoids the streaming
/// state's byte-wise joins of values whose lengths are not multiples of 4. Rows longer than
/// the buffer are streamed.
fn hash_concatenated(cols: &[ByteColumn<'_>], values: &mut [i32], any: &mut [bool]) {
    let mut buf = [0u8; CAP + WIDE];
    for (i, (out, any)) in values.iter_mut().zip(any.iter_mut()).enumerate() {
        *out = match concatenate(cols, i, &mut buf, any) {
            Some(len) if len <= SHORT => murmur3_short(&first_words(&buf), len) as i32,
            Some(len) => murmur3_x86_32(&buf[..len], 0) as i32,
            None => stream_row(cols, i) as i32,
        };
    }
}

/// The first [`SHORT`] bytes of `buf` as little-endian words.
#[inline(always)]
fn first_words(buf: &[u8; CAP + WIDE]) -> [u32; SHORT / 4] {
    std::array::from_fn(|w| {
        u32::from_le_bytes([buf[4 * w], buf[4 * w + 1], buf[4 * w + 2], buf[4 * w + 3]])
    })
}

/// Copies row `i`'s non-NULL values into `buf` and returns their length, or None when they
/// do not fit.
#[inline]
fn concatenate(
    cols: &[ByteColumn<'_>],
    i: usize,
    buf: &mut [u8; CAP + WIDE],
    any: &mut bool,
) -> Option<usize> {
    let mut len = 0;
    for (o, v, nulls) in cols {
        if nulls.is_some_and(|n| n.is_null(i)) {
            continue;
        }
        *any = true;
        let (s, e) = (o[i] as usize, o[i + 1] as usize);
        let n = e - s;
        if len + n > CAP {
            return None;
        }
        if n <= WIDE && s + WIDE <= v.len() {
            buf[len..len + WIDE].copy_from_slice(&v[s..s + WIDE]);
        } else {
            buf[len..len + n].copy_from_slice(&v[s..e]);
        }
        len += n;
    }
    Some(len)
}

/// Row `i` hashed with the streaming state (rows longer than [`CAP`]).
fn stream_row(cols: &[ByteColumn<'_>], i: usize) -> u32 {
    let mut st = Stream::default();
    for (o, v, nulls) in cols {
        if !nulls.is_some_and(|n| n.is_null(i)) {
            st.feed(&v[o[i] as usize..o[i + 1] as usize]);
        }
    }
    st.finish()
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

    /// `murmur3_multi` of `columns` sliced from row `skip` against the reference hash of each
    /// row's concatenated non-NULL values (`rows[row][column]`: the bytes, None for NULL).
    fn check_concatenation(
        columns: &[ArrayRef],
        rows: &[Vec<Option<Vec<u8>>>],
        skip: usize,
    ) -> std::result::Result<(), proptest::test_runner::TestCaseError> {
        let skip = skip.min(rows.len() - 1);
        let n = rows.len() - skip;
        let sliced: Vec<ArrayRef> = columns.iter().map(|c| c.slice(skip, n)).collect();
        let refs: Vec<&dyn Array> = sliced.iter().map(|c| c.as_ref()).collect();
        let got = murmur3_multi(&refs).unwrap();
        for (i, r) in rows[skip..].iter().enumerate() {
            let all: Vec<u8> = r.iter().flatten().flatten().copied().collect();
            let want = r
                .iter()
                .any(Option::is_some)
                .then(|| reference(&all) as i32);
            proptest::prop_assert_eq!(got.is_valid(i).then(|| got.value(i)), want, "row {}", i);
        }
        Ok(())
    }

    /// A binary column of column `c` of `rows`.
    fn binary(rows: &[Vec<Option<Vec<u8>>>], c: usize) -> ArrayRef {
        std::sync::Arc::new(crate::arrow::array::BinaryArray::from_iter(
            rows.iter().map(|r| r[c].clone()),
        ))
    }

    proptest::proptest! {
        /// The byte-column path (buffer, 16-byte moves, streamed rows past the buffer) against
        /// the reference hash of each row's concatenated non-NULL values, on sliced arrays.
        #[test]
        fn byte_columns_hash_their_concatenation(
            mut rows in proptest::collection::vec(
                proptest::collection::vec(
                    proptest::option::weighted(0.85, proptest::collection::vec(0u8..=255, 0..140)),
                    3,
                ),
                1..40,
            ),
            skip in 0usize..3,
        ) {
            // The third column is utf8: hex text of its bytes (valid UTF-8 of any length).
            for r in &mut rows {
                r[2] = r[2].take().map(|v| v.iter().map(|x| format!("{x:x}")).collect::<String>().into_bytes());
            }
            let text = crate::arrow::array::StringArray::from_iter(
                rows.iter().map(|r| r[2].as_ref().map(|v| String::from_utf8_lossy(v).into_owned())),
            );
            check_concatenation(&[binary(&rows, 0), binary(&rows, 1), std::sync::Arc::new(text)], &rows, skip)?;
        }

        /// Short rows (the fixed-round path: values of 0-18 bytes, rows up to and past 32
        /// bytes, values at the very end of their buffer) against the reference hash.
        #[test]
        fn short_rows_hash_their_concatenation(
            rows in proptest::collection::vec(
                proptest::collection::vec(
                    proptest::option::weighted(0.9, proptest::collection::vec(0u8..=255, 0..19)),
                    2,
                ),
                1..60,
            ),
            skip in 0usize..3,
        ) {
            check_concatenation(&[binary(&rows, 0), binary(&rows, 1)], &rows, skip)?;
        }
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
