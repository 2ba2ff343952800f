//! Indexing a manifest snapshot: its leaves, and the lookups writers need (leaves and
//! namespaces by partition values, rows by object id, recorded versions by table), plus the
//! queries answered from them.

use std::collections::HashMap;
use std::sync::Arc;

use lance::dataset::Dataset;

use crate::arrow::array::{
    new_null_array, Array, ArrayRef, AsArray, RecordBatch, StringArray, UInt64Array,
};
use crate::arrow::compute::cast;
use crate::arrow::datatypes::{DataType, Field, Schema, UInt64Type};
use crate::datafusion::scalar::ScalarValue;
use crate::error::{corrupt, Error, Result};
use crate::ns::infra::storage::Storage;
use crate::ns::infra::values;
use crate::ns::PARTITION_COLUMN_PREFIX;
use crate::spec::PartitionSpec;

use super::format::{
    manifest_schema, parse_props, parse_version, partition_column, required_string, spec_of,
    string_column, BASE_OBJECTS, LOCATION, METADATA, NAMESPACE, OBJECT_ID, OBJECT_TYPE,
    READ_VERSION, TABLE, TABLE_VERSION,
};
use super::root::Root;
use super::versions::VersionRow;
use super::Snapshot;

/// One leaf partition table.
#[derive(Debug, Clone)]
pub struct Leaf {
    /// Row in [`Snapshot::batch`].
    pub row: usize,
    /// `v<N>$<id>...$dataset`.
    pub object_id: String,
    /// Directory relative to the root.
    pub location: String,
    /// Version to read (strong mode); `None` reads the latest (weak mode).
    pub read_version: Option<u64>,
    /// Spec version.
    pub spec_id: i32,
}

/// The lookups writers need, built on first use (readers only prune and never pay for them).
#[derive(Debug, Clone, Default)]
pub struct Keys {
    /// Partition values of every leaf (same order as [`Snapshot::leaves`]).
    pub leaf_values: Vec<Vec<ScalarValue>>,
    /// Leaf index by (spec id, values).
    pub leaf_by_key: HashMap<(i32, Vec<ScalarValue>), usize>,
    /// Namespace object id by (spec id, value prefix); the prefix length is the level.
    pub ns_by_key: HashMap<(i32, Vec<ScalarValue>), String>,
    /// Row of every object id.
    pub row_by_id: HashMap<String, usize>,
    /// Recorded versions by table object id.
    pub versions: HashMap<String, Vec<VersionRow>>,
}

/// `field=value, field=value` of a partition key (values in their string form).
pub fn describe_key(field_ids: &[String], key: &[ScalarValue]) -> String {
    field_ids
        .iter()
        .zip(key)
        .map(|(f, v)| {
            let text = if v.is_null() {
                "NULL".to_string()
            } else {
                match crate::values::to_string(v) {
                    Ok(Some(s)) => format!("{s:?}"),
                    _ => "''".to_string(),
                }
            };
            format!("{f}={text}")
        })
        .collect::<Vec<_>>()
        .join(", ")
}

impl Snapshot {
    /// Indexes the manifest rows `batch` (read from `dataset`): finds the leaves, and
    /// rebuilds in memory the columns another writer dropped.
    pub(super) fn index(
        storage: &Storage,
        dataset: Arc<Dataset>,
        root_props: Root,
        batch: RecordBatch,
        light: bool,
    ) -> Result<Self> {
        let version = dataset.version().version;
        let ids = required_string(&batch, OBJECT_ID)?;
        let types = required_string(&batch, OBJECT_TYPE)?;
        let locations = string_column(&batch, LOCATION)?;
        let read_versions = read_version_column(&batch)?;
        let missing_columns = absent_columns(&batch, &root_props, light)?;
        let leaves = find_leaves(
            &root_props,
            &ids,
            &types,
            locations.as_ref(),
            read_versions.as_ref(),
        )?;
        let mut snap = Self {
            storage: storage.clone(),
            dataset,
            version,
            root_props,
            batch,
            leaves,
            keys: Arc::default(),
            write_ids: Arc::default(),
            recorded: Arc::default(),
            column_stats: Arc::default(),
            light,
            missing_columns,
        };
        if read_versions.is_some() && snap.missing_columns.is_empty() {
            return Ok(snap);
        }
        // Another writer dropped columns: build the lookups now to recover from them.
        snap.recover_dropped_columns(read_versions.is_none())?;
        Ok(snap)
    }

