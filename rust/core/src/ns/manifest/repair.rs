//! Recovery from manifest columns another tool dropped: rebuilt in memory when a snapshot is
//! indexed (so reads work unchanged), persisted by [`repair`].

use std::collections::HashMap;
use std::sync::Arc;

use crate::arrow::array::{new_null_array, ArrayRef, RecordBatch, StringArray, UInt64Array};
use crate::arrow::datatypes::{Field, Schema};
use crate::datafusion::scalar::ScalarValue;
use crate::error::{Error, Result};
use crate::ns::PARTITION_COLUMN_PREFIX;

use super::format::{
    manifest_schema, parse_version, required_string, OBJECT_ID, OBJECT_TYPE, READ_VERSION, TABLE,
    TABLE_VERSION,
};
use super::Snapshot;

impl Snapshot {
    /// Recovers from manifest columns another writer dropped: builds the lookups, recovers
    /// the leaves' read versions (when `read_version` is gone), and rebuilds every missing
    /// column in `batch`, so pruning and listings work unchanged.
    pub(super) fn recover_dropped_columns(&mut self, without_read_version: bool) -> Result<()> {
        self.keys()?;
        if without_read_version {
            self.recover_read_versions()?;
        }
        if !self.missing_columns.is_empty() {
            // Rebuild what another writer dropped, so pruning and listings work unchanged.
            let n = self.batch.num_rows();
            let mut fields: Vec<Field> = self
                .batch
                .schema()
                .fields()
                .iter()
                .map(|f| f.as_ref().clone())
                .collect();
            let mut cols = self.batch.columns().to_vec();
            for (f, c) in self.restore_columns()? {
                fields.push(f);
                cols.push(c);
            }
            self.batch = RecordBatch::try_new_with_options(
                Arc::new(Schema::new(fields)),
                cols,
                &crate::arrow::array::RecordBatchOptions::new().with_row_count(Some(n)),
            )?;
        }
        Ok(())
    }

    /// Without a `read_version` column (dropped by another writer), the version to read is the
    /// head of each table's recorded version chain: the version no other names as its base
    /// (or, for rows without `base_version` properties, the newest recorded version).
    fn recover_read_versions(&mut self) -> Result<()> {
        let recorded = self
            .leaves
            .iter()
            .map(|leaf| self.table_versions(&leaf.object_id))
            .collect::<Result<Vec<_>>>()?;
        let recovered: Vec<Option<u64>> = recorded
            .iter()
            .map(|vs| {
                if vs.is_empty() {
                    return None;
                }
                let bases: std::collections::HashSet<&str> = vs
                    .iter()
                    .filter_map(|v| v.props.get("base_version").map(|s| s.as_str()))
                    .collect();
                let heads: Vec<u64> = vs
                    .iter()
                    .filter(|v| !bases.contains(v.version.to_string().as_str()))
                    .map(|v| v.version)
                    .collect();
                if heads.len() == 1 {
                    Some(heads[0])
                } else if bases.is_empty() {
                    // Another writer's rows without lineage: versions on a main branch only
                    // grow, so the newest recorded one is current.
                    vs.iter().map(|v| v.version).max()
                } else {
                    None
                }
            })
            .collect();
        for (leaf, rv) in self.leaves.iter_mut().zip(recovered) {
            if rv.is_some() {
                leaf.read_version = rv;
            }
        }
        Ok(())
    }

    /// Rebuilds the missing manifest columns (`docs/design.md`, "Manifest columns other tools
    /// drop") over every row of `batch`: partition values from the indexed namespaces and
    /// leaves, `read_version` of tables from the recovered chain heads and of `table_version`
    /// rows from their ids.
    fn restore_columns(&self) -> Result<Vec<(Field, ArrayRef)>> {
        let mut out = Vec::new();
        let expected = manifest_schema(self.root_props.specs.values())?;
        let ids = required_string(&self.batch, OBJECT_ID)?;
        let types = required_string(&self.batch, OBJECT_TYPE)?;
        let values_of = self.partition_values_by_object()?;
        for name in &self.missing_columns {
            let f = expected.field_with_name(name)?.clone();
            let col: ArrayRef = if name == READ_VERSION {
                self.restored_read_versions(&ids, &types)
            } else {
                self.restored_partition_column(&f, &ids, &values_of)?
            };
            out.push((f, col));
        }
        Ok(out)
    }

