//! Executing a storage-partitioned join: every group of the plan reads its leaves of both
//! sides (at the snapshots' versions, filtered and projected inside Lance) and joins them with
//! DataFusion's hash join, building on the smaller side; groups run concurrently and stream
//! out one after another, so memory is bounded by the groups in flight, not the tables.
//!
//! The output follows pyarrow's `Table.join` with `coalesce_keys=True` (docs/join.md): key
//! columns appear once (the left one; the right one for a right join; both merged for a full
//! join), right columns whose names clash with a left output column get a suffix, semi and
//! anti joins return left columns only.

use std::collections::{HashMap, HashSet};
use std::pin::Pin;
use std::sync::Arc;

use futures::{Stream, StreamExt, TryStreamExt};

use crate::arrow::array::{ArrayRef, RecordBatch};
use crate::arrow::compute::kernels::zip::zip;
use crate::arrow::compute::{concat_batches, is_not_null};
use crate::arrow::datatypes::{Field, Schema, SchemaRef};
use crate::error::{Error, Result};
use crate::ns::infra::filter::Filter;
use crate::ns::manifest::Snapshot;
use crate::ns::scan::{prune, read_leaves};
use crate::spec::column_at;

use super::layout::{Layout, NestedKey, Source};
use super::plan::{plan_join, JoinGroup, JoinPlan, JoinSide};
use super::request::{JoinHow, JoinRequest};
use super::side::Side;
use super::{hash, unique};

/// A join ready to run group by group: both snapshots, the plan restricted to what the
/// filters keep, the columns to read and the output schema.
pub struct PreparedJoin {
    left: Arc<Snapshot>,
    right: Arc<Snapshot>,
    request: JoinRequest,
    plan: JoinPlan,
    groups: Vec<JoinGroup>,
    left_filter: Option<Filter>,
    right_filter: Option<Filter>,
    /// The SQL of each side's filter (the common filter where that side has its columns,
    /// and the side's own).
    side_sql: (Option<String>, Option<String>),
    /// Object id -> leaf index, for the leaves the filters keep.
    left_kept: HashMap<String, usize>,
    right_kept: HashMap<String, usize>,
    left_cols: Vec<String>,
    right_cols: Vec<String>,
    /// Keys inside structs (paths), whose values follow the read columns of each side.
    left_nested: Vec<NestedKey>,
    right_nested: Vec<NestedKey>,
    keys: Vec<(usize, usize)>,
    out: Vec<Source>,
    out_schema: SchemaRef,
}

/// A stream of output batches.
pub type JoinStream = Pin<Box<dyn Stream<Item = Result<RecordBatch>> + Send>>;

impl PreparedJoin {
    /// Plans the join of two snapshots (loaded in full) and prepares its execution.
    ///
    /// # Errors
    /// `InvalidArgument` for unknown or mistyped keys or columns; `Expression` for bad
    /// filters; `IncompatibleJoin` when the partitions do not align and `allow_shuffle` is off.
    pub(crate) async fn new(
        left: Arc<Snapshot>,
        right: Arc<Snapshot>,
        request: JoinRequest,
    ) -> Result<Self> {
        let lschema = left.schema();
        let rschema = right.schema();
        let (lcommon, rcommon) = match &request.filter {
            None => (None, None),
            Some(sql) => match (Filter::parse(sql, &lschema), Filter::parse(sql, &rschema)) {
                (Err(e), Err(_)) => {
                    return Err(match e {
                        Error::Expression(m) => Error::Expression(format!(
                            "filter applies to neither side of the join (left: {m}); pass \
                             (left filter, right filter)"
                        )),
                        other => other,
                    })
                }
                (l, r) => (l.ok().map(|_| sql.as_str()), r.ok().map(|_| sql.as_str())),
            },
        };
        let both = |a: Option<&str>, b: Option<&str>| match (a, b) {
            (Some(a), Some(b)) => Some(format!("({a}) AND ({b})")),
            (a, b) => a.or(b).map(str::to_string),
        };
        let lsql = both(lcommon, request.left_filter.as_deref());
        let rsql = both(rcommon, request.right_filter.as_deref());
        let left_filter = parse_filter(lsql.as_deref(), &lschema, "left")?;
        let right_filter = parse_filter(rsql.as_deref(), &rschema, "right")?;
        let plan = plan_join(&JoinSide::of(&left)?, &JoinSide::of(&right)?, &request.on)?;
        let left_kept = kept(&left, left_filter.as_ref()).await?;
        let right_kept = kept(&right, right_filter.as_ref()).await?;
        let groups = if plan.compatible {
            restrict(&plan.groups, &left_kept, &right_kept, request.how)
        } else if request.allow_shuffle {
            let all = JoinGroup {
                key: Vec::new(),
                left: sorted_ids(&left_kept),
                right: sorted_ids(&right_kept),
            };
            restrict(&[all], &left_kept, &right_kept, request.how)
        } else {
            return Err(Error::IncompatibleJoin(format!(
                "the partitions of the two namespaces do not align on the join keys ({}); \
                 pass allow_shuffle=True to join them without partition alignment",
                plan.reason.as_deref().unwrap_or("no reason given")
            )));
        };
        let layout = Layout::new(&lschema, &rschema, &request)?;
        Ok(Self {
            left,
            right,
            plan,
            groups,
            left_filter,
            right_filter,
            side_sql: (lsql, rsql),
            left_kept,
            right_kept,
            left_cols: layout.left_cols,
            left_nested: layout.left_nested,
            right_nested: layout.right_nested,
            right_cols: layout.right_cols,
            keys: layout.keys,
            out: layout.out,
            out_schema: layout.schema,
            request,
        })
    }

