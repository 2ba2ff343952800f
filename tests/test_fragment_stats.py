"""Fragment statistics skip fragments inside the partitions kept, without changing an answer.

Each write records, beside the ids of the fragments it added to a partition, the statistics of
the rows it added; a read skips those fragments when the statistics rule the filter out. A
partition appended to by many small writes (a stream) then reads only the writes a filter can
match. The expected rows come from pylance over a plain Lance dataset of the namespace's whole
content; the expected skips from pylance reading each partition's fragments at the version
the manifest names (the bounds of each fragment's own rows).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import lance
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from races import python_child, resume, wait_for_pause
from sql_filters import Filter, atom, combined, matching

import lance_partitioned as lp

SCHEMA = pa.schema([("p", pa.int32()), ("t", pa.int64()), ("f", pa.float64()), ("s", pa.string())])
SPEC = lp.PartitionSpec([lp.PartitionField("p", "p", lp.Identity())])
PARTS = 3
BATCHES = 6  # with the create, no more writes than a version keeps groups
STEP = 100


def batch(k: int, parts: range = range(PARTS), n: int = 20) -> pa.Table:
    """Micro-batch ``k``: ``n`` rows per partition with ``t`` in ``[k * STEP, k * STEP + n)``
    (each batch a range of its own), ``f`` and ``s`` following ``t`` with a NaN, a NULL and a
    string NULL in some batches."""
    p, t, f, s = [], [], [], []
    for part in parts:
        for j in range(n):
            v = k * STEP + j
            p.append(part)
            t.append(v)
            f.append(float("nan") if (k == 4 and j == 3) else None if j == 7 else v / 2)
            s.append(None if (k % 5 == 1 and j == 2) else f"s{v:06d}")
    return pa.table({"p": p, "t": t, "f": f, "s": s}, schema=SCHEMA)


def streamed(root: Path, spec: lp.PartitionSpec = SPEC) -> lp.PartitionedNamespace:
    ns = lp.PartitionedNamespace.create(str(root), SCHEMA, spec)
    for k in range(BATCHES):
        ns.write(batch(k))
    return ns


def fragment_ranges(ns: lp.PartitionedNamespace) -> list[list[tuple[int, int]]]:
    """Per partition, the (min, max) of ``t`` of each of its fragments, as pylance reads them
    at the manifest's versions (live rows only)."""
    out = []
    for p in ns.partitions(with_rows=False).to_pylist():
        ds = lance.dataset(f"{ns.root}/{p['location']}", version=p["read_version"])
        out.append([])
        for frag in ds.get_fragments():
            t = frag.to_table(columns=["t"])["t"]
            out[-1].append((pc.min(t).as_py(), pc.max(t).as_py()))
    return out


def expected_skips(ns: lp.PartitionedNamespace, lo: int, hi: int) -> tuple[int, int]:
    """(partitions every fragment of which misses ``[lo, hi]``: pruned before any is opened;
    fragments missing it in the other partitions: skipped when they are read)."""
    pruned = skipped = 0
    for part in fragment_ranges(ns):
        missing = sum(1 for a, b in part if b < lo or a > hi)
        if missing == len(part):
            pruned += 1
        else:
            skipped += missing
    return pruned, skipped


def scanned(
    ns: lp.PartitionedNamespace, sql: str, split: tuple[int, int] | None = None
) -> tuple[pa.Table, int]:
    s = ns.snapshot()._s.scan(sql, None, None, None, split)
    t = pa.Table.from_batches(list(s), schema=s.schema)
    return t, s.fragments_skipped_by_stats


def rows_of(t: pa.Table) -> list[str]:
    return sorted(repr(r) for r in t.to_pylist())


@pytest.fixture(scope="module")
def stream_ns(tmp_path_factory: pytest.TempPathFactory) -> lp.PartitionedNamespace:
    return streamed(tmp_path_factory.mktemp("frag") / "ns")


