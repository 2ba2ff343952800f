//! Bindings of manifest snapshots: metadata, pruning, and streaming scans of the leaves.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::runtime::block_on;
use lance_partitioned_core::ns::manifest::{self, Snapshot};
use lance_partitioned_core::ns::namespace::Namespace as CoreNamespace;
use lance_partitioned_core::ns::scan::{self, ScanIter, ScanOptions};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::args::{ArrowBatch, ArrowSchema, FilterArg};
use crate::errors::run;
use lance_partitioned_core::arrow::array::{ArrayRef, RecordBatch, UInt64Array};
use lance_partitioned_core::arrow::datatypes::{DataType, Field, Schema};
use lance_partitioned_core::error::Result as CoreResult;

/// `partitions()` result: (pruning plan, leaves batch).
type Partitions<'py> = (Bound<'py, PyAny>, ArrowBatch);

/// `batch` followed by the non-null UInt64 columns `added`.
fn with_columns(batch: &RecordBatch, added: Vec<(&str, ArrayRef)>) -> CoreResult<RecordBatch> {
    let mut fields: Vec<Field> = batch
        .schema()
        .fields()
        .iter()
        .map(|f| f.as_ref().clone())
        .collect();
    let mut columns = batch.columns().to_vec();
    for (name, col) in added {
        fields.push(Field::new(name, DataType::UInt64, false));
        columns.push(col);
    }
    Ok(RecordBatch::try_new(
        Arc::new(Schema::new(fields)),
        columns,
    )?)
}

/// A manifest snapshot (one version of `__manifest`, indexed).
#[pyclass(module = "lance_partitioned._native", frozen)]
pub struct ManifestSnapshot {
    pub(crate) snap: Arc<Snapshot>,
}

impl ManifestSnapshot {
    /// This snapshot with its property columns (reloaded at the same version when light).
    pub(crate) fn full(&self, py: Python<'_>) -> PyResult<Arc<Snapshot>> {
        if !self.snap.light {
            return Ok(Arc::clone(&self.snap));
        }
        let (storage, version) = (&self.snap.storage, self.snap.version);
        let snap = run(py, || block_on(Snapshot::load(storage, Some(version))))?;
        Ok(Arc::new(snap))
    }
}

#[pymethods]
impl ManifestSnapshot {
    /// The latest manifest version (cheap: no manifest scan).
    fn latest_version(&self, py: Python<'_>) -> PyResult<u64> {
        let ds = Arc::clone(&self.snap.dataset);
        run(py, || {
            block_on(async move { Ok(ds.latest_version_id().await?) })
        })
    }

    #[getter]
    fn version(&self) -> u64 {
        self.snap.version
    }

    #[getter]
    fn root(&self) -> String {
        self.snap.storage.root().to_string()
    }

    #[getter]
    fn schema(&self) -> ArrowSchema {
        ArrowSchema(self.snap.schema().as_ref().clone())
    }

    /// Root properties (schema, partition_spec_v<N>, ...).
    #[getter]
    fn properties(&self) -> HashMap<String, String> {
        self.snap.root_props.props.clone()
    }

    /// Spec JSON by spec id.
    fn specs(&self) -> PyResult<Vec<(i32, String)>> {
        self.snap
            .root_props
            .specs
            .iter()
            .map(|(k, v)| Ok((*k, v.to_json().map_err(crate::errors::to_py)?)))
            .collect()
    }

    #[getter]
    fn missing_columns(&self) -> Vec<String> {
        self.snap.missing_columns.clone()
    }

    #[getter]
    fn num_leaves(&self) -> usize {
        self.snap.leaves.len()
    }

    /// Whether a strong-mode commit recorded `write_id` (a distributed write's, or a stream
    /// micro-batch's) in this manifest version.
    fn has_write(&self, py: Python<'_>, write_id: &str) -> PyResult<bool> {
        manifest::check_write_id(write_id).map_err(crate::errors::to_py)?;
        let snap = self.full(py)?;
        run(py, || snap.has_write(write_id))
    }

    /// All manifest rows as a pyarrow RecordBatch.
    fn manifest_batch(&self, py: Python<'_>) -> PyResult<ArrowBatch> {
        Ok(ArrowBatch(self.full(py)?.batch.clone()))
    }