    /// Object id -> (spec id, values of its prefix), for partition namespaces and leaves.
    fn partition_values_by_object(&self) -> Result<HashMap<&str, (i32, &[ScalarValue])>> {
        let mut values_of: HashMap<&str, (i32, &[ScalarValue])> = HashMap::new();
        let keys = self.keys()?;
        for ((spec, key), oid) in &keys.ns_by_key {
            values_of.insert(oid.as_str(), (*spec, key.as_slice()));
        }
        for (leaf, vals) in self.leaves.iter().zip(&keys.leaf_values) {
            values_of.insert(leaf.object_id.as_str(), (leaf.spec_id, vals.as_slice()));
        }
        Ok(values_of)
    }

    /// The `read_version` column: the leaves' recovered versions for tables, the version in
    /// the id for `table_version` rows, NULL elsewhere.
    fn restored_read_versions(&self, ids: &StringArray, types: &StringArray) -> ArrayRef {
        let read_version: HashMap<&str, Option<u64>> = self
            .leaves
            .iter()
            .map(|l| (l.object_id.as_str(), l.read_version))
            .collect();
        let n = self.batch.num_rows();
        Arc::new(UInt64Array::from_iter((0..n).map(|r| {
            let oid = ids.value(r);
            match types.value(r) {
                TABLE => read_version.get(oid).copied().flatten(),
                TABLE_VERSION => oid.rsplit_once('$').and_then(|(_, v)| parse_version(v)),
                _ => None,
            }
        })))
    }

    /// The partition column `f`: each row's value of that field id under its own spec
    /// version, NULL where the row has none.
    fn restored_partition_column(
        &self,
        f: &Field,
        ids: &StringArray,
        values_of: &HashMap<&str, (i32, &[ScalarValue])>,
    ) -> Result<ArrayRef> {
        let name = f.name();
        let n = self.batch.num_rows();
        let fid = name.strip_prefix(PARTITION_COLUMN_PREFIX).unwrap_or(name);
        let vals = (0..n)
            .map(|r| {
                let found = values_of.get(ids.value(r)).and_then(|(spec_id, vals)| {
                    let spec = self.root_props.specs.get(spec_id)?;
                    let k = spec.fields.iter().position(|p| p.field_id == fid)?;
                    vals.get(k).cloned()
                });
                match found {
                    Some(v) => v.cast_to(f.data_type()),
                    None => ScalarValue::try_from(f.data_type()),
                }
            })
            .collect::<std::result::Result<Vec<_>, _>>()?;
        Ok(if vals.is_empty() {
            new_null_array(f.data_type(), 0)
        } else {
            ScalarValue::iter_to_array(vals)?
        })
    }
}

/// The manifest columns another tool dropped (`docs/design.md`, "Manifest columns other tools
/// drop"), as `index` rebuilt them in memory: `read_version` from the `table_version` rows
/// (the head of each table's version chain; the version in each `table_version` row's id)
/// and every `partition_field_*` column from the namespaces' `partition.<field_id>`
/// properties, one row per manifest row. `None` when nothing is missing. The transaction
/// layer persists them (`txn::repair`).
///
/// # Errors
/// `Corrupt` when a value cannot be recovered.
pub fn dropped_columns(snap: &Snapshot) -> Result<Option<RecordBatch>> {
    if snap.missing_columns.is_empty() {
        return Ok(None);
    }
    let mut fields = Vec::new();
    let mut cols: Vec<ArrayRef> = Vec::new();
    let schema = snap.batch.schema();
    for name in &snap.missing_columns {
        fields.push(schema.field_with_name(name)?.clone());
        cols.push(Arc::clone(snap.batch.column_by_name(name).ok_or_else(
            || Error::Internal(format!("column {name} was not rebuilt")),
        )?));
    }
    let n = snap.batch.num_rows();
    Ok(Some(RecordBatch::try_new_with_options(
        Arc::new(Schema::new(fields)),
        cols,
        &crate::arrow::array::RecordBatchOptions::new().with_row_count(Some(n)),
    )?))
}
