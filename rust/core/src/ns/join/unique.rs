//! The join of a group whose build side has unique keys: a foreign key against a primary key,
//! the usual shape of a partitioned join. Each probe row meets at most one build row, so the
//! probe batch's columns pass through untouched (or filtered, when some rows drop out) and
//! only the build side's columns are gathered, one index per output row.
//!
//! It covers one key column of an integer-backed type (integers, dates, times, timestamps,
//! durations). Anything else, or a build side with a repeated key, returns `None` and the
//! group goes to DataFusion's hash join: one answer either way, only the speed differs.

use std::sync::Arc;

use crate::arrow::array::{
    new_null_array, Array, ArrayRef, BooleanArray, RecordBatch, RecordBatchOptions, UInt32Array,
};
use crate::arrow::buffer::{NullBuffer, ScalarBuffer};
use crate::arrow::compute::{concat_batches, take_record_batch, FilterBuilder};
use crate::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use crate::error::Result;
use crate::gather::Gather;

use super::execute::JoinHow;
use super::side::Side;

/// No build row (an absent or NULL key).
const NONE: u32 = u32::MAX;

/// Joins `left` and `right` on their key columns when the smaller side's keys are unique
/// and of an integer-backed type. The batches hold the left columns then the right ones
/// (left only for semi and anti joins), every field nullable, at most `batch_size` rows each.
///
/// # Errors
/// Arrow errors of the gathers (none are expected for valid input).
pub(super) fn join(
    how: JoinHow,
    left: &Side,
    right: &Side,
    batch_size: usize,
) -> Result<Option<Vec<RecordBatch>>> {
    let (&[lkey], &[rkey]) = (&left.keys[..], &right.keys[..]) else {
        return Ok(None);
    };
    let ktype = left.schema.field(lkey).data_type();
    if key_width(ktype).is_none() || ktype != right.schema.field(rkey).data_type() {
        return Ok(None);
    }
    let probe_is_left = right.rows() <= left.rows();
    let ((build, bkey), (probe, pkey)) = if probe_is_left {
        ((right, rkey), (left, lkey))
    } else {
        ((left, lkey), (right, rkey))
    };
    let mut build_batch = concat_batches(&build.schema, &build.batches)?;
    let Some((map, order)) = KeyMap::build(build_batch.column(bkey).as_ref()) else {
        return Ok(None);
    };
    if let Some(order) = order {
        build_batch = take_record_batch(&build_batch, &UInt32Array::from(order))?;
    }
    let gather = Gather::new(build_batch.columns());
    let role = Role::of(how, probe_is_left);
    let schema = joined_schema(probe_is_left, how, &build.schema, &probe.schema);
    let mut out = Vec::new();
    let mut matched = role.marks().then(|| vec![false; build_batch.num_rows()]);
    for batch in &probe.batches {
        let idx = map.lookup(batch.column(pkey).as_ref());
        if let Some(m) = matched.as_mut() {
            for &b in idx.iter().filter(|&&b| b != NONE) {
                m[b as usize] = true;
            }
        }
        if let Some(cols) = probe_output(role, batch, &gather, idx)? {
            out.push(assemble(&schema, probe_is_left, cols)?);
        }
    }
    if let Some(m) = matched {
        let want = role.build_rows_wanted();
        let rows: Vec<u32> = (0..m.len() as u32)
            .filter(|&i| m[i as usize] == want)
            .collect();
        for chunk in rows.chunks(batch_size.max(1)) {
            let indices = UInt32Array::from(chunk.to_vec());
            let built = gather.rows(&indices)?;
            let probe_nulls = role.build_only_with_probe_nulls().then(|| {
                probe
                    .schema
                    .fields()
                    .iter()
                    .map(|f| new_null_array(f.data_type(), chunk.len()))
                    .collect::<Vec<_>>()
            });
            out.push(assemble(
                &schema,
                probe_is_left,
                Parts {
                    probe: probe_nulls,
                    build: Some(built),
                    rows: chunk.len(),
                },
            )?);
        }
    }
    Ok(Some(out))
}

/// What a join asks of each side, seen from the probe side.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    /// Matched probe rows with their build row.
    Matched,
    /// Every probe row, with its build row or NULLs.
    ProbeOuter,
    /// Matched probe rows, then the build rows no probe row matched (probe columns NULL).
    BuildOuter,
    /// Every probe row, then the unmatched build rows.
    Full,
    /// Probe rows with a match, probe columns only (a semi join whose left side probes).
    ProbeSemi,
    /// Probe rows without a match, probe columns only.
    ProbeAnti,
    /// Build rows some probe row matched, build columns only (the left side builds).
    BuildSemi,
    /// Build rows no probe row matched, build columns only.
    BuildAnti,
}

impl Role {
    fn of(how: JoinHow, probe_is_left: bool) -> Self {
        match (how, probe_is_left) {
            (JoinHow::Inner, _) => Self::Matched,
            (JoinHow::Left, true) | (JoinHow::Right, false) => Self::ProbeOuter,
            (JoinHow::Left, false) | (JoinHow::Right, true) => Self::BuildOuter,
            (JoinHow::Full, _) => Self::Full,
            (JoinHow::Semi, true) => Self::ProbeSemi,
            (JoinHow::Anti, true) => Self::ProbeAnti,
            (JoinHow::Semi, false) => Self::BuildSemi,
            (JoinHow::Anti, false) => Self::BuildAnti,
        }
    }

