//! Build rows by key for the unique-key join (`unique`): one key column of an integer-backed
//! type, seen as `i64`, mapped to the build row that holds it.

use crate::arrow::array::Array;
use crate::arrow::buffer::{NullBuffer, ScalarBuffer};
use crate::arrow::datatypes::DataType;

/// No build row (an absent or NULL key).
pub(super) const NONE: u32 = u32::MAX;

/// Bytes per key of the integer-backed types this join takes (`None`: DataFusion's join).
pub(super) fn key_width(t: &DataType) -> Option<usize> {
    use DataType::*;
    match t {
        Int8 | UInt8 => Some(1),
        Int16 | UInt16 => Some(2),
        Int32 | UInt32 | Date32 | Time32(_) => Some(4),
        Int64 | UInt64 | Date64 | Time64(_) | Timestamp(_, _) | Duration(_) => Some(8),
        _ => None,
    }
}

/// The key values of a column as `i64` (a one-to-one image: unsigned values keep their bits,
/// narrower ones sign-extend), with its validity.
enum KeyValues {
    W1(ScalarBuffer<i8>),
    W2(ScalarBuffer<i16>),
    W4(ScalarBuffer<i32>),
    W8(ScalarBuffer<i64>),
}

impl KeyValues {
    fn of(array: &dyn Array) -> Option<(Self, Option<NullBuffer>)> {
        let data = array.to_data();
        let (buf, off, len) = (data.buffers().first()?.clone(), data.offset(), data.len());
        let values = match key_width(array.data_type())? {
            1 => Self::W1(ScalarBuffer::new(buf, off, len)),
            2 => Self::W2(ScalarBuffer::new(buf, off, len)),
            4 => Self::W4(ScalarBuffer::new(buf, off, len)),
            _ => Self::W8(ScalarBuffer::new(buf, off, len)),
        };
        Some((values, data.nulls().cloned()))
    }

    /// Calls `f` with every value (NULL slots included: their values are arbitrary).
    #[inline]
    fn for_each(&self, mut f: impl FnMut(usize, i64)) {
        match self {
            Self::W1(v) => v.iter().enumerate().for_each(|(i, &x)| f(i, i64::from(x))),
            Self::W2(v) => v.iter().enumerate().for_each(|(i, &x)| f(i, i64::from(x))),
            Self::W4(v) => v.iter().enumerate().for_each(|(i, &x)| f(i, i64::from(x))),
            Self::W8(v) => v.iter().enumerate().for_each(|(i, &x)| f(i, x)),
        }
    }
}

/// Build rows by key.
///
/// Over a small key range (at most max(64M, 64 x rows) values) a bitmap of the keys present
/// with the count of keys before each 64-key word: a key's row is its rank, once the build
/// rows are put in key order. That table takes a quarter of a byte per value of the range (a
/// group of a table bucketed 8 ways, 125k keys over a range of 1M, has 256 KB of it: cache
/// resident) where an array of row numbers would take four. Over a wider range, an
/// open-addressing hash table.
pub(super) enum KeyMap {
    Ranked {
        min: i64,
        /// Per 64 values of the range: the bits of the keys present, and the number of keys
        /// in the words before.
        words: Vec<[u64; 2]>,
    },
    Hashed {
        shift: u32,
        slots: Vec<u32>,
        keys: Vec<i64>,
    },
}

/// Values of the range a ranked map may always cover.
const RANKED_FLOOR: u64 = 1 << 26;
/// Values of the range per build row a ranked map may cover beyond the floor.
const RANKED_PER_ROW: u64 = 64;

