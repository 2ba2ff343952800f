//! Routing: group the rows of a batch by their partition key tuple.
//!
//! [`group_rows`] assigns every row a dense group id (groups numbered in order of first
//! appearance; NULL is a key like any other). [`route`] then builds one stable permutation with
//! a counting sort, gathers the batch once, and describes each group as a contiguous slice of
//! the permuted batch, so a writer gets one batch per partition with no per-row work beyond a
//! single gather.
//!
//! Per key column, values are first mapped to dense codes with the cheapest method the type
//! allows (a direct table for small integer ranges and booleans, a hash table over the raw
//! bytes for strings and binaries, dictionary keys for dictionaries, Arrow's row format for
//! anything else); the per-column codes are then combined into one group id.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use crate::arrow::array::{
    downcast_primitive_array, make_array, Array, ArrayData, ArrayRef, AsArray,
    BooleanBufferBuilder, GenericByteArray, PrimitiveArray, RecordBatch, RecordBatchOptions,
    UInt32Array,
};
use crate::arrow::buffer::{Buffer, NullBuffer, OffsetBuffer, ScalarBuffer};
use crate::arrow::compute::take;
use crate::arrow::datatypes::{
    ArrowNativeType, ArrowPrimitiveType, ByteArrayType, DataType, Schema,
};
use crate::arrow::row::{RowConverter, SortField};
use crate::datafusion::common::HashMap;
use crate::error::{invalid_arg, Error, Result};

/// Dense group ids for the rows of one batch.
#[derive(Debug, Clone)]
pub struct Grouping {
    /// Group id of every row, in `0..num_groups`.
    pub group_of_row: Vec<u32>,
    /// Index of the first row of each group.
    pub first_row: Vec<u32>,
}

impl Grouping {
    /// Number of distinct key tuples.
    pub fn num_groups(&self) -> usize {
        self.first_row.len()
    }
}

/// Dense per-column codes and their number.
struct Codes {
    codes: Vec<u32>,
    cardinality: u32,
}

/// Assigns dense codes in order of first appearance from a per-row raw code, using a direct
/// table when the raw codes are small.
fn densify_small(raw: impl Iterator<Item = usize>, len: usize, table_size: usize) -> Codes {
    let mut table = vec![u32::MAX; table_size];
    let mut codes = Vec::with_capacity(len);
    let mut next = 0u32;
    for r in raw {
        let slot = &mut table[r];
        if *slot == u32::MAX {
            *slot = next;
            next += 1;
        }
        codes.push(*slot);
    }
    Codes {
        codes,
        cardinality: next,
    }
}

/// Dense codes through a hash map keyed by `K`; NULL rows get their own code.
fn densify_hashed<K: std::hash::Hash + Eq + Copy>(
    len: usize,
    is_null: impl Fn(usize) -> bool,
    key: impl Fn(usize) -> K,
) -> Codes {
    let mut map: HashMap<K, u32> = HashMap::default();
    let mut codes = Vec::with_capacity(len);
    let mut null_code = u32::MAX;
    let mut next = 0u32;
    // Runs of equal keys are common (clustered input): remember the previous key.
    let mut last: Option<(K, u32)> = None;
    for i in 0..len {
        if is_null(i) {
            if null_code == u32::MAX {
                null_code = next;
                next += 1;
            }
            codes.push(null_code);
            continue;
        }
        let k = key(i);
        if let Some((lk, lc)) = last {
            if lk == k {
                codes.push(lc);
                continue;
            }
        }
        let c = *map.entry(k).or_insert_with(|| {
            next += 1;
            next - 1
        });
        last = Some((k, c));
        codes.push(c);
    }
    Codes {
        codes,
        cardinality: next,
    }
}