@pytest.mark.parametrize(
    ("lo", "hi"),
    [(0, 5), (300, 310), (250, 260), (450, 1300), (-50, -1), (505, 1000), (0, 10_000)],
)
def test_a_range_reads_only_the_fragments_its_writes_can_match(
    stream_ns: lp.PartitionedNamespace, lo: int, hi: int
) -> None:
    """Six writes to three partitions, each a range of ``t`` of its own: a range filter
    skips exactly the fragments whose rows lie outside it (pylance's per-fragment bounds), and
    returns pylance's rows."""
    sql = f"t >= {lo} AND t <= {hi}"
    got, skipped = scanned(stream_ns, sql)
    pruned, expected = expected_skips(stream_ns, lo, hi)
    assert skipped == expected, sql
    plan = stream_ns.snapshot().plan(sql)
    assert sum(p["kept"] for p in plan) == PARTS - pruned, sql
    whole = stream_ns.to_table()
    expected = whole.filter(
        pc.and_(pc.greater_equal(whole["t"], lo), pc.less_equal(whole["t"], hi))
    )
    assert rows_of(got) == rows_of(expected)
    if skipped > 0:
        assert f"fragments: {skipped} of the kept partitions skipped" in stream_ns.explain(sql)


@pytest.mark.parametrize(
    ("transform", "lo", "hi"),
    [(lp.Truncate(1000), 300, 310), (lp.Bucket(4), 450, 1300), (lp.Truncate(1000), 250, 260)],
)
def test_a_filter_on_a_coarse_partition_source_is_judged_by_statistics_too(
    tmp_path: Path, transform: lp.Transform, lo: int, hi: int
) -> None:
    """Partitioned by a transform of ``t`` that keeps many values per partition (a truncation,
    a bucket): partition pruning cannot tell a range of ``t`` inside one partition, the
    fragments' statistics can. The skips are pylance's per-fragment bounds, the rows pyarrow's
    filter over the whole content."""
    spec = lp.PartitionSpec([lp.PartitionField("tb", "t", transform)])
    ns = lp.PartitionedNamespace.create(str(tmp_path / "ns"), SCHEMA, spec)
    for k in range(BATCHES):
        ns.write(batch(k))
    sql = f"t >= {lo} AND t <= {hi}"
    got, skipped = scanned(ns, sql)
    pruned, expected = expected_skips(ns, lo, hi)
    assert expected > 0 or pruned > 0, "the case must give statistics something to skip"
    assert (skipped, pruned) == (
        expected,
        sum(p["skipped_by_stats"] for p in ns.snapshot().plan(sql)),
    )
    whole = ns.to_table()
    want = whole.filter(pc.and_(pc.greater_equal(whole["t"], lo), pc.less_equal(whole["t"], hi)))
    assert rows_of(got) == rows_of(want)


def test_a_partition_whose_every_write_is_ruled_out_is_skipped(
    stream_ns: lp.PartitionedNamespace,
) -> None:
    """``t`` between two writes' ranges: each partition's bounds (0 to 519) keep it, its
    writes' bounds rule each fragment out, so pruning skips the partition before anything
    opens it (``plan``, ``partitions``), and a delete reads no partition."""
    sql = "t >= 250 AND t <= 260"
    plan = stream_ns.snapshot().plan(sql)
    assert (sum(p["kept"] for p in plan), sum(p["skipped_by_stats"] for p in plan)) == (0, PARTS)
    assert stream_ns.partitions(sql, with_rows=False).num_rows == 0
    whole = stream_ns.to_table()
    assert whole.filter(pc.field("t").isin(list(range(250, 261)))).num_rows == 0
    plan = stream_ns.snapshot().plan("t >= 250 AND t <= 300")
    assert sum(p["kept"] for p in plan) == PARTS


def test_a_delete_its_writes_rule_out_changes_nothing(tmp_path: Path) -> None:
    """A delete prunes as a read does (the same ``plan``): nothing matches, nothing commits."""
    ns = streamed(tmp_path / "ns")
    before = ns.version
    result = ns.delete("t >= 250 AND t <= 260")
    assert (result.rows, result.changed, result.dropped, ns.version) == (0, 0, 0, before)
    assert ns.to_table().num_rows == PARTS * BATCHES * 20
    result = ns.delete("t >= 250 AND t <= 300")
    assert (result.rows, result.changed) == (PARTS, PARTS)