    /// The plan of the whole join (before the filters).
    pub fn plan(&self) -> &JoinPlan {
        &self.plan
    }

    /// The SQL filter each side's rows pass before the join (left, right).
    pub fn side_filters(&self) -> (Option<String>, Option<String>) {
        self.side_sql.clone()
    }

    /// The columns read from each side (left, right), join keys included.
    pub fn read_columns(&self) -> (&[String], &[String]) {
        (&self.left_cols, &self.right_cols)
    }

    /// Where each output column comes from: (output name, left column, right column); both
    /// for a full join's key (the left value, or the right one where the left is NULL).
    pub fn output_columns(&self) -> Vec<(String, Option<String>, Option<String>)> {
        self.out
            .iter()
            .zip(self.out_schema.fields())
            .map(|(s, f)| {
                let (l, r) = match *s {
                    Source::Left(i) => (Some(i), None),
                    Source::Right(i) => (None, Some(i)),
                    Source::Coalesce(l, r) => (Some(l), Some(r)),
                };
                (
                    f.name().clone(),
                    l.map(|i| self.left_cols[i].clone()),
                    r.map(|i| self.right_cols[i].clone()),
                )
            })
            .collect()
    }

    /// The groups to run: leaves the filters keep, groups that can produce rows for this kind
    /// of join (one group of everything when the plan fell back to a shuffle join).
    pub fn groups(&self) -> &[JoinGroup] {
        &self.groups
    }

    /// The schema of the output batches.
    pub fn schema(&self) -> SchemaRef {
        Arc::clone(&self.out_schema)
    }

    /// Joins the given leaves of each side (object ids of leaves of the snapshots, as in a
    /// group) and returns the output batches.
    ///
    /// # Errors
    /// `InvalidArgument` for an object id the filters did not keep in the snapshot; `Lance`
    /// for read errors; `DataFusion` if the join fails.
    pub async fn run(&self, left: &[String], right: &[String]) -> Result<Vec<RecordBatch>> {
        let li = indexes(&self.left_kept, left, "left")?;
        let ri = indexes(&self.right_kept, right, "right")?;
        let has = (!li.is_empty(), !ri.is_empty());
        if !self.request.how.produces(has.0, has.1) {
            return Ok(Vec::new());
        }
        let lbatch = self
            .read(
                &self.left,
                li,
                &self.left_filter,
                (&self.left_cols, &self.left_nested),
            )
            .await?;
        let rbatch = self
            .read(
                &self.right,
                ri,
                &self.right_filter,
                (&self.right_cols, &self.right_nested),
            )
            .await?;
        let side = |(schema, batches): (SchemaRef, Vec<RecordBatch>), left: bool| Side {
            schema,
            batches,
            keys: self
                .keys
                .iter()
                .map(|&(l, r)| if left { l } else { r })
                .collect(),
        };
        let (left, right) = (side(lbatch, true), side(rbatch, false));
        let how = self.request.how;
        let batch_size = self.request.batch_size;
        let rows = batch_size.unwrap_or(DEFAULT_BATCH_ROWS);
        let joined = match unique::join(how, &left, &right, rows)? {
            Some(joined) => joined,
            None => hash::join(how, left, right, batch_size).await?,
        };
        joined.iter().map(|b| self.output(b)).collect()
    }

    /// Every group, up to `threads` at a time (each on its own task of the runtime), their
    /// batches in group order.
    pub fn stream(self: Arc<Self>, threads: usize) -> JoinStream {
        let n = self.groups.len();
        let this = Arc::clone(&self);
        let runs = futures::stream::iter(0..n)
            .map(move |i| {
                let me = Arc::clone(&this);
                tokio::spawn(async move {
                    let g = &me.groups[i];
                    me.run(&g.left, &g.right).await
                })
            })
            .buffered(threads.max(1))
            .map(|joined| match joined {
                Ok(r) => r,
                Err(e) => Err(Error::Internal(format!("a join task failed: {e}"))),
            });
        Box::pin(
            runs.map_ok(|batches| {
                futures::stream::iter(batches.into_iter().map(Ok::<RecordBatch, Error>))
            })
            .try_flatten(),
        )
    }