    /// The writers' lookups, built on first use.
    ///
    /// # Errors
    /// `Corrupt` for inconsistent rows (two partitions with the same values, a dangling
    /// namespace reference, a malformed value property).
    pub fn keys(&self) -> Result<&Keys> {
        if let Some(k) = self.keys.get() {
            return Ok(k);
        }
        let built = self.build_keys()?;
        Ok(self.keys.get_or_init(|| built))
    }

    fn build_keys(&self) -> Result<Keys> {
        let batch = &self.batch;
        let ids = required_string(batch, OBJECT_ID)?;
        let types = required_string(batch, OBJECT_TYPE)?;
        let metadata = string_column(batch, METADATA)?;
        let mut row_by_id = HashMap::with_capacity(batch.num_rows());
        for r in 0..batch.num_rows() {
            row_by_id.insert(ids.value(r).to_string(), r);
        }
        let rows = RowValues::new(self, metadata, &row_by_id)?;
        let mut keys = Keys::default();
        self.index_leaf_values(&rows, &mut keys)?;
        self.index_namespaces_and_versions(&ids, &types, &rows, &mut keys)?;
        keys.row_by_id = row_by_id;
        Ok(keys)
    }

    /// Fills [`Keys::leaf_values`] and [`Keys::leaf_by_key`].
    ///
    /// # Errors
    /// `Corrupt` when two leaves of a spec version have the same values.
    fn index_leaf_values(&self, rows: &RowValues<'_>, keys: &mut Keys) -> Result<()> {
        let mut leaf_values = Vec::with_capacity(self.leaves.len());
        let mut leaf_by_key = HashMap::with_capacity(self.leaves.len());
        for (i, leaf) in self.leaves.iter().enumerate() {
            let spec = &self.root_props.specs[&leaf.spec_id];
            let path: Vec<&str> = leaf.object_id.split('$').collect();
            let vals = (0..spec.fields.len())
                .map(|k| rows.value(leaf.row, spec, k, &path))
                .collect::<Result<Vec<_>>>()?;
            if leaf_by_key
                .insert((leaf.spec_id, vals.clone()), i)
                .is_some()
            {
                return corrupt!(
                    "two partitions of spec v{} have the same values (second: {:?})",
                    leaf.spec_id,
                    leaf.object_id
                );
            }
            leaf_values.push(vals);
        }
        keys.leaf_values = leaf_values;
        keys.leaf_by_key = leaf_by_key;
        Ok(())
    }

    /// Fills [`Keys::ns_by_key`] (partition namespaces) and [`Keys::versions`] (recorded
    /// table versions).
    fn index_namespaces_and_versions(
        &self,
        ids: &StringArray,
        types: &StringArray,
        rows: &RowValues<'_>,
        keys: &mut Keys,
    ) -> Result<()> {
        let mut ns_by_key = HashMap::new();
        let mut versions: HashMap<String, Vec<VersionRow>> = HashMap::new();
        for r in 0..self.batch.num_rows() {
            let oid = ids.value(r);
            match types.value(r) {
                NAMESPACE => {
                    let Some(spec_id) = spec_of(oid) else {
                        continue;
                    };
                    let Some(spec) = self.root_props.specs.get(&spec_id) else {
                        continue;
                    };
                    let path: Vec<&str> = oid.split('$').collect();
                    let level = path.len() - 1;
                    if level == 0 || level > spec.fields.len() {
                        continue;
                    }
                    let vals = (0..level)
                        .map(|k| rows.value(r, spec, k, &path))
                        .collect::<Result<Vec<_>>>()?;
                    ns_by_key.insert((spec_id, vals), oid.to_string());
                }
                TABLE_VERSION => {
                    let Some((table, ver)) = oid.rsplit_once('$') else {
                        continue;
                    };
                    let Some(ver) = parse_version(ver) else {
                        continue;
                    };
                    versions
                        .entry(table.to_string())
                        .or_default()
                        .push(VersionRow {
                            version: ver,
                            row: r,
                        });
                }
                _ => {}
            }
        }
        keys.ns_by_key = ns_by_key;
        keys.versions = versions;
        Ok(())
    }

