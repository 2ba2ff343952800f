//! The namespace's sort order: the order every writer gives the rows of each file it writes
//! within a partition (and `optimize()` the files it compacts), so that column statistics and
//! zone maps of the sort columns bound narrow ranges. One root property,
//! `lance_partitioned.sort_order` = `[{"field_id": 3, "descending": false, "nulls_first":
//! false}, ...]`: columns named by field id (a rename keeps the order), as Iceberg's table
//! sort order does. No property, or an empty list: no order.
//!
//! With `lance_partitioned.sort_order.curve` = `"z-order"` beside it, the columns (two to four,
//! ascending, NULLs last) are not compared one after the other but along a Z-curve
//! ([`super::zorder`]), so that every one of them is bounded by zone maps and file statistics.
//! A reader that does not know the curve property sorts by the same columns lexicographically:
//! another layout, never another answer.

use std::collections::HashMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::arrow::array::{ArrayRef, RecordBatch};
use crate::arrow::compute::{lexsort_to_indices, take_record_batch, SortColumn, SortOptions};
use crate::arrow::datatypes::Schema;
use crate::arrow::row::{OwnedRow, RowConverter, SortField};
use crate::error::{Error, Result};
use crate::field_ids::field_id;
use crate::ns::manifest::zorder;

/// The root property holding the sort order.
pub const SORT_ORDER_KEY: &str = "lance_partitioned.sort_order";

/// The root property naming the curve that combines the sort columns (absent: one after the
/// other).
pub const SORT_CURVE_KEY: &str = "lance_partitioned.sort_order.curve";

/// The value of [`SORT_CURVE_KEY`] for a Z-order.
const Z_ORDER: &str = "z-order";

/// One sort column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SortKey {
    /// The field id of a top-level column.
    pub field_id: i32,
    /// Largest first.
    pub descending: bool,
    /// NULLs before the values.
    pub nulls_first: bool,
}

/// The namespace's sort order (empty: none).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SortOrder {
    pub keys: Vec<SortKey>,
    /// The keys (each ascending, NULLs last) combined along a Z-curve.
    pub zorder: bool,
}

impl SortOrder {
    /// The sort order in root properties `props`.
    ///
    /// # Errors
    /// `Corrupt` for a malformed property.
    pub fn of(props: &HashMap<String, String>) -> Result<Self> {
        let Some(text) = props.get(SORT_ORDER_KEY) else {
            return Ok(Self::default());
        };
        let keys = serde_json::from_str(text)
            .map_err(|e| Error::Corrupt(format!("malformed {SORT_ORDER_KEY}: {e}")))?;
        let zorder = match props.get(SORT_CURVE_KEY).map(String::as_str) {
            None => false,
            Some(Z_ORDER) => true,
            Some(other) => {
                return Err(Error::Corrupt(format!(
                    "{SORT_CURVE_KEY} = {other:?}: this version knows only {Z_ORDER:?}"
                )))
            }
        };
        Ok(Self { keys, zorder })
    }

    /// Parses `items`, each `column [ASC|DESC] [NULLS FIRST|NULLS LAST]` (case-insensitive;
    /// ascending by default, NULLs last when ascending and first when descending, as SQL),
    /// against the namespace schema `schema`.
    ///
    /// # Errors
    /// `InvalidArgument` naming the item: an unknown or repeated column, a column of a type
    /// that does not sort (lists, structs, maps), words other than those above.
    ///
    /// One item `zorder(a, b[, c[, d]])` is a Z-order of those columns.
    pub fn parse(items: &[String], schema: &Schema) -> Result<Self> {
        if let Some(columns) = items.first().and_then(|i| zorder_columns(i)) {
            return Self::parse_zorder(items, &columns, schema);
        }
        let mut keys: Vec<SortKey> = Vec::with_capacity(items.len());
        for item in items {
            let words: Vec<String> = item.split_whitespace().map(str::to_uppercase).collect();
            let bad = || {
                Error::InvalidArgument(format!(
                    "sort column {item:?}: expected `column [ASC|DESC] [NULLS FIRST|NULLS LAST]`"
                ))
            };
            let name = item.split_whitespace().next().ok_or_else(bad)?;
            let rest: Vec<&str> = words[1..].iter().map(String::as_str).collect();
            let (descending, nulls) = match rest.as_slice() {
                [] => (false, None),
                ["ASC"] => (false, None),
                ["DESC"] => (true, None),
                ["NULLS", n] => (false, Some(*n)),
                ["ASC", "NULLS", n] => (false, Some(*n)),
                ["DESC", "NULLS", n] => (true, Some(*n)),
                _ => return Err(bad()),
            };
            let nulls_first = match nulls {
                None => descending,
                Some("FIRST") => true,
                Some("LAST") => false,
                Some(_) => return Err(bad()),
            };
            keys.push(SortKey {
                field_id: sort_column(name, schema, &keys)?,
                descending,
                nulls_first,
            });
        }
        Ok(Self {
            keys,
            zorder: false,
        })
    }