fn primitive_codes<T: ArrowPrimitiveType>(a: &PrimitiveArray<T>) -> Codes {
    let len = a.len();
    let nulls = a.logical_nulls();
    let is_null = |i: usize| nulls.as_ref().is_some_and(|n| n.is_null(i));
    // Small integer ranges: a direct table instead of hashing.
    let vals = a.values();
    let as_i128 = |v: T::Native| v.to_i64().map(|x| x as i128);
    if len > 0 && T::Native::from_usize(1).is_some() {
        let mut min = i128::MAX;
        let mut max = i128::MIN;
        let mut integral = true;
        for i in 0..len {
            if is_null(i) {
                continue;
            }
            match as_i128(vals[i]) {
                Some(v) => {
                    min = min.min(v);
                    max = max.max(v);
                }
                None => {
                    integral = false;
                    break;
                }
            }
        }
        let is_int = matches!(
            a.data_type(),
            DataType::Int8
                | DataType::Int16
                | DataType::Int32
                | DataType::Int64
                | DataType::UInt8
                | DataType::UInt16
                | DataType::UInt32
                | DataType::UInt64
                | DataType::Date32
                | DataType::Date64
                | DataType::Timestamp(_, _)
        );
        if is_int && integral && min <= max && max - min < (1 << 16).max(len as i128) {
            let span = (max - min) as usize + 1;
            // slot 0 is NULL, values start at 1
            let raw = (0..len).map(|i| {
                if is_null(i) {
                    0
                } else {
                    (as_i128(vals[i]).unwrap_or(min) - min) as usize + 1
                }
            });
            return densify_small(raw, len, span + 1);
        }
        if is_int && integral && min > max {
            // all NULL
            return densify_small((0..len).map(|_| 0), len, 1);
        }
    }
    // Floats and wide ranges: hash the bit pattern (so -0.0 and 0.0, and NaN payloads, are
    // distinct keys, exactly as their partition values are distinct values).
    let width = std::mem::size_of::<T::Native>();
    let bytes = a.values().inner().as_slice();
    match width {
        1 | 2 | 4 | 8 => densify_hashed(len, is_null, |i| {
            let mut k = [0u8; 8];
            k[..width].copy_from_slice(&bytes[i * width..(i + 1) * width]);
            u64::from_le_bytes(k)
        }),
        _ => densify_hashed(len, is_null, |i| {
            let mut k = [0u8; 32];
            k[..width].copy_from_slice(&bytes[i * width..(i + 1) * width]);
            k
        }),
    }
}

/// Codes for an offsets/values (utf8, binary) column. When every value is at most 15 bytes
/// long (country codes, categories, date strings: the usual partition keys) the value itself,
/// packed with its length into a `u128` by one unaligned load and a mask, is the hash key, so
/// there is no variable-length hashing or comparison per row.
fn offset_codes<O: ArrowNativeType>(
    offsets: &[O],
    values: &[u8],
    len: usize,
    is_null: impl Fn(usize) -> bool,
) -> Codes {
    let bytes = |i: usize| &values[offsets[i].as_usize()..offsets[i + 1].as_usize()];
    let short = offsets
        .windows(2)
        .all(|w| w[1].as_usize() - w[0].as_usize() <= 15);
    if !short {
        return densify_hashed(len, is_null, bytes);
    }
    densify_hashed(len, is_null, |i| {
        let (s, e) = (offsets[i].as_usize(), offsets[i + 1].as_usize());
        let n = e - s;
        let word = match values.get(s..s + 16) {
            Some(w) => {
                let mut b = [0u8; 16];
                b.copy_from_slice(w);
                u128::from_le_bytes(b) & ((1u128 << (8 * n)) - 1)
            }
            None => {
                let mut b = [0u8; 16];
                b[..n].copy_from_slice(&values[s..e]);
                u128::from_le_bytes(b)
            }
        };
        word | ((n as u128) << 120)
    })
}