    /// The leaf of spec `spec_id` with partition values `values`.
    pub fn leaf(&self, spec_id: i32, values: &[ScalarValue]) -> Result<Option<&Leaf>> {
        Ok(self
            .keys()?
            .leaf_by_key
            .get(&(spec_id, values.to_vec()))
            .map(|&i| &self.leaves[i]))
    }

    /// The properties (`metadata` column) of an object.
    pub fn props(&self, object_id: &str) -> Result<Option<HashMap<String, String>>> {
        let Some(&r) = self.keys()?.row_by_id.get(object_id) else {
            return Ok(None);
        };
        let m = string_column(&self.batch, METADATA)?;
        Ok(Some(match m {
            Some(m) if !m.is_null(r) => parse_props(Some(m.value(r)))?,
            _ => HashMap::new(),
        }))
    }

    /// The object type of an object.
    pub fn object_type(&self, object_id: &str) -> Result<Option<String>> {
        let Some(&r) = self.keys()?.row_by_id.get(object_id) else {
            return Ok(None);
        };
        let t = required_string(&self.batch, OBJECT_TYPE)?;
        Ok(Some(t.value(r).to_string()))
    }

    /// The leaf table `object_id` (`None` when the manifest has no such leaf).
    ///
    /// # Errors
    /// As [`Snapshot::keys`].
    pub fn leaf_by_id(&self, object_id: &str) -> Result<Option<&Leaf>> {
        Ok(self.leaf_index(object_id)?.map(|i| &self.leaves[i]))
    }

    /// The index in [`Snapshot::leaves`] of the leaf table `object_id`.
    ///
    /// # Errors
    /// As [`Snapshot::keys`].
    pub fn leaf_index(&self, object_id: &str) -> Result<Option<usize>> {
        let Some(&row) = self.keys()?.row_by_id.get(object_id) else {
            return Ok(None);
        };
        // Leaves are listed in row order.
        Ok(self.leaves.binary_search_by_key(&row, |l| l.row).ok())
    }

    /// A leaf's partition values for messages (`field=value, ...`), or its object id when
    /// the values cannot be read.
    pub fn describe_leaf(&self, object_id: &str) -> String {
        let found = self.leaves.iter().position(|l| l.object_id == object_id);
        match (found, self.keys()) {
            (Some(i), Ok(k)) => {
                let spec = &self.root_props.specs[&self.leaves[i].spec_id];
                let ids: Vec<String> = spec.fields.iter().map(|f| f.field_id.clone()).collect();
                describe_key(&ids, &k.leaf_values[i])
            }
            _ => format!("{object_id:?}"),
        }
    }

    /// The given leaves as a batch: `object_id`, `location`, `read_version`, `spec_id`, then
    /// one column per partition field id of any spec (NULL where a spec lacks the field).
    ///
    /// # Errors
    /// `Arrow` errors only.
    pub fn leaves_batch(&self, idx: &[usize]) -> Result<RecordBatch> {
        use crate::arrow::array::{Int32Array, UInt32Array};
        use crate::arrow::compute::take;
        let leaves: Vec<&Leaf> = idx.iter().map(|&i| &self.leaves[i]).collect();
        let mut fields = vec![
            Field::new(OBJECT_ID, DataType::Utf8, false),
            Field::new(LOCATION, DataType::Utf8, false),
            Field::new(READ_VERSION, DataType::UInt64, true),
            Field::new("spec_id", DataType::Int32, false),
        ];
        let mut cols: Vec<ArrayRef> = vec![
            Arc::new(StringArray::from_iter_values(
                leaves.iter().map(|l| &l.object_id),
            )),
            Arc::new(StringArray::from_iter_values(
                leaves.iter().map(|l| &l.location),
            )),
            Arc::new(UInt64Array::from_iter(
                leaves.iter().map(|l| l.read_version),
            )),
            Arc::new(Int32Array::from_iter_values(
                leaves.iter().map(|l| l.spec_id),
            )),
        ];
        let rows = UInt32Array::from_iter_values(leaves.iter().map(|l| l.row as u32));
        let mschema = manifest_schema(self.root_props.specs.values())?;
        for f in mschema.fields() {
            let Some(fid) = f.name().strip_prefix(PARTITION_COLUMN_PREFIX) else {
                continue;
            };
            let col = match self.batch.column_by_name(f.name()) {
                Some(c) => take(c.as_ref(), &rows, None)?,
                // Columns another writer dropped were rebuilt when the snapshot was indexed.
                None => new_null_array(f.data_type(), leaves.len()),
            };
            fields.push(Field::new(fid, f.data_type().clone(), true));
            cols.push(col);
        }
        Ok(RecordBatch::try_new_with_options(
            Arc::new(Schema::new(fields)),
            cols,
            &crate::arrow::array::RecordBatchOptions::new().with_row_count(Some(leaves.len())),
        )?)
    }