    /// The Z-order of `columns`, the one item of `items`.
    fn parse_zorder(items: &[String], columns: &[&str], schema: &Schema) -> Result<Self> {
        if items.len() > 1 {
            return Err(Error::InvalidArgument(format!(
                "{:?} is the whole sort order: a Z-order takes no other items",
                items[0]
            )));
        }
        if !(zorder::MIN_COLUMNS..=zorder::MAX_COLUMNS).contains(&columns.len()) {
            return Err(Error::InvalidArgument(format!(
                "{:?}: a Z-order takes {} to {} columns",
                items[0],
                zorder::MIN_COLUMNS,
                zorder::MAX_COLUMNS
            )));
        }
        let mut keys: Vec<SortKey> = Vec::with_capacity(columns.len());
        for name in columns {
            keys.push(SortKey {
                field_id: sort_column(name, schema, &keys)?,
                descending: false,
                nulls_first: false,
            });
        }
        Ok(Self { keys, zorder: true })
    }

    /// The root properties holding this order (`None`: the property is removed).
    ///
    /// # Errors
    /// `Internal` if it does not serialize (it always does).
    pub fn to_props(&self) -> Result<[(String, Option<String>); 2]> {
        let keys = if self.keys.is_empty() {
            None
        } else {
            Some(
                serde_json::to_string(&self.keys)
                    .map_err(|e| Error::Internal(format!("sort order: {e}")))?,
            )
        };
        let curve = (self.zorder && keys.is_some()).then(|| Z_ORDER.to_string());
        Ok([
            (SORT_ORDER_KEY.to_string(), keys),
            (SORT_CURVE_KEY.to_string(), curve),
        ])
    }

    /// The order as text, one item per column, with the columns' names in `schema` (a column
    /// dropped since shows as `#<field id>`).
    pub fn describe(&self, schema: &Schema) -> Vec<String> {
        let name = |k: &SortKey| {
            schema
                .fields()
                .iter()
                .find(|f| field_id(f) == Some(k.field_id))
                .map_or_else(|| format!("#{}", k.field_id), |f| f.name().clone())
        };
        if self.zorder {
            let names: Vec<String> = self.keys.iter().map(name).collect();
            return vec![format!("zorder({})", names.join(", "))];
        }
        self.keys
            .iter()
            .map(|k| {
                let dir = if k.descending { "DESC" } else { "ASC" };
                let nulls = if k.nulls_first { "FIRST" } else { "LAST" };
                format!("{} {dir} NULLS {nulls}", name(k))
            })
            .collect()
    }

    /// `batch` (columns named as in the namespace schema `ns`) in this order; columns the
    /// batch lacks are left out of the order (rows equal on every sort column come in any
    /// order).
    ///
    /// # Errors
    /// `Arrow` for a column that does not sort.
    pub fn sort(&self, batch: &RecordBatch, ns: &Schema) -> Result<RecordBatch> {
        self.sort_named(batch, |id| name_in(ns, id))
    }