def test_split_reads_share_the_fragments_kept(stream_ns: lp.PartitionedNamespace) -> None:
    """A Spark task reads part k of n of each partition: over the parts, every kept row is read
    once."""
    sql = "t >= 420 AND t < 720"  # batch 5 only
    whole, _ = scanned(stream_ns, sql)
    parts = [scanned(stream_ns, sql, (k, 3))[0] for k in range(3)]
    assert rows_of(pa.concat_tables(parts)) == rows_of(whole)
    assert whole.num_rows == PARTS * 20


def recorded_groups(ns: lp.PartitionedNamespace, p: int) -> list[dict[str, Any]] | None:
    """The fragment groups recorded on the manifest row of partition ``p``'s read version,
    read with pylance."""
    manifest = lance.dataset(ns.root + "/__manifest").to_table().to_pylist()
    by_id = {r["object_id"]: r for r in manifest}
    leaf = ns.partitions(f"p = {p}", with_rows=False).to_pylist()[0]
    row = by_id[f"{leaf['object_id']}${leaf['read_version']}"]
    text = json.loads(row["metadata"]).get("fragment_stats")
    return None if text is None else list(json.loads(text)["groups"])


def test_deletes_merges_and_compaction_keep_the_groups_true(tmp_path: Path) -> None:
    """A delete that empties a write's fragment drops it from its group; a merge's new rows
    form a group of their own; a compaction leaves one fragment and no groups. After each,
    answers equal pylance's and skips match the fragments' bounds."""
    ns = streamed(tmp_path / "ns")
    ns.delete("p = 0 AND t >= 300 AND t < 400")
    ns.delete("p = 1 AND t = 505")
    changed = batch(20, range(1, 2), 5)  # t 2000..2004 in p = 1
    ns.merge_insert(on=["p", "t"]).when_matched_update_all().when_not_matched_insert_all().execute(
        changed
    )
    for sql, lo, hi in [
        ("t >= 300 AND t <= 399", 300, 399),
        ("t >= 2000 AND t <= 2100", 2000, 2100),
        ("t >= 500 AND t <= 505", 500, 505),
    ]:
        got, skipped = scanned(ns, sql)
        assert skipped == expected_skips(ns, lo, hi)[1], sql
        whole = ns.to_table()
        assert rows_of(got) == rows_of(whole.filter(pc.field("t").isin(list(range(lo, hi + 1)))))
    g0 = recorded_groups(ns, 0)
    assert g0 is not None
    assert len(g0) == BATCHES - 1  # the emptied write's group is gone
    ns.optimize()
    assert recorded_groups(ns, 1) is None
    got, skipped = scanned(ns, "t >= 2000")
    assert (got.num_rows, skipped) == (5, 0)


def test_an_append_rebased_over_a_concurrent_one_keeps_its_own_group(tmp_path: Path) -> None:
    """A writer pauses before its manifest commit while another append to the same partition
    commits; rebased, its fragment gets another id than the one first planned. Its group must
    name the fragment that holds its rows (a wrong id would skip them)."""
    root = tmp_path / "ns"
    ns = streamed(root)
    flag = tmp_path / "paused"
    code = (
        "import sys, lance_partitioned as lp\n"
        "sys.path.insert(0, sys.argv[2])\n"
        "from test_fragment_stats import batch\n"
        "ns = lp.PartitionedNamespace.open(sys.argv[1])\n"
        "print(ns.write(batch(50)).rebased)\n"
    )
    here = str(Path(__file__).parent)
    p = python_child(["-c", code, str(root), here], f"before_manifest_commit:{flag}")
    try:
        wait_for_pause(p, flag)
        ns.write(batch(60))
        resume(p, flag)
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        assert out.strip() == "3"  # every partition was rebased
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()
    ns.refresh()
    for lo in (5000, 6000, 0):
        sql = f"t >= {lo} AND t < {lo + STEP}"
        got, skipped = scanned(ns, sql)
        assert got.num_rows == PARTS * 20, sql
        assert skipped == PARTS * (BATCHES + 1), sql


