//! Reordering the columns of a batch so that the rows of each group are contiguous: a
//! stable counting sort gives every row its destination, then each column is moved once,
//! by a scatter for flat fixed-width and byte columns and by arrow's `take` for the rest.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use crate::arrow::array::{
    make_array, Array, ArrayData, ArrayRef, AsArray, BooleanBufferBuilder, GenericByteArray,
    UInt32Array,
};
use crate::arrow::buffer::{Buffer, NullBuffer, OffsetBuffer, ScalarBuffer};
use crate::arrow::compute::take;
use crate::arrow::datatypes::{ArrowNativeType, ByteArrayType, DataType};
use crate::error::{Error, Result};

use super::group::Grouping;

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

/// Reorders every column of a batch to the destinations `dest`, on up to `threads` threads
/// (columns are independent). `threads <= 1` does everything on the calling thread.
pub(super) fn reorder_columns(
    cols: &[ArrayRef],
    dest: &[u32],
    g: &Grouping,
    offsets: &[usize],
    threads: usize,
) -> Result<Vec<ArrayRef>> {
    let perm = OnceLock::new();
    let threads = threads.clamp(1, cols.len().max(1));
    if threads == 1 {
        return cols
            .iter()
            .map(|c| reorder(c, dest, g, offsets, &perm))
            .collect::<Result<Vec<_>>>();
    }
    // Largest columns first (by the bytes they move), so that a wide string column taken
    // last does not leave the other threads idle while it is moved.
    let mut order: Vec<usize> = (0..cols.len()).collect();
    order.sort_by_cached_key(|&i| {
        std::cmp::Reverse(cols[i].to_data().get_slice_memory_size().unwrap_or(0))
    });
    let next = AtomicUsize::new(0);
    let done: Vec<Mutex<Option<Result<ArrayRef>>>> =
        cols.iter().map(|_| Mutex::new(None)).collect();
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let k = next.fetch_add(1, Ordering::Relaxed);
                let Some(&i) = order.get(k) else { break };
                let c = &cols[i];
                let r = reorder(c, dest, g, offsets, &perm);
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
        .collect::<Result<Vec<_>>>()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arrow::array::{Int32Array, RecordBatch};
    use crate::arrow::datatypes::{Field, Schema};
    use crate::route::{group_rows, route};

    /// One column of every kind `reorder` treats differently (primitive widths, bytes,
    /// booleans, nested, dictionary), with a NULL in every 7th row.
    fn sample_columns(n: usize) -> Vec<(&'static str, ArrayRef)> {
        use crate::arrow::array::*;
        use crate::arrow::datatypes::*;
        let opt = |i: usize| (i % 7 != 3).then_some(i);
        vec![
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
        ]
    }

    #[test]
    fn scatter_equals_take_for_every_column_type() {
        use crate::arrow::compute::take_record_batch;
        let cols = sample_columns(200);
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
