//! The namespace core without Python: commits, conflict resolution against concurrent
//! commits, staging and idempotent distributed commits, deletes and pruning, each on a fresh
//! namespace in a temporary directory. (The pytest suite is the end-to-end check.)

use std::collections::HashMap;
use std::sync::Arc;

use lance_partitioned_core::arrow::array::{
    Array, AsArray, Date32Array, Int64Array, RecordBatch, StringArray,
};
use lance_partitioned_core::arrow::datatypes::{DataType, Field, Int64Type, Schema};
use lance_partitioned_core::error::Error;
use lance_partitioned_core::ns::infra::ids::new_nonce;
use lance_partitioned_core::ns::infra::storage::Storage;
use lance_partitioned_core::ns::manifest::Snapshot;
use lance_partitioned_core::ns::namespace::Namespace;
use lance_partitioned_core::ns::scan::{prune, scan, Filter, FilterInput, ScanOptions};
use lance_partitioned_core::ns::txn::WriteTransaction;
use lance_partitioned_core::ns::write::{
    stage_all, IdPlan, Mode, PartitionWriter, StagedPart, WriteOptions,
};
use lance_partitioned_core::spec::PartitionSpec;
use lance_partitioned_core::Result;

const SPEC: &str = r#"{"id": 1, "fields": [
    {"field_id": "year", "source_ids": [3], "transform": {"type": "year"},
     "result_type": {"type": "int32"}},
    {"field_id": "country", "source_ids": [2], "transform": {"type": "identity"},
     "result_type": {"type": "utf8"}}]}"#;

fn field(name: &str, dt: DataType, id: i32) -> Field {
    Field::new(name, dt, true).with_metadata(HashMap::from([(
        "lance:field_id".to_string(),
        id.to_string(),
    )]))
}

fn schema() -> Arc<Schema> {
    Arc::new(Schema::new(vec![
        field("id", DataType::Int64, 1),
        field("country", DataType::Utf8, 2),
        field("day", DataType::Date32, 3),
    ]))
}

/// Rows `ids`, each in `country`, on day `days` since 1970 (2024-01-01 is 19723).
fn rows(ids: std::ops::Range<i64>, country: &str, day: i32) -> RecordBatch {
    let n = (ids.end - ids.start) as usize;
    RecordBatch::try_new(
        schema(),
        vec![
            Arc::new(Int64Array::from_iter_values(ids)),
            Arc::new(StringArray::from(vec![country; n])),
            Arc::new(Date32Array::from(vec![day; n])),
        ],
    )
    .expect("batch")
}

const DAY_2024: i32 = 19_723;
const DAY_2025: i32 = 20_089;

struct Ns {
    _dir: tempfile::TempDir,
    root: String,
    storage: Storage,
}

async fn namespace() -> Ns {
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path().join("ns").to_string_lossy().into_owned();
    let spec = PartitionSpec::from_json(SPEC).expect("spec");
    let storage = Storage::from(root.as_str());
    Namespace::create(storage.clone(), &schema(), &spec, &HashMap::new())
        .await
        .expect("create");
    Ns {
        _dir: dir,
        root,
        storage,
    }
}

async fn append(
    ns: &Ns,
    batches: Vec<RecordBatch>,
) -> lance_partitioned_core::ns::write::WriteSummary {
    Namespace::open(ns.storage.clone())
        .write(batches.into_iter().map(Ok), &WriteOptions::default())
        .await
        .expect("write")
}

/// Sorted ids a full (or filtered) read returns.
async fn ids(ns: &Ns, filter: Option<&str>) -> Vec<i64> {
    let snap = Arc::new(Snapshot::load(&ns.storage, None).await.expect("snapshot"));
    let opts = ScanOptions {
        filter: filter.map(|f| FilterInput::Sql(f.to_string())),
        columns: Some(vec!["id".into()]),
        batch_size: None,
        only: None,
    };
    let (mut iter, _) = scan(snap, &opts).await.expect("scan");
    let mut out = Vec::new();
    while let Some(b) = iter.next_batch().await.expect("batch") {
        out.extend(
            b.column(0)
                .as_primitive::<Int64Type>()
                .values()
                .iter()
                .copied(),
        );
    }
    out.sort_unstable();
    out
}

