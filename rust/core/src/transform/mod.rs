//! The well-known partition transforms as vectorised kernels.
//!
//! Each transform has an array path (used by writes) and, through [`Transform::apply_scalar`],
//! a scalar path (used by pruning: the transform evaluated on a query literal). Each kernel
//! equals DataFusion's evaluation of the transform's derived expression (see docs/design.md,
//! "Transforms equal their expressions"; the one exception is a hash of `i32::MIN`, where
//! `abs` fails and `bucket` does not), which the conformance tests check:
//! - `identity`: the value itself.
//! - `year`, `month`, `day`, `hour` (see docs/design.md, "Temporal transforms"): DataFusion
//!   `date_part` semantics: calendar year, month 1-12, day of month 1-31, hour 0-23, as int32,
//!   in the timezone of the timestamp type (naive timestamps as UTC). `hour` needs a
//!   timestamp.
//! - `bucket`, `multi_bucket`: `|murmur3| mod n` computed in i64, see [`crate::hash`].
//! - `truncate` (see docs/design.md, "Truncate"): strings keep the first W Unicode
//!   characters; integers and decimals use `v - (v % W)` with a truncated remainder (−7, W=5
//!   → −5); the result type is the source type.

mod temporal;
mod truncate;
mod zoned;

use std::sync::Arc;

use crate::arrow::array::{Array, ArrayRef};
use crate::arrow::compute::kernels::temporal::DatePart;
use crate::arrow::datatypes::DataType;
use crate::datafusion::scalar::ScalarValue;
use crate::error::{invalid_arg, unsupported, Result};
use crate::hash;

/// Fewest rows [`Transform::apply_with_threads`] gives a thread.
const PARALLEL_CHUNK_ROWS: usize = 1 << 18;

pub use temporal::{day, hour, month, year};
pub use truncate::truncate;

use temporal::{is_temporal, temporal};
use truncate::truncatable;

/// A well-known partition transform (the spec's `transform` object, validated).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Transform {
    /// `col0`
    Identity,
    /// `date_part('year', col0)`
    Year,
    /// `date_part('month', col0)`
    Month,
    /// `date_part('day', col0)`
    Day,
    /// `date_part('hour', col0)`
    Hour,
    /// `abs(murmur3(col0)) % n`
    Bucket(i32),
    /// `abs(murmur3_multi(col0, col1, ...)) % n`
    MultiBucket(i32),
    /// `left(col0, w)` or `col0 - (col0 % w)`
    Truncate(i32),
}

