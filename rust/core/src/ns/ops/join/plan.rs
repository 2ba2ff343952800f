//! The storage-partitioned join planner: which leaves of two namespaces can only meet each
//! other on a join (docs/join.md).
//!
//! For every join key pair the planner looks for *components*: values it can compute from a
//! leaf's partition values on both sides such that two rows with equal keys always have equal
//! components. A component exists when every spec version that has leaves, on both sides,
//! partitions the key by
//! - the same transform (`year`, `month`, `day`, `hour`, or the same expression text): the
//!   value itself (so `year, month, day` against `year, month` groups days into months: the
//!   time hierarchy);
//! - `bucket` with counts that the smallest one divides: `value % smallest` (a bucket `i` of
//!   the coarser side meets the finer buckets `b` with `b % coarse == i`);
//! - `truncate` with widths that all divide the widest (numbers: `t - t % widest`, exact for
//!   truncation toward zero) or any widths (strings: the first `narrowest` characters);
//! - `identity`: the value itself, or, against one of the transforms above, that transform
//!   applied to it.
//!
//! A leaf's group key is the list of its components; leaves with equal keys form a group.
//! Built-in transforms give NULL only for a NULL key, so a leaf with a NULL component holds
//! rows that never match: it forms a group of its own with an empty other side (outer joins
//! keep it). Without any component the plan is not compatible and says why.

use std::collections::{BTreeMap, HashMap};

use crate::arrow::datatypes::{DataType, Schema};
use crate::datafusion::scalar::ScalarValue;
use crate::error::{Error, Result};
use crate::field_ids::field_id;
use crate::spec::{fields_by_id, PartitionField, PartitionSpec};
use crate::transform::Transform;

/// One side of a join: its schema, spec versions and leaves.
#[derive(Debug, Clone)]
pub struct JoinSide<'a> {
    /// The namespace schema (`lance:field_id` on every field).
    pub schema: &'a Schema,
    /// Spec versions by id.
    pub specs: &'a BTreeMap<i32, PartitionSpec>,
    /// Leaves: object id, spec version, partition values (one per field of that version).
    pub leaves: Vec<(String, i32, Vec<ScalarValue>)>,
}

/// Leaves of both sides that join only each other.
#[derive(Debug, Clone, PartialEq)]
pub struct JoinGroup {
    /// The components shared by the group's leaves (NULL ones: a group of NULL keys).
    pub key: Vec<ScalarValue>,
    /// Object ids of the left leaves.
    pub left: Vec<String>,
    /// Object ids of the right leaves.
    pub right: Vec<String>,
}

/// The plan of a storage-partitioned join.
#[derive(Debug, Clone, PartialEq)]
pub struct JoinPlan {
    /// Whether the join can run group by group.
    pub compatible: bool,
    /// Why not (names the fields and transforms), when not compatible.
    pub reason: Option<String>,
    /// What each component of a group key is (`bucket(customer_id) % 8 = bucket(id) % 8`).
    pub components: Vec<String>,
    /// The groups (empty when not compatible), ordered by key.
    pub groups: Vec<JoinGroup>,
}

/// How a side computes one component from a leaf's partition values.
#[derive(Debug, Clone)]
enum Derive {
    /// The value of field `index`.
    Value(usize),
    /// The value of field `index` modulo `m` (bucket coarsening).
    Modulo(usize, i32),
    /// The value of field `index` truncated to width `w` (numbers, toward zero).
    TruncateNumber(usize, i64),
    /// The first `w` characters of the value of field `index`.
    Prefix(usize, usize),
    /// `transform` applied to the identity value of field `index`.
    Apply(usize, Transform),
}

/// The kind of a component, shared by both sides.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Kind {
    Identity,
    Temporal(&'static str),
    Bucket,
    Truncate,
    Expression(String),
}

/// What one field on a key does to it.
#[derive(Debug, Clone)]
enum OnKey {
    Identity,
    Transform(Transform),
    Expression(String),
}

