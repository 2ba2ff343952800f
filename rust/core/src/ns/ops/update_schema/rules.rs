//! Schema evolution by field id: add a nullable column, rename, drop, widen a type.
//!
//! The namespace schema is the `schema` root property; every field carries `lance:field_id`.
//! An update is the new schema: fields with an existing id keep their identity (a new name is
//! a rename, a new type must widen the old one), fields without an id are added (nullable,
//! with fresh ids that are never reused: the largest id ever assigned is kept in the
//! `lance_partitioned.last_field_id` root property), and ids missing from the new schema are
//! dropped. Leaves are not rewritten: reads follow the read rules (columns matched by field
//! id, namespace type wins, missing columns read as NULL); the first append to a partition
//! written under an older schema rewrites that partition with the current one.

use std::collections::{HashMap, HashSet};

use crate::arrow::datatypes::{Field, Schema};
use crate::error::{schema_err, Error, Result};
use crate::field_ids::{assign_field_ids, field_id, ids_within};
pub use crate::field_ids::{max_field_id, LAST_FIELD_ID_KEY};
use crate::ns::manifest::Snapshot;
use crate::spec::PartitionSpec;
pub use crate::types::is_widening;
use crate::types::{storage_schema, storage_type};

/// Field ids that any spec version partitions by.
fn source_ids<'a>(specs: impl IntoIterator<Item = &'a PartitionSpec>) -> HashSet<i32> {
    specs
        .into_iter()
        .flat_map(|s| s.fields.iter().flat_map(|f| f.source_ids.iter().copied()))
        .collect()
}

/// Validates `new` against `old` and assigns ids to added fields. Returns the new schema and
/// the new largest id ever assigned.
///
/// # Errors
/// `SchemaMismatch` naming the offending column.
pub(crate) fn plan_update(
    old: &Schema,
    new: &Schema,
    specs: &[&PartitionSpec],
    last_id: i32,
) -> Result<(Schema, i32)> {
    let old_by_id: HashMap<i32, &Field> = old
        .fields()
        .iter()
        .filter_map(|f| field_id(f).map(|id| (id, f.as_ref())))
        .collect();
    let partition_sources = source_ids(specs.iter().copied());
    let new = &storage_schema(new);
    let mut names = HashSet::new();
    for f in new.fields() {
        if !names.insert(f.name().clone()) {
            return schema_err!("column {:?} appears twice in the new schema", f.name());
        }
        let Some(id) = field_id(f) else {
            if !f.is_nullable() {
                return schema_err!(
                    "added column {:?} must be nullable (existing rows have no value for it)",
                    f.name()
                );
            }
            continue;
        };
        let Some(prev) = old_by_id.get(&id) else {
            return schema_err!(
                "column {:?} carries field id {id}, which the namespace schema does not have \
                 (field ids are assigned by the namespace; leave it out to add a column)",
                f.name()
            );
        };
        if prev.is_nullable() && !f.is_nullable() {
            return schema_err!(
                "column {:?} cannot become non-nullable (existing rows may hold NULLs)",
                f.name()
            );
        }
        check_type_change(prev, f, &partition_sources)?;
    }
    let kept: HashSet<i32> = new.fields().iter().filter_map(|f| field_id(f)).collect();
    for (id, f) in &old_by_id {
        if !kept.contains(id) && ids_within(f).iter().any(|i| partition_sources.contains(i)) {
            return schema_err!(
                "column {:?} is (or holds) a partition source of a spec version and cannot \
                 be dropped",
                f.name()
            );
        }
    }
    crate::ns::infra::naming::check_column_names(new)?;
    let floor = last_id.max(max_field_id(old)) + 1;
    let assigned = assign_field_ids(new, floor)?;
    let last = max_field_id(&assigned).max(floor - 1);
    Ok((assigned, last))
}

/// Refuses a type change of `prev` to `f`'s type unless it widens, and any type change of a
/// column that is (or holds) a partition source.
fn check_type_change(prev: &Field, f: &Field, partition_sources: &HashSet<i32>) -> Result<()> {
    if storage_type(prev.data_type()) != *f.data_type() {
        if ids_within(prev)
            .iter()
            .any(|i| partition_sources.contains(i))
        {
            return schema_err!(
                "column {:?} is (or holds) a partition source; its type cannot change ({} -> {}), \
                 partition values would no longer match",
                f.name(),
                prev.data_type(),
                f.data_type()
            );
        }
        if !is_widening(&storage_type(prev.data_type()), f.data_type()) {
            return schema_err!(
                "column {:?} cannot change type from {} to {} (only widening: integers to \
                 wider integers, float to double, decimal precision up, to large/view \
                 string or binary)",
                f.name(),
                prev.data_type(),
                f.data_type()
            );
        }
    }
    Ok(())
}

