//! Bindings of the storage-partitioned join planner.

use lance_partitioned_core::ns::join::{plan_join, JoinSide};
use lance_partitioned_core::values;
use pyo3::prelude::*;

use crate::errors::run;
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
        let plan = plan_join(&JoinSide::of(&l)?, &JoinSide::of(&r)?, &on)?;
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