fn column_codes(a: &dyn Array) -> Result<Codes> {
    let len = a.len();
    let nulls = a.logical_nulls();
    let is_null = |i: usize| nulls.as_ref().is_some_and(|n| n.is_null(i));
    use DataType::*;
    Ok(match a.data_type() {
        Null => densify_small((0..len).map(|_| 0), len, 1),
        Boolean => {
            let b = a.as_boolean();
            densify_small(
                (0..len).map(|i| {
                    if is_null(i) {
                        0
                    } else {
                        1 + b.value(i) as usize
                    }
                }),
                len,
                3,
            )
        }
        Utf8 => {
            let s = a.as_string::<i32>();
            offset_codes(s.value_offsets(), s.value_data(), len, is_null)
        }
        LargeUtf8 => {
            let s = a.as_string::<i64>();
            offset_codes(s.value_offsets(), s.value_data(), len, is_null)
        }
        Utf8View => {
            let s = a.as_string_view();
            densify_hashed(len, is_null, |i| s.value(i).as_bytes())
        }
        Binary => {
            let s = a.as_binary::<i32>();
            offset_codes(s.value_offsets(), s.value_data(), len, is_null)
        }
        LargeBinary => {
            let s = a.as_binary::<i64>();
            offset_codes(s.value_offsets(), s.value_data(), len, is_null)
        }
        BinaryView => {
            let s = a.as_binary_view();
            densify_hashed(len, is_null, |i| s.value(i))
        }
        FixedSizeBinary(_) => {
            let s = a.as_fixed_size_binary();
            densify_hashed(len, is_null, |i| s.value(i))
        }
        Dictionary(_, _) => {
            // Map dictionary values to dense codes (values may repeat), then gather by key.
            let dict = a.as_any_dictionary();
            let value_codes = column_codes(dict.values().as_ref())?;
            let keys = dict.normalized_keys();
            let nv = value_codes.codes.len();
            // value code c -> code c + 1; NULL (null key or null value) -> 0
            let vnulls = dict.values().logical_nulls();
            let raw = (0..len).map(|i| {
                let k = keys[i];
                if is_null(i) || k >= nv || vnulls.as_ref().is_some_and(|n| n.is_null(k)) {
                    0
                } else {
                    value_codes.codes[k] as usize + 1
                }
            });
            densify_small(raw, len, value_codes.cardinality as usize + 1)
        }
        dt if dt.is_primitive() => {
            downcast_primitive_array!(
                a => primitive_codes(a),
                _ => unreachable_codes(a)?
            )
        }
        _ => unreachable_codes(a)?,
    })
}

/// Any other type: Arrow's row format gives a byte key per row.
fn unreachable_codes(a: &dyn Array) -> Result<Codes> {
    let conv = RowConverter::new(vec![SortField::new(a.data_type().clone())])?;
    let rows = conv.convert_columns(&[crate::arrow::array::make_array(a.to_data())])?;
    let len = a.len();
    Ok(densify_hashed(len, |_| false, |i| rows.row(i).data()))
}

/// Groups rows by the tuple of their values in `keys` (all of equal length).
///
/// # Errors
/// `InvalidArgument` for no key columns or columns of different lengths.
pub fn group_rows(keys: &[ArrayRef]) -> Result<Grouping> {
    let Some(first) = keys.first() else {
        return invalid_arg!("route needs at least one key column");
    };
    let len = first.len();
    for (i, k) in keys.iter().enumerate() {
        if k.len() != len {
            return invalid_arg!(
                "key columns must have the same length: key 0 has {len} rows, key {i} has {}",
                k.len()
            );
        }
    }
    if len > u32::MAX as usize {
        return invalid_arg!("a batch to route may hold at most {} rows", u32::MAX);
    }
    let mut combined: Option<Codes> = None;
    for k in keys {
        let c = column_codes(k.as_ref())?;
        combined = Some(match combined {
            None => c,
            Some(prev) => combine(prev, c),
        });
    }
    let codes = combined.map(|c| c.codes).unwrap_or_default();
    // Codes are already dense in order of first appearance; record the first rows.
    let mut first_row = Vec::new();
    for (i, c) in codes.iter().enumerate() {
        if *c as usize == first_row.len() {
            first_row.push(i as u32);
        }
    }
    Ok(Grouping {
        group_of_row: codes,
        first_row,
    })
}

/// Combines two code columns into dense codes of the pair, in order of first appearance.
fn combine(a: Codes, b: Codes) -> Codes {
    let len = a.codes.len();
    let product = a.cardinality as u64 * b.cardinality as u64;
    let pair = |i: usize| a.codes[i] as u64 * b.cardinality as u64 + b.codes[i] as u64;
    if product <= (1u64 << 22).max(2 * len as u64) {
        densify_small((0..len).map(|i| pair(i) as usize), len, product as usize)
    } else {
        densify_hashed(len, |_| false, pair)
    }
}

