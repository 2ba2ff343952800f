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

/// An output column: from the left, from the right, or a full join's coalesced key.
enum Col<'a> {
    L(&'a Field),
    R(&'a Field),
    Both(&'a Field, &'a Field),
}

/// The output columns in order, named as pyarrow names them (the `columns` the request
/// asks for, when it does).
fn output_columns<'a>(
    lschema: &'a Schema,
    rschema: &'a Schema,
    req: &JoinRequest,
) -> Result<Vec<(String, Col<'a>)>> {
    let how = req.how;
    // Keys exist and have equal types: `plan_join` checked them first. Pairs of top-level
    // columns coalesce (the key appears once); a key inside a struct stays where it is, in
    // its struct, and the other side's key column stays too.
    let top: Vec<&(String, String)> = req
        .on
        .iter()
        .filter(|(l, r)| !l.contains('.') && !r.contains('.'))
        .collect();
    let lkeys: Vec<&str> = top.iter().map(|(l, _)| l.as_str()).collect();
    let rkeys: Vec<&str> = top.iter().map(|(_, r)| r.as_str()).collect();
    let mut all: Vec<(String, Col<'a>)> = Vec::new();
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
            if is_key && !matches!(how, JoinHow::Right) {
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
    let Some(cols) = &req.columns else {
        return Ok(all);
    };
    let mut by_name: HashMap<String, Col<'a>> = all.into_iter().collect();
    let mut out = Vec::new();
    for c in cols {
        let Some(col) = by_name.remove(c) else {
            return Err(Error::InvalidArgument(format!(
                "column {c:?} is not a column of the join output (or is named twice)"
            )));
        };
        out.push((c.clone(), col));
    }
    Ok(out)
}

/// What one side reads: its columns (each once) and the keys inside its structs.
#[derive(Default)]
struct Reads {
    cols: Vec<String>,
    nested: Vec<NestedKey>,
}

impl Reads {
    /// The index of column `name` among the read columns (added when missing).
    fn position(&mut self, name: &str) -> usize {
        match self.cols.iter().position(|c| c == name) {
            Some(i) => i,
            None => {
                self.cols.push(name.to_string());
                self.cols.len() - 1
            }
        }
    }

    /// Where the key `name` is: a read column, or (inside a struct) its top-level struct is
    /// read and its values are extracted after each read, appended after the read columns.
    fn key(&mut self, schema: &Schema, side: &str, name: &str) -> Result<Key> {
        if !name.contains('.') {
            return Ok(Key::Read(self.position(name)));
        }
        let path: Vec<String> = name.split('.').map(str::to_string).collect();
        self.position(&path[0]);
        let (_, dt) = key_field(schema, name, side)?;
        self.nested.push(NestedKey {
            path,
            field: Field::new(name, dt, true),
        });
        Ok(Key::Nested(self.nested.len() - 1))
    }
}

impl Layout {
    pub(super) fn new(lschema: &Schema, rschema: &Schema, req: &JoinRequest) -> Result<Self> {
        let chosen = output_columns(lschema, rschema, req)?;
        // Read: every key, then what the output needs.
        let (mut left, mut right) = (Reads::default(), Reads::default());
        let key_at: Vec<(Key, Key)> = req
            .on
            .iter()
            .map(|(l, r)| {
                Ok((
                    left.key(lschema, "left", l)?,
                    right.key(rschema, "right", r)?,
                ))
            })
            .collect::<Result<_>>()?;
        let (null_left, null_right) = match req.how {
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
                    Source::Left(left.position(f.name())),
                    f.data_type(),
                    f.is_nullable() || null_left,
                ),
                Col::R(f) => (
                    Source::Right(right.position(f.name())),
                    f.data_type(),
                    f.is_nullable() || null_right,
                ),
                Col::Both(l, r) => (
                    Source::Coalesce(left.position(l.name()), right.position(r.name())),
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
            .map(|(l, r)| (at(l, left.cols.len()), at(r, right.cols.len())))
            .collect();
        Ok(Self {
            left_cols: left.cols,
            right_cols: right.cols,
            left_nested: left.nested,
            right_nested: right.nested,
            keys,
            out,
            schema: Arc::new(Schema::new(fields)),
        })
    }
}