/// Stages `batch` against the current manifest in this process, without committing.
async fn staged(ns: &Ns, batch: RecordBatch, mode: Mode) -> (Arc<Snapshot>, Vec<StagedPart>) {
    let snap = Arc::new(Snapshot::load(&ns.storage, None).await.expect("snapshot"));
    let opts = WriteOptions {
        mode,
        ..Default::default()
    };
    let parts = (async {
        let ids = IdPlan::Random(HashMap::new());
        let mut w = PartitionWriter::new(&ns.storage, Arc::clone(&snap), &opts, true, ids)?;
        stage_all(&mut w, std::iter::once(Ok(batch))).await?;
        w.close().await
    })
    .await
    .expect("stage");
    (snap, parts)
}

async fn commit(ns: &Ns, snap: Arc<Snapshot>, parts: Vec<StagedPart>, mode: Mode) -> Result<u64> {
    let opts = WriteOptions {
        mode,
        ..Default::default()
    };
    let tx = WriteTransaction::new(&ns.storage, snap, true, &opts);
    Ok(tx.commit(parts).await?.manifest_version)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_write_lands_every_row_in_its_partition_and_commits_once() {
    let ns = namespace().await;
    let s = append(
        &ns,
        vec![rows(0..10, "US", DAY_2024), rows(10..15, "FR", DAY_2025)],
    )
    .await;
    assert_eq!((s.rows, s.partitions, s.created), (15, 2, 2));
    assert_eq!(s.attempts, 1);
    assert_eq!(ids(&ns, None).await, (0..15).collect::<Vec<_>>());
    assert_eq!(
        ids(&ns, Some("country = 'FR'")).await,
        (10..15).collect::<Vec<_>>()
    );
    let snap = Snapshot::load(&ns.storage, None).await.expect("snapshot");
    assert_eq!(snap.version, s.manifest_version);
    assert_eq!(snap.leaves.len(), 2);
    assert!(snap.leaves.iter().all(|l| l.read_version.is_some()));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_concurrent_append_to_the_same_partition_is_rebased() {
    let ns = namespace().await;
    append(&ns, vec![rows(0..3, "US", DAY_2024)]).await;
    let (s0, parts) = staged(&ns, rows(100..103, "US", DAY_2024), Mode::Append).await;
    append(&ns, vec![rows(200..202, "US", DAY_2024)]).await; // lands first
    commit(&ns, s0, parts, Mode::Append)
        .await
        .expect("rebased commit");
    let mut want: Vec<i64> = (0..3).chain(100..103).chain(200..202).collect();
    want.sort_unstable();
    assert_eq!(ids(&ns, None).await, want);
    let snap = Snapshot::load(&ns.storage, None).await.expect("snapshot");
    assert_eq!(snap.leaves.len(), 1, "still one partition");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_partition_created_concurrently_is_adopted_never_doubled() {
    let ns = namespace().await;
    let (s0, parts) = staged(&ns, rows(0..4, "DE", DAY_2025), Mode::Append).await;
    append(&ns, vec![rows(10..12, "DE", DAY_2025)]).await; // creates the same partition first
    commit(&ns, s0, parts, Mode::Append)
        .await
        .expect("adopting commit");
    assert_eq!(ids(&ns, None).await, vec![0, 1, 2, 3, 10, 11]);
    let snap = Snapshot::load(&ns.storage, None).await.expect("snapshot");
    assert_eq!(snap.leaves.len(), 1, "two partitions with the same values");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_overwrite_racing_an_append_is_a_conflict_and_changes_nothing() {
    let ns = namespace().await;
    append(&ns, vec![rows(0..3, "US", DAY_2024)]).await;
    let (s0, parts) = staged(&ns, rows(100..101, "US", DAY_2024), Mode::Overwrite).await;
    let before = append(&ns, vec![rows(200..201, "US", DAY_2024)])
        .await
        .manifest_version;
    let err = commit(&ns, s0, parts, Mode::Overwrite)
        .await
        .expect_err("must conflict");
    assert!(matches!(err, Error::CommitConflict(_)), "{err}");
    assert!(err.to_string().contains("country=\"US\""), "{err}");
    let snap = Snapshot::load(&ns.storage, None).await.expect("snapshot");
    assert_eq!(snap.version, before);
    assert_eq!(ids(&ns, None).await, vec![0, 1, 2, 200]);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_overwrite_replaces_exactly_the_partitions_it_touches() {
    let ns = namespace().await;
    append(
        &ns,
        vec![rows(0..3, "US", DAY_2024), rows(3..5, "FR", DAY_2024)],
    )
    .await;
    let (s0, parts) = staged(&ns, rows(50..51, "US", DAY_2024), Mode::Overwrite).await;
    commit(&ns, s0, parts, Mode::Overwrite)
        .await
        .expect("overwrite");
    assert_eq!(ids(&ns, None).await, vec![3, 4, 50]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_distributed_write_commits_once_however_often_its_messages_arrive() {
    let ns = namespace().await;
    let p = Namespace::open(ns.storage.clone())
        .plan_distributed(None)
        .await
        .expect("plan");
    let nonce = new_nonce().expect("nonce");
    let opts = WriteOptions::default();
    // Two tasks see the same new partition: they must name the same leaf.
    let t1 = Namespace::open(ns.storage.clone())
        .stage(
            p,
            &nonce,
            std::iter::once(Ok(rows(0..5, "US", DAY_2024))),
            &opts,
        )
        .await
        .expect("task 1");
    let t2 = Namespace::open(ns.storage.clone())
        .stage(
            p,
            &nonce,
            std::iter::once(Ok(rows(5..8, "US", DAY_2024))),
            &opts,
        )
        .await
        .expect("task 2");
    assert_eq!(t1.parts[0].location, t2.parts[0].location);
    let messages = vec![t1.clone(), t2, t1];
    let first = Namespace::open(ns.storage.clone())
        .commit_staged(&messages, &opts)
        .await
        .expect("commit");
    assert_eq!(
        (first.rows, first.partitions, first.already_committed),
        (8, 1, false)
    );
    let again = Namespace::open(ns.storage.clone())
        .commit_staged(&messages, &opts)
        .await
        .expect("commit again");
    assert!(again.already_committed);
    assert_eq!(again.manifest_version, first.manifest_version);
    assert_eq!(ids(&ns, None).await, (0..8).collect::<Vec<_>>());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_commit_whose_staged_files_vanished_commits_nothing() {
    let ns = namespace().await;
    let (s0, parts) = staged(&ns, rows(0..3, "JP", DAY_2024), Mode::Append).await;
    let loc = parts[0].target.location().to_string();
    let file = &parts[0].fragments[0].files[0].path;
    std::fs::remove_file(format!("{}/{loc}/data/{file}", ns.root)).expect("remove");
    let err = commit(&ns, s0, parts, Mode::Append)
        .await
        .expect_err("must fail");
    assert!(matches!(err, Error::CommitConflict(_)), "{err}");
    assert!(ids(&ns, None).await.is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn pruning_keeps_exactly_the_partitions_a_filter_can_match() {
    let ns = namespace().await;
    append(
        &ns,
        vec![
            rows(0..2, "US", DAY_2024),
            rows(2..4, "US", DAY_2025),
            rows(4..6, "FR", DAY_2025),
        ],
    )
    .await;
    let snap = Snapshot::load(&ns.storage, None).await.expect("snapshot");
    let cases = [
        ("country = 'US'", 2),
        ("day >= DATE '2025-01-01'", 2), // year(day) >= 2025
        ("day < DATE '2024-06-01' AND country = 'US'", 1),
        ("country IN ('FR', 'DE')", 1),
        ("country IS NULL", 0),
        // Not a partition column: the ids' recorded bounds ([0, 1], [2, 3], [4, 5]) keep one.
        ("id = 3", 1),
        ("id > 5", 0),
    ];
    for (sql, expected) in cases {
        let f = Filter::parse(sql, &snap.schema()).expect("filter");
        let kept = prune(&snap, Some(&f)).await.expect("prune").leaves.len();
        assert_eq!(kept, expected, "{sql}");
    }
    assert_eq!(
        ids(&ns, Some("day >= DATE '2025-01-01' AND id < 5")).await,
        vec![2, 3, 4]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_delete_drops_covered_partitions_and_deletes_rows_in_others() {
    let ns = namespace().await;
    append(
        &ns,
        vec![rows(0..4, "US", DAY_2024), rows(4..6, "FR", DAY_2024)],
    )
    .await;
    let d = Namespace::open(ns.storage.clone())
        .delete("country = 'FR'", None, 20)
        .await
        .expect("delete");
    assert_eq!((d.dropped, d.changed, d.rows), (1, 0, 2));
    let d = Namespace::open(ns.storage.clone())
        .delete("id < 2", None, 20)
        .await
        .expect("delete rows");
    assert_eq!((d.dropped, d.changed, d.rows), (0, 1, 2));
    assert_eq!(ids(&ns, None).await, vec![2, 3]);
    let snap = Snapshot::load(&ns.storage, None).await.expect("snapshot");
    assert_eq!(snap.leaves.len(), 1);
    let d = Namespace::open(ns.storage.clone())
        .delete("id >= 0", None, 20)
        .await
        .expect("delete the rest");
    assert_eq!(d.dropped, 1, "a partition left empty is dropped");
    assert!(ids(&ns, None).await.is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_input_is_refused_before_anything_is_written() {
    let ns = namespace().await;
    let created = Snapshot::load(&ns.storage, None)
        .await
        .expect("snapshot")
        .version;
    let wrong = RecordBatch::try_new(
        Arc::new(Schema::new(vec![Field::new("nope", DataType::Int64, true)])),
        vec![Arc::new(Int64Array::from(vec![1])) as Arc<dyn Array>],
    )
    .expect("batch");
    let err = Namespace::open(ns.storage.clone())
        .write(std::iter::once(Ok(wrong)), &WriteOptions::default())
        .await
        .expect_err("unknown column");
    assert!(matches!(err, Error::SchemaMismatch(_)), "{err}");
    let many: Vec<RecordBatch> = (0..5)
        .map(|i| rows(i..i + 1, &format!("c{i}"), DAY_2024))
        .collect();
    let opts = WriteOptions {
        max_new_partitions: 3,
        ..Default::default()
    };
    let err = Namespace::open(ns.storage.clone())
        .write(many.into_iter().map(Ok), &opts)
        .await
        .expect_err("limit");
    assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
    let snap = Snapshot::load(&ns.storage, None).await.expect("snapshot");
    assert_eq!(snap.version, created, "nothing committed");
    assert!(ids(&ns, None).await.is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn the_handle_reuses_its_snapshot_until_the_manifest_moves() {
    let ns = namespace().await;
    let handle = Namespace::open(ns.storage.clone());
    let a = handle.snapshot(None).await.expect("snapshot");
    let b = handle.snapshot(None).await.expect("snapshot again");
    assert!(Arc::ptr_eq(&a, &b));
    let s = handle
        .write(
            std::iter::once(Ok(rows(0..2, "US", DAY_2024))),
            &WriteOptions::default(),
        )
        .await
        .expect("write");
    let c = handle.snapshot(None).await.expect("snapshot");
    assert_eq!(c.version, s.manifest_version);
    assert!(!Arc::ptr_eq(&a, &c));
    let old = handle.snapshot(Some(a.version)).await.expect("old version");
    assert_eq!((old.version, old.leaves.len()), (a.version, 0));
}

/// The rows of `sql` as text, sorted (the order of a query without ORDER BY is free).
async fn sql_rows(
    ctx: &lance_partitioned_core::datafusion::prelude::SessionContext,
    sql: &str,
) -> Vec<String> {
    use lance_partitioned_core::arrow::util::pretty::pretty_format_batches;
    let batches = ctx
        .sql(sql)
        .await
        .expect("plan")
        .collect()
        .await
        .expect("run");
    let text = pretty_format_batches(&batches).expect("format").to_string();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    lines.sort();
    lines
}

#[tokio::test(flavor = "multi_thread")]
async fn datafusion_sql_over_the_table_provider_equals_sql_over_the_rows_in_memory() {
    use lance_partitioned_core::datafusion::datasource::MemTable;
    use lance_partitioned_core::datafusion::prelude::SessionContext;
    use lance_partitioned_core::ns::scan::NamespaceTable;
    let ns = namespace().await;
    let input = vec![
        rows(0..50, "US", DAY_2024),
        rows(50..90, "US", DAY_2025),
        rows(90..120, "FR", DAY_2025),
    ];
    append(&ns, input.clone()).await;
    let snap = Arc::new(Snapshot::load(&ns.storage, None).await.expect("snapshot"));
    let ours = Arc::new(NamespaceTable::new(snap));
    let ctx = SessionContext::new();
    ctx.register_table("t", ours.clone()).expect("register");
    let plain: Vec<RecordBatch> = input
        .iter()
        .map(|b| {
            let fields: Vec<Field> = b
                .schema()
                .fields()
                .iter()
                .map(|f| f.as_ref().clone().with_metadata(HashMap::new()))
                .collect();
            RecordBatch::try_new(Arc::new(Schema::new(fields)), b.columns().to_vec()).unwrap()
        })
        .collect();
    let memory = MemTable::try_new(plain[0].schema(), vec![plain]).expect("memory table");
    ctx.register_table("m", Arc::new(memory)).expect("register");
    let queries = [
        "SELECT id FROM {} WHERE country = 'US' AND id > 40",
        "SELECT country, count(*) AS n, sum(id) AS s FROM {} GROUP BY country",
        "SELECT count(*) AS n FROM {}",
        "SELECT count(*) AS n FROM {} WHERE day >= DATE '2025-01-01'",
        "SELECT id, day FROM {} WHERE id BETWEEN 85 AND 95 OR id IS NULL",
        "SELECT * FROM {} WHERE id IN (3, 117) OR country = 'DE'",
        "SELECT id FROM {} WHERE id % 7 = 0 AND country <> 'FR'",
        "SELECT id, country FROM {} WHERE id IN (3, 117)",
    ];
    for q in queries {
        let got = sql_rows(&ctx, &q.replace("{}", "t")).await;
        let want = sql_rows(&ctx, &q.replace("{}", "m")).await;
        assert_eq!(got, want, "{q}");
    }
    // What the scans were given: `id IN (3, 117)` keeps the two leaves whose id bounds hold
    // one of them; the country filter keeps the US leaves by partition value only.
    let scans = ours.scans();
    let last = &scans[7];
    assert_eq!((last.leaves, last.kept), (3, 2), "{last:?}");
    assert_eq!(scans[0].kept_by_partitions, 2, "{:?}", scans[0]);
    assert_eq!(scans[0].columns, vec!["id".to_string()]);
    let limited = sql_rows(&ctx, "SELECT id FROM t LIMIT 7").await;
    assert_eq!(
        limited.len(),
        7 + 4,
        "7 rows and the table's frame: {limited:?}"
    );
    assert_eq!(ours.scans().last().map(|s| s.limit), Some(Some(7)));
}