/// The largest field id ever assigned in `snap` (`-1` before any).
pub(crate) fn last_field_id(snap: &Snapshot) -> i32 {
    snap.root_props
        .props
        .get(LAST_FIELD_ID_KEY)
        .and_then(|s| s.parse().ok())
        .unwrap_or(-1)
}

/// The fields of `schema` by field id.
fn by_id(schema: &Schema) -> HashMap<i32, &Field> {
    schema
        .fields()
        .iter()
        .filter_map(|f| field_id(f).map(|id| (id, f.as_ref())))
        .collect()
}

/// `new`, an update written against the schema `base`, rebased onto the schema `latest` that
/// concurrent changes made: the update's own changes to `base` (added fields, dropped ids,
/// renames, type and nullability changes of the ids it kept) applied to `latest`, keeping what
/// the concurrent changes did to every other field, in the latest order; the fields it adds
/// come last.
///
/// # Errors
/// `CommitConflict` when both changed the same field (or the update changes a field a
/// concurrent change dropped, or adds a name a concurrent change added).
pub(crate) fn rebase_update(base: &Schema, new: &Schema, latest: &Schema) -> Result<Schema> {
    if base.fields() == latest.fields() {
        return Ok(new.clone());
    }
    let (base_ids, latest_ids) = (by_id(base), by_id(latest));
    let conflict = |name: &str, what: &str| {
        Err(Error::CommitConflict(format!(
            "column {name:?} {what} by a concurrent schema change; reload the schema and retry"
        )))
    };
    let new_ids = by_id(new);
    // Every field the update names by id must be in the base (`plan_update` refuses others),
    // and changing one that a concurrent change dropped or changed is a conflict.
    for f in new.fields() {
        let Some(id) = field_id(f) else {
            if base.field_with_name(f.name()).is_err() && latest.field_with_name(f.name()).is_ok() {
                return conflict(f.name(), "was added");
            }
            continue;
        };
        let Some(before) = base_ids.get(&id) else {
            continue;
        };
        if *before != f.as_ref() {
            match latest_ids.get(&id) {
                None => return conflict(before.name(), "was dropped"),
                Some(now) if now.name() != before.name() => {
                    return conflict(before.name(), &format!("was renamed to {:?}", now.name()))
                }
                Some(now) if now != before => return conflict(before.name(), "was changed"),
                Some(_) => {}
            }
        }
    }
    // The latest fields in their order, with the update's changes (a field the update dropped
    // goes; one it does not know, added concurrently, stays), then the fields it adds.
    let mut out: Vec<Field> = Vec::with_capacity(new.fields().len() + latest.fields().len());
    for f in latest.fields() {
        match field_id(f) {
            Some(id) if base_ids.contains_key(&id) => match new_ids.get(&id) {
                // changed by the update (checked above: not by a concurrent change)
                Some(mine) if base_ids.get(&id) != Some(mine) => out.push((*mine).clone()),
                // kept as it was: as the latest has it (a concurrent rename stays)
                Some(_) => out.push(f.as_ref().clone()),
                // dropped by the update
                None => {}
            },
            _ => out.push(f.as_ref().clone()),
        }
    }
    for f in new.fields() {
        let unknown = field_id(f).is_none_or(|id| !base_ids.contains_key(&id));
        if unknown {
            out.push(f.as_ref().clone());
        }
    }
    Ok(Schema::new_with_metadata(out, latest.metadata().clone()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arrow::datatypes::DataType;
    use crate::field_ids::FIELD_ID_KEY;

    fn f(name: &str, dt: DataType, id: Option<i32>) -> Field {
        let f = Field::new(name, dt, true);
        match id {
            Some(i) => f.with_metadata(HashMap::from([(FIELD_ID_KEY.to_string(), i.to_string())])),
            None => f,
        }
    }

    #[test]
    fn widening_rules() {
        use DataType::*;
        assert!(is_widening(&Int32, &Int64));
        assert!(is_widening(&UInt16, &Int32));
        assert!(!is_widening(&Int64, &Int32));
        assert!(!is_widening(&Int32, &UInt64));
        assert!(is_widening(&Float32, &Float64));
        assert!(is_widening(&Decimal128(10, 2), &Decimal128(12, 2)));
        assert!(!is_widening(&Decimal128(10, 2), &Decimal128(12, 3)));
        assert!(is_widening(&Utf8, &LargeUtf8));
        assert!(!is_widening(&Utf8, &Int64));
    }

    #[test]
    fn plan_assigns_fresh_ids_and_refuses_bad_changes() {
        let old = Schema::new(vec![
            f("a", DataType::Int32, Some(0)),
            f("b", DataType::Utf8, Some(1)),
        ]);
        // rename b, widen a, add c
        let new = Schema::new(vec![
            f("a", DataType::Int64, Some(0)),
            f("bee", DataType::Utf8, Some(1)),
            f("c", DataType::Float64, None),
        ]);
        let (s, last) = plan_update(&old, &new, &[], 5).unwrap();
        assert_eq!(field_id(s.field(2)), Some(6));
        assert_eq!(last, 6);
        // unknown id, narrowing, non-nullable add
        let bad = Schema::new(vec![f("z", DataType::Int32, Some(9))]);
        assert!(plan_update(&old, &bad, &[], 5).is_err());
        let narrow = Schema::new(vec![f("a", DataType::Int8, Some(0))]);
        assert!(plan_update(&old, &narrow, &[], 5).is_err());
        let nn = Schema::new(vec![Field::new("n", DataType::Int32, false)]);
        assert!(plan_update(&old, &nn, &[], 5).is_err());
    }

    /// The schema both sides start from: a, b.
    fn base() -> Schema {
        Schema::new(vec![
            f("a", DataType::Int32, Some(0)),
            f("b", DataType::Utf8, Some(1)),
        ])
    }

    /// A concurrent change of [`base`]: b renamed to bee, c added.
    fn renamed_b_added_c() -> Schema {
        Schema::new(vec![
            f("a", DataType::Int32, Some(0)),
            f("bee", DataType::Utf8, Some(1)),
            f("c", DataType::Int64, Some(2)),
        ])
    }

    #[test]
    fn rebase_keeps_concurrent_changes() {
        let (base, latest) = (base(), renamed_b_added_c());
        // Ours, against base: d added, a widened.
        let ours = Schema::new(vec![
            f("a", DataType::Int64, Some(0)),
            f("b", DataType::Utf8, Some(1)),
            f("d", DataType::Utf8, None),
        ]);
        let r = rebase_update(&base, &ours, &latest).unwrap();
        let names: Vec<&str> = r.fields().iter().map(|x| x.name().as_str()).collect();
        assert_eq!(names, ["a", "bee", "c", "d"]);
        assert_eq!(r.field(0).data_type(), &DataType::Int64);
        // Ours drops b: the concurrent rename does not bring it back.
        let drop_b = Schema::new(vec![f("a", DataType::Int32, Some(0))]);
        let r = rebase_update(&base, &drop_b, &latest).unwrap();
        let names: Vec<&str> = r.fields().iter().map(|x| x.name().as_str()).collect();
        assert_eq!(names, ["a", "c"]);
    }

    #[test]
    fn rebase_refuses_overlapping_changes() {
        let (base, latest) = (base(), renamed_b_added_c());
        let rename_b = Schema::new(vec![
            f("a", DataType::Int32, Some(0)),
            f("bb", DataType::Utf8, Some(1)),
        ]);
        assert!(matches!(
            rebase_update(&base, &rename_b, &latest),
            Err(Error::CommitConflict(_))
        ));
        let add_c = Schema::new(vec![
            f("a", DataType::Int32, Some(0)),
            f("b", DataType::Utf8, Some(1)),
            f("c", DataType::Utf8, None),
        ]);
        assert!(matches!(
            rebase_update(&base, &add_c, &latest),
            Err(Error::CommitConflict(_))
        ));
        // a concurrent change dropped a; ours widens it
        let a_dropped = Schema::new(vec![f("b", DataType::Utf8, Some(1))]);
        let widen_a = Schema::new(vec![
            f("a", DataType::Int64, Some(0)),
            f("b", DataType::Utf8, Some(1)),
        ]);
        assert!(matches!(
            rebase_update(&base, &widen_a, &a_dropped),
            Err(Error::CommitConflict(_))
        ));
        // ... while a drop of b that ours does not touch just applies
        let b_dropped = Schema::new(vec![f("a", DataType::Int32, Some(0))]);
        let r = rebase_update(&base, &widen_a, &b_dropped).unwrap();
        assert_eq!(r.fields().len(), 1);
        assert_eq!(r.field(0).data_type(), &DataType::Int64);
    }
}
