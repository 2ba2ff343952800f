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
    new_null_array, ArrayRef, BooleanArray, RecordBatch, RecordBatchOptions, UInt32Array,
};
use crate::arrow::buffer::{NullBuffer, ScalarBuffer};
use crate::arrow::compute::{concat_batches, take_record_batch, FilterBuilder};
use crate::arrow::datatypes::{Field, Schema, SchemaRef};
use crate::error::Result;
use crate::gather::Gather;

use super::key_map::{key_width, KeyMap, NONE};
use super::request::JoinHow;
use super::side::Side;

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
