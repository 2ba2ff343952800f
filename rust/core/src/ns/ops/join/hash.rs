//! The general join of a group: DataFusion's hash join, built on the smaller side. It takes
//! every key type, several keys and repeated keys on both sides (what `unique` leaves).

use std::sync::Arc;

use futures::TryStreamExt;

use crate::arrow::array::RecordBatch;
use crate::datafusion::catalog::memory::MemorySourceConfig;
use crate::datafusion::common::NullEquality;
use crate::datafusion::execution::TaskContext;
use crate::datafusion::physical_plan::expressions::Column;
use crate::datafusion::physical_plan::joins::{HashJoinExec, PartitionMode};
use crate::datafusion::physical_plan::{ExecutionPlan, PhysicalExpr};
use crate::datafusion::prelude::SessionConfig;
use crate::error::Result;

use super::request::JoinHow;
use super::side::Side;

/// The joined batches: left columns then right ones (left only for semi and anti joins),
/// `batch_size` rows each at most (DataFusion's default when `None`).
///
/// # Errors
/// `DataFusion` if the join fails.
pub(super) async fn join(
    how: JoinHow,
    left: Side,
    right: Side,
    batch_size: Option<usize>,
) -> Result<Vec<RecordBatch>> {
    let (lrows, rrows) = (left.rows(), right.rows());
    let on = left
        .keys
        .iter()
        .zip(&right.keys)
        .map(|(&l, &r)| {
            let le: Arc<dyn PhysicalExpr> = Arc::new(Column::new(left.schema.field(l).name(), l));
            let re: Arc<dyn PhysicalExpr> = Arc::new(Column::new(right.schema.field(r).name(), r));
            (le, re)
        })
        .collect();
    let lsrc = MemorySourceConfig::try_new_exec(&[left.batches], left.schema, None)?;
    let rsrc = MemorySourceConfig::try_new_exec(&[right.batches], right.schema, None)?;
    let join = HashJoinExec::try_new(
        lsrc,
        rsrc,
        on,
        None,
        &how.join_type(),
        None,
        PartitionMode::CollectLeft,
        NullEquality::NullEqualsNothing,
        false,
    )?;
    // The hash table is built from the first input: the smaller side.
    let plan: Arc<dyn ExecutionPlan> = if rrows < lrows {
        join.swap_inputs(PartitionMode::CollectLeft)?
    } else {
        Arc::new(join)
    };
    let mut config = SessionConfig::new();
    config
        .options_mut()
        .execution
        .perfect_hash_join_min_key_density = array_map_density(lrows.min(rrows));
    if let Some(n) = batch_size {
        config = config.with_batch_size(n.max(1));
    }
    let ctx = Arc::new(TaskContext::default().with_session_config(config));
    let stream = plan.execute(0, ctx)?;
    Ok(stream.try_collect::<Vec<_>>().await?)
}

/// Entries (4 bytes each) an array-indexed join map may always have.
const ARRAY_MAP_FLOOR: usize = 4 << 20;
/// Entries per build row an array-indexed join map may have beyond the floor.
const ARRAY_MAP_PER_ROW: usize = 8;

/// The key density (build rows / key range) from which DataFusion's join indexes the build
/// side by key value instead of hashing it (for one integer key). A group of a bucketed
/// namespace holds every b-th key of the range, so its density is the table's divided by
/// the bucket count, below DataFusion's default (0.15) for 8 buckets or more although the
/// array costs little; this allows a range of up to max(4M, 8 x build rows) entries (16 MB,
/// or 32 bytes per build row).
fn array_map_density(build_rows: usize) -> f64 {
    build_rows as f64 / ARRAY_MAP_FLOOR.max(ARRAY_MAP_PER_ROW * build_rows) as f64
}