impl KeyMap {
    /// The map of a build key column and, for a ranked map, the order to put the build rows
    /// in (key order, then the rows with a NULL key); `None` when a key repeats (or there are
    /// too many rows for 32-bit row numbers).
    pub(super) fn build(column: &dyn Array) -> Option<(Self, Option<Vec<u32>>)> {
        let (values, nulls) = KeyValues::of(column)?;
        let n = column.len();
        if n >= NONE as usize {
            return None;
        }
        let valid = |i: usize| nulls.as_ref().is_none_or(|b| b.is_valid(i));
        let (mut min, mut max) = (i64::MAX, i64::MIN);
        let mut keys = Vec::with_capacity(n);
        values.for_each(|i, k| {
            keys.push(k);
            if valid(i) {
                min = min.min(k);
                max = max.max(k);
            }
        });
        let range = if min > max {
            0
        } else {
            (i128::from(max) - i128::from(min) + 1) as u128
        };
        if range <= u128::from(RANKED_FLOOR.max(RANKED_PER_ROW * n as u64)) {
            let mut words = vec![[0u64; 2]; (range as usize).div_ceil(64)];
            for (i, &k) in keys.iter().enumerate() {
                if valid(i) {
                    let s = k.wrapping_sub(min) as u64;
                    let (w, bit) = (&mut words[(s >> 6) as usize][0], 1u64 << (s & 63));
                    if *w & bit != 0 {
                        return None;
                    }
                    *w |= bit;
                }
            }
            let mut before = 0u64;
            for w in &mut words {
                w[1] = before;
                before += u64::from(w[0].count_ones());
            }
            let map = Self::Ranked { min, words };
            let ranked = before as usize;
            let mut order = vec![0u32; n];
            let mut unkeyed = ranked;
            for (i, &k) in keys.iter().enumerate() {
                let r = if valid(i) {
                    map.get(k) as usize
                } else {
                    unkeyed += 1;
                    unkeyed - 1
                };
                order[r] = i as u32;
            }
            return Some((map, Some(order)));
        }
        let bits = (2 * n).max(2).next_power_of_two().trailing_zeros();
        let mut slots = vec![NONE; 1usize << bits];
        let shift = 64 - bits;
        let mask = slots.len() - 1;
        for (i, &k) in keys.iter().enumerate() {
            if !valid(i) {
                continue;
            }
            let mut s = hash_slot(k, shift);
            loop {
                let row = slots[s];
                if row == NONE {
                    slots[s] = i as u32;
                    break;
                }
                if keys[row as usize] == k {
                    return None;
                }
                s = (s + 1) & mask;
            }
        }
        Some((Self::Hashed { shift, slots, keys }, None))
    }

    /// The build row of a key (`NONE` when absent).
    #[inline]
    fn get(&self, k: i64) -> u32 {
        match self {
            Self::Ranked { min, words } => {
                let s = k.wrapping_sub(*min) as u64;
                let Some(&[bits, before]) = words.get((s >> 6) as usize) else {
                    return NONE;
                };
                let bit = 1u64 << (s & 63);
                if bits & bit == 0 {
                    NONE
                } else {
                    (before + u64::from((bits & (bit - 1)).count_ones())) as u32
                }
            }
            Self::Hashed { shift, slots, keys } => {
                let mask = slots.len() - 1;
                let mut s = hash_slot(k, *shift);
                loop {
                    let row = slots[s];
                    if row == NONE || keys[row as usize] == k {
                        return row;
                    }
                    s = (s + 1) & mask;
                }
            }
        }
    }

    /// The build row of every probe key (`NONE` for NULL keys and keys not in the map).
    pub(super) fn lookup(&self, column: &dyn Array) -> Vec<u32> {
        let Some((values, nulls)) = KeyValues::of(column) else {
            return vec![NONE; column.len()];
        };
        let mut out = Vec::with_capacity(column.len());
        values.for_each(|_, k| out.push(self.get(k)));
        if let Some(nulls) = nulls.filter(|b| b.null_count() > 0) {
            for i in nulls.iter().enumerate().filter(|(_, v)| !v).map(|(i, _)| i) {
                out[i] = NONE;
            }
        }
        out
    }
}

#[inline]
fn hash_slot(k: i64, shift: u32) -> usize {
    ((k as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> shift) as usize
}