/// A batch grouped by partition key: `batch` holds the rows reordered so that each group is
/// contiguous (stable order inside a group); group `g` is rows `offsets[g]..offsets[g + 1]`
/// and has key `keys.slice(g, 1)`.
#[derive(Debug, Clone)]
pub struct Routed {
    /// One row per distinct key tuple, in order of first appearance.
    pub keys: RecordBatch,
    /// The input rows, permuted so that groups are contiguous.
    pub batch: RecordBatch,
    /// Group boundaries into `batch`; `offsets.len() == keys.num_rows() + 1`.
    pub offsets: Vec<usize>,
}

impl Routed {
    /// The rows of group `g` (a zero-copy slice).
    pub fn group(&self, g: usize) -> RecordBatch {
        self.batch
            .slice(self.offsets[g], self.offsets[g + 1] - self.offsets[g])
    }
}

/// Destination of every row (a stable counting sort by group) and the group offsets.
pub fn destinations(g: &Grouping) -> (Vec<u32>, Vec<usize>) {
    let n = g.num_groups();
    let mut offsets = vec![0usize; n + 1];
    for &c in &g.group_of_row {
        offsets[c as usize + 1] += 1;
    }
    for i in 0..n {
        offsets[i + 1] += offsets[i];
    }
    let mut pos: Vec<u32> = offsets[..n].iter().map(|o| *o as u32).collect();
    let dest = g
        .group_of_row
        .iter()
        .map(|&c| {
            let p = &mut pos[c as usize];
            *p += 1;
            *p - 1
        })
        .collect();
    (dest, offsets)
}

/// The gather permutation (output row -> input row) for destinations `dest`.
fn permutation_of(dest: &[u32]) -> UInt32Array {
    let mut perm = vec![0u32; dest.len()];
    for (row, &d) in dest.iter().enumerate() {
        perm[d as usize] = row as u32;
    }
    UInt32Array::from(perm)
}

/// Moves row `i` of `values` to position `dest[i]`.
///
/// Rows are read sequentially and written into one sequential stream per partition (a radix
/// partition), which is much friendlier to caches than a random gather.
fn scatter_values<T: Copy + Default>(values: &[T], dest: &[u32]) -> Vec<T> {
    let mut out = crate::mem::zeroed::<T>(values.len());
    for (v, &d) in values.iter().zip(dest) {
        out[d as usize] = *v;
    }
    out
}

fn scatter_nulls(array: &dyn Array, dest: &[u32]) -> Option<NullBuffer> {
    let nulls = array.logical_nulls()?;
    if nulls.null_count() == 0 {
        return None;
    }
    let mut bits = BooleanBufferBuilder::new(dest.len());
    bits.append_n(dest.len(), false);
    for (i, &d) in dest.iter().enumerate() {
        if nulls.is_valid(i) {
            bits.set_bit(d as usize, true);
        }
    }
    Some(NullBuffer::new(bits.finish()))
}

/// The values buffer of a fixed-width array as `U` words (one per row).
fn words<U: ArrowNativeType>(data: &ArrayData) -> Option<&[U]> {
    let width = std::mem::size_of::<U>();
    let buf = data.buffers().first()?;
    let bytes = buf
        .as_slice()
        .get(data.offset() * width..(data.offset() + data.len()) * width)?;
    // SAFETY: any bit pattern is a valid unsigned word; alignment is checked.
    let (pre, mid, post) = unsafe { bytes.align_to::<U>() };
    (pre.is_empty() && post.is_empty()).then_some(mid)
}

/// Scatters a fixed-width (primitive) array of any logical type by its bit patterns.
fn scatter_fixed(a: &dyn Array, dest: &[u32], width: usize) -> Result<Option<ArrayRef>> {
    let data = a.to_data();
    let out = match width {
        1 => words::<u8>(&data).map(|v| Buffer::from_vec(scatter_values(v, dest))),
        2 => words::<u16>(&data).map(|v| Buffer::from_vec(scatter_values(v, dest))),
        4 => words::<u32>(&data).map(|v| Buffer::from_vec(scatter_values(v, dest))),
        8 => words::<u64>(&data).map(|v| Buffer::from_vec(scatter_values(v, dest))),
        16 => words::<u128>(&data).map(|v| Buffer::from_vec(scatter_values(v, dest))),
        _ => None,
    };
    let Some(out) = out else {
        return Ok(None);
    };
    let d = ArrayData::builder(a.data_type().clone())
        .len(dest.len())
        .add_buffer(out)
        .nulls(scatter_nulls(a, dest))
        .build()?;
    Ok(Some(make_array(d)))
}