    /// `batch` in this order, its sort columns found by `name_of(field id)` (a leaf written
    /// under an older schema names them as it did then).
    ///
    /// # Errors
    /// `Arrow` for a column that does not sort.
    pub fn sort_named(
        &self,
        batch: &RecordBatch,
        name_of: impl Fn(i32) -> Option<String>,
    ) -> Result<RecordBatch> {
        let columns: Vec<SortColumn> = self
            .keys
            .iter()
            .filter_map(|k| {
                let values: &ArrayRef = batch.column_by_name(&name_of(k.field_id)?)?;
                Some(SortColumn {
                    values: Arc::clone(values),
                    options: Some(SortOptions {
                        descending: k.descending,
                        nulls_first: k.nulls_first,
                    }),
                })
            })
            .collect();
        if columns.is_empty() || batch.num_rows() < 2 {
            return Ok(batch.clone());
        }
        let indices = if self.zorder {
            let values: Vec<ArrayRef> = columns.into_iter().map(|c| c.values).collect();
            zorder::z_order_indices(&values)?
        } else {
            lexsort_to_indices(&columns, None)?
        };
        Ok(take_record_batch(batch, &indices)?)
    }

    /// `batch` in this order (sort columns found as [`Self::sort_named`]), cut into the files
    /// of up to `max_rows` rows a writer makes of it. For a Z-order, each file's rows are then
    /// put in the Z-order of that file's own rows, so that the file alone is found in order
    /// ([`Self::check`]) while the files still cover consecutive stretches of the curve.
    ///
    /// # Errors
    /// `Arrow` for a column that does not sort.
    pub fn sort_files(
        &self,
        batch: &RecordBatch,
        name_of: impl Fn(i32) -> Option<String>,
        max_rows: usize,
    ) -> Result<Vec<RecordBatch>> {
        let sorted = self.sort_named(batch, &name_of)?;
        if !self.zorder || sorted.num_rows() <= max_rows {
            return Ok(vec![sorted]);
        }
        let max_rows = max_rows.max(1);
        (0..sorted.num_rows())
            .step_by(max_rows)
            .map(|start| {
                let len = max_rows.min(sorted.num_rows() - start);
                self.sort_named(&sorted.slice(start, len), &name_of)
            })
            .collect()
    }

    /// A check of whether the batches of one file are in this order, its sort columns found
    /// by `name_of(field id)` (as [`Self::sort_named`]).
    pub fn check(&self, name_of: impl Fn(i32) -> Option<String>) -> OrderCheck {
        let keys = self
            .keys
            .iter()
            .filter_map(|k| {
                let options = SortOptions {
                    descending: k.descending,
                    nulls_first: k.nulls_first,
                };
                Some((name_of(k.field_id)?, options))
            })
            .collect();
        OrderCheck {
            keys,
            converter: None,
            last: None,
            zorder: self.zorder.then(Vec::new),
        }
    }
}

/// The name in `ns` of the top-level column with field id `id`.
fn name_in(ns: &Schema, id: i32) -> Option<String> {
    ns.fields()
        .iter()
        .find(|f| field_id(f) == Some(id))
        .map(|f| f.name().clone())
}

/// `item`'s column names if it is `zorder(a, b, ...)` (case-insensitive keyword).
fn zorder_columns(item: &str) -> Option<Vec<&str>> {
    let item = item.trim();
    let open = item.find('(')?;
    if !item[..open].trim().eq_ignore_ascii_case("zorder") || !item.ends_with(')') {
        return None;
    }
    Some(
        item[open + 1..item.len() - 1]
            .split(',')
            .map(str::trim)
            .collect(),
    )
}

/// The field id of the sort column `name` of `schema`, not yet among `keys`.
fn sort_column(name: &str, schema: &Schema, keys: &[SortKey]) -> Result<i32> {
    let field = schema.field_with_name(name).map_err(|_| {
        Error::InvalidArgument(format!(
            "sort column {name:?} is not a top-level column of the namespace schema"
        ))
    })?;
    let dt = field.data_type();
    if dt.is_nested() {
        return Err(Error::InvalidArgument(format!(
            "sort column {name:?} is {dt}, which has no order"
        )));
    }
    let id = field_id(field)
        .ok_or_else(|| Error::Corrupt(format!("column {name:?} carries no field id")))?;
    if keys.iter().any(|k| k.field_id == id) {
        return Err(Error::InvalidArgument(format!(
            "sort column {name:?} appears twice"
        )));
    }
    Ok(id)
}

