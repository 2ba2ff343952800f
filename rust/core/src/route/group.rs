//! Grouping rows by their key tuple: every key column is mapped to dense per-column codes
//! with the cheapest method its type allows, and the codes of the columns are combined into
//! one dense group id per row, numbered in order of first appearance.

use crate::arrow::array::{downcast_primitive_array, Array, ArrayRef, AsArray, PrimitiveArray};
use crate::arrow::datatypes::{ArrowNativeType, ArrowPrimitiveType, DataType};
use crate::arrow::row::{RowConverter, SortField};
use crate::datafusion::common::HashMap;
use crate::error::{invalid_arg, Result};

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

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::arrow::array::{Int32Array, StringArray};

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
}
