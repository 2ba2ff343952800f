//! Property tests that every transform kernel equals DataFusion's evaluation of the spec's
//! derived expression on the same input (with our UDFs; see docs/design.md, "Transforms equal
//! their expressions"), except `bucket` of a hash equal to `i32::MIN` (see docs/design.md,
//! "Bucket arithmetic"); and that every hash equals the `murmur3` crate over the bytes its
//! type prescribes (see docs/design.md, "Hashed bytes per type").

use std::sync::Arc;

use lance_partitioned_core::arrow::array::*;
use lance_partitioned_core::arrow::compute::kernels::cast::cast;
use lance_partitioned_core::arrow::datatypes::*;
use lance_partitioned_core::expr;
use lance_partitioned_core::hash;
use lance_partitioned_core::transform::Transform;
use proptest::prelude::*;

fn reference(bytes: &[u8]) -> i32 {
    murmur3::murmur3_32(&mut std::io::Cursor::new(bytes), 0).unwrap() as i32
}

/// Slices `a` by `off` rows from the front (exercises non-zero offsets).
fn sliced(a: ArrayRef, off: usize) -> ArrayRef {
    let off = off.min(a.len());
    a.slice(off, a.len() - off)
}

fn eq_after_cast(ours: &ArrayRef, theirs: &ArrayRef) -> Result<(), TestCaseError> {
    let theirs = cast(theirs, ours.data_type()).map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert_eq!(ours.as_ref(), theirs.as_ref());
    Ok(())
}

fn check_transform(t: &Transform, a: ArrayRef) -> Result<(), TestCaseError> {
    let ours = t
        .apply(std::slice::from_ref(&a))
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    let sql = t.derived_expression(&[a.data_type().clone()]);
    match expr::evaluate(&sql, &[a]) {
        Ok(theirs) => eq_after_cast(&ours, &theirs),
        Err(e) => {
            // The one permitted difference: upstream's checked abs fails on i32::MIN, while
            // bucket takes the absolute value in i64 (docs/design.md, "Bucket arithmetic").
            let msg = e.to_string();
            prop_assert!(
                matches!(t, Transform::Bucket(_)) && msg.to_lowercase().contains("overflow"),
                "DataFusion failed on {sql}: {msg}"
            );
            Ok(())
        }
    }
}