/// Plans the join of `left` and `right` on equal `on` pairs (left column, right column).
///
/// # Errors
/// `InvalidArgument` for unknown columns, an empty `on`, or key types that differ.
pub(crate) fn plan_join(
    left: &JoinSide<'_>,
    right: &JoinSide<'_>,
    on: &[(String, String)],
) -> Result<JoinPlan> {
    if on.is_empty() {
        return Err(Error::InvalidArgument(
            "a join needs at least one key pair".into(),
        ));
    }
    let mut derives: Vec<(HashMap<i32, Derive>, HashMap<i32, Derive>)> = Vec::new();
    let mut components = Vec::new();
    let mut why = Vec::new();
    for (lc, rc) in on {
        let (lid, lt) = key_field(left.schema, lc, "left")?;
        let (rid, rt) = key_field(right.schema, rc, "right")?;
        if lt != rt {
            return Err(Error::InvalidArgument(format!(
                "join key types differ: left {lc:?} is {lt}, right {rc:?} is {rt}"
            )));
        }
        let lfields = fields_on_key(left, lid);
        let rfields = fields_on_key(right, rid);
        let found = components_for(&lfields, &rfields, &lt);
        if found.is_empty() {
            why.push(format!(
                "no partition field aligns {lc} = {rc}: left {}; right {}",
                describe(&lfields, lc),
                describe(&rfields, rc)
            ));
        }
        for (text, l, r) in found {
            components.push(text.replace("{l}", lc).replace("{r}", rc));
            derives.push((l, r));
        }
    }
    if derives.is_empty() && !(left.leaves.is_empty() && right.leaves.is_empty()) {
        return Ok(JoinPlan {
            compatible: false,
            reason: Some(why.join("; ")),
            components,
            groups: Vec::new(),
        });
    }
    let lkeys = leaf_keys(left, &derives, |d| &d.0)?;
    let rkeys = leaf_keys(right, &derives, |d| &d.1)?;
    Ok(JoinPlan {
        compatible: true,
        reason: None,
        components,
        groups: group(left, &lkeys, right, &rkeys),
    })
}

/// The field id and type of a join key: a top-level column, or a struct child by its dotted
/// path (`loc.city`; not inside a list or map, where a row has many values).
pub(super) fn key_field(schema: &Schema, name: &str, side: &str) -> Result<(i32, DataType)> {
    let f = if name.contains('.') {
        fields_by_id(schema)?
            .into_values()
            .find(|at| !at.in_list && at.dotted() == name)
            .map(|at| at.field)
    } else {
        schema.field_with_name(name).ok()
    };
    let f = f.ok_or_else(|| {
        Error::InvalidArgument(format!(
            "join key {name:?} is not a column of the {side} namespace"
        ))
    })?;
    let id = field_id(f).ok_or_else(|| {
        Error::InvalidArgument(format!(
            "join key {name:?} of the {side} namespace has no field id"
        ))
    })?;
    Ok((id, f.data_type().clone()))
}

/// For every spec version with leaves: the fields of that version whose only source is the
/// key (field index, what it does).
fn fields_on_key(side: &JoinSide<'_>, key: i32) -> BTreeMap<i32, Vec<(usize, OnKey)>> {
    let mut out = BTreeMap::new();
    for (_, spec_id, _) in &side.leaves {
        if out.contains_key(spec_id) {
            continue;
        }
        let Some(spec) = side.specs.get(spec_id) else {
            out.insert(*spec_id, Vec::new());
            continue;
        };
        let on_key = spec
            .fields
            .iter()
            .enumerate()
            .filter(|(_, f)| f.source_ids == [key])
            .filter_map(|(i, f)| on_key(f).map(|k| (i, k)))
            .collect();
        out.insert(*spec_id, on_key);
    }
    out
}

fn on_key(f: &PartitionField) -> Option<OnKey> {
    if let Some(e) = &f.expression {
        return Some(OnKey::Expression(e.trim().to_string()));
    }
    match f.transform.as_ref()?.parse(&f.field_id).ok()? {
        Transform::Identity => Some(OnKey::Identity),
        Transform::MultiBucket(_) => None,
        t => Some(OnKey::Transform(t)),
    }
}

