//! The shape of a join's output: which columns each side reads (keys included, keys inside
//! structs extracted after the read), where the keys are in each side's batches, and where
//! every output column comes from, named as pyarrow's `Table.join` names them (docs/join.md).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use crate::arrow::datatypes::{Field, Schema, SchemaRef};
use crate::error::{Error, Result};

use super::plan::key_field;
use super::request::{JoinHow, JoinRequest};

/// Where an output column comes from (indexes into the columns read from each side).
#[derive(Debug, Clone, Copy)]
pub(super) enum Source {
    Left(usize),
    Right(usize),
    /// A full join's key: the left value, or the right one where the left is NULL.
    Coalesce(usize, usize),
}

/// Where a join key is in a side's batches: a read column, or the `j`-th key inside a
/// struct, appended after the read columns.
enum Key {
    Read(usize),
    Nested(usize),
}

/// A join key inside a struct: its path, and the field its values are appended as (named
/// by the dotted path, nullable: a NULL struct gives a NULL key).
pub(super) struct NestedKey {
    pub path: Vec<String>,
    pub field: Field,
}

/// Which columns each side reads and where every output column comes from.
pub(super) struct Layout {
    pub left_cols: Vec<String>,
    pub right_cols: Vec<String>,
    pub left_nested: Vec<NestedKey>,
    pub right_nested: Vec<NestedKey>,
    pub keys: Vec<(usize, usize)>,
    pub out: Vec<Source>,
    pub schema: SchemaRef,
}

impl Layout {
    pub(super) fn new(lschema: &Schema, rschema: &Schema, req: &JoinRequest) -> Result<Self> {
        let how = req.how;
        // Keys exist and have equal types: `plan_join` checked them first. Pairs of
        // top-level columns coalesce (the key appears once); a key inside a struct stays where
        // it is, in its struct, and the other side's key column stays too.
        let top: Vec<&(String, String)> = req
            .on
            .iter()
            .filter(|(l, r)| !l.contains('.') && !r.contains('.'))
            .collect();
        let lkeys: Vec<&str> = top.iter().map(|(l, _)| l.as_str()).collect();
        let rkeys: Vec<&str> = top.iter().map(|(_, r)| r.as_str()).collect();
        // Every output column: (name, side, column name, nullable).
        enum Col<'a> {
            L(&'a Field),
            R(&'a Field),
            Both(&'a Field, &'a Field),
        }
        let mut all: Vec<(String, Col<'_>)> = Vec::new();
        let right_only = matches!(how, JoinHow::Right);
        for f in lschema.fields() {
            let key = lkeys.iter().position(|k| k == f.name());
            match (key, how) {
                (Some(_), JoinHow::Right) => {}
                (Some(j), JoinHow::Full) => {
                    let r = rschema.field_with_name(rkeys[j])?;
                    all.push((f.name().clone(), Col::Both(f, r)));
                }
                _ => all.push((f.name().clone(), Col::L(f))),
            }
        }
        if !matches!(how, JoinHow::Semi | JoinHow::Anti) {
            let left_names: HashSet<String> = all.iter().map(|(n, _)| n.clone()).collect();
            for f in rschema.fields() {
                let is_key = rkeys.contains(&f.name().as_str());
                if is_key && !right_only {
                    continue;
                }
                let name = if !is_key && left_names.contains(f.name()) {
                    format!("{}{}", f.name(), req.right_suffix)
                } else {
                    f.name().clone()
                };
                all.push((name, Col::R(f)));
            }
        }
        let mut names = HashSet::new();
        for (n, _) in &all {
            if !names.insert(n.clone()) {
                return Err(Error::InvalidArgument(format!(
                    "the join output would have two columns named {n:?}; choose another \
                     right_suffix"
                )));
            }
        }
        let chosen: Vec<(String, Col<'_>)> = match &req.columns {
            None => all,
            Some(cols) => {
                let mut by_name: HashMap<String, Col<'_>> = all.into_iter().collect();
                let mut out = Vec::new();
                for c in cols {
                    let Some(col) = by_name.remove(c) else {
                        return Err(Error::InvalidArgument(format!(
                            "column {c:?} is not a column of the join output (or is named twice)"
                        )));
                    };
                    out.push((c.clone(), col));
                }
                out
            }
        };
        // Read: every key, then what the output needs.
        let mut left_cols: Vec<String> = Vec::new();
        let mut right_cols: Vec<String> = Vec::new();
        let position =
            |cols: &mut Vec<String>, name: &str| match cols.iter().position(|c| c == name) {
                Some(i) => i,
                None => {
                    cols.push(name.to_string());
                    cols.len() - 1
                }
            };
        // A key inside a struct reads its top-level struct; its values are extracted after
        // each read and appended after the read columns (`Key::Nested`).
        let key = |(schema, side): (&Schema, &str),
                   cols: &mut Vec<String>,
                   nested: &mut Vec<NestedKey>,
                   name: &str|
         -> Result<Key> {
            if !name.contains('.') {
                return Ok(Key::Read(position(cols, name)));
            }
            let path: Vec<String> = name.split('.').map(str::to_string).collect();
            position(cols, &path[0]);
            let (_, dt) = key_field(schema, name, side)?;
            nested.push(NestedKey {
                path,
                field: Field::new(name, dt, true),
            });
            Ok(Key::Nested(nested.len() - 1))
        };
        let (mut left_nested, mut right_nested) = (Vec::new(), Vec::new());
        let key_at: Vec<(Key, Key)> = req
            .on
            .iter()
            .map(|(l, r)| {
                Ok((
                    key((lschema, "left"), &mut left_cols, &mut left_nested, l)?,
                    key((rschema, "right"), &mut right_cols, &mut right_nested, r)?,
                ))
            })
            .collect::<Result<_>>()?;
        let (null_left, null_right) = match how {
            JoinHow::Left => (false, true),
            JoinHow::Right => (true, false),
            JoinHow::Full => (true, true),
            _ => (false, false),
        };
        let mut out = Vec::new();
        let mut fields = Vec::new();
        for (name, col) in &chosen {
            let (source, dt, nullable) = match col {
                Col::L(f) => (
                    Source::Left(position(&mut left_cols, f.name())),
                    f.data_type(),
                    f.is_nullable() || null_left,
                ),
                Col::R(f) => (
                    Source::Right(position(&mut right_cols, f.name())),
                    f.data_type(),
                    f.is_nullable() || null_right,
                ),
                Col::Both(l, r) => (
                    Source::Coalesce(
                        position(&mut left_cols, l.name()),
                        position(&mut right_cols, r.name()),
                    ),
                    l.data_type(),
                    l.is_nullable() || r.is_nullable(),
                ),
            };
            out.push(source);
            fields.push(Field::new(name, dt.clone(), nullable));
        }
        let at = |k: &Key, read: usize| match *k {
            Key::Read(i) => i,
            Key::Nested(j) => read + j,
        };
        let keys = key_at
            .iter()
            .map(|(l, r)| (at(l, left_cols.len()), at(r, right_cols.len())))
            .collect();
        Ok(Self {
            left_cols,
            right_cols,
            left_nested,
            right_nested,
            keys,
            out,
            schema: Arc::new(Schema::new(fields)),
        })
    }
}
