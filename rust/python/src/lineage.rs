//! Bindings for OpenLineage facets (`lance_partitioned.lineage`): the subset condition of a
//! filter, as JSON text.

use lance_partitioned_core::lineage::filter_condition as condition;
use lance_partitioned_core::ns::infra::filter::Filter;
use pyo3::prelude::*;

use crate::args::ArrowSchema;
use crate::errors::run;

/// filter_condition(sql, schema, max_compares) -> JSON text of the subset condition, or None
#[pyfunction]
pub fn filter_condition(
    py: Python<'_>,
    sql: String,
    schema: ArrowSchema,
    max_compares: usize,
) -> PyResult<Option<String>> {
    run(py, || {
        let filter = Filter::parse(&sql, &schema.0)?;
        Ok(condition(&filter, max_compares).map(|c| c.to_string()))
    })
}
