//! Conforming a column to its namespace type (docs/design.md, "Types used for partition
//! values"): lossless casts only, struct children matched by name at every depth.

use std::sync::Arc;

use crate::arrow::array::{new_null_array, Array, ArrayRef, AsArray, StructArray};
use crate::arrow::compute::kernels::cast::{cast_with_options, CastOptions};
use crate::arrow::datatypes::{DataType, Fields};
use crate::arrow::util::display::FormatOptions;
use crate::error::{Error, Result};

/// Arrow cast options that fail instead of turning a value that does not fit into NULL.
pub(crate) fn strict_cast() -> CastOptions<'static> {
    CastOptions {
        safe: false,
        format_options: FormatOptions::default(),
    }
}

/// Casts `col` to the namespace type `to`, refusing lossy casts: every value must come back
/// unchanged when cast back to its input type (so `1.5` is not stored as `1`, a timestamp at
/// 23:59 is not stored as its date, `2^63 + 1` does not wrap); text that names an integer or
/// a float must give the same value again (`"2"` and `"2.0"` are one float). Widenings skip the check.
/// Structs are conformed child by child (matched by name; a child missing from the input
/// reads as NULL when nullable; an unknown child is an error), so an input struct without
/// the namespace's field metadata, or with its children in another order, is accepted.
///
/// # Errors
/// `InvalidArgument` naming the column (`s.city` for a struct child).
pub(crate) fn to_namespace_type(col: &ArrayRef, to: &DataType, name: &str) -> Result<ArrayRef> {
    let from = col.data_type();
    if from == to {
        return Ok(Arc::clone(col));
    }
    let refuse = |why: String| {
        Error::InvalidArgument(format!(
            "column {name:?} of type {from} cannot be cast to its namespace type {to}: {why}"
        ))
    };
    if let (DataType::Struct(have), DataType::Struct(want)) = (from, to) {
        return conform_struct(col, have, want, name).map_err(|e| match e {
            Error::InvalidArgument(_) => e,
            other => refuse(other.to_string()),
        });
    }
    let out =
        cast_with_options(col.as_ref(), to, &strict_cast()).map_err(|e| refuse(e.to_string()))?;
    if always_lossless(from, to) {
        return Ok(out);
    }
    let back = cast_with_options(out.as_ref(), from, &strict_cast())
        .map_err(|e| refuse(format!("the cast is not reversible ({e})")))?;
    let changed = if names_a_number(from, to) {
        // Text that names an integer or a float ("2", "2.0", "+2", "2e0" are one float):
        // parsing is exact for integers and the nearest float for floats, as in SQL's CAST, so
        // the values must survive a round trip, not the text.
        let again = cast_with_options(back.as_ref(), to, &strict_cast())
            .map_err(|e| refuse(format!("the cast is not reversible ({e})")))?;
        first_change(&out, &again)?
    } else {
        first_change(col, &back)?
    };
    let Some((row, count)) = changed else {
        return Ok(out);
    };
    let shown = crate::arrow::util::display::array_value_to_string(col.as_ref(), row)
        .unwrap_or_else(|_| "?".into());
    Err(refuse(format!(
        "{count} value(s) would change, the first at row {row} ({shown}); cast the input \
         explicitly if that is intended"
    )))
}

/// Whether `from` is text and `to` an integer or floating-point type.
fn names_a_number(from: &DataType, to: &DataType) -> bool {
    matches!(
        from,
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
    ) && (to.is_integer() || to.is_floating())
}

/// The first row where `a` and `b` differ and how many differ (`None`: equal).
fn first_change(a: &ArrayRef, b: &ArrayRef) -> Result<Option<(usize, usize)>> {
    if a.data_type().is_nested() {
        // No vectorised comparison of nested values: compare rows' data.
        if a.to_data() == b.to_data() {
            return Ok(None);
        }
        let differs = |i: usize| a.slice(i, 1).to_data() != b.slice(i, 1).to_data();
        let rows: Vec<usize> = (0..a.len()).filter(|&i| differs(i)).collect();
        return Ok(rows.first().map(|&r| (r, rows.len())));
    }
    let changed = crate::arrow::compute::kernels::cmp::distinct(a, b)?;
    if changed.true_count() == 0 {
        return Ok(None);
    }
    let row = (0..changed.len())
        .find(|&i| changed.is_valid(i) && changed.value(i))
        .unwrap_or(0);
    Ok(Some((row, changed.true_count())))
}

/// A struct column with the namespace's children (`want`), each conformed on its own; the
/// struct's own validity is kept.
fn conform_struct(col: &ArrayRef, have: &Fields, want: &Fields, name: &str) -> Result<ArrayRef> {
    if let Some(extra) = have.iter().find(|h| want.find(h.name()).is_none()) {
        return Err(Error::InvalidArgument(format!(
            "column {name:?} has a field {:?} that its namespace type does not have (fields: \
             {})",
            extra.name(),
            want.iter()
                .map(|f| f.name().as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    let s = col.as_struct();
    let mut kids = Vec::with_capacity(want.len());
    for w in want {
        let child = format!("{name}.{}", w.name());
        kids.push(match s.column_by_name(w.name()) {
            Some(c) => to_namespace_type(c, w.data_type(), &child)?,
            None if w.is_nullable() => new_null_array(w.data_type(), s.len()),
            None => {
                return Err(Error::InvalidArgument(format!(
                    "column {child:?} is missing from the input and is not nullable"
                )))
            }
        });
    }
    let out = StructArray::try_new(want.clone(), kids, s.nulls().cloned()).map_err(|e| {
        Error::InvalidArgument(format!(
            "column {name:?} does not fit its namespace type: {e}"
        ))
    })?;
    Ok(Arc::new(out))
}

/// Casts that can never change a value (widenings, string and binary encodings, dictionary
/// decoding, time zone changes of an instant, finer units of a date, nested types that
/// differ only in field names or metadata).
fn always_lossless(from: &DataType, to: &DataType) -> bool {
    use DataType::*;
    if crate::types::is_widening(from, to) || (from.is_nested() && from.equals_datatype(to)) {
        return true;
    }
    match (from, to) {
        (Dictionary(_, v), t) => v.as_ref() == t,
        (Utf8 | LargeUtf8 | Utf8View, Utf8 | LargeUtf8 | Utf8View) => true,
        (Binary | LargeBinary | BinaryView, Binary | LargeBinary | BinaryView) => true,
        (Timestamp(u1, _), Timestamp(u2, _)) => u1 == u2,
        (Date32, Date64) => true,
        _ => false,
    }
}
