//! Bindings of the storage-partitioned join planner.

use std::sync::{Arc, Mutex};

use futures::StreamExt;
use lance_partitioned_core::ns::namespace::Namespace;
use lance_partitioned_core::ns::ops::{JoinHow, JoinRequest, JoinStream, PreparedJoin};
use lance_partitioned_core::values;
use pyo3::prelude::*;

use crate::args::{ArrowBatch, ArrowSchema};
use crate::errors::run;
use crate::runtime::block_on;
use crate::snapshot::ManifestSnapshot;

/// A group of leaves: (key as strings, left object ids, right object ids).
type Group = (Vec<Option<String>>, Vec<String>, Vec<String>);

/// (compatible, reason, components, groups).
type Plan = (bool, Option<String>, Vec<String>, Vec<Group>);

/// join_plan(left, right, on) -> (compatible, reason, components, groups)
#[pyfunction]
pub fn join_plan(
    py: Python<'_>,
    left: &ManifestSnapshot,
    right: &ManifestSnapshot,
    on: Vec<(String, String)>,
) -> PyResult<Plan> {
    let (l, r) = (left.full(py)?, right.full(py)?);
    run(py, || {
        let plan = Namespace::plan_join(&l, &r, &on)?;
        let groups = plan
            .groups
            .into_iter()
            .map(|g| {
                let key = g
                    .key
                    .iter()
                    .map(|v| {
                        if v.is_null() {
                            Ok(None)
                        } else {
                            values::to_string(v)
                        }
                    })
                    .collect::<lance_partitioned_core::error::Result<Vec<_>>>()?;
                Ok((key, g.left, g.right))
            })
            .collect::<lance_partitioned_core::error::Result<Vec<Group>>>()?;
        Ok((plan.compatible, plan.reason, plan.components, groups))
    })
}

/// A prepared storage-partitioned join: its groups, output schema, and either a streaming run
/// of every group (`start`, then iterate) or the run of one group's leaves (`run`, Spark
/// tasks).
#[pyclass(module = "lance_partitioned._native")]
pub struct Join {
    inner: Arc<PreparedJoin>,
    stream: Mutex<Option<JoinStream>>,
}

/// join_prepare(left, right, on, how, ...) -> Join
#[pyfunction]
#[pyo3(signature = (left, right, on, how, columns = None, filter = None, left_filter = None,
    right_filter = None, right_suffix = "_right".to_string(), batch_size = None,
    allow_shuffle = false))]
#[allow(clippy::too_many_arguments)]
pub fn join_prepare(
    py: Python<'_>,
    left: &ManifestSnapshot,
    right: &ManifestSnapshot,
    on: Vec<(String, String)>,
    how: String,
    columns: Option<Vec<String>>,
    filter: Option<String>,
    left_filter: Option<String>,
    right_filter: Option<String>,
    right_suffix: String,
    batch_size: Option<usize>,
    allow_shuffle: bool,
) -> PyResult<Join> {
    let (l, r) = (left.full(py)?, right.full(py)?);
    let prepared = run(py, || {
        let request = JoinRequest {
            on,
            how: JoinHow::parse(&how)?,
            columns,
            filter,
            left_filter,
            right_filter,
            right_suffix,
            batch_size,
            allow_shuffle,
        };
        block_on(Namespace::join(l, r, request))
    })?;
    Ok(Join {
        inner: Arc::new(prepared),
        stream: Mutex::new(None),
    })
}

#[pymethods]
impl Join {
    /// The output schema.
    #[getter]
    fn schema(&self) -> ArrowSchema {
        ArrowSchema(self.inner.schema().as_ref().clone())
    }

    /// Whether the partitions align (otherwise the join runs as one group).
    #[getter]
    fn compatible(&self) -> bool {
        self.inner.plan().compatible
    }

    /// The SQL filter of each side: (left, right).
    fn side_filters(&self) -> (Option<String>, Option<String>) {
        self.inner.side_filters()
    }

    /// The columns read from each side: (left, right).
    fn read_columns(&self) -> (Vec<String>, Vec<String>) {
        let (l, r) = self.inner.read_columns();
        (l.to_vec(), r.to_vec())
    }

    /// Per output column: (name, left column, right column).
    fn output_columns(&self) -> Vec<(String, Option<String>, Option<String>)> {
        self.inner.output_columns()
    }

    /// The groups to run: (left object ids, right object ids).
    fn groups(&self) -> Vec<(Vec<String>, Vec<String>)> {
        self.inner
            .groups()
            .iter()
            .map(|g| (g.left.clone(), g.right.clone()))
            .collect()
    }

    /// Starts the streaming run of every group, `threads` groups at a time.
    fn start(&self, threads: usize) {
        let stream = Arc::clone(&self.inner).stream(threads);
        *self.stream.lock().unwrap_or_else(|e| e.into_inner()) = Some(stream);
    }

    /// Joins the given leaves of each side and returns the output batches.
    fn run(
        &self,
        py: Python<'_>,
        left: Vec<String>,
        right: Vec<String>,
    ) -> PyResult<Vec<ArrowBatch>> {
        let inner = Arc::clone(&self.inner);
        let out = run(py, || {
            block_on(async move { inner.run(&left, &right).await })
        })?;
        Ok(out.into_iter().map(ArrowBatch).collect())
    }

    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Option<ArrowBatch>> {
        let next = run(py, || {
            let mut guard = self.stream.lock().unwrap_or_else(|e| e.into_inner());
            match guard.as_mut() {
                None => Err(lance_partitioned_core::Error::InvalidArgument(
                    "the join has not been started".into(),
                )),
                Some(s) => block_on(async { s.next().await.transpose() }),
            }
        })?;
        Ok(next.map(ArrowBatch))
    }
}