    /// The batches of one side: the read columns, then the values of each key inside a
    /// struct (`nested`, NULL where a struct on the way is NULL) named by its dotted path.
    async fn read(
        &self,
        snap: &Arc<Snapshot>,
        leaves: Vec<usize>,
        filter: &Option<Filter>,
        (cols, nested): (&[String], &[NestedKey]),
    ) -> Result<(SchemaRef, Vec<RecordBatch>)> {
        let mut it = read_leaves(
            Arc::clone(snap),
            leaves,
            filter.clone(),
            Some(cols),
            self.request.batch_size,
        )?;
        let read = plain(&it.schema());
        let mut fields: Vec<Field> = read.fields().iter().map(|f| f.as_ref().clone()).collect();
        fields.extend(nested.iter().map(|k| k.field.clone()));
        let schema = Arc::new(Schema::new(fields));
        let mut out = Vec::new();
        while let Some(b) = it.next_batch().await? {
            let mut columns = b.columns().to_vec();
            for k in nested {
                columns.push(column_at(&b, &k.path)?.ok_or_else(|| {
                    Error::Internal(format!("join key {} was not read", k.field.name()))
                })?);
            }
            out.push(RecordBatch::try_new(Arc::clone(&schema), columns)?);
        }
        Ok((schema, out))
    }

    /// One joined batch (left read columns, then right ones; left only for semi/anti) as the
    /// output schema.
    fn output(&self, joined: &RecordBatch) -> Result<RecordBatch> {
        let nl = self.left_cols.len() + self.left_nested.len();
        let col = |i: usize| Arc::clone(joined.column(i));
        let columns = self
            .out
            .iter()
            .map(|s| -> Result<ArrayRef> {
                Ok(match *s {
                    Source::Left(i) => col(i),
                    Source::Right(i) => col(nl + i),
                    Source::Coalesce(l, r) => {
                        let (l, r) = (col(l), col(nl + r));
                        zip(&is_not_null(l.as_ref())?, &l, &r)?
                    }
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(RecordBatch::try_new_with_options(
            Arc::clone(&self.out_schema),
            columns,
            &crate::arrow::array::RecordBatchOptions::new().with_row_count(Some(joined.num_rows())),
        )?)
    }

    /// Every output batch of every group concatenated (tests and small joins).
    ///
    /// # Errors
    /// As [`PreparedJoin::run`].
    pub async fn collect(self: Arc<Self>, threads: usize) -> Result<RecordBatch> {
        let schema = self.schema();
        let batches: Vec<RecordBatch> = self.stream(threads).try_collect().await?;
        Ok(concat_batches(&schema, &batches)?)
    }
}

/// Rows per batch when the request names none (DataFusion's default).
const DEFAULT_BATCH_ROWS: usize = 8192;

fn parse_filter(sql: Option<&str>, schema: &Schema, side: &str) -> Result<Option<Filter>> {
    sql.map(|s| {
        Filter::parse(s, schema).map_err(|e| match e {
            Error::Expression(m) => Error::Expression(format!("{side} filter: {m}")),
            other => other,
        })
    })
    .transpose()
}

/// Object id -> leaf index of the leaves `filter` keeps.
async fn kept(snap: &Snapshot, filter: Option<&Filter>) -> Result<HashMap<String, usize>> {
    Ok(prune(snap, filter)
        .await?
        .leaves
        .into_iter()
        .map(|i| (snap.leaves[i].object_id.clone(), i))
        .collect())
}

fn sorted_ids(kept: &HashMap<String, usize>) -> Vec<String> {
    let mut ids: Vec<String> = kept.keys().cloned().collect();
    ids.sort();
    ids
}

/// The groups restricted to kept leaves, without those that cannot produce rows.
fn restrict(
    groups: &[JoinGroup],
    left: &HashMap<String, usize>,
    right: &HashMap<String, usize>,
    how: JoinHow,
) -> Vec<JoinGroup> {
    groups
        .iter()
        .filter_map(|g| {
            let l: Vec<String> = g
                .left
                .iter()
                .filter(|i| left.contains_key(*i))
                .cloned()
                .collect();
            let r: Vec<String> = g
                .right
                .iter()
                .filter(|i| right.contains_key(*i))
                .cloned()
                .collect();
            how.produces(!l.is_empty(), !r.is_empty())
                .then(|| JoinGroup {
                    key: g.key.clone(),
                    left: l,
                    right: r,
                })
        })
        .collect()
}

fn indexes(kept: &HashMap<String, usize>, ids: &[String], side: &str) -> Result<Vec<usize>> {
    let mut seen = HashSet::new();
    ids.iter()
        .filter(|id| seen.insert(id.as_str()))
        .map(|id| {
            kept.get(id).copied().ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "{side} leaf {id:?} is not among the leaves the join reads at this version"
                ))
            })
        })
        .collect()
}

/// `schema` without field metadata (the output of a join is a new table: no field ids).
fn plain(schema: &Schema) -> SchemaRef {
    Arc::new(Schema::new(
        schema
            .fields()
            .iter()
            .map(|f| f.as_ref().clone().with_metadata(HashMap::new()))
            .collect::<Vec<Field>>(),
    ))
}