/// Whether rows arrive in a [`SortOrder`]: fed the batches of one file in their order, it
/// tells whether every row sorts at or after the one before it (across batches too).
pub struct OrderCheck {
    /// The sort columns present, with their names in the batches.
    keys: Vec<(String, SortOptions)>,
    converter: Option<RowConverter>,
    /// The last row of the batches seen so far.
    last: Option<OwnedRow>,
    /// For a Z-order: the sort columns of every batch so far, checked by [`Self::finish`]
    /// (a Z-value depends on all the file's rows).
    zorder: Option<Vec<Vec<ArrayRef>>>,
}

impl OrderCheck {
    /// Whether the rows of `batch` follow the rows seen so far in order. Rows equal on every
    /// sort column may come in any order; sort columns the batch lacks are left out (as
    /// [`SortOrder::sort_named`] leaves them out).
    ///
    /// # Errors
    /// `Arrow` for a column that does not sort.
    /// For a Z-order the batches are only kept: [`Self::finish`] answers.
    pub fn in_order(&mut self, batch: &RecordBatch) -> Result<bool> {
        if batch.num_rows() == 0 {
            return Ok(true);
        }
        let mut columns = Vec::with_capacity(self.keys.len());
        let mut fields = Vec::with_capacity(self.keys.len());
        for (name, options) in &self.keys {
            if let Some(c) = batch.column_by_name(name) {
                fields.push(SortField::new_with_options(c.data_type().clone(), *options));
                columns.push(Arc::clone(c));
            }
        }
        if columns.is_empty() {
            return Ok(true);
        }
        if let Some(seen) = &mut self.zorder {
            seen.push(columns);
            return Ok(true);
        }
        let converter = match &self.converter {
            Some(c) => c,
            None => self.converter.insert(RowConverter::new(fields)?),
        };
        let rows = converter.convert_columns(&columns)?;
        if let Some(last) = &self.last {
            if rows.row(0) < last.row() {
                return Ok(false);
            }
        }
        let sorted = (1..rows.num_rows()).all(|i| rows.row(i - 1) <= rows.row(i));
        self.last = Some(rows.row(rows.num_rows() - 1).owned());
        Ok(sorted)
    }

