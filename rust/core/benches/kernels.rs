//! Criterion benchmarks of the kernels on seeded data (release profile).
//!
//! Run: `cargo bench -p lance-partitioned-core --bench kernels`. Set
//! `LANCE_PARTITIONED_PORTABLE=1` to measure the portable (non-AVX2) loops.

use std::hint::black_box;
use std::sync::Arc;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use lance_partitioned_core::arrow::array::{ArrayRef, Int64Array, RecordBatch, StringArray};
use lance_partitioned_core::arrow::datatypes::{DataType, Field, Schema};
use lance_partitioned_core::hash::{self, murmur3_x86_32};
use lance_partitioned_core::route;

const N: usize = 1_000_000;

/// A small deterministic generator (xorshift64*), so runs compare.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

fn ints(n: usize) -> Int64Array {
    let mut r = Rng(42);
    Int64Array::from_iter_values((0..n).map(|_| r.next() as i64))
}

/// Strings of 10-20 bytes.
fn strings(n: usize, distinct: u64, seed: u64) -> StringArray {
    let mut r = Rng(seed);
    StringArray::from_iter_values((0..n).map(|_| {
        let v = r.next() % distinct;
        let s = format!("city-{v:08}-{}", "x".repeat((v % 6) as usize));
        s[..(10 + (v % 11) as usize).min(s.len())].to_string()
    }))
}

fn bench_hash(c: &mut Criterion) {
    let mut g = c.benchmark_group(format!("hash_{}", hash::simd_level()));
    g.throughput(Throughput::Elements(N as u64));
    g.sample_size(20);
    let i = ints(N);
    let raw: Vec<u64> = i.values().iter().map(|v| *v as u64).collect();
    // Compute limits: MurmurHash3 over the raw u64 buffer, no Arrow, no nulls. First the
    // textbook byte-slice function (what a straightforward port does), then the same
    // fixed-width inlined loop our kernel runs, into a preallocated buffer.
    g.bench_function("reference_byte_slice_loop_u64", |b| {
        b.iter(|| {
            let mut acc = 0u32;
            for v in black_box(&raw) {
                acc = acc.wrapping_add(murmur3_x86_32(&v.to_le_bytes(), 0));
            }
            acc
        })
    });
    let mut out = vec![0i32; N];
    g.bench_function("reference_raw_loop_u64_prealloc", |b| {
        b.iter(|| {
            hash::raw_hash_u64_into(black_box(&raw), &mut out);
            out[0]
        })
    });
    g.bench_function("murmur3_int64", |b| {
        b.iter(|| hash::murmur3(black_box(&i)).unwrap())
    });
    g.bench_function("bucket_int64_n16", |b| {
        b.iter(|| hash::bucket(black_box(&i), 16).unwrap())
    });
    g.bench_function("bucket_int64_n1000", |b| {
        b.iter(|| hash::bucket(black_box(&i), 1000).unwrap())
    });
    let s = strings(N, 1 << 40, 7);
    g.bench_function("bucket_utf8_10_20b", |b| {
        b.iter(|| hash::bucket(black_box(&s), 16).unwrap())
    });
    let s2 = strings(N, 1 << 40, 9);
    g.bench_function("multi_bucket_2xutf8", |b| {
        b.iter(|| hash::multi_bucket(&[black_box(&s), black_box(&s2)], 16).unwrap())
    });
    g.finish();
}

fn bench_route(c: &mut Criterion) {
    let mut g = c.benchmark_group("route");
    g.throughput(Throughput::Elements(N as u64));
    g.sample_size(10);
    let id: ArrayRef = Arc::new(ints(N));
    let country: ArrayRef = Arc::new(strings(N, 50, 3));
    let city: ArrayRef = Arc::new(strings(N, 100_000, 5));
    let batch = RecordBatch::try_from_iter(vec![
        ("id", id),
        ("country", Arc::clone(&country)),
        ("city", Arc::clone(&city)),
    ])
    .unwrap();
    let bucket: ArrayRef = Arc::new(hash::bucket(city.as_ref(), 16).unwrap());
    let keys = vec![country, bucket];
    let schema = Arc::new(Schema::new(vec![
        Field::new("country", DataType::Utf8, true),
        Field::new("b", DataType::Int32, true),
    ]));
    g.bench_function("group_rows_country_bucket16", |b| {
        b.iter(|| route::group_rows(black_box(&keys)).unwrap())
    });
    g.bench_function("route_country_bucket16", |b| {
        b.iter(|| route::route(black_box(&batch), &keys, Arc::clone(&schema)).unwrap())
    });
    g.finish();
}

