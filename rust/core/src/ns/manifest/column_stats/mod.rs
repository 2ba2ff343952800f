//! Per-column statistics of a leaf version: lower and upper bounds, NULL and NaN counts of
//! every top-level column of an orderable type. A commit records them in the `table_version`
//! row of the leaf version it makes (the [`COLUMN_STATS_KEY`] property, beside the totals), and
//! reads use them after partition pruning to skip leaves whose bounds cannot satisfy a filter
//! (`ns::scan::stats_prune`).
//!
//! Statistics are conservative: the bounds hold every value the leaf version holds and may be
//! wider (rows deleted since, strings truncated to a prefix); the counts are over every row the
//! statistics cover ([`LeafColumnStats::rows`]), deleted rows included, so `nulls == rows` still
//! means that every live row is NULL and `nulls == 0` that none is. A statistic can therefore
//! keep a leaf without a matching row, never skip a leaf with one.
//!
//! - `compute`: the statistics of Arrow data (what a write records);
//! - `fragments`: the statistics of groups of a leaf version's fragments (the rows each write
//!   added), which skip fragments inside a leaf the leaf's statistics keep;
//! - `text`: the recorded form of a bound.

use std::collections::BTreeMap;
use std::collections::HashMap;
use std::str::FromStr;

use serde_json::{json, Map, Value};

use crate::arrow::datatypes::DataType;
use crate::datafusion::scalar::ScalarValue;
use crate::error::{Error, Result};

mod compute;
mod fragments;
mod text;

pub use compute::PREFIX_BYTES;
pub use fragments::{FragmentGroup, FragmentStats, Rewritten, FRAGMENT_STATS_KEY};

/// The `table_version` property holding a leaf version's column statistics (JSON).
pub const COLUMN_STATS_KEY: &str = "column_stats";

/// Root property: whether writes record column statistics (`true`, the default, or `false`).
/// Without them the versions a write makes have none, and reads open those leaves.
pub const COLUMN_STATS_ENABLED_KEY: &str = "lance_partitioned.column_stats";

/// Whether the root properties `props` let writes record column statistics.
///
/// # Errors
/// `InvalidArgument` when the property is neither `true` nor `false`.
pub fn column_stats_enabled(props: &HashMap<String, String>) -> Result<bool> {
    match props.get(COLUMN_STATS_ENABLED_KEY).map(|v| v.trim()) {
        None | Some("true") => Ok(true),
        Some("false") => Ok(false),
        Some(v) => Err(Error::InvalidArgument(format!(
            "{COLUMN_STATS_ENABLED_KEY} must be true or false, not {v:?}"
        ))),
    }
}

/// Version of the recorded form; other versions are ignored (read as no statistics).
const FORMAT: u64 = 1;

/// Statistics of one column.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnStats {
    /// The column's type when the statistics were taken (bounds are of this type).
    pub data_type: DataType,
    /// Lower bound of the non-NULL values; `None` when unknown or when there is none.
    pub min: Option<ScalarValue>,
    /// Upper bound of the non-NULL values; `None` when unknown or when there is none.
    pub max: Option<ScalarValue>,
    /// NULL values.
    pub nulls: u64,
    /// NaN values (floating point columns; their bounds are unknown when there are any).
    pub nans: u64,
}

impl ColumnStats {
    /// These statistics with bounds of type `to` (an evolved column type); `None` when a bound
    /// does not convert exactly.
    fn cast_to(&self, to: &DataType) -> Option<Self> {
        if &self.data_type == to {
            return Some(self.clone());
        }
        let cast = |b: &Option<ScalarValue>| -> Option<Option<ScalarValue>> {
            match b {
                None => Some(None),
                Some(v) => Some(Some(cast_bound(v, to)?)),
            }
        };
        Some(Self {
            data_type: to.clone(),
            min: cast(&self.min)?,
            max: cast(&self.max)?,
            nulls: self.nulls,
            nans: self.nans,
        })
    }
}

/// The bound `v` as type `to` (a column's type after a widening); `None` when it does not
/// convert (a cast that loses the value to NULL cannot bound anything).
#[must_use]
pub fn cast_bound(v: &ScalarValue, to: &DataType) -> Option<ScalarValue> {
    if &v.data_type() == to {
        return Some(v.clone());
    }
    v.cast_to(to).ok().filter(|c| !c.is_null())
}

/// Statistics of the columns of one leaf version, by namespace field id.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LeafColumnStats {
    /// Rows the statistics cover (those the version holds, and rows deleted since they were
    /// taken).
    pub rows: u64,
    /// By field id; a column without an entry has unknown statistics.
    pub columns: BTreeMap<i32, ColumnStats>,
}