/// Scatters a utf8/binary array in two passes: the byte total of every group (a small,
/// cache-resident array), then one pass that copies each value to its group's byte cursor and
/// records its end offset at the row's destination. Short values are moved with one fixed
/// 16-byte copy instead of a `memcpy` call when the over-copy stays inside the value's own
/// group region (whose later bytes are written afterwards, in row order).
fn scatter_bytes<T: ByteArrayType>(
    a: &dyn Array,
    dest: &[u32],
    group_of_row: &[u32],
    num_groups: usize,
) -> ArrayRef {
    const WIDE: usize = 16;
    let arr = a.as_bytes::<T>();
    let offsets = arr.value_offsets();
    let data = arr.value_data();
    let n = dest.len();
    // byte range of each group in the output
    let mut group_start = vec![0usize; num_groups + 1];
    for (i, &g) in group_of_row.iter().enumerate() {
        group_start[g as usize + 1] += offsets[i + 1].as_usize() - offsets[i].as_usize();
    }
    for g in 0..num_groups {
        group_start[g + 1] += group_start[g];
    }
    let total = group_start[num_groups];
    let mut cursor: Vec<usize> = group_start[..num_groups].to_vec();
    let mut out_offsets = crate::mem::zeroed::<T::Offset>(n + 1);
    let mut out_data = crate::mem::zeroed::<u8>(total);
    for (i, (&d, &g)) in dest.iter().zip(group_of_row).enumerate() {
        let (s, e) = (offsets[i].as_usize(), offsets[i + 1].as_usize());
        let len = e - s;
        let o = cursor[g as usize];
        let limit = group_start[g as usize + 1];
        if len <= WIDE && o + WIDE <= limit && s + WIDE <= data.len() {
            out_data[o..o + WIDE].copy_from_slice(&data[s..s + WIDE]);
        } else {
            out_data[o..o + len].copy_from_slice(&data[s..e]);
        }
        cursor[g as usize] = o + len;
        // offsets fit: the total equals the input's byte length, which fit `T::Offset`
        out_offsets[d as usize + 1] = T::Offset::from_usize(o + len).unwrap_or_default();
    }
    let nulls = scatter_nulls(a, dest);
    // SAFETY: rows of one group are contiguous in the output and their bytes are laid out in
    // the same order from the group's start, so the offsets are monotonic, start at 0 and end
    // at `out_data.len()`; every value's bytes are a copy of a valid input value (valid UTF-8
    // for strings; over-copied bytes are overwritten by the following values of the group).
    Arc::new(unsafe {
        GenericByteArray::<T>::new_unchecked(
            OffsetBuffer::new_unchecked(ScalarBuffer::from(out_offsets)),
            Buffer::from_vec(out_data),
            nulls,
        )
    })
}

/// Reorders one column: scatter for flat fixed-width and byte types, arrow's `take` for the
/// rest (nested, views, booleans, dictionaries).
fn reorder(
    a: &ArrayRef,
    dest: &[u32],
    g: &Grouping,
    offsets: &[usize],
    perm: &OnceLock<UInt32Array>,
) -> Result<ArrayRef> {
    use crate::arrow::datatypes::{BinaryType, LargeBinaryType, LargeUtf8Type, Utf8Type};
    use DataType::*;
    let dt = a.data_type();
    let groups = offsets.len() - 1;
    if let Some(width) = dt.primitive_width() {
        if let Some(out) = scatter_fixed(a.as_ref(), dest, width)? {
            return Ok(out);
        }
    }
    Ok(match dt {
        Utf8 => scatter_bytes::<Utf8Type>(a.as_ref(), dest, &g.group_of_row, groups),
        LargeUtf8 => scatter_bytes::<LargeUtf8Type>(a.as_ref(), dest, &g.group_of_row, groups),
        Binary => scatter_bytes::<BinaryType>(a.as_ref(), dest, &g.group_of_row, groups),
        LargeBinary => scatter_bytes::<LargeBinaryType>(a.as_ref(), dest, &g.group_of_row, groups),
        _ => {
            let p = perm.get_or_init(|| permutation_of(dest));
            take(a.as_ref(), p, None)?
        }
    })
}

