//! Bindings of namespace maintenance: schema and spec evolution, repair, deletes, cleanup.

use crate::runtime::block_on;
use lance_partitioned_core::ns::namespace::Namespace;
use lance_partitioned_core::ns::write::DEFAULT_MAX_ATTEMPTS;
use lance_partitioned_core::spec::PartitionSpec;
use pyo3::prelude::*;

use crate::args::ArrowSchema;
use crate::errors::run;
use crate::results::{CleanupResult, DeleteResult};

/// update_schema(root, schema) -> stored schema (field ids assigned)
#[pyfunction]
pub fn update_schema(py: Python<'_>, root: &str, schema: ArrowSchema) -> PyResult<ArrowSchema> {
    run(py, || {
        Ok(ArrowSchema(block_on(
            Namespace::open(root).update_schema(&schema.0),
        )?))
    })
}

/// evolve(root, spec_json) -> new spec id
#[pyfunction]
pub fn evolve_spec(py: Python<'_>, root: &str, spec_json: &str) -> PyResult<i32> {
    let (root, spec_json) = (root.to_string(), spec_json.to_string());
    run(py, || {
        let spec = PartitionSpec::from_json(&spec_json)?;
        block_on(Namespace::open(&root).evolve(&spec))
    })
}

/// repair(root) -> restored column names
#[pyfunction]
pub fn repair_manifest(py: Python<'_>, root: &str) -> PyResult<Vec<String>> {
    let root = root.to_string();
    run(py, || block_on(Namespace::open(&root).repair()))
}

/// delete(root, filter, strong) -> summary
#[pyfunction]
#[pyo3(signature = (root, filter, strong = None))]
pub fn delete_rows(
    py: Python<'_>,
    root: &str,
    filter: &str,
    strong: Option<bool>,
) -> PyResult<DeleteResult> {
    let (root, filter) = (root.to_string(), filter.to_string());
    let s = run(py, || {
        block_on(Namespace::open(&root).delete(&filter, strong, DEFAULT_MAX_ATTEMPTS))
    })?;
    Ok(DeleteResult::from(&s))
}

/// cleanup(root, older_than_seconds, dry_run) -> summary
#[pyfunction]
#[pyo3(signature = (root, older_than_seconds, dry_run = false))]
pub fn cleanup_namespace(
    py: Python<'_>,
    root: &str,
    older_than_seconds: f64,
    dry_run: bool,
) -> PyResult<CleanupResult> {
    if !(older_than_seconds >= 0.0 && older_than_seconds.is_finite()) {
        return Err(crate::errors::invalid_arg(
            "older_than must be a non-negative, finite duration",
        ));
    }
    let root = root.to_string();
    let older_than = std::time::Duration::from_secs_f64(older_than_seconds);
    let s = run(py, || {
        block_on(Namespace::open(&root).cleanup(older_than, dry_run))
    })?;
    Ok(CleanupResult::from(s))
}