    /// Pruned leaves: (plan, leaves batch, with a last `rows` column when `with_rows`).
    #[pyo3(signature = (filter = None, with_rows = false))]
    fn partitions<'py>(
        &self,
        py: Python<'py>,
        filter: Option<FilterArg>,
        with_rows: bool,
    ) -> PyResult<Partitions<'py>> {
        let snap = Arc::clone(&self.snap);
        let (plan, batch) = run(py, || {
            let pruned = prune(&snap, filter.as_ref())?;
            let mut batch = snap.leaves_batch(&pruned.leaves)?;
            if with_rows {
                let rows = block_on(manifest::count_rows(&snap, &pruned.leaves))?;
                let rows: ArrayRef = Arc::new(UInt64Array::from(rows));
                batch = with_columns(&batch, vec![("rows", rows)])?;
            }
            Ok((pruned.specs, batch))
        })?;
        Ok((plan_to_py(py, &plan)?, ArrowBatch(batch)))
    }

    /// Of the fragments of the leaves `filter` keeps, how many their recorded fragment
    /// statistics rule the filter out (explain; reads the manifest only).
    fn fragments_skipped(&self, py: Python<'_>, filter: FilterArg) -> PyResult<u64> {
        let snap = Arc::clone(&self.snap);
        run(py, || {
            let f = scan::Filter::from_input(&filter.0, &snap.schema())?;
            let kept = block_on(scan::prune(&snap, Some(&f)))?.leaves;
            block_on(scan::fragments_skipped(&snap, &f, &kept))
        })
    }

    /// Row counts of at most `sample` pruned leaves, evenly spaced over all kept leaves
    /// (explain's partition-size check: bounded cost on namespaces of any size).
    #[pyo3(signature = (filter, sample))]
    fn sampled_rows(
        &self,
        py: Python<'_>,
        filter: Option<FilterArg>,
        sample: usize,
    ) -> PyResult<(usize, Vec<u64>)> {
        let snap = Arc::clone(&self.snap);
        run(py, || {
            let kept = prune(&snap, filter.as_ref())?.leaves;
            let n = kept.len();
            let picked: Vec<usize> = if n <= sample {
                kept
            } else {
                (0..sample).map(|i| kept[i * n / sample]).collect()
            };
            Ok((n, block_on(manifest::count_rows(&snap, &picked))?))
        })
    }

    /// describe_namespace(path) -> properties
    fn describe_namespace(
        &self,
        py: Python<'_>,
        path: Vec<String>,
    ) -> PyResult<HashMap<String, String>> {
        let snap = self.full(py)?;
        run(py, || snap.describe_namespace(&path))
    }

    /// (object id, rows, fragments) of the leaves a filter keeps (from Lance metadata).
    #[pyo3(signature = (filter = None))]
    fn leaf_sizes(
        &self,
        py: Python<'_>,
        filter: Option<FilterArg>,
    ) -> PyResult<Vec<(String, u64, usize)>> {
        let snap = Arc::clone(&self.snap);
        run(py, || {
            let kept = prune(&snap, filter.as_ref())?.leaves;
            let sizes = block_on(manifest::leaf_sizes(&snap, &kept))?;
            Ok(kept
                .iter()
                .zip(sizes)
                .map(|(&i, (rows, frags))| (snap.leaves[i].object_id.clone(), rows, frags))
                .collect())
        })
    }

    /// The sort order as text items (`column ASC|DESC NULLS FIRST|LAST`); empty for none.
    fn sort_order(&self) -> PyResult<Vec<String>> {
        let order =
            manifest::SortOrder::of(&self.snap.root_props.props).map_err(crate::errors::to_py)?;
        Ok(order.describe(&self.snap.root_props.schema))
    }

    /// Every declared index and how much of it is current at this version.
    fn indexes(&self, py: Python<'_>) -> PyResult<Vec<crate::indexes::IndexInfo>> {
        let snap = self.full(py)?;
        let got = run(py, || block_on(CoreNamespace::index_coverage(&snap)))?;
        Ok(got.into_iter().map(Into::into).collect())
    }

    /// The last `limit` manifest versions, newest first, with what each commit did.
    #[pyo3(signature = (limit = None))]
    fn history(&self, py: Python<'_>, limit: Option<usize>) -> PyResult<ArrowBatch> {
        let snap = Arc::clone(&self.snap);
        let batch = run(py, || block_on(CoreNamespace::history(&snap, limit)))?;
        Ok(ArrowBatch(batch))
    }

    /// `partitions()` (without `rows`) followed by `rows`, `fragments`, `files`, `bytes`,
    /// `fragments_with_deletions` and, with `versions`, `versions` (each leaf's `_versions/`
    /// listed).
    #[pyo3(signature = (filter = None, versions = false))]
    fn leaf_stats(
        &self,
        py: Python<'_>,
        filter: Option<FilterArg>,
        versions: bool,
    ) -> PyResult<ArrowBatch> {
        let snap = Arc::clone(&self.snap);
        run(py, || {
            let kept = prune(&snap, filter.as_ref())?.leaves;
            let leaves = snap.leaves_batch(&kept)?;
            let stats = block_on(manifest::leaf_stats(&snap, &kept, versions))?;
            let num = |f: fn(&manifest::LeafStats) -> u64| -> ArrayRef {
                Arc::new(UInt64Array::from_iter_values(stats.iter().map(f)))
            };
            let mut added: Vec<(&str, ArrayRef)> = vec![
                ("rows", num(|s| s.totals.rows)),
                ("fragments", num(|s| s.totals.fragments)),
                ("files", num(|s| s.totals.files)),
                ("bytes", num(|s| s.totals.bytes)),
                (
                    "fragments_with_deletions",
                    num(|s| s.totals.fragments_with_deletions),
                ),
            ];
            if versions {
                added.push(("versions", num(|s| s.versions)));
            }
            Ok(ArrowBatch(with_columns(&leaves, added)?))
        })
    }

    /// Starts a scan: returns a Scan iterator. `split = (k, n)` reads only part `k` of `n` of
    /// each leaf (its fragments at positions k, k + n, ...).
    #[pyo3(signature = (filter = None, columns = None, batch_size = None, only = None, split = None))]
    fn scan(
        &self,
        py: Python<'_>,
        filter: Option<FilterArg>,
        columns: Option<Vec<String>>,
        batch_size: Option<usize>,
        only: Option<Vec<String>>,
        split: Option<(usize, usize)>,
    ) -> PyResult<Scan> {
        let snap = Arc::clone(&self.snap);
        let opts = ScanOptions {
            filter: filter.map(|f| f.0),
            columns,
            batch_size,
            only: only.map(|o| o.into_iter().collect()),
        };
        let (iter, pruned) = run(py, || {
            let (iter, pruned) = block_on(scan::scan(snap, &opts))?;
            let iter = match split {
                Some((k, n)) => iter.with_split(k, n)?,
                None => iter,
            };
            Ok((iter, pruned))
        })?;
        Ok(Scan {
            inner: Mutex::new(Some(iter)),
            plan: pruned.specs,
        })
    }
}