impl Transform {
    /// The spec's name of this transform (`"identity"`, `"bucket"`, ...).
    pub fn name(&self) -> &'static str {
        match self {
            Transform::Identity => "identity",
            Transform::Year => "year",
            Transform::Month => "month",
            Transform::Day => "day",
            Transform::Hour => "hour",
            Transform::Bucket(_) => "bucket",
            Transform::MultiBucket(_) => "multi_bucket",
            Transform::Truncate(_) => "truncate",
        }
    }

    /// How many source columns the transform reads: `Some(1)` for single-column transforms,
    /// `None` for `multi_bucket` (one or more).
    pub fn arity(&self) -> Option<usize> {
        match self {
            Transform::MultiBucket(_) => None,
            _ => Some(1),
        }
    }

    /// The derived DataFusion expression of the spec's transform table, for sources of the
    /// given types (`truncate` derives `left(col0, W)` for strings).
    pub fn derived_expression(&self, sources: &[DataType]) -> String {
        let num_sources = sources.len();
        match self {
            Transform::Identity => "col0".to_string(),
            Transform::Year => "date_part('year', col0)".to_string(),
            Transform::Month => "date_part('month', col0)".to_string(),
            Transform::Day => "date_part('day', col0)".to_string(),
            Transform::Hour => "date_part('hour', col0)".to_string(),
            Transform::Bucket(n) => format!("abs(murmur3(col0)) % {n}"),
            Transform::MultiBucket(n) => {
                let cols: Vec<String> = (0..num_sources).map(|i| format!("col{i}")).collect();
                format!("abs(murmur3_multi({})) % {n}", cols.join(", "))
            }
            Transform::Truncate(w) => match sources.first() {
                Some(DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View) => {
                    format!("left(col0, {w})")
                }
                _ => format!("col0 - (col0 % {w})"),
            },
        }
    }

    /// The result type for the given source types, or an error if the transform does not
    /// accept them.
    ///
    /// # Errors
    /// `UnsupportedType` when a source type is not accepted, `InvalidArgument` for a bad
    /// parameter or number of sources.
    pub fn result_type(&self, sources: &[DataType]) -> Result<DataType> {
        self.check_params()?;
        match self.arity() {
            Some(n) if sources.len() != n => {
                return invalid_arg!(
                    "transform {} takes exactly {n} source column(s), got {}",
                    self.name(),
                    sources.len()
                )
            }
            None if sources.is_empty() => {
                return invalid_arg!("transform multi_bucket needs at least one source column")
            }
            _ => {}
        }
        let t = &sources[0];
        match self {
            Transform::Identity => Ok(t.clone()),
            Transform::Year | Transform::Month | Transform::Day => {
                if is_temporal(t) || matches!(t, DataType::Null) {
                    Ok(DataType::Int32)
                } else {
                    unsupported!(
                        "transform {} needs a date or timestamp source, got {t}",
                        self.name()
                    )
                }
            }
            Transform::Hour => {
                if matches!(t, DataType::Timestamp(_, _) | DataType::Null) {
                    Ok(DataType::Int32)
                } else {
                    unsupported!("transform hour needs a timestamp source, got {t}")
                }
            }
            Transform::Bucket(_) | Transform::MultiBucket(_) => {
                for s in sources {
                    if !hash::is_hashable(s) {
                        return unsupported!(
                            "transform {} cannot hash values of type {s}",
                            self.name()
                        );
                    }
                }
                Ok(DataType::Int32)
            }
            Transform::Truncate(_) => {
                if truncatable(t) || matches!(t, DataType::Null) {
                    Ok(t.clone())
                } else {
                    unsupported!(
                        "transform truncate needs a string, integer or decimal source, got {t}"
                    )
                }
            }
        }
    }

    fn check_params(&self) -> Result<()> {
        match self {
            Transform::Bucket(n) | Transform::MultiBucket(n) if *n <= 0 => {
                invalid_arg!("num_buckets must be positive, got {n}")
            }
            Transform::Truncate(w) if *w <= 0 => invalid_arg!("width must be positive, got {w}"),
            _ => Ok(()),
        }
    }

    /// Applies the transform to whole arrays (one per source column).
    ///
    /// # Errors
    /// As [`Transform::result_type`], plus length mismatches between sources.
    pub fn apply(&self, sources: &[ArrayRef]) -> Result<ArrayRef> {
        let types: Vec<DataType> = sources.iter().map(|a| a.data_type().clone()).collect();
        let out_type = self.result_type(&types)?;
        let a = &sources[0];
        if matches!(a.data_type(), DataType::Null) && self.arity() == Some(1) {
            return Ok(crate::arrow::array::new_null_array(&out_type, a.len()));
        }
        Ok(match self {
            Transform::Identity => Arc::clone(a),
            Transform::Year => temporal(a.as_ref(), DatePart::Year)?,
            Transform::Month => temporal(a.as_ref(), DatePart::Month)?,
            Transform::Day => temporal(a.as_ref(), DatePart::Day)?,
            Transform::Hour => temporal(a.as_ref(), DatePart::Hour)?,
            Transform::Bucket(n) => Arc::new(hash::bucket(a.as_ref(), *n as i64)?),
            Transform::MultiBucket(n) => {
                let refs: Vec<&dyn Array> = sources.iter().map(|a| a.as_ref()).collect();
                Arc::new(hash::multi_bucket(&refs, *n as i64)?)
            }
            Transform::Truncate(w) => truncate(a.as_ref(), *w)?,
        })
    }

    /// [`Transform::apply`] on up to `threads` threads, over chunks of rows, for the
    /// transforms that compute a fixed-width value per row (bucket, multi_bucket, the time
    /// parts, truncate of integers): their chunks' results join at the cost of a copy of the
    /// output. Identity and string truncation stay on the calling thread.
    ///
    /// # Errors
    /// As [`Transform::apply`].
    pub fn apply_with_threads(&self, sources: &[ArrayRef], threads: usize) -> Result<ArrayRef> {
        let len = sources.first().map_or(0, |a| a.len());
        let ranges = crate::par::chunks(len, threads, PARALLEL_CHUNK_ROWS);
        let fixed_width = match self {
            Transform::Identity => false,
            Transform::Truncate(_) => sources
                .first()
                .is_some_and(|a| a.data_type().is_primitive()),
            _ => true,
        };
        let per_row = fixed_width && sources.iter().all(|a| a.len() == len);
        if ranges.len() == 1 || !per_row {
            return self.apply(sources);
        }
        let parts = crate::par::on_threads(ranges, |(start, end)| {
            let sliced: Vec<ArrayRef> = sources
                .iter()
                .map(|a| a.slice(start, end - start))
                .collect();
            self.apply(&sliced)
        })?
        .into_iter()
        .collect::<Result<Vec<_>>>()?;
        let refs: Vec<&dyn Array> = parts.iter().map(|a| a.as_ref()).collect();
        Ok(crate::arrow::compute::concat(&refs)?)
    }

    /// Applies the transform to one value per source (the pruning path).
    ///
    /// # Errors
    /// As [`Transform::apply`].
    pub fn apply_scalar(&self, values: &[ScalarValue]) -> Result<ScalarValue> {
        let arrays = values
            .iter()
            .map(|v| v.to_array_of_size(1))
            .collect::<std::result::Result<Vec<_>, _>>()?;
        let out = self.apply(&arrays)?;
        Ok(ScalarValue::try_from_array(out.as_ref(), 0)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arrow::array::{Int64Array, StringArray, TimestampMicrosecondArray};

    /// Over several chunks, the threaded transforms equal the one-thread ones (NULLs, strings,
    /// integers, timestamps in a zone; identity and string truncation stay whole).
    #[test]
    fn threads_change_nothing() {
        let n = 3 * PARALLEL_CHUNK_ROWS + 12_345;
        let ints: ArrayRef =
            Arc::new(Int64Array::from_iter((0..n as i64).map(|i| {
                (i % 97 != 0).then_some(i.wrapping_mul(0x9E37_79B9_7F4A_7C15u64 as i64))
            })));
        let strs: ArrayRef = Arc::new(StringArray::from_iter(
            (0..n).map(|i| (i % 89 != 0).then(|| format!("city-{}", i % 1_013))),
        ));
        let ts: ArrayRef = Arc::new(
            TimestampMicrosecondArray::from_iter_values(
                (0..n as i64).map(|i| i * 1_234_567_891 % 4_000_000_000_000_000),
            )
            .with_timezone("America/New_York"),
        );
        let cases: Vec<(Transform, Vec<ArrayRef>)> = vec![
            (Transform::Bucket(16), vec![Arc::clone(&strs)]),
            (Transform::Bucket(1000), vec![Arc::clone(&ints)]),
            (
                Transform::MultiBucket(7),
                vec![Arc::clone(&strs), Arc::clone(&ints)],
            ),
            (Transform::Hour, vec![Arc::clone(&ts)]),
            (Transform::Year, vec![Arc::clone(&ts)]),
            (Transform::Truncate(1000), vec![Arc::clone(&ints)]),
            (Transform::Truncate(3), vec![Arc::clone(&strs)]),
            (Transform::Identity, vec![Arc::clone(&strs)]),
        ];
        for (t, sources) in cases {
            let one = t.apply(&sources).unwrap();
            let many = t.apply_with_threads(&sources, 3).unwrap();
            assert_eq!(one.to_data(), many.to_data(), "{t:?}");
        }
    }
}
