//! `truncate(x, W)`: strings keep their first W Unicode characters (DataFusion's `left`);
//! integers and decimals become `v - (v % W)` with a truncated remainder (−7, W=5 → −5),
//! decimals with W in whole units; the result type is the source type. See docs/design.md,
//! "Truncate".

use std::sync::Arc;

use crate::arrow::array::{
    Array, ArrayRef, ArrowPrimitiveType, AsArray, GenericStringArray, GenericStringBuilder,
    OffsetSizeTrait, PrimitiveArray, StringViewBuilder,
};
use crate::arrow::datatypes::{
    i256, DataType, Decimal128Type, Decimal256Type, Decimal32Type, Decimal64Type, Int16Type,
    Int32Type, Int64Type, Int8Type, UInt16Type, UInt32Type, UInt64Type, UInt8Type,
};
use crate::error::{invalid_arg, unsupported, Error, Result};

/// Whether `truncate` accepts values of type `t` (decimals only with a scale >= 0).
pub(super) fn truncatable(t: &DataType) -> bool {
    use DataType::*;
    match t {
        Utf8 | LargeUtf8 | Utf8View | Int8 | Int16 | Int32 | Int64 | UInt8 | UInt16 | UInt32
        | UInt64 => true,
        Decimal32(_, s) | Decimal64(_, s) | Decimal128(_, s) | Decimal256(_, s) => *s >= 0,
        _ => false,
    }
}

/// `truncate(x, w)`: the first `w` characters of a string, `v - (v % w)` for integers and
/// decimals (`w` in whole units), with the source type as the result type.
///
/// # Errors
/// `InvalidArgument` when `w <= 0`; `UnsupportedType` for other source types.
pub fn truncate(a: &dyn Array, w: i32) -> Result<ArrayRef> {
    if w <= 0 {
        return invalid_arg!("width must be positive, got {w}");
    }
    use DataType::*;
    Ok(match a.data_type() {
        Utf8 => Arc::new(truncate_str::<i32>(a.as_string::<i32>(), w as usize)),
        LargeUtf8 => Arc::new(truncate_str::<i64>(a.as_string::<i64>(), w as usize)),
        Utf8View => {
            let s = a.as_string_view();
            let mut b = StringViewBuilder::with_capacity(s.len());
            for v in s.iter() {
                b.append_option(v.map(|v| prefix_chars(v, w as usize)));
            }
            Arc::new(b.finish())
        }
        Int8 => trunc_int::<Int8Type>(a, w, |v, w| (v as i64 - (v as i64 % w)) as i8),
        Int16 => trunc_int::<Int16Type>(a, w, |v, w| (v as i64 - (v as i64 % w)) as i16),
        Int32 => trunc_int::<Int32Type>(a, w, |v, w| (v as i64 - (v as i64 % w)) as i32),
        Int64 => trunc_int::<Int64Type>(a, w, |v, w| v - (v % w)),
        UInt8 => trunc_int::<UInt8Type>(a, w, |v, w| (v as i64 - (v as i64 % w)) as u8),
        UInt16 => trunc_int::<UInt16Type>(a, w, |v, w| (v as i64 - (v as i64 % w)) as u16),
        UInt32 => trunc_int::<UInt32Type>(a, w, |v, w| (v as i64 - (v as i64 % w)) as u32),
        UInt64 => trunc_int::<UInt64Type>(a, w, |v, w| v - (v % w as u64)),
        Decimal32(_, s) => trunc_decimal::<Decimal32Type>(a, w, *s, |v, w| {
            let (v, w) = (v as i128, w);
            (v - (v % w)) as i32
        })?,
        Decimal64(_, s) => trunc_decimal::<Decimal64Type>(a, w, *s, |v, w| {
            let (v, w) = (v as i128, w);
            (v - (v % w)) as i64
        })?,
        Decimal128(_, s) => trunc_decimal::<Decimal128Type>(a, w, *s, |v, w| v - (v % w))?,
        Decimal256(_, s) => trunc_decimal256(a, w, *s)?,
        Null => crate::arrow::array::new_null_array(&Null, a.len()),
        other => {
            return unsupported!(
                "truncate needs a string, integer or decimal (scale >= 0), got {other}"
            )
        }
    })
}