    /// Runtime properties of a namespace (`DescribeNamespace`): `partition_spec` for a spec
    /// version namespace, `partition.<field_id>` (its own level only) for a partition
    /// namespace, plus any stored properties.
    ///
    /// # Errors
    /// `NotFound` for an unknown namespace.
    pub fn describe_namespace(&self, path: &[String]) -> Result<HashMap<String, String>> {
        if path.is_empty() {
            return Ok(self.root_props.props.clone());
        }
        let oid = path.join("$");
        let is_ns = self.object_type(&oid)?.as_deref() == Some(NAMESPACE);
        if !is_ns {
            return Err(Error::NotFound(format!("no namespace {path:?}")));
        }
        let mut props = self.props(&oid)?.unwrap_or_default();
        let Some(spec_id) = spec_of(&oid) else {
            return Ok(props);
        };
        let Some(spec) = self.root_props.specs.get(&spec_id) else {
            return Ok(props);
        };
        if path.len() == 1 {
            props.insert("partition_spec".into(), spec.to_json()?);
            return Ok(props);
        }
        let level = path.len() - 1;
        if level <= spec.fields.len() {
            let f = &spec.fields[level - 1];
            let key = format!("partition.{}", f.field_id);
            if let std::collections::hash_map::Entry::Vacant(slot) = props.entry(key) {
                if let Some(col) = self.batch.column_by_name(&partition_column(&f.field_id)) {
                    let r = self.keys()?.row_by_id[&oid];
                    if let Some(s) =
                        crate::values::to_string(&ScalarValue::try_from_array(col, r)?)?
                    {
                        slot.insert(s);
                    }
                }
            }
        }
        Ok(props)
    }
}

/// Row counts of leaves at their read versions (concurrently).
///
/// # Errors
/// `Lance` when a leaf cannot be opened.
pub async fn count_rows(snap: &Snapshot, idx: &[usize]) -> Result<Vec<u64>> {
    Ok(leaf_sizes(snap, idx)
        .await?
        .into_iter()
        .map(|(rows, _)| rows)
        .collect())
}

/// Rows and fragments of the leaves `idx` (from Lance metadata, no data read): how a reader
/// splits its work.
///
/// # Errors
/// `Lance` when a leaf cannot be opened.
pub async fn leaf_sizes(snap: &Snapshot, idx: &[usize]) -> Result<Vec<(u64, usize)>> {
    Ok(super::stats::leaf_stats(snap, idx, false)
        .await?
        .into_iter()
        .map(|s| (s.totals.rows, s.totals.fragments as usize))
        .collect())
}

/// The `read_version` column as UInt64, `None` when another writer dropped it.
fn read_version_column(batch: &RecordBatch) -> Result<Option<UInt64Array>> {
    Ok(match batch.column_by_name(READ_VERSION) {
        Some(c) => Some(
            cast(c, &DataType::UInt64)?
                .as_primitive::<UInt64Type>()
                .clone(),
        ),
        None => None,
    })
}