fn describe(versions: &BTreeMap<i32, Vec<(usize, OnKey)>>, col: &str) -> String {
    versions
        .iter()
        .map(|(v, fields)| {
            let list: Vec<String> = fields
                .iter()
                .map(|(_, k)| match k {
                    OnKey::Identity => format!("identity({col})"),
                    OnKey::Expression(e) => format!("expression {e:?}"),
                    OnKey::Transform(t) => transform_text(t, col),
                })
                .collect();
            if list.is_empty() {
                format!("v{v} has no field on {col}")
            } else {
                format!("v{v} has {}", list.join(", "))
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn transform_text(t: &Transform, col: &str) -> String {
    match t {
        Transform::Bucket(n) => format!("bucket({col}, {n})"),
        Transform::Truncate(w) => format!("truncate({col}, {w})"),
        t => format!("{}({col})", t.name()),
    }
}

/// Per side: spec version -> how it derives the component.
type PerVersion = HashMap<i32, Derive>;

/// The components of one key pair: (description with `{l}`/`{r}` for the columns, left
/// derivations, right derivations).
fn components_for(
    left: &BTreeMap<i32, Vec<(usize, OnKey)>>,
    right: &BTreeMap<i32, Vec<(usize, OnKey)>>,
    key_type: &DataType,
) -> Vec<(String, PerVersion, PerVersion)> {
    let all: Vec<&(usize, OnKey)> = left.values().chain(right.values()).flatten().collect();
    // Every kind some version uses on the key.
    let mut kinds: Vec<Kind> = all
        .iter()
        .map(|(_, k)| match k {
            OnKey::Identity => Kind::Identity,
            OnKey::Expression(e) => Kind::Expression(e.clone()),
            OnKey::Transform(Transform::Bucket(_)) => Kind::Bucket,
            OnKey::Transform(Transform::Truncate(_)) => Kind::Truncate,
            OnKey::Transform(t) => Kind::Temporal(t.name()),
        })
        .collect();
    kinds.sort();
    kinds.dedup();
    let string_key = matches!(
        key_type,
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
    );
    let mut out = Vec::new();
    for kind in kinds {
        let param = component_param(&all, &kind, string_key);
        let per_version = |side: &BTreeMap<i32, Vec<(usize, OnKey)>>| -> Option<PerVersion> {
            side.iter()
                .map(|(v, f)| derive_component(f, &kind, param, string_key).map(|d| (*v, d)))
                .collect()
        };
        if let (Some(l), Some(r), Some(text)) = (
            per_version(left),
            per_version(right),
            describe_component(&kind, param),
        ) {
            out.push((text, l, r));
        }
    }
    out
}

/// The parameter a component of `kind` uses: the smallest bucket count, the widest (numbers)
/// or narrowest (strings) truncate width.
fn component_param(all: &[&(usize, OnKey)], kind: &Kind, string_key: bool) -> Option<i64> {
    let params: Vec<i64> = all
        .iter()
        .filter_map(|(_, k)| match (k, kind) {
            (OnKey::Transform(Transform::Bucket(n)), Kind::Bucket) => Some(i64::from(*n)),
            (OnKey::Transform(Transform::Truncate(w)), Kind::Truncate) => Some(i64::from(*w)),
            _ => None,
        })
        .collect();
    match kind {
        Kind::Bucket => params.iter().copied().min(),
        Kind::Truncate if string_key => params.iter().copied().min(),
        Kind::Truncate => params.iter().copied().max(),
        _ => None,
    }
}

/// How one spec version's `fields` over the key give the component: a field of this very
/// kind first; identity (the transform applied to the value) as the fallback.
fn derive_component(
    fields: &[(usize, OnKey)],
    kind: &Kind,
    param: Option<i64>,
    string_key: bool,
) -> Option<Derive> {
    let direct = fields.iter().find_map(|(i, k)| match (k, kind, param) {
        (OnKey::Identity, Kind::Identity, _) => Some(Derive::Value(*i)),
        (OnKey::Expression(e), Kind::Expression(x), _) if e == x => Some(Derive::Value(*i)),
        (OnKey::Transform(t), Kind::Temporal(name), _) if t.name() == *name => {
            Some(Derive::Value(*i))
        }
        (OnKey::Transform(Transform::Bucket(n)), Kind::Bucket, Some(m)) => (i64::from(*n) % m == 0)
            .then(|| {
                if i64::from(*n) == m {
                    Derive::Value(*i)
                } else {
                    Derive::Modulo(*i, m as i32)
                }
            }),
        (OnKey::Transform(Transform::Truncate(w)), Kind::Truncate, Some(p)) => {
            if string_key {
                Some(Derive::Prefix(*i, p as usize))
            } else {
                (p % i64::from(*w) == 0).then_some(Derive::TruncateNumber(*i, p))
            }
        }
        _ => None,
    });
    direct.or_else(|| {
        let ident = fields
            .iter()
            .find(|(_, k)| matches!(k, OnKey::Identity))
            .map(|(i, _)| *i)?;
        let t = match (kind, param) {
            (Kind::Temporal(name), _) => temporal(name)?,
            (Kind::Bucket, Some(m)) => Transform::Bucket(m as i32),
            (Kind::Truncate, Some(p)) => Transform::Truncate(p as i32),
            _ => return None,
        };
        Some(Derive::Apply(ident, t))
    })
}

/// The description of a component (`{l}`/`{r}` for the key columns).
fn describe_component(kind: &Kind, param: Option<i64>) -> Option<String> {
    Some(match (kind, param) {
        (Kind::Identity, _) => "{l} = {r}".to_string(),
        (Kind::Temporal(name), _) => format!("{name}({{l}}) = {name}({{r}})"),
        (Kind::Expression(e), _) => format!("{e} on {{l}} = {e} on {{r}}"),
        (Kind::Bucket, Some(m)) => format!("bucket({{l}}) % {m} = bucket({{r}}) % {m}"),
        (Kind::Truncate, Some(p)) => format!("truncate({{l}}, {p}) = truncate({{r}}, {p})"),
        _ => return None,
    })
}

fn temporal(name: &str) -> Option<Transform> {
    Some(match name {
        "year" => Transform::Year,
        "month" => Transform::Month,
        "day" => Transform::Day,
        "hour" => Transform::Hour,
        _ => return None,
    })
}

/// The group key of every leaf of `side`.
fn leaf_keys<'d>(
    side: &JoinSide<'_>,
    derives: &'d [(PerVersion, PerVersion)],
    pick: impl Fn(&'d (PerVersion, PerVersion)) -> &'d PerVersion,
) -> Result<Vec<Vec<ScalarValue>>> {
    side.leaves
        .iter()
        .map(|(id, spec, values)| {
            derives
                .iter()
                .map(|d| {
                    let derive = pick(d).get(spec).ok_or_else(|| {
                        Error::Internal(format!("no join derivation for spec v{spec} of {id}"))
                    })?;
                    component(derive, values)
                        .map_err(|e| Error::Internal(format!("join key of {id}: {e}")))
                })
                .collect()
        })
        .collect()
}

fn component(derive: &Derive, values: &[ScalarValue]) -> Result<ScalarValue> {
    let value = |i: usize| {
        values
            .get(i)
            .cloned()
            .ok_or_else(|| Error::Corrupt(format!("partition value {i} is missing")))
    };
    Ok(match derive {
        Derive::Value(i) => value(*i)?,
        Derive::Modulo(i, m) => match value(*i)? {
            ScalarValue::Int32(Some(b)) => ScalarValue::Int32(Some(b % m)),
            ScalarValue::Int32(None) => ScalarValue::Int32(None),
            other => return Err(Error::Corrupt(format!("bucket value {other} is not int32"))),
        },
        Derive::TruncateNumber(i, w) => truncate_number(&value(*i)?, *w)?,
        Derive::Prefix(i, w) => match value(*i)? {
            ScalarValue::Utf8(s) => ScalarValue::Utf8(s.map(|s| s.chars().take(*w).collect())),
            ScalarValue::LargeUtf8(s) => {
                ScalarValue::LargeUtf8(s.map(|s| s.chars().take(*w).collect()))
            }
            ScalarValue::Utf8View(s) => {
                ScalarValue::Utf8View(s.map(|s| s.chars().take(*w).collect()))
            }
            other => {
                return Err(Error::Corrupt(format!(
                    "truncate value {other} is not text"
                )))
            }
        },
        Derive::Apply(i, t) => t.apply_scalar(&[value(*i)?])?,
    })
}

/// `v - v % w` (truncation toward zero, the spec's numeric truncate) in `v`'s own type.
fn truncate_number(v: &ScalarValue, w: i64) -> Result<ScalarValue> {
    macro_rules! int {
        ($variant:ident, $t:ty) => {
            match v {
                ScalarValue::$variant(x) => {
                    let w = <$t>::try_from(w).map_err(|_| {
                        Error::Corrupt(format!("truncate width {w} does not fit {v:?}"))
                    })?;
                    return Ok(ScalarValue::$variant(x.map(|x| x - x % w)));
                }
                _ => {}
            }
        };
    }
    int!(Int8, i8);
    int!(Int16, i16);
    int!(Int32, i32);
    int!(Int64, i64);
    int!(UInt8, u8);
    int!(UInt16, u16);
    int!(UInt32, u32);
    int!(UInt64, u64);
    // Decimals and other numbers: the kernel's own truncate.
    Transform::Truncate(i32::try_from(w).map_err(|_| Error::Corrupt("width".into()))?)
        .apply_scalar(std::slice::from_ref(v))
}

/// Leaves with equal keys form a group; leaves with a NULL component each form a group with
/// an empty other side. Groups are ordered by key (NULL groups last).
fn group(
    left: &JoinSide<'_>,
    lkeys: &[Vec<ScalarValue>],
    right: &JoinSide<'_>,
    rkeys: &[Vec<ScalarValue>],
) -> Vec<JoinGroup> {
    let mut by_key: HashMap<&[ScalarValue], JoinGroup> = HashMap::new();
    let mut nulls = Vec::new();
    let sides = [(left, lkeys, true), (right, rkeys, false)];
    for (side, keys, is_left) in sides {
        for ((id, _, _), key) in side.leaves.iter().zip(keys) {
            if key.iter().any(ScalarValue::is_null) {
                let (l, r) = if is_left {
                    (vec![id.clone()], Vec::new())
                } else {
                    (Vec::new(), vec![id.clone()])
                };
                nulls.push(JoinGroup {
                    key: key.clone(),
                    left: l,
                    right: r,
                });
                continue;
            }
            let g = by_key.entry(key.as_slice()).or_insert_with(|| JoinGroup {
                key: key.clone(),
                left: Vec::new(),
                right: Vec::new(),
            });
            if is_left {
                g.left.push(id.clone());
            } else {
                g.right.push(id.clone());
            }
        }
    }
    let mut groups: Vec<JoinGroup> = by_key.into_values().collect();
    groups.sort_by(|a, b| {
        a.key
            .partial_cmp(&b.key)
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    for g in &mut groups {
        g.left.sort();
        g.right.sort();
    }
    groups.extend(nulls);
    groups
}

impl<'a> JoinSide<'a> {
    /// The side of the namespace snapshot `snap`: every leaf with its partition values.
    ///
    /// # Errors
    /// `Corrupt` for inconsistent manifest rows; `NotFound` on a snapshot loaded without its
    /// property columns (load it in full).
    pub fn of(snap: &'a crate::ns::manifest::Snapshot) -> Result<Self> {
        let keys = snap.keys()?;
        Ok(Self {
            schema: snap.root_props.schema.as_ref(),
            specs: &snap.root_props.specs,
            leaves: snap
                .leaves
                .iter()
                .zip(&keys.leaf_values)
                .map(|(leaf, values)| (leaf.object_id.clone(), leaf.spec_id, values.clone()))
                .collect(),
        })
    }
}