/// The leaves of `snap` a filter keeps (all without one), with the pruning plan.
fn prune(
    snap: &Snapshot,
    filter: Option<&FilterArg>,
) -> lance_partitioned_core::Result<scan::Pruned> {
    let schema = snap.schema();
    let f = filter
        .map(|f| scan::Filter::from_input(&f.0, &schema))
        .transpose()?;
    block_on(scan::prune(snap, f.as_ref()))
}

fn plan_to_py<'py>(py: Python<'py>, plan: &[scan::SpecPlan]) -> PyResult<Bound<'py, PyAny>> {
    let out = pyo3::types::PyList::empty(py);
    for p in plan {
        let d = PyDict::new(py);
        d.set_item("spec_id", p.spec_id)?;
        d.set_item("predicate", p.predicate.clone())?;
        d.set_item("total", p.total)?;
        d.set_item("kept", p.kept)?;
        d.set_item("skipped_by_stats", p.skipped_by_stats)?;
        out.append(d)?;
    }
    Ok(out.into_any())
}

/// A streaming scan; iterate to get pyarrow RecordBatches.
#[pyclass(module = "lance_partitioned._native")]
pub struct Scan {
    inner: Mutex<Option<ScanIter>>,
    plan: Vec<scan::SpecPlan>,
}

impl Scan {
    /// A counter of the scan (0 once it is exhausted and dropped).
    fn count(&self, get: impl Fn(&ScanIter) -> usize) -> usize {
        self.inner
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .map_or(0, get)
    }
}

#[pymethods]
impl Scan {
    #[getter]
    fn schema(&self) -> PyResult<ArrowSchema> {
        let guard = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        match guard.as_ref() {
            Some(it) => Ok(ArrowSchema(it.schema().as_ref().clone())),
            None => Err(crate::errors::invalid_arg("the scan is exhausted")),
        }
    }

    /// The pruning plan.
    fn plan<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        plan_to_py(py, &self.plan)
    }

    /// Leaves opened so far.
    #[getter]
    fn leaves_opened(&self) -> usize {
        self.count(|i| i.opened)
    }

    /// Leaves skipped without reading their data (the filter needs columns they lack).
    #[getter]
    fn leaves_skipped(&self) -> usize {
        self.count(|i| i.skipped)
    }

    /// Leaves skipped without reading their data because their scalar indexes hold none of
    /// the values the filter requires.
    #[getter]
    fn leaves_ruled_out_by_index(&self) -> usize {
        self.count(|i| i.ruled_out)
    }

    /// Fragments of the partitions kept that were not read because the column statistics of
    /// the rows their write added rule the filter out.
    #[getter]
    fn fragments_skipped_by_stats(&self) -> usize {
        self.count(|i| i.fragments_skipped)
    }

    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Option<ArrowBatch>> {
        let next = run(py, || {
            let mut guard = self.inner.lock().unwrap_or_else(|e| e.into_inner());
            match guard.as_mut() {
                None => Ok(None),
                Some(it) => block_on(it.next_batch()),
            }
        })?;
        Ok(next.map(ArrowBatch))
    }
}