/// Groups the rows of `batch` by the key columns `keys` (one value per row each; typically
/// the output of [`crate::spec::CompiledSpec::partition_values`]).
///
/// `key_schema` names the key columns in the returned `keys` batch.
///
/// # Errors
/// `InvalidArgument` when the key columns do not have one value per row of `batch`.
pub fn route(batch: &RecordBatch, keys: &[ArrayRef], key_schema: Arc<Schema>) -> Result<Routed> {
    route_with_threads(batch, keys, key_schema, 1)
}

/// [`route`], moving the columns on up to `threads` threads (columns are independent; the
/// grouping itself is one pass). `threads <= 1` does everything on the calling thread: use
/// that where one task per core already runs (Spark executors).
///
/// # Errors
/// As [`route`].
pub fn route_with_threads(
    batch: &RecordBatch,
    keys: &[ArrayRef],
    key_schema: Arc<Schema>,
    threads: usize,
) -> Result<Routed> {
    for (i, k) in keys.iter().enumerate() {
        if k.len() != batch.num_rows() {
            return invalid_arg!(
                "key column {i} has {} rows but the batch has {}",
                k.len(),
                batch.num_rows()
            );
        }
    }
    if key_schema.fields().len() != keys.len() {
        return invalid_arg!("key schema does not match the key columns");
    }
    if batch.num_rows() == 0 {
        return Ok(Routed {
            keys: RecordBatch::new_empty(key_schema),
            batch: batch.clone(),
            offsets: vec![0],
        });
    }
    let g = group_rows(keys)?;
    let firsts = UInt32Array::from(g.first_row.clone());
    let key_cols = keys
        .iter()
        .map(|k| take(k.as_ref(), &firsts, None))
        .collect::<std::result::Result<Vec<_>, _>>()?;
    let keys_batch = RecordBatch::try_new(key_schema, key_cols)?;
    if g.num_groups() == 1 {
        return Ok(Routed {
            keys: keys_batch,
            batch: batch.clone(),
            offsets: vec![0, batch.num_rows()],
        });
    }
    let (dest, offsets) = destinations(&g);
    let perm = OnceLock::new();
    let cols = batch.columns();
    let threads = threads.clamp(1, cols.len().max(1));
    let columns = if threads == 1 {
        cols.iter()
            .map(|c| reorder(c, &dest, &g, &offsets, &perm))
            .collect::<Result<Vec<_>>>()?
    } else {
        let next = AtomicUsize::new(0);
        let done: Vec<Mutex<Option<Result<ArrayRef>>>> =
            cols.iter().map(|_| Mutex::new(None)).collect();
        std::thread::scope(|s| {
            for _ in 0..threads {
                s.spawn(|| loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(c) = cols.get(i) else { break };
                    let r = reorder(c, &dest, &g, &offsets, &perm);
                    if let Ok(mut slot) = done[i].lock() {
                        *slot = Some(r);
                    }
                });
            }
        });
        done.into_iter()
            .map(|m| {
                m.into_inner()
                    .ok()
                    .flatten()
                    .unwrap_or_else(|| Err(Error::Internal("a routing thread failed".into())))
            })
            .collect::<Result<Vec<_>>>()?
    };
    let permuted = RecordBatch::try_new_with_options(
        batch.schema(),
        columns,
        &RecordBatchOptions::new().with_row_count(Some(batch.num_rows())),
    )?;
    Ok(Routed {
        keys: keys_batch,
        batch: permuted,
        offsets,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arrow::array::{Float64Array, Int32Array, Int64Array, StringArray};
    use crate::arrow::datatypes::Field;

    #[test]
    fn groups_in_order_of_first_appearance_with_null_as_key() {
        let a: ArrayRef = Arc::new(StringArray::from(vec![
            Some("b"),
            None,
            Some("a"),
            Some("b"),
            None,
        ]));
        let b: ArrayRef = Arc::new(Int32Array::from(vec![1, 1, 1, 2, 1]));
        let g = group_rows(&[a, b]).unwrap();
        assert_eq!(g.group_of_row, vec![0, 1, 2, 3, 1]);
        assert_eq!(g.first_row, vec![0, 1, 2, 3]);
    }

    #[test]
    fn route_permutes_stably() {
        let k: ArrayRef = Arc::new(Int64Array::from(vec![3, 1, 3, 1, 1_000_000_000]));
        let f: ArrayRef = Arc::new(Float64Array::from(vec![0.0, 1.0, 2.0, 3.0, 4.0]));
        let batch = RecordBatch::try_from_iter(vec![("v", f)]).unwrap();
        let schema = Arc::new(Schema::new(vec![Field::new("k", DataType::Int64, true)]));
        let r = route(&batch, &[k], schema).unwrap();
        assert_eq!(r.offsets, vec![0, 2, 4, 5]);
        let v = r
            .batch
            .column(0)
            .as_primitive::<crate::arrow::datatypes::Float64Type>();
        assert_eq!(v.values().to_vec(), vec![0.0, 2.0, 1.0, 3.0, 4.0]);
        assert_eq!(r.group(1).num_rows(), 2);
    }

    #[test]
    fn scatter_equals_take_for_every_column_type() {
        use crate::arrow::array::*;
        use crate::arrow::compute::take_record_batch;
        use crate::arrow::datatypes::*;
        let n = 200usize;
        let opt = |i: usize| (i % 7 != 3).then_some(i);
        let cols: Vec<(&str, ArrayRef)> = vec![
            (
                "i8",
                Arc::new(Int8Array::from_iter(
                    (0..n).map(|i| opt(i).map(|v| v as i8)),
                )),
            ),
            (
                "u8",
                Arc::new(UInt8Array::from_iter(
                    (0..n).map(|i| opt(i).map(|v| v as u8)),
                )),
            ),
            (
                "f64",
                Arc::new(Float64Array::from_iter(
                    (0..n).map(|i| opt(i).map(|v| v as f64 / 3.0)),
                )),
            ),
            (
                "ts",
                Arc::new(
                    TimestampNanosecondArray::from_iter(
                        (0..n).map(|i| opt(i).map(|v| v as i64 * 1_000)),
                    )
                    .with_timezone("+08:00"),
                ),
            ),
            (
                "dec",
                Arc::new(
                    Decimal128Array::from_iter((0..n).map(|i| opt(i).map(|v| v as i128 * 100)))
                        .with_precision_and_scale(20, 2)
                        .unwrap(),
                ),
            ),
            (
                "s",
                Arc::new(StringArray::from_iter(
                    (0..n).map(|i| opt(i).map(|v| "é".repeat(v % 5))),
                )),
            ),
            (
                "lb",
                Arc::new(LargeBinaryArray::from_iter(
                    (0..n).map(|i| opt(i).map(|v| vec![v as u8; v % 4])),
                )),
            ),
            (
                "b",
                Arc::new(BooleanArray::from_iter(
                    (0..n).map(|i| opt(i).map(|v| v % 2 == 0)),
                )),
            ),
            (
                "l",
                Arc::new(ListArray::from_iter_primitive::<Int32Type, _, _>(
                    (0..n).map(|i| opt(i).map(|v| vec![Some(v as i32); v % 3])),
                )),
            ),
            (
                "d",
                Arc::new(
                    (0..n)
                        .map(|i| opt(i).map(|v| ["x", "y", "z"][v % 3]))
                        .collect::<DictionaryArray<Int32Type>>(),
                ),
            ),
        ];
        let batch = RecordBatch::try_from_iter(cols).unwrap().slice(5, 190);
        let key: ArrayRef = Arc::new(Int32Array::from_iter((0..190i32).map(|i| (i * 7919) % 13)));
        let g = group_rows(std::slice::from_ref(&key)).unwrap();
        let (dest, offsets) = destinations(&g);
        let perm = permutation_of(&dest);
        let expected = take_record_batch(&batch, &perm).unwrap();
        let schema = Arc::new(Schema::new(vec![Field::new("k", DataType::Int32, true)]));
        let routed = route(&batch, &[key], schema).unwrap();
        assert_eq!(routed.offsets, offsets);
        for (a, b) in routed.batch.columns().iter().zip(expected.columns()) {
            assert_eq!(a.as_ref(), b.as_ref(), "{}", a.data_type());
        }
    }
}
