//! What a write allocates, counted by the global allocator of this test binary (its own
//! binary, so no other test allocates meanwhile): relieving the buffers of a batch the write
//! then ends with copies nothing (the partitions not yet written out are written from the
//! routed batch at the close, so copying them out of it would only add to the peak).

use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::HashMap;
use std::sync::atomic::{AtomicIsize, Ordering};
use std::sync::Arc;

use lance_partitioned_core::arrow::array::{Int64Array, RecordBatch, StringArray};
use lance_partitioned_core::arrow::datatypes::{DataType, Field, Schema};
use lance_partitioned_core::ns::infra::storage::Storage;
use lance_partitioned_core::ns::manifest::Snapshot;
use lance_partitioned_core::ns::namespace::Namespace;
use lance_partitioned_core::ns::write::{IdPlan, PartitionWriter, WriteOptions};
use lance_partitioned_core::spec::PartitionSpec;

/// The system allocator, counting the bytes live and their high-water mark.
struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);
static PEAK: AtomicIsize = AtomicIsize::new(0);

// SAFETY: every call is forwarded to the system allocator unchanged; the counters only
// observe the sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc(layout);
        if !p.is_null() {
            let now = LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
            PEAK.fetch_max(now + layout.size() as isize, Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout);
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = System.realloc(ptr, layout, new_size);
        if !p.is_null() {
            let grow = new_size as isize - layout.size() as isize;
            let now = LIVE.fetch_add(grow, Ordering::Relaxed);
            PEAK.fetch_max(now + grow, Ordering::Relaxed);
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const MIB: usize = 1 << 20;

fn schema() -> Arc<Schema> {
    let field = |name: &str, dt: DataType, id: i32| {
        Field::new(name, dt, true).with_metadata(HashMap::from([(
            "lance:field_id".to_string(),
            id.to_string(),
        )]))
    };
    Arc::new(Schema::new(vec![
        field("k", DataType::Int64, 1),
        field("payload", DataType::Utf8, 2),
    ]))
}

/// `rows` rows spread evenly over 8 partitions, each with a 100-byte payload.
fn batch(rows: usize) -> RecordBatch {
    let keys = Int64Array::from_iter_values((0..rows as i64).map(|i| i % 8));
    let payload = StringArray::from_iter_values((0..rows).map(|i| format!("{i:0>100}")));
    RecordBatch::try_new(schema(), vec![Arc::new(keys), Arc::new(payload)]).expect("batch")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn relieving_the_buffers_of_the_last_batch_copies_nothing() {
    let dir = tempfile::tempdir().expect("temp dir");
    let storage = Storage::from(dir.path().join("ns").to_string_lossy().as_ref());
    let spec = PartitionSpec::from_json(
        r#"{"id": 1, "fields": [{"field_id": "k", "source_ids": [1],
            "transform": {"type": "identity"}, "result_type": {"type": "int64"}}]}"#,
    )
    .expect("spec");
    Namespace::create(storage.clone(), &schema(), &spec, &HashMap::new())
        .await
        .expect("create");
    let snap = Arc::new(Snapshot::load(&storage, None).await.expect("snapshot"));
    let input = batch(600_000);
    let input_bytes = input.get_array_memory_size();
    // The batch fits the budget but passes half of it: the writer writes out its largest
    // partitions until a quarter of the budget is left buffered, then keeps the rest.
    let budget = 96 * MIB;
    assert!(
        input_bytes > budget / 2 && input_bytes < budget,
        "{input_bytes}"
    );
    let opts = WriteOptions {
        max_buffer_bytes: budget,
        concurrency: 1,
        route_threads: Some(1),
        ..Default::default()
    };
    let mut writer =
        PartitionWriter::new(&storage, snap, &opts, true, IdPlan::Random(HashMap::new()))
            .expect("writer");
    let base = LIVE.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    writer.write(input.clone()).await.expect("write");
    let parts = writer.close().await.expect("close");
    let peak = (PEAK.load(Ordering::Relaxed) - base) as usize;
    assert_eq!(parts.iter().map(|p| p.rows).sum::<u64>(), 600_000);
    // The routed copy of the batch, its grouping and one partition being encoded (measured:
    // the batch + 10 MiB); copying the partitions kept buffered out of the routed batch adds a
    // quarter of the budget (24 MiB; measured: the batch + 27 MiB). The bound is between.
    let bound = input_bytes + budget * 3 / 16;
    assert!(
        peak < bound,
        "the write held {} MiB on top of its input of {} MiB (bound {} MiB)",
        peak / MIB,
        input_bytes / MIB,
        bound / MIB
    );
    drop(input);
}