fn opt_vec<T: std::fmt::Debug + Clone>(
    s: impl Strategy<Value = T>,
) -> impl Strategy<Value = Vec<Option<T>>> {
    prop::collection::vec(prop::option::weighted(0.85, s), 0..40)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn ints_bucket_truncate_identity(v in opt_vec(any::<i64>()), off in 0usize..5,
                                     n in 1i32..5000, w in 1i32..1000) {
        let base: ArrayRef = Arc::new(Int64Array::from(v.clone()));
        for dt in [DataType::Int8, DataType::Int16, DataType::Int32, DataType::Int64,
                   DataType::UInt8, DataType::UInt32, DataType::UInt64] {
            let a = cast(&base, &dt).unwrap(); // overflowing values become NULL
            let a = sliced(a, off);
            check_transform(&Transform::Bucket(n), a.clone())?;
            check_transform(&Transform::Truncate(w), a.clone())?;
            check_transform(&Transform::Identity, a.clone())?;
            // hash bytes: native little-endian width
            let h = hash::murmur3(a.as_ref()).unwrap();
            for i in 0..a.len() {
                prop_assert_eq!(h.is_valid(i), a.is_valid(i));
                if a.is_valid(i) {
                    let bytes = match dt {
                        DataType::Int8 => a.as_primitive::<Int8Type>().value(i).to_le_bytes().to_vec(),
                        DataType::Int16 => a.as_primitive::<Int16Type>().value(i).to_le_bytes().to_vec(),
                        DataType::Int32 => a.as_primitive::<Int32Type>().value(i).to_le_bytes().to_vec(),
                        DataType::Int64 => a.as_primitive::<Int64Type>().value(i).to_le_bytes().to_vec(),
                        DataType::UInt8 => a.as_primitive::<UInt8Type>().value(i).to_le_bytes().to_vec(),
                        DataType::UInt32 => a.as_primitive::<UInt32Type>().value(i).to_le_bytes().to_vec(),
                        _ => a.as_primitive::<UInt64Type>().value(i).to_le_bytes().to_vec(),
                    };
                    prop_assert_eq!(h.value(i), reference(&bytes));
                }
            }
        }
    }

    #[test]
    fn floats_hash_their_bits(v in opt_vec(any::<f64>()), off in 0usize..3, n in 1i32..100) {
        let a = sliced(Arc::new(Float64Array::from(v)), off);
        check_transform(&Transform::Bucket(n), a.clone())?;
        let f = a.as_primitive::<Float64Type>();
        let h = hash::murmur3(a.as_ref()).unwrap();
        for i in 0..a.len() {
            if a.is_valid(i) {
                prop_assert_eq!(h.value(i), reference(&f.value(i).to_le_bytes()));
            }
        }
        let a32 = cast(&a, &DataType::Float32).unwrap();
        check_transform(&Transform::Bucket(n), a32)?;
    }

    #[test]
    fn strings_bucket_truncate(v in opt_vec("\\PC{0,24}"), off in 0usize..5,
                               n in 1i32..1000, w in 1i32..12) {
        let base: ArrayRef = Arc::new(StringArray::from(v.clone()));
        for dt in [DataType::Utf8, DataType::LargeUtf8, DataType::Utf8View] {
            let a = sliced(cast(&base, &dt).unwrap(), off);
            check_transform(&Transform::Bucket(n), a.clone())?;
            check_transform(&Transform::Truncate(w), a.clone())?;
            let h = hash::murmur3(a.as_ref()).unwrap();
            let s = cast(&a, &DataType::Utf8).unwrap();
            let s = s.as_string::<i32>();
            for i in 0..a.len() {
                if a.is_valid(i) {
                    prop_assert_eq!(h.value(i), reference(s.value(i).as_bytes()));
                }
            }
        }
        let bin = cast(&base, &DataType::Binary).unwrap();
        check_transform(&Transform::Bucket(n), sliced(bin, off))?;
        // dictionary-encoded strings hash like their values
        let dict = cast(&base, &DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8))).unwrap();
        let hd = hash::murmur3(dict.as_ref()).unwrap();
        let hp = hash::murmur3(base.as_ref()).unwrap();
        prop_assert_eq!(hd, hp);
    }

    #[test]
    fn timestamps_and_dates(v in opt_vec(-4_000_000_000_000_000i64..4_000_000_000_000_000),
                            off in 0usize..3, n in 1i32..64) {
        let raw = Int64Array::from(v.clone());
        let tzs: [Option<Arc<str>>; 4] = [None, Some("UTC".into()), Some("+08:00".into()),
                                          Some("America/New_York".into())];
        for unit in [TimeUnit::Microsecond, TimeUnit::Nanosecond, TimeUnit::Second, TimeUnit::Millisecond] {
            for tz in tzs.iter() {
                let scaled: Int64Array = match unit {
                    TimeUnit::Second => raw.unary(|x| x / 1_000_000),
                    TimeUnit::Millisecond => raw.unary(|x| x / 1000),
                    _ => raw.clone(),
                };
                let a = sliced(cast(&scaled, &DataType::Timestamp(unit, tz.clone())).unwrap(), off);
                for t in [Transform::Year, Transform::Month, Transform::Day, Transform::Hour,
                          Transform::Bucket(n), Transform::Identity] {
                    check_transform(&t, a.clone())?;
                }
                // timezone is ignored by the hash
                let naive = cast(&scaled, &DataType::Timestamp(unit, None)).unwrap();
                prop_assert_eq!(hash::murmur3(sliced(naive, off).as_ref()).unwrap(),
                                hash::murmur3(a.as_ref()).unwrap());
            }
        }
        let days: Int32Array = raw.unary(|x| (x / 86_400_000_000) as i32);
        let d = sliced(Arc::new(Date32Array::from(days.iter().collect::<Vec<_>>())), off);
        for t in [Transform::Year, Transform::Month, Transform::Day, Transform::Bucket(n)] {
            check_transform(&t, d.clone())?;
        }
    }

    /// Named zones through the transition-table path: clustered instants around the months
    /// daylight saving changes in (1900-2100), every unit, NULLs (with values under them
    /// far outside the range), sliced; against DataFusion's `date_part`.
    #[test]
    fn named_zones_across_dst_edges(year in 1900i64..2100, month in prop::sample::select(vec![3i64, 4, 9, 10, 11]),
                                    day in 0i64..30, deltas in opt_vec(-2 * 86_400i64..2 * 86_400),
                                    zone in prop::sample::select(vec!["America/New_York", "Europe/London",
                                        "Australia/Lord_Howe", "Pacific/Chatham", "Africa/Casablanca",
                                        "Europe/Dublin", "America/Sao_Paulo", "Asia/Kolkata"]),
                                    off in 0usize..3) {
        // Around one day of the month (days since the epoch, roughly).
        let base = ((year - 1970) * 36_524 / 100 + (month - 1) * 30 + day) * 86_400;
        let secs: Vec<Option<i64>> = deltas.iter().map(|d| d.map(|d| base + d)).collect();
        for (unit, per_sec) in [(TimeUnit::Second, 1i64), (TimeUnit::Millisecond, 1_000),
                                (TimeUnit::Microsecond, 1_000_000), (TimeUnit::Nanosecond, 1_000_000_000)] {
            // Values under NULLs far away: they must not widen the zone table or the result.
            let vals: Vec<i64> = secs.iter().map(|s| s.map_or(i64::MIN / 2, |s| s * per_sec + 7)).collect();
            let valid: Vec<bool> = secs.iter().map(Option::is_some).collect();
            let a: ArrayRef = Arc::new(Int64Array::new(vals.into(), Some(valid.into())));
            let a = cast(&a, &DataType::Timestamp(unit, Some(zone.into()))).unwrap();
            let a = sliced(a, off);
            for t in [Transform::Year, Transform::Month, Transform::Day, Transform::Hour] {
                check_transform(&t, a.clone())?;
            }
        }
    }

    /// Named zones, instants scattered over 1900-2100 (each value in another interval).
    #[test]
    fn named_zones_scattered(secs in opt_vec(-2_208_988_800i64..4_102_444_800),
                             zone in prop::sample::select(vec!["America/New_York", "Europe/Dublin",
                                 "Australia/Lord_Howe", "Africa/Casablanca", "Asia/Tehran"])) {
        for (unit, per_sec) in [(TimeUnit::Second, 1i64), (TimeUnit::Millisecond, 1_000),
                                (TimeUnit::Microsecond, 1_000_000), (TimeUnit::Nanosecond, 1_000_000_000)] {
            let raw = Int64Array::from(secs.iter().map(|s| s.map(|s| s * per_sec - 1)).collect::<Vec<_>>());
            let a = cast(&raw, &DataType::Timestamp(unit, Some(zone.into()))).unwrap();
            for t in [Transform::Year, Transform::Month, Transform::Day, Transform::Hour] {
                check_transform(&t, a.clone())?;
            }
        }
    }

    #[test]
    fn decimals(v in opt_vec(-10_000_000_000i64..10_000_000_000), w in 1i32..1000, n in 1i32..50) {
        let a: ArrayRef = Arc::new(Decimal128Array::from(v.iter().map(|x| x.map(|x| x as i128)).collect::<Vec<_>>())
            .with_precision_and_scale(20, 3).unwrap());
        check_transform(&Transform::Truncate(w), a.clone())?;
        check_transform(&Transform::Bucket(n), a)?;
    }

    #[test]
    fn multi_bucket_matches_expression(a in opt_vec("[a-z]{0,6}"), b in opt_vec(any::<i32>()), n in 1i32..100) {
        let len = a.len().min(b.len());
        let x: ArrayRef = Arc::new(StringArray::from(a[..len].to_vec()));
        let y: ArrayRef = Arc::new(Int32Array::from(b[..len].to_vec()));
        let t = Transform::MultiBucket(n);
        let ours = t.apply(&[x.clone(), y.clone()]).unwrap();
        // The derived expression must evaluate: an error is a failure, never a skipped check.
        let derived = t.derived_expression(&[x.data_type().clone(), y.data_type().clone()]);
        let theirs = expr::evaluate(&derived, &[x.clone(), y.clone()]);
        prop_assert!(theirs.is_ok(), "{derived} failed: {:?}", theirs.err());
        eq_after_cast(&ours, &theirs.unwrap())?;
        let h = hash::murmur3_multi(&[x.as_ref(), y.as_ref()]).unwrap();
        let xs = x.as_string::<i32>();
        let ys = y.as_primitive::<Int32Type>();
        for i in 0..len {
            let mut bytes = Vec::new();
            if x.is_valid(i) { bytes.extend_from_slice(xs.value(i).as_bytes()); }
            if y.is_valid(i) { bytes.extend_from_slice(&ys.value(i).to_le_bytes()); }
            if x.is_null(i) && y.is_null(i) {
                prop_assert!(h.is_null(i));
            } else {
                prop_assert_eq!(h.value(i), reference(&bytes));
            }
        }
    }
}