/// The expected manifest columns `batch` lacks (`base_objects` is never needed; a light
/// snapshot skips `metadata` on purpose).
fn absent_columns(batch: &RecordBatch, root_props: &Root, light: bool) -> Result<Vec<String>> {
    let expected = manifest_schema(root_props.specs.values())?;
    let mut missing_columns = Vec::new();
    for f in expected.fields() {
        if batch.column_by_name(f.name()).is_none()
            && f.name() != BASE_OBJECTS
            && !(light && f.name() == METADATA)
        {
            missing_columns.push(f.name().clone());
        }
    }
    Ok(missing_columns)
}

/// The leaves among the manifest rows: `table` rows named `v<N>$<one id per field>$dataset`
/// of a known spec version.
fn find_leaves(
    root_props: &Root,
    ids: &StringArray,
    types: &StringArray,
    locations: Option<&StringArray>,
    read_versions: Option<&UInt64Array>,
) -> Result<Vec<Leaf>> {
    let mut leaves = Vec::new();
    for r in 0..ids.len() {
        if types.value(r) != TABLE {
            continue;
        }
        let oid = ids.value(r);
        let Some(spec_id) = spec_of(oid) else {
            continue;
        };
        let Some(spec) = root_props.specs.get(&spec_id) else {
            continue;
        };
        let n = spec.fields.len();
        if oid.split('$').count() != n + 2 || !oid.ends_with(crate::ns::LEAF_TABLE) {
            continue;
        }
        let location = match locations {
            Some(l) if !l.is_null(r) => l.value(r).to_string(),
            _ => return corrupt!("table {oid:?} has no location"),
        };
        let read_version = read_versions.and_then(|rv| (!rv.is_null(r)).then(|| rv.value(r)));
        leaves.push(Leaf {
            row: r,
            object_id: oid.to_string(),
            location,
            read_version,
            spec_id,
        });
    }
    Ok(leaves)
}

/// Reads the partition values and properties of manifest rows while the lookups are built.
struct RowValues<'a> {
    /// The `metadata` column (absent from light snapshots).
    metadata: Option<StringArray>,
    /// Row of every object id.
    row_by_id: &'a HashMap<String, usize>,
    /// Per spec: the type and (when present) the manifest column of every field.
    cols: HashMap<i32, Vec<(DataType, Option<ArrayRef>)>>,
}

impl<'a> RowValues<'a> {
    fn new(
        snap: &Snapshot,
        metadata: Option<StringArray>,
        row_by_id: &'a HashMap<String, usize>,
    ) -> Result<Self> {
        let batch = &snap.batch;
        let mut cols: HashMap<i32, Vec<(DataType, Option<ArrayRef>)>> = HashMap::new();
        for (id, spec) in &snap.root_props.specs {
            let mut v = Vec::with_capacity(spec.fields.len());
            for f in &spec.fields {
                v.push((
                    f.result_type.to_arrow()?,
                    batch
                        .column_by_name(&partition_column(&f.field_id))
                        .cloned(),
                ));
            }
            cols.insert(*id, v);
        }
        Ok(Self {
            metadata,
            row_by_id,
            cols,
        })
    }

    /// The properties (`metadata` cell) of row `r`.
    fn props(&self, r: usize) -> Result<HashMap<String, String>> {
        match &self.metadata {
            Some(m) if !m.is_null(r) => parse_props(Some(m.value(r))),
            _ => Ok(HashMap::new()),
        }
    }

    /// The value of field `k` of spec `spec` at row `r`: the typed column, or (when another
    /// writer dropped it) the ancestor namespace's `partition.<field_id>` property.
    fn value(
        &self,
        r: usize,
        spec: &PartitionSpec,
        k: usize,
        path: &[&str],
    ) -> Result<ScalarValue> {
        let (dt, col) = &self.cols[&spec.id][k];
        if let Some(col) = col {
            let v = ScalarValue::try_from_array(col, r)?;
            return Ok(if &v.data_type() == dt {
                v
            } else {
                v.cast_to(dt)?
            });
        }
        let ancestor = path[..k + 2].join("$");
        let Some(&ar) = self.row_by_id.get(&ancestor) else {
            return corrupt!("namespace {ancestor:?} is missing from the manifest");
        };
        values::from_properties(&self.props(ar)?, &spec.fields[k].field_id, dt)
    }
}