impl LeafColumnStats {
    /// The statistics of `older` rows and `newer` rows together: bounds widened, counts added.
    /// A column known on one side only becomes unknown; a column whose type changed takes the
    /// newer type (unknown when the older bounds do not convert).
    #[must_use]
    pub fn merge(older: &Self, newer: &Self) -> Self {
        let mut columns = BTreeMap::new();
        for (id, n) in &newer.columns {
            let Some(o) = older.columns.get(id).and_then(|o| o.cast_to(&n.data_type)) else {
                continue;
            };
            columns.insert(*id, merge_column(&o, older.rows, n, newer.rows));
        }
        Self {
            rows: older.rows + newer.rows,
            columns,
        }
    }

    /// Adds the statistics to the properties of the version's `table_version` row.
    pub fn record(&self, props: &mut HashMap<String, String>) {
        props.insert(COLUMN_STATS_KEY.to_string(), self.to_json());
    }

    /// The statistics recorded in `props`; `None` when there are none, or in a form this
    /// release does not read (statistics are an optimisation: a leaf without them is read).
    pub fn recorded(props: &HashMap<String, String>) -> Option<Self> {
        Self::from_json(props.get(COLUMN_STATS_KEY)?)
    }

    /// The recorded form (JSON).
    #[must_use]
    pub fn to_json(&self) -> String {
        self.to_value().to_string()
    }

    /// The recorded form as a JSON value.
    fn to_value(&self) -> Value {
        let mut columns = Map::new();
        for (id, c) in &self.columns {
            let mut o = Map::new();
            o.insert("type".into(), Value::String(c.data_type.to_string()));
            for (k, b) in [("min", &c.min), ("max", &c.max)] {
                if let Some(s) = b.as_ref().and_then(text::to_text) {
                    o.insert(k.into(), Value::String(s));
                }
            }
            o.insert("nulls".into(), json!(c.nulls));
            o.insert("nans".into(), json!(c.nans));
            columns.insert(id.to_string(), Value::Object(o));
        }
        json!({"format": FORMAT, "rows": self.rows, "columns": columns})
    }

    /// Statistics from [`Self::to_json`]'s form; `None` for anything else.
    #[must_use]
    pub fn from_json(text: &str) -> Option<Self> {
        Self::from_value(&serde_json::from_str(text).ok()?)
    }

    /// Statistics from [`Self::to_value`]'s form; `None` for anything else.
    fn from_value(v: &Value) -> Option<Self> {
        if v.get("format")?.as_u64()? != FORMAT {
            return None;
        }
        let rows = v.get("rows")?.as_u64()?;
        let mut columns = BTreeMap::new();
        for (id, c) in v.get("columns")?.as_object()? {
            if let Some(s) = column_of_json(c) {
                columns.insert(id.parse().ok()?, s);
            }
        }
        Some(Self { rows, columns })
    }
}

/// One column's statistics from their recorded form (`None`: unreadable, so unknown).
fn column_of_json(c: &Value) -> Option<ColumnStats> {
    let data_type = DataType::from_str(c.get("type")?.as_str()?).ok()?;
    let bound = |k: &str| -> Option<Option<ScalarValue>> {
        match c.get(k) {
            None => Some(None),
            Some(s) => Some(Some(text::from_text(s.as_str()?, &data_type)?)),
        }
    };
    Some(ColumnStats {
        min: bound("min")?,
        max: bound("max")?,
        nulls: c.get("nulls")?.as_u64()?,
        nans: c.get("nans")?.as_u64()?,
        data_type,
    })
}

/// `o` (over `o_rows` rows) and `n` (over `n_rows`) together; both of `n`'s type.
fn merge_column(o: &ColumnStats, o_rows: u64, n: &ColumnStats, n_rows: u64) -> ColumnStats {
    // A side whose rows are all NULL has no values: its missing bounds mean nothing.
    let (o_empty, n_empty) = (o.nulls >= o_rows, n.nulls >= n_rows);
    let pick = |a: &Option<ScalarValue>, b: &Option<ScalarValue>, keep_less: bool| {
        if o_empty {
            return b.clone();
        }
        if n_empty {
            return a.clone();
        }
        let (a, b) = (a.as_ref()?, b.as_ref()?);
        let less = a.partial_cmp(b)? == std::cmp::Ordering::Less;
        Some(if less == keep_less { a } else { b }.clone())
    };
    let nans = o.nans + n.nans;
    let (min, max) = match nans {
        0 => (pick(&o.min, &n.min, true), pick(&o.max, &n.max, false)),
        _ => (None, None),
    };
    ColumnStats {
        data_type: n.data_type.clone(),
        min,
        max,
        nulls: o.nulls + n.nulls,
        nans,
    }
}