fn bench_transforms(c: &mut Criterion) {
    use lance_partitioned_core::arrow::array::{Array, TimestampMicrosecondArray};
    use lance_partitioned_core::arrow::compute::kernels::temporal::{date_part, DatePart};
    use lance_partitioned_core::expr;
    use lance_partitioned_core::spec::{CompiledSpec, PartitionSpec};
    use lance_partitioned_core::transform;
    let mut g = c.benchmark_group("transform");
    g.throughput(Throughput::Elements(N as u64));
    g.sample_size(20);
    let i = ints(N);
    let ts_utc: ArrayRef = Arc::new(
        TimestampMicrosecondArray::from_iter_values(i.values().iter().map(|v| v >> 12))
            .with_timezone("UTC"),
    );
    let ts_ny: ArrayRef = Arc::new(
        TimestampMicrosecondArray::from_iter_values(i.values().iter().map(|v| v >> 12))
            .with_timezone("America/New_York"),
    );
    g.bench_function("year_ts_utc", |b| {
        b.iter(|| transform::year(black_box(ts_utc.as_ref())).unwrap())
    });
    g.bench_function("hour_ts_utc", |b| {
        b.iter(|| transform::hour(black_box(ts_utc.as_ref())).unwrap())
    });
    g.bench_function("year_ts_named_zone", |b| {
        b.iter(|| transform::year(black_box(ts_ny.as_ref())).unwrap())
    });
    // Event times as they arrive: one year from 2024-01-01, increasing with jitter (crosses
    // both New York daylight-saving changes).
    let mut r = Rng(7);
    let year_us = 366 * 86_400_000_000i64;
    let events: ArrayRef = Arc::new(
        TimestampMicrosecondArray::from_iter_values((0..N as i64).map(|k| {
            1_704_067_200_000_000 + k * (year_us / N as i64) + (r.next() % 60_000_000) as i64
        }))
        .with_timezone("America/New_York"),
    );
    for (name, a) in [("events", &events), ("random", &ts_ny)] {
        for (part_name, part) in [("year", DatePart::Year), ("hour", DatePart::Hour)] {
            g.bench_function(format!("{part_name}_ts_named_zone_{name}"), |b| {
                b.iter(|| match part {
                    DatePart::Year => transform::year(black_box(a.as_ref())).unwrap(),
                    _ => transform::hour(black_box(a.as_ref())).unwrap(),
                })
            });
            // The peer: arrow's date_part, one timezone conversion per value (what DataFusion
            // runs, and what this crate ran before its transition tables).
            g.bench_function(format!("{part_name}_ts_named_zone_{name}_arrow"), |b| {
                b.iter(|| date_part(black_box(a.as_ref()), part).unwrap())
            });
        }
    }
    let s: ArrayRef = Arc::new(strings(N, 1 << 40, 11));
    g.bench_function("truncate_utf8_w4", |b| {
        b.iter(|| transform::truncate(black_box(s.as_ref()), 4).unwrap())
    });
    g.bench_function("truncate_int64_w1000", |b| {
        b.iter(|| transform::truncate(black_box(&i as &dyn Array), 1000).unwrap())
    });
    let cols = vec![Arc::clone(&s), Arc::clone(&s)];
    g.bench_function("evaluate_concat_left_expression", |b| {
        b.iter(|| expr::evaluate("concat(col0, '/', left(col1, 2))", black_box(&cols)).unwrap())
    });
    let schema = Schema::new(vec![
        Field::new("id", DataType::Int64, true)
            .with_metadata([("lance:field_id".to_string(), "0".to_string())].into()),
        Field::new(
            "ts",
            DataType::Timestamp(
                lance_partitioned_core::arrow::datatypes::TimeUnit::Microsecond,
                Some("UTC".into()),
            ),
            true,
        )
        .with_metadata([("lance:field_id".to_string(), "1".to_string())].into()),
        Field::new("city", DataType::Utf8, true)
            .with_metadata([("lance:field_id".to_string(), "2".to_string())].into()),
    ]);
    let spec = PartitionSpec::from_json(
        r#"{"id":1,"fields":[
        {"field_id":"y","source_ids":[1],"transform":{"type":"year"},"result_type":{"type":"int32"}},
        {"field_id":"m","source_ids":[1],"transform":{"type":"month"},"result_type":{"type":"int32"}},
        {"field_id":"d","source_ids":[1],"transform":{"type":"day"},"result_type":{"type":"int32"}},
        {"field_id":"b","source_ids":[2],"transform":{"type":"bucket","num_buckets":16},"result_type":{"type":"int32"}}]}"#,
    )
    .unwrap();
    let compiled = CompiledSpec::compile(&spec, &schema, false).unwrap();
    let batch = RecordBatch::try_new(
        Arc::new(schema.clone()),
        vec![
            Arc::new(i.clone()) as ArrayRef,
            Arc::clone(&ts_utc),
            Arc::clone(&s),
        ],
    )
    .unwrap();
    g.bench_function("partition_values_year_month_day_bucket", |b| {
        b.iter(|| compiled.partition_values(black_box(&batch)).unwrap())
    });
    g.finish();
}

criterion_group!(benches, bench_hash, bench_transforms, bench_route);
criterion_main!(benches);