    /// Whether the build rows' matches are recorded (for rows emitted after the probe).
    fn marks(self) -> bool {
        matches!(
            self,
            Self::BuildOuter | Self::Full | Self::BuildSemi | Self::BuildAnti
        )
    }

    /// Which build rows come after the probe: the matched ones (`true`) or the others.
    fn build_rows_wanted(self) -> bool {
        matches!(self, Self::BuildSemi)
    }

    /// Whether those trailing build rows carry NULL probe columns (outer joins) or stand
    /// alone (semi and anti joins, whose output is the build side's columns).
    fn build_only_with_probe_nulls(self) -> bool {
        matches!(self, Self::BuildOuter | Self::Full)
    }
}

/// The columns of one output batch before ordering: probe columns, build columns (either
/// may be absent for semi and anti joins).
struct Parts {
    probe: Option<Vec<ArrayRef>>,
    build: Option<Vec<ArrayRef>>,
    rows: usize,
}

/// The output of one probe batch, or `None` when it contributes no rows.
fn probe_output(
    role: Role,
    batch: &RecordBatch,
    build: &Gather,
    idx: Vec<u32>,
) -> Result<Option<Parts>> {
    let n = idx.len();
    let hits = idx.iter().filter(|&&b| b != NONE).count();
    let (keep, with_build) = match role {
        Role::Matched | Role::BuildOuter => (Keep::Matched, true),
        Role::ProbeOuter | Role::Full => (Keep::All, true),
        Role::ProbeSemi => (Keep::Matched, false),
        Role::ProbeAnti => (Keep::Unmatched, false),
        Role::BuildSemi | Role::BuildAnti => return Ok(None),
    };
    let rows = match keep {
        Keep::All => n,
        Keep::Matched => hits,
        Keep::Unmatched => n - hits,
    };
    if rows == 0 {
        return Ok(None);
    }
    let probe = if rows == n {
        batch.columns().to_vec()
    } else {
        let mask: BooleanArray = idx
            .iter()
            .map(|&b| Some((b != NONE) == matches!(keep, Keep::Matched)))
            .collect();
        let filter = FilterBuilder::new(&mask).optimize().build();
        batch
            .columns()
            .iter()
            .map(|c| filter.filter(c.as_ref()))
            .collect::<std::result::Result<Vec<_>, _>>()?
    };
    let build = if !with_build {
        None
    } else if matches!(keep, Keep::All) && hits < n {
        let nulls = NullBuffer::from_iter(idx.iter().map(|&b| b != NONE));
        let values: Vec<u32> = idx.iter().map(|&b| if b == NONE { 0 } else { b }).collect();
        Some(build.rows(&UInt32Array::new(ScalarBuffer::from(values), Some(nulls)))?)
    } else {
        let values: Vec<u32> = if hits == n {
            idx
        } else {
            idx.iter().copied().filter(|&b| b != NONE).collect()
        };
        Some(build.rows(&UInt32Array::from(values))?)
    };
    Ok(Some(Parts {
        probe: Some(probe),
        build,
        rows,
    }))
}

#[derive(Clone, Copy)]
enum Keep {
    All,
    Matched,
    Unmatched,
}

/// Left columns then right ones (only the side present for semi and anti joins).
fn assemble(schema: &SchemaRef, probe_is_left: bool, parts: Parts) -> Result<RecordBatch> {
    let (left, right) = if probe_is_left {
        (parts.probe, parts.build)
    } else {
        (parts.build, parts.probe)
    };
    let columns: Vec<ArrayRef> = match (left, right) {
        (Some(l), Some(r)) => l.into_iter().chain(r).collect(),
        (Some(only), None) | (None, Some(only)) => only,
        (None, None) => Vec::new(),
    };
    Ok(RecordBatch::try_new_with_options(
        Arc::clone(schema),
        columns,
        &RecordBatchOptions::new().with_row_count(Some(parts.rows)),
    )?)
}

/// The schema of the joined batches: left fields then right ones, all nullable; for semi
/// and anti joins the left side's only.
fn joined_schema(probe_is_left: bool, how: JoinHow, build: &Schema, probe: &Schema) -> SchemaRef {
    let (left, right) = if probe_is_left {
        (probe, build)
    } else {
        (build, probe)
    };
    let nullable = |s: &Schema| -> Vec<Field> {
        s.fields()
            .iter()
            .map(|f| f.as_ref().clone().with_nullable(true))
            .collect()
    };
    let mut fields = nullable(left);
    if !matches!(how, JoinHow::Semi | JoinHow::Anti) {
        fields.extend(nullable(right));
    }
    Arc::new(Schema::new(fields))
}

/// Bytes per key of the integer-backed types this join takes (`None`: DataFusion's join).
fn key_width(t: &DataType) -> Option<usize> {
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
enum KeyMap {
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
    fn build(column: &dyn Array) -> Option<(Self, Option<Vec<u32>>)> {
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
    fn lookup(&self, column: &dyn Array) -> Vec<u32> {
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