def test_a_long_stream_keeps_a_bounded_number_of_groups_of_like_sizes(tmp_path: Path) -> None:
    """Thirty writes to one partition: the version records at most eight groups (the
    neighbours of fewest rows merged), and a window on the newest write still skips every
    fragment outside its group; answers stay pylance's."""
    ns = lp.PartitionedNamespace.create(str(tmp_path / "ns"), SCHEMA, SPEC)
    n = 30
    for k in range(n):
        ns.write(batch(k, range(1)))
    groups = recorded_groups(ns, 0)
    assert groups is not None
    assert len(groups) == 8
    sizes = [sum(b - a + 1 for a, b in g["ids"]) for g in groups]
    assert sum(sizes) == n
    assert max(sizes) <= 2 * min(sizes) + 1, sizes
    lo = (n - 1) * STEP
    got, skipped = scanned(ns, f"t >= {lo}")
    assert got.num_rows == 20
    assert skipped >= n - max(sizes)
    assert [len(part) for part in fragment_ranges(ns)] == [n]


def test_a_compaction_into_several_files_keeps_each_files_span(tmp_path: Path) -> None:
    """Eight writes of twenty rows to one partition, compacted into files of forty: each new
    file is bounded by the two writes it holds (not by the whole partition), so a window still
    skips the files outside it, as pylance's per-fragment bounds at the manifest's version
    say; answers stay pyarrow's over the whole."""
    ns = lp.PartitionedNamespace.create(str(tmp_path / "ns"), SCHEMA, SPEC)
    for k in range(8):
        ns.write(batch(k, range(1)))
    ns.optimize(target_rows_per_file=40)
    spans = fragment_ranges(ns)[0]
    assert spans == [(k * 2 * STEP, k * 2 * STEP + STEP + 19) for k in range(4)]
    whole = ns.to_table()
    for lo, hi in [(0, 5), (300, 310), (250, 260), (450, 1300), (0, 10_000)]:
        sql = f"t >= {lo} AND t <= {hi}"
        got, skipped = scanned(ns, sql)
        assert skipped == expected_skips(ns, lo, hi)[1], sql
        in_window = pc.and_(pc.greater_equal(whole["t"], lo), pc.less_equal(whole["t"], hi))
        assert rows_of(got) == rows_of(whole.filter(in_window)), sql
    assert scanned(ns, "t >= 300 AND t <= 310")[1] == 3


TARGET = "lance_partitioned.partition.target_rows_per_file"
EXTRA = "lance_partitioned.partition.max_extra_fragments"


def fragment_sizes(ns: lp.PartitionedNamespace) -> list[int]:
    """The rows of each fragment of the one partition, as pylance counts them."""
    (p,) = ns.partitions(with_rows=False).to_pylist()
    ds = lance.dataset(f"{ns.root}/{p['location']}", version=p["read_version"])
    return [frag.count_rows() for frag in ds.get_fragments()]


def test_the_compaction_after_writes_keeps_the_namespaces_file_target(tmp_path: Path) -> None:
    """Twelve writes of twenty rows to one partition, with a compaction target of forty rows
    and two extra fragments allowed: the compactions after the writes (two of them) write
    files of forty rows, each bounded by the writes it holds, so a window on one write skips
    the other files, as pylance's per-fragment bounds say (six files: within the eight
    statistics groups a version records). The same stream without the target (a million
    rows) ends with a file spanning every compacted write."""
    props = {TARGET: "40", EXTRA: "2"}
    ns = lp.PartitionedNamespace.create(str(tmp_path / "ns"), SCHEMA, SPEC, properties=props)
    compacted = sum(ns.write(batch(k, range(1))).compacted for k in range(12))
    assert compacted == 2
    sizes = fragment_sizes(ns)
    assert sizes == [40] * 6, sizes
    whole = ns.to_table()
    for lo, hi in [(0, 5), (300, 310), (1100, 1119), (450, 900), (1150, 1400), (0, 10_000)]:
        sql = f"t >= {lo} AND t <= {hi}"
        got, skipped = scanned(ns, sql)
        assert skipped == expected_skips(ns, lo, hi)[1], sql
        in_window = pc.and_(pc.greater_equal(whole["t"], lo), pc.less_equal(whole["t"], hi))
        assert rows_of(got) == rows_of(whole.filter(in_window)), sql
    assert scanned(ns, "t >= 300 AND t <= 310")[1] == len(sizes) - 1

    coarse = lp.PartitionedNamespace.create(
        str(tmp_path / "coarse"), SCHEMA, SPEC, properties={EXTRA: "2"}
    )
    for k in range(12):
        coarse.write(batch(k, range(1)))
    assert max(fragment_sizes(coarse)) > 40