    /// Whether all the rows fed to [`Self::in_order`] are in order: for a Z-order, whether
    /// their Z-values (over all of them) never decrease; otherwise what `in_order` said.
    ///
    /// # Errors
    /// `Arrow` for a column that does not sort.
    pub fn finish(&mut self) -> Result<bool> {
        let Some(seen) = self.zorder.take().filter(|s| !s.is_empty()) else {
            return Ok(true);
        };
        let columns = (0..seen[0].len())
            .map(|j| {
                let parts: Vec<&dyn crate::arrow::array::Array> =
                    seen.iter().map(|b| b[j].as_ref()).collect();
                crate::arrow::compute::concat(&parts)
            })
            .collect::<std::result::Result<Vec<_>, _>>()?;
        zorder::is_z_ordered(&columns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arrow::array::{Int64Array, StringArray};
    use crate::arrow::datatypes::{DataType, Field};

    fn schema() -> Schema {
        let f = |name: &str, dt: DataType, id: &str| {
            Field::new(name, dt, true).with_metadata(HashMap::from([(
                crate::field_ids::FIELD_ID_KEY.to_string(),
                id.to_string(),
            )]))
        };
        Schema::new(vec![
            f("a", DataType::Int64, "1"),
            f("s", DataType::Utf8, "2"),
            f("l", DataType::new_list(DataType::Int64, true), "3"),
        ])
    }

    #[test]
    fn parses_describes_and_round_trips() {
        let items = ["s desc".to_string(), "a NULLS FIRST".to_string()];
        let order = SortOrder::parse(&items, &schema()).unwrap();
        assert_eq!(
            order.describe(&schema()),
            ["s DESC NULLS FIRST", "a ASC NULLS FIRST"]
        );
        let props = |o: &SortOrder| -> HashMap<String, String> {
            o.to_props()
                .unwrap()
                .into_iter()
                .filter_map(|(k, v)| Some((k, v?)))
                .collect()
        };
        assert_eq!(SortOrder::of(&props(&order)).unwrap(), order);
        assert!(props(&SortOrder::default()).is_empty());
        let z = SortOrder::parse(&["ZOrder(s, a)".to_string()], &schema()).unwrap();
        assert!(z.zorder);
        assert_eq!(z.describe(&schema()), ["zorder(s, a)"]);
        assert_eq!(SortOrder::of(&props(&z)).unwrap(), z);
        let mut unknown = props(&z);
        unknown.insert(SORT_CURVE_KEY.to_string(), "hilbert".to_string());
        assert!(matches!(SortOrder::of(&unknown), Err(Error::Corrupt(_))));
        for bad in [
            "zorder(a)",
            "zorder(a, a)",
            "zorder(a, l)",
            "zorder(a, s, a, s, a)",
        ] {
            let got = SortOrder::parse(&[bad.to_string()], &schema());
            assert!(matches!(got, Err(Error::InvalidArgument(_))), "{bad}");
        }
        let more = SortOrder::parse(&["zorder(a, s)".into(), "a".into()], &schema());
        assert!(matches!(more, Err(Error::InvalidArgument(m)) if m.contains("whole")));
        for bad in ["x", "l", "a sideways", "a NULLS MAYBE", "a DESC NULLS"] {
            let got = SortOrder::parse(&[bad.to_string()], &schema());
            assert!(matches!(got, Err(Error::InvalidArgument(_))), "{bad}");
        }
        let twice = SortOrder::parse(&["a".into(), "a desc".into()], &schema());
        assert!(matches!(twice, Err(Error::InvalidArgument(m)) if m.contains("twice")));
    }

    #[test]
    fn sorts_by_every_key() {
        let ns = schema();
        let batch = RecordBatch::try_new(
            Arc::new(Schema::new(vec![
                Field::new("a", DataType::Int64, true),
                Field::new("s", DataType::Utf8, true),
            ])),
            vec![
                Arc::new(Int64Array::from(vec![Some(2), None, Some(1), Some(2)])),
                Arc::new(StringArray::from(vec!["x", "y", "z", "w"])),
            ],
        )
        .unwrap();
        let order = SortOrder::parse(&["a".to_string(), "s DESC".to_string()], &ns).unwrap();
        let sorted = order.sort(&batch, &ns).unwrap();
        let s = sorted
            .column(1)
            .as_any()
            .downcast_ref::<StringArray>()
            .unwrap();
        // a ASC NULLS LAST, then s DESC among the two 2s.
        assert_eq!(s.iter().flatten().collect::<Vec<_>>(), ["z", "x", "w", "y"]);
    }

    #[test]
    fn checks_order_within_and_across_batches() {
        let ns = schema();
        let batch = |a: Vec<Option<i64>>, s: Vec<&str>| {
            RecordBatch::try_new(
                Arc::new(Schema::new(vec![
                    Field::new("a", DataType::Int64, true),
                    Field::new("s", DataType::Utf8, true),
                ])),
                vec![
                    Arc::new(Int64Array::from(a)),
                    Arc::new(StringArray::from(s)),
                ],
            )
            .unwrap()
        };
        let order = SortOrder::parse(&["a".to_string(), "s DESC".to_string()], &ns).unwrap();
        let name = |id| {
            ns.fields()
                .iter()
                .find(|f| field_id(f) == Some(id))
                .map(|f| f.name().clone())
        };
        let sorted = order
            .sort(
                &batch(vec![Some(2), None, Some(1)], vec!["x", "y", "z"]),
                &ns,
            )
            .unwrap();
        assert!(order.check(name).in_order(&sorted).unwrap());
        // Equal on `a`, but `s` ascending where the order wants it descending.
        let ties = batch(vec![Some(1), Some(1)], vec!["a", "b"]);
        assert!(!order.check(name).in_order(&ties).unwrap());
        // Each batch sorted, the second starting below where the first ended.
        let mut check = order.check(name);
        assert!(check
            .in_order(&batch(vec![Some(1), Some(5)], vec!["a", "a"]))
            .unwrap());
        assert!(!check
            .in_order(&batch(vec![Some(4), Some(6)], vec!["a", "a"]))
            .unwrap());
        // NULLs last: a NULL then a value is out of order.
        let nulls = batch(vec![None, Some(1)], vec!["a", "a"]);
        assert!(!order.check(name).in_order(&nulls).unwrap());
    }
}