/// The first `w` Unicode scalar values of `s` (DataFusion's `left`).
#[inline]
fn prefix_chars(s: &str, w: usize) -> &str {
    if s.len() <= w {
        return s;
    }
    match s.char_indices().nth(w) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

fn truncate_str<O: OffsetSizeTrait>(s: &GenericStringArray<O>, w: usize) -> GenericStringArray<O> {
    let mut b = GenericStringBuilder::<O>::with_capacity(s.len(), s.value_data().len());
    for v in s.iter() {
        b.append_option(v.map(|v| prefix_chars(v, w)));
    }
    b.finish()
}

fn trunc_int<T>(a: &dyn Array, w: i32, f: impl Fn(T::Native, i64) -> T::Native) -> ArrayRef
where
    T: ArrowPrimitiveType,
{
    let p = a.as_primitive::<T>();
    let w = w as i64;
    let out: PrimitiveArray<T> = p.unary(|v| f(v, w));
    Arc::new(out)
}

/// W expressed in the unscaled units of a decimal with `scale`; `None` when it does not fit
/// (every value then truncates to 0, as `v % W == v`).
fn scaled_width(w: i32, scale: i8) -> Option<i128> {
    10i128
        .checked_pow(scale as u32)
        .and_then(|p| p.checked_mul(w as i128))
}

fn trunc_decimal<T>(
    a: &dyn Array,
    w: i32,
    scale: i8,
    f: impl Fn(T::Native, i128) -> T::Native,
) -> Result<ArrayRef>
where
    T: crate::arrow::datatypes::DecimalType,
{
    if scale < 0 {
        return unsupported!("truncate does not support decimals with a negative scale");
    }
    let p = a.as_primitive::<T>();
    let out: PrimitiveArray<T> = match scaled_width(w, scale) {
        Some(ws) => p.unary(|v| f(v, ws)),
        None => p.unary(|_| T::Native::default()),
    };
    Ok(Arc::new(out.with_data_type(a.data_type().clone())))
}

fn trunc_decimal256(a: &dyn Array, w: i32, scale: i8) -> Result<ArrayRef> {
    if scale < 0 {
        return unsupported!("truncate does not support decimals with a negative scale");
    }
    let p = a.as_primitive::<Decimal256Type>();
    let ws = i256::from_i128(w as i128).checked_mul(
        i256::from_i128(10)
            .checked_pow(scale as u32)
            .ok_or_else(|| Error::Internal("10^scale overflows i256".into()))?,
    );
    let out: PrimitiveArray<Decimal256Type> = match ws {
        Some(ws) => p.unary(|v| v.wrapping_sub(v.wrapping_rem(ws))),
        None => p.unary(|_| i256::ZERO),
    };
    Ok(Arc::new(out.with_data_type(a.data_type().clone())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arrow::array::{Int32Array, Int64Array, StringArray};

    #[test]
    fn truncate_examples() {
        let a = Int64Array::from(vec![Some(-7), Some(17), None, Some(i64::MIN)]);
        let t = truncate(&a, 5).unwrap();
        let t = t.as_primitive::<Int64Type>();
        assert_eq!(t.value(0), -5);
        assert_eq!(t.value(1), 15);
        assert!(t.is_null(2));
        assert_eq!(t.value(3), i64::MIN - (i64::MIN % 5));
        let s = StringArray::from(vec!["héllo", "日本語テキスト", "ab"]);
        let t = truncate(&s, 2).unwrap();
        let t = t.as_string::<i32>();
        assert_eq!(t.value(0), "hé");
        assert_eq!(t.value(1), "日本");
        assert_eq!(t.value(2), "ab");
        assert!(truncate(&Int32Array::from(vec![1]), 0).is_err());
    }
}