def test_optimize_without_a_target_takes_the_namespaces(tmp_path: Path) -> None:
    """With no compaction after writes, eight writes of twenty rows and ``optimize()`` with no
    ``target_rows_per_file``: the namespace's target of forty rows makes four files of two
    writes each (pylance's fragment bounds); an explicit target still wins."""
    props = {TARGET: "40", EXTRA: "0"}
    ns = lp.PartitionedNamespace.create(str(tmp_path / "ns"), SCHEMA, SPEC, properties=props)
    for k in range(8):
        ns.write(batch(k, range(1)))
    assert ns.optimize().files_after == 4
    assert fragment_ranges(ns)[0] == [(k * 2 * STEP, k * 2 * STEP + STEP + 19) for k in range(4)]
    assert ns.optimize(target_rows_per_file=80).files_after == 2
    assert fragment_sizes(ns) == [80, 80]


_LITS = {
    "t": ["-1", "0", "7", "119", "400", "403", "650", "1119", "1200"],
    "f": ["0.0", "3.5", "150.0", "201.5", "559.5", "CAST('NaN' AS DOUBLE)"],
    "s": ["'s000000'", "'s000403'", "'s0006'", "'s001119'", "'t'"],
}


@st.composite
def _atom(draw: st.DrawFn) -> str:
    col = draw(st.sampled_from(sorted(_LITS)))
    kind = draw(st.sampled_from(["cmp", "cmp", "in", "null", "between"]))
    lits = _LITS[col]
    if kind == "null":
        return f"{col} IS {draw(st.sampled_from(['', 'NOT ']))}NULL"
    if kind == "in":
        picked = draw(st.lists(st.sampled_from(lits), min_size=1, max_size=3, unique=True))
        return f"{col} IN ({', '.join(picked)})"
    if kind == "between":
        lo, hi = draw(st.lists(st.sampled_from(lits), min_size=2, max_size=2))
        return f"{col} BETWEEN {lo} AND {hi}"
    op = draw(st.sampled_from(["=", "<>", "<", "<=", ">", ">="]))
    return f"{col} {op} {draw(st.sampled_from(lits))}"


_FILTER = combined(_atom(), max_leaves=3)


# Partitioned by identity of ``p``, and also by a truncation of ``t``: a filter on ``t`` alone
# then reads only partition sources, which statistics judge too.
COARSE = lp.PartitionSpec(
    [lp.PartitionField("p", "p", lp.Identity()), lp.PartitionField("tb", "t", lp.Truncate(200))]
)


@pytest.fixture(scope="module", params=["identity", "coarse"])
def changed_ns(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> tuple[lp.PartitionedNamespace, lance.LanceDataset]:
    """Appends, a partial delete, a merge and more appends (no compaction), with the oracle
    dataset of the whole content."""
    root = tmp_path_factory.mktemp("fragchg")
    ns = streamed(root / "ns", SPEC if request.param == "identity" else COARSE)
    ns.delete("t % 9 = 0")
    ns.merge_insert(on=["p", "t"]).when_matched_update_all().when_not_matched_insert_all().execute(
        batch(3, range(2), 30)
    )
    ns.write(batch(30))
    oracle = lance.write_dataset(ns.to_table(), str(root / "oracle"))
    return ns, oracle


@settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(flt=_FILTER)
# NULL under NOT of a contradiction: not a match (pylance's own filter keeps these rows).
@example(flt=Filter("NOT", (Filter("AND", (atom("f = 0.0"), atom("f <> 0.0"))),)))
def test_fragment_statistics_never_change_an_answer(
    changed_ns: tuple[lp.PartitionedNamespace, lance.LanceDataset], flt: Filter
) -> None:
    ns, oracle = changed_ns
    sql = str(flt)
    got, _ = scanned(ns, sql)
    assert rows_of(got.select(SCHEMA.names)) == rows_of(matching(oracle, flt)), sql
