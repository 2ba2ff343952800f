//! The `__manifest` table: the DirectoryNamespace V2 columns plus `read_version` and one
//! `partition_field_<field_id>` column per partition field of any spec version; root
//! properties (schema, `partition_spec_v<N>`) in its Lance table metadata (D9).
//!
//! A [`Snapshot`] is the whole manifest at one version, indexed for lookups: leaves by spec
//! version and partition values, namespaces by value prefix, `table_version` rows by table.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use lance::dataset::builder::DatasetBuilder;
use lance::dataset::{Dataset, InsertBuilder, WriteMode, WriteParams};

use crate::arrow::array::{
    new_null_array, Array, ArrayRef, AsArray, ListBuilder, RecordBatch, StringArray, StringBuilder,
    UInt64Array,
};
use crate::arrow::compute::cast;
use crate::arrow::datatypes::{DataType, Field, Schema, SchemaRef, UInt64Type};
use crate::datafusion::scalar::ScalarValue;
use crate::error::{corrupt, Error, Result};
pub use crate::field_ids::assign_field_ids;
use crate::field_ids::{max_field_id, LAST_FIELD_ID_KEY};
use crate::ns::{
    join_uri, values, MANIFEST_DIR, PARTITION_COLUMN_PREFIX, SCHEMA_KEY, SPEC_KEY_PREFIX,
};
use crate::spec::{CompiledSpec, PartitionSpec};
use crate::types::JsonSchema;

/// `object_id` column (primary key; `$`-separated path).
pub const OBJECT_ID: &str = "object_id";
/// `object_type` column: `namespace`, `table` or `table_version`.
pub const OBJECT_TYPE: &str = "object_type";
/// `location` column: table directory relative to the root.
pub const LOCATION: &str = "location";
/// `metadata` column: JSON object of string properties.
pub const METADATA: &str = "metadata";
/// `base_objects` column (DirectoryNamespace V2).
pub const BASE_OBJECTS: &str = "base_objects";
/// `read_version` column (strong mode).
pub const READ_VERSION: &str = "read_version";

/// Object type of namespaces.
pub const NAMESPACE: &str = "namespace";
/// Object type of tables.
pub const TABLE: &str = "table";
/// Object type of recorded table versions.
pub const TABLE_VERSION: &str = "table_version";

/// The manifest column holding partition field `fid`.
pub fn partition_column(fid: &str) -> String {
    format!("{PARTITION_COLUMN_PREFIX}{fid}")
}

/// The DirectoryNamespace V2 columns plus `read_version`.
pub fn base_fields() -> Vec<Field> {
    vec![
        // DirectoryNamespace V2 marks object_id as the (unenforced) primary key; without it
        // pylance adds the marker in a commit of its own the first time it opens the manifest.
        Field::new(OBJECT_ID, DataType::Utf8, false).with_metadata(HashMap::from([(
            "lance-schema:unenforced-primary-key:position".to_string(),
            "0".to_string(),
        )])),
        Field::new(OBJECT_TYPE, DataType::Utf8, false),
        Field::new(LOCATION, DataType::Utf8, true),
        Field::new(METADATA, DataType::Utf8, true),
        Field::new(
            BASE_OBJECTS,
            DataType::List(Arc::new(Field::new("object_id", DataType::Utf8, true))),
            true,
        ),
        Field::new(READ_VERSION, DataType::UInt64, true),
    ]
}

/// The manifest schema for a set of specs: base columns, then one partition column per
/// distinct field id, in order of first appearance.
pub fn manifest_schema<'a>(specs: impl IntoIterator<Item = &'a PartitionSpec>) -> Result<Schema> {
    let mut fields = base_fields();
    let mut seen = HashMap::new();
    for spec in specs {
        for f in &spec.fields {
            let dt = f.result_type.to_arrow()?;
            match seen.get(&f.field_id) {
                Some(prev) if prev != &dt => {
                    return corrupt!(
                    "partition field {:?} has result_type {prev} in one spec and {dt} in another",
                    f.field_id
                )
                }
                Some(_) => {}
                None => {
                    seen.insert(f.field_id.clone(), dt.clone());
                    fields.push(Field::new(partition_column(&f.field_id), dt, true));
                }
            }
        }
    }
    Ok(Schema::new(fields))
}

/// Root properties: the namespace schema and every spec version.
#[derive(Debug, Clone)]
pub struct Root {
    /// All root properties as stored.
    pub props: HashMap<String, String>,
    /// The namespace schema (Arrow, `lance:field_id` on every field).
    pub schema: SchemaRef,
    /// Spec versions by id.
    pub specs: BTreeMap<i32, PartitionSpec>,
}

impl Root {
    /// Parses root properties.
    ///
    /// # Errors
    /// `NotFound` without any spec key; `Corrupt` for malformed JSON.
    pub fn parse(props: HashMap<String, String>) -> Result<Self> {
        let mut specs = BTreeMap::new();
        for (k, v) in &props {
            if let Some(n) = k.strip_prefix(SPEC_KEY_PREFIX) {
                let n: i32 = n
                    .parse()
                    .map_err(|_| Error::Corrupt(format!("bad spec key {k:?}")))?;
                let spec = PartitionSpec::from_json(v)
                    .map_err(|e| Error::Corrupt(format!("{k} is not a partition spec: {e}")))?;
                if spec.id != n {
                    return corrupt!("{k} holds a spec with id {}", spec.id);
                }
                specs.insert(n, spec);
            }
        }
        if specs.is_empty() {
            return Err(Error::NotFound(
                "not a partitioned namespace: the manifest has no partition_spec_v<N> property"
                    .into(),
            ));
        }
        let schema_text = props
            .get(SCHEMA_KEY)
            .ok_or_else(|| Error::Corrupt("the manifest has no schema property".into()))?;
        let js: JsonSchema = serde_json::from_str(schema_text)
            .map_err(|e| Error::Corrupt(format!("malformed schema property: {e}")))?;
        let schema = Arc::new(
            js.to_arrow()
                .map_err(|e| Error::Corrupt(format!("bad schema property: {e}")))?,
        );
        Ok(Self {
            props,
            schema,
            specs,
        })
    }

    /// The newest spec version.
    pub fn current_spec(&self) -> &PartitionSpec {
        // `parse` guarantees at least one spec.
        self.specs.values().next_back().expect("at least one spec")
    }
}

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

/// A recorded table version (`<table>$<version>` row).
#[derive(Debug, Clone)]
pub struct TableVersion {
    /// The version.
    pub version: u64,
    /// Its properties (`operation`, `base_version`).
    pub props: HashMap<String, String>,
}

/// `table_version` property naming the distributed write that committed the version (so a
/// second commit of the same write is recognised and becomes a no-op).
pub const WRITE_ID_KEY: &str = "write_id";

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
    pub versions: HashMap<String, Vec<TableVersion>>,
}

/// The whole manifest at one version, indexed.
#[derive(Debug, Clone)]
pub struct Snapshot {
    /// Root URI of the namespace.
    pub root: String,
    /// The manifest dataset at [`Snapshot::version`].
    pub dataset: Arc<Dataset>,
    /// Manifest version.
    pub version: u64,
    /// Root properties.
    pub root_props: Root,
    /// All manifest rows.
    pub batch: RecordBatch,
    /// Leaves.
    pub leaves: Vec<Leaf>,
    /// Lookups for writers, see [`Snapshot::keys`].
    keys: std::sync::OnceLock<Keys>,
    /// Loaded without the property columns (see [`Snapshot::load_with`]).
    pub light: bool,
    /// Expected manifest columns that are missing (another writer dropped them, D14).
    pub missing_columns: Vec<String>,
}

fn manifest_uri(root: &str) -> String {
    join_uri(root, MANIFEST_DIR)
}

/// Parses a `metadata` cell (JSON object of strings; non-string values are kept as JSON).
pub fn parse_props(text: Option<&str>) -> Result<HashMap<String, String>> {
    let Some(text) = text.filter(|t| !t.trim().is_empty()) else {
        return Ok(HashMap::new());
    };
    let v: serde_json::Value = serde_json::from_str(text)
        .map_err(|e| Error::Corrupt(format!("malformed metadata JSON {text:?}: {e}")))?;
    let serde_json::Value::Object(map) = v else {
        return corrupt!("metadata is not a JSON object: {text:?}");
    };
    Ok(map
        .into_iter()
        .filter_map(|(k, v)| match v {
            serde_json::Value::String(s) => Some((k, s)),
            serde_json::Value::Null => None,
            other => Some((k, other.to_string())),
        })
        .collect())
}

/// Serialises properties as a JSON object with sorted keys.
pub fn props_json(props: &HashMap<String, String>) -> String {
    let sorted: BTreeMap<&String, &String> = props.iter().collect();
    serde_json::to_string(&sorted).unwrap_or_else(|_| "{}".into())
}

fn string_column(batch: &RecordBatch, name: &str) -> Result<Option<StringArray>> {
    match batch.column_by_name(name) {
        None => Ok(None),
        Some(c) => {
            let c = cast(c, &DataType::Utf8)?;
            Ok(Some(c.as_string::<i32>().clone()))
        }
    }
}

/// Parses a version segment (`7`, or zero-padded to 20 digits).
pub fn parse_version(s: &str) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// The spec id of a `v<N>...` object id.
pub fn spec_of(object_id: &str) -> Option<i32> {
    let first = object_id.split('$').next()?;
    first.strip_prefix('v')?.parse().ok()
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
                match values::to_string(v) {
                    Ok(Some(s)) => format!("{s:?}"),
                    _ => "''".to_string(),
                }
            };
            format!("{f}={text}")
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The error for a manifest version that does not exist, naming those that do.
async fn missing_version(root: &str, version: u64, cause: lance::Error) -> Error {
    let listed = match DatasetBuilder::from_uri(manifest_uri(root)).load().await {
        Ok(ds) => ds.versions().await.ok(),
        Err(_) => None,
    };
    let Some(versions) = listed else {
        return Error::NotFound(format!(
            "no partitioned namespace at {root:?} (no {MANIFEST_DIR} table)"
        ));
    };
    let mut ids: Vec<u64> = versions.iter().map(|v| v.version).collect();
    ids.sort_unstable();
    if ids.contains(&version) {
        return cause.into();
    }
    Error::NotFound(format!(
        "manifest version {version} of {root:?} does not exist; it has versions {}",
        version_ranges(&ids)
    ))
}

/// `1-4, 7, 9-10` for sorted version numbers.
fn version_ranges(ids: &[u64]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < ids.len() {
        let start = ids[i];
        let mut end = start;
        while i + 1 < ids.len() && ids[i + 1] == end + 1 {
            i += 1;
            end = ids[i];
        }
        out.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
        i += 1;
    }
    out.join(", ")
}

impl Snapshot {
    /// Loads the manifest of `root` at `version` (latest when `None`).
    ///
    /// # Errors
    /// `NotFound` when there is no partitioned namespace; `Corrupt` for malformed metadata.
    pub async fn load(root: &str, version: Option<u64>) -> Result<Self> {
        Self::load_with(root, version, false).await
    }

    /// Like [`Snapshot::load`]; a `light` snapshot (for reads: pruning and scans) skips the
    /// `metadata` and `base_objects` columns, so it has no stored properties and its
    /// [`Snapshot::keys`] hold no `table_version` properties. Writers load full snapshots.
    ///
    /// # Errors
    /// As [`Snapshot::load`].
    pub async fn load_with(root: &str, version: Option<u64>, light: bool) -> Result<Self> {
        let uri = manifest_uri(root);
        let mut builder = DatasetBuilder::from_uri(&uri);
        if let Some(v) = version {
            builder = builder.with_version(v);
        }
        let dataset = match builder.load().await {
            Ok(d) => d,
            Err(e) if version.is_some() => {
                return Err(missing_version(root, version.unwrap_or_default(), e).await)
            }
            Err(lance::Error::DatasetNotFound { .. } | lance::Error::NotFound { .. }) => {
                return Err(Error::NotFound(format!(
                    "no partitioned namespace at {root:?} (no {MANIFEST_DIR} table)"
                )))
            }
            Err(e) => return Err(e.into()),
        };
        Self::from_dataset(root, Arc::new(dataset), light).await
    }

    /// A read snapshot at manifest version `version` (time travel, `as_of`).
    ///
    /// # Errors
    /// `NotFound` naming the versions that exist; `InvalidArgument` on a weak-mode namespace,
    /// whose manifest records no leaf versions (an old manifest version cannot say what the
    /// leaves held then).
    pub async fn load_as_of(root: &str, version: u64) -> Result<Self> {
        let snap = Self::load_with(root, Some(version), true).await?;
        if !snap.strong_mode(None)? {
            return Err(Error::InvalidArgument(format!(
                "as_of is not available on {root:?}: it commits in weak mode, where leaves are \
                 committed directly and the manifest records no leaf versions, so manifest \
                 version {version} cannot say what the partitions held then"
            )));
        }
        Ok(snap)
    }

    /// Indexes an opened manifest dataset.
    ///
    /// # Errors
    /// As [`Snapshot::load`].
    pub async fn from_dataset(root: &str, dataset: Arc<Dataset>, light: bool) -> Result<Self> {
        let mut props = dataset.metadata().clone();
        if !props.keys().any(|k| k.starts_with(SPEC_KEY_PREFIX)) {
            // Another writer's form: root properties in the Arrow schema metadata (D9).
            props = dataset.schema().metadata.clone();
        }
        let root_props = Root::parse(props)?;
        let expected = manifest_schema(root_props.specs.values())?;
        let stored = dataset.schema();
        let complete = expected
            .fields()
            .iter()
            .all(|f| f.name() == BASE_OBJECTS || stored.field(f.name()).is_some());
        let mut scan = dataset.scan();
        // Light snapshots skip the property columns; a manifest missing columns needs them
        // (partition values fall back to the properties).
        let light = light && complete;
        if light {
            let cols: Vec<&str> = stored
                .fields
                .iter()
                .map(|f| f.name.as_str())
                .filter(|n| *n != METADATA && *n != BASE_OBJECTS)
                .collect();
            scan.project(&cols)?;
        }
        let batch = scan.try_into_batch().await?;
        Self::index(root, dataset, root_props, batch, light)
    }

    fn index(
        root: &str,
        dataset: Arc<Dataset>,
        root_props: Root,
        batch: RecordBatch,
        light: bool,
    ) -> Result<Self> {
        let version = dataset.version().version;
        let ids = string_column(&batch, OBJECT_ID)?
            .ok_or_else(|| Error::Corrupt("the manifest has no object_id column".into()))?;
        let types = string_column(&batch, OBJECT_TYPE)?
            .ok_or_else(|| Error::Corrupt("the manifest has no object_type column".into()))?;
        let locations = string_column(&batch, LOCATION)?;
        let read_versions: Option<UInt64Array> = match batch.column_by_name(READ_VERSION) {
            Some(c) => Some(
                cast(c, &DataType::UInt64)?
                    .as_primitive::<UInt64Type>()
                    .clone(),
            ),
            None => None,
        };
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
        let mut leaves = Vec::new();
        for r in 0..batch.num_rows() {
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
            let location = match &locations {
                Some(l) if !l.is_null(r) => l.value(r).to_string(),
                _ => return corrupt!("table {oid:?} has no location"),
            };
            let read_version = read_versions
                .as_ref()
                .and_then(|rv| (!rv.is_null(r)).then(|| rv.value(r)));
            leaves.push(Leaf {
                row: r,
                object_id: oid.to_string(),
                location,
                read_version,
                spec_id,
            });
        }
        let mut snap = Self {
            root: root.to_string(),
            dataset,
            version,
            root_props,
            batch,
            leaves,
            keys: std::sync::OnceLock::new(),
            light,
            missing_columns,
        };
        if read_versions.is_some() && snap.missing_columns.is_empty() {
            return Ok(snap);
        }
        // Another writer dropped columns: build the lookups now to recover from them.
        snap.keys()?;
        if read_versions.is_none() {
            snap.recover_read_versions()?;
        }
        if !snap.missing_columns.is_empty() {
            // Rebuild what another writer dropped, so pruning and listings work unchanged.
            let n = snap.batch.num_rows();
            let mut fields: Vec<Field> = snap
                .batch
                .schema()
                .fields()
                .iter()
                .map(|f| f.as_ref().clone())
                .collect();
            let mut cols = snap.batch.columns().to_vec();
            for (f, c) in snap.restore_columns()? {
                fields.push(f);
                cols.push(c);
            }
            snap.batch = RecordBatch::try_new_with_options(
                Arc::new(Schema::new(fields)),
                cols,
                &crate::arrow::array::RecordBatchOptions::new().with_row_count(Some(n)),
            )?;
        }
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
        let ids = string_column(batch, OBJECT_ID)?
            .ok_or_else(|| Error::Corrupt("the manifest has no object_id column".into()))?;
        let types = string_column(batch, OBJECT_TYPE)?
            .ok_or_else(|| Error::Corrupt("the manifest has no object_type column".into()))?;
        let metadata = string_column(batch, METADATA)?;
        let mut row_by_id = HashMap::with_capacity(batch.num_rows());
        for r in 0..batch.num_rows() {
            row_by_id.insert(ids.value(r).to_string(), r);
        }
        let props_of = |r: usize| -> Result<HashMap<String, String>> {
            match &metadata {
                Some(m) if !m.is_null(r) => parse_props(Some(m.value(r))),
                _ => Ok(HashMap::new()),
            }
        };
        // Per spec: the type and (when present) the manifest column of every field.
        let mut cols: HashMap<i32, Vec<(DataType, Option<ArrayRef>)>> = HashMap::new();
        for (id, spec) in &self.root_props.specs {
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
        // The value of field `k` of spec `spec` at row `r`: the typed column, or (when another
        // writer dropped it) the ancestor namespace's `partition.<field_id>` property.
        let value_at =
            |r: usize, spec: &PartitionSpec, k: usize, path: &[&str]| -> Result<ScalarValue> {
                let (dt, col) = &cols[&spec.id][k];
                if let Some(col) = col {
                    let v = ScalarValue::try_from_array(col, r)?;
                    return Ok(if &v.data_type() == dt {
                        v
                    } else {
                        v.cast_to(dt)?
                    });
                }
                let ancestor = path[..k + 2].join("$");
                let Some(&ar) = row_by_id.get(&ancestor) else {
                    return corrupt!("namespace {ancestor:?} is missing from the manifest");
                };
                values::from_properties(&props_of(ar)?, &spec.fields[k].field_id, dt)
            };
        let mut leaf_values = Vec::with_capacity(self.leaves.len());
        let mut leaf_by_key = HashMap::with_capacity(self.leaves.len());
        for (i, leaf) in self.leaves.iter().enumerate() {
            let spec = &self.root_props.specs[&leaf.spec_id];
            let path: Vec<&str> = leaf.object_id.split('$').collect();
            let vals = (0..spec.fields.len())
                .map(|k| value_at(leaf.row, spec, k, &path))
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
        let mut ns_by_key = HashMap::new();
        let mut versions: HashMap<String, Vec<TableVersion>> = HashMap::new();
        for r in 0..batch.num_rows() {
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
                        .map(|k| value_at(r, spec, k, &path))
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
                        .push(TableVersion {
                            version: ver,
                            props: props_of(r)?,
                        });
                }
                _ => {}
            }
        }
        Ok(Keys {
            leaf_values,
            leaf_by_key,
            ns_by_key,
            row_by_id,
            versions,
        })
    }

    /// Without a `read_version` column (dropped by another writer), the version to read is the
    /// head of each table's recorded version chain: the version no other names as its base
    /// (or, for rows without `base_version` properties, the newest recorded version).
    fn recover_read_versions(&mut self) -> Result<()> {
        let keys = self.keys()?;
        let recovered: Vec<Option<u64>> = self
            .leaves
            .iter()
            .map(|leaf| {
                let vs = keys.versions.get(&leaf.object_id)?;
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

    /// The newest spec version.
    pub fn current_spec(&self) -> &PartitionSpec {
        self.root_props.current_spec()
    }

    /// The namespace schema.
    pub fn schema(&self) -> SchemaRef {
        Arc::clone(&self.root_props.schema)
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
        let t = string_column(&self.batch, OBJECT_TYPE)?
            .ok_or_else(|| Error::Corrupt("no object_type column".into()))?;
        Ok(Some(t.value(r).to_string()))
    }
}

/// A manifest row to insert or update.
#[derive(Debug, Clone, Default)]
pub struct Row {
    /// `object_id`.
    pub object_id: String,
    /// `object_type`.
    pub object_type: String,
    /// `location` (tables).
    pub location: Option<String>,
    /// Properties (`metadata`).
    pub props: HashMap<String, String>,
    /// `read_version`.
    pub read_version: Option<u64>,
    /// Partition values by field id.
    pub values: Vec<(String, ScalarValue)>,
}

/// Builds a batch of `rows` with the manifest `schema`.
///
/// # Errors
/// `Internal` when a value does not fit its column.
pub fn rows_to_batch(schema: &SchemaRef, rows: &[Row]) -> Result<RecordBatch> {
    let mut columns: Vec<ArrayRef> = Vec::with_capacity(schema.fields().len());
    for f in schema.fields() {
        let col: ArrayRef = match f.name().as_str() {
            OBJECT_ID => Arc::new(StringArray::from_iter_values(
                rows.iter().map(|r| &r.object_id),
            )),
            OBJECT_TYPE => Arc::new(StringArray::from_iter_values(
                rows.iter().map(|r| &r.object_type),
            )),
            LOCATION => Arc::new(StringArray::from_iter(
                rows.iter().map(|r| r.location.as_deref()),
            )),
            METADATA => Arc::new(StringArray::from_iter(
                rows.iter().map(|r| Some(props_json(&r.props))),
            )),
            READ_VERSION => Arc::new(UInt64Array::from_iter(rows.iter().map(|r| r.read_version))),
            BASE_OBJECTS => {
                let mut b =
                    ListBuilder::new(StringBuilder::new()).with_field(match f.data_type() {
                        DataType::List(inner) => Arc::clone(inner),
                        _ => Arc::new(Field::new("object_id", DataType::Utf8, true)),
                    });
                for _ in rows {
                    b.append_null();
                }
                let arr: ArrayRef = Arc::new(b.finish());
                if arr.data_type() == f.data_type() {
                    arr
                } else {
                    new_null_array(f.data_type(), rows.len())
                }
            }
            name => match name.strip_prefix(PARTITION_COLUMN_PREFIX) {
                Some(fid) => {
                    let vals = rows
                        .iter()
                        .map(|r| {
                            r.values
                                .iter()
                                .find(|(k, _)| k == fid)
                                .map(|(_, v)| v.cast_to(f.data_type()))
                                .unwrap_or_else(|| ScalarValue::try_from(f.data_type()))
                        })
                        .collect::<std::result::Result<Vec<_>, _>>()?;
                    if vals.is_empty() {
                        new_null_array(f.data_type(), 0)
                    } else {
                        ScalarValue::iter_to_array(vals)?
                    }
                }
                None => new_null_array(f.data_type(), rows.len()),
            },
        };
        columns.push(col);
    }
    Ok(RecordBatch::try_new_with_options(
        Arc::clone(schema),
        columns,
        &crate::arrow::array::RecordBatchOptions::new().with_row_count(Some(rows.len())),
    )?)
}

/// Creates a partitioned namespace at `root`: validates the spec against the schema (D7) and
/// writes `__manifest` with the `v<id>` namespace row and the root properties.
///
/// Returns the schema as stored (with field ids).
///
/// # Errors
/// `AlreadyExists` when a manifest exists; `Spec` for an invalid spec or schema.
pub async fn create(
    root: &str,
    schema: &Schema,
    spec: &PartitionSpec,
    extra_props: &HashMap<String, String>,
) -> Result<Schema> {
    let schema = assign_field_ids(schema, 0)?;
    crate::ns::naming::check_column_names(&schema)?;
    crate::ns::naming::check_spec_fields(spec)?;
    CompiledSpec::compile(spec, &schema, false)?;
    if spec.id < 1 {
        return Err(Error::Spec(format!(
            "spec ids start at 1 (got {})",
            spec.id
        )));
    }
    let uri = manifest_uri(root);
    match DatasetBuilder::from_uri(&uri).load().await {
        Ok(_) => {
            return Err(Error::AlreadyExists(format!(
                "a namespace already exists at {root:?}"
            )))
        }
        Err(lance::Error::DatasetNotFound { .. } | lance::Error::NotFound { .. }) => {}
        Err(e) => return Err(e.into()),
    }
    let mschema: SchemaRef = Arc::new(manifest_schema([spec])?);
    let row = Row {
        object_id: format!("v{}", spec.id),
        object_type: NAMESPACE.into(),
        ..Default::default()
    };
    let batch = rows_to_batch(&mschema, &[row])?;
    let params = WriteParams {
        mode: WriteMode::Create,
        enable_v2_manifest_paths: true,
        ..Default::default()
    };
    let mut ds = InsertBuilder::new(uri.as_str())
        .with_params(&params)
        .execute(vec![batch])
        .await?;
    let mut props: Vec<(String, String)> = extra_props.clone().into_iter().collect();
    props.push((
        SCHEMA_KEY.to_string(),
        serde_json::to_string(&JsonSchema::from_arrow(&schema)?)
            .map_err(|e| Error::Internal(e.to_string()))?,
    ));
    props.push((format!("{SPEC_KEY_PREFIX}{}", spec.id), spec.to_json()?));
    let last_id = max_field_id(&schema);
    props.push((LAST_FIELD_ID_KEY.to_string(), last_id.to_string()));
    ds.update_metadata(props).await?;
    Ok(schema)
}

impl Snapshot {
    /// The namespace's transaction mode (`true`: strong), which every commit uses: the mode
    /// is fixed when the namespace is created.
    ///
    /// # Errors
    /// `InvalidArgument` when `requested` names the other mode.
    pub fn strong_mode(&self, requested: Option<bool>) -> Result<bool> {
        let strong = self
            .root_props
            .props
            .get(crate::ns::MODE_KEY)
            .is_none_or(|m| m != "weak");
        let name = |s: bool| if s { "strong" } else { "weak" };
        match requested {
            Some(r) if r != strong => Err(Error::InvalidArgument(format!(
                "this namespace commits in {} mode; a {} commit is refused (mixing modes would \
                 let direct leaf commits and manifest-recorded versions disagree, losing rows \
                 or blocking later writes). The mode is chosen at create()",
                name(strong),
                name(r)
            ))),
            _ => Ok(strong),
        }
    }

    /// Whether a commit recorded `write_id` (strong mode: its `table_version` rows carry it).
    ///
    /// # Errors
    /// As [`Snapshot::keys`].
    pub fn has_write(&self, write_id: &str) -> Result<bool> {
        Ok(self
            .keys()?
            .versions
            .values()
            .flatten()
            .any(|v| v.props.get(WRITE_ID_KEY).map(String::as_str) == Some(write_id)))
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

    /// Refuses every change through a manifest another tool stripped of our columns (their
    /// values are only rebuilt in memory until `repair()` persists them).
    ///
    /// # Errors
    /// `Corrupt` naming the missing columns.
    pub fn check_writable(&self) -> Result<()> {
        if !self.missing_columns.is_empty() {
            return corrupt!(
                "the manifest lacks columns {:?} (another tool rewrote it); run repair() first",
                self.missing_columns
            );
        }
        Ok(())
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
                    if let Some(s) = values::to_string(&ScalarValue::try_from_array(col, r)?)? {
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
    use futures::stream::{self, StreamExt, TryStreamExt};
    stream::iter(idx.iter().map(|&i| {
        let leaf = &snap.leaves[i];
        let uri = join_uri(&snap.root, &leaf.location);
        async move {
            let mut b = DatasetBuilder::from_uri(&uri);
            if let Some(v) = leaf.read_version {
                b = b.with_version(v);
            }
            let ds = b.load().await?;
            Ok::<u64, Error>(ds.count_rows(None).await? as u64)
        }
    }))
    .buffered(16)
    .try_collect()
    .await
}

/// Checks the spec's field id rule across versions: a field with the same `source_ids` and
/// `transform`/`expression` as an existing field must reuse its `field_id`; a `field_id` is
/// never reused for anything else.
///
/// # Errors
/// `Spec` naming the field.
pub fn check_field_id_reuse(existing: &[&PartitionSpec], new: &PartitionSpec) -> Result<()> {
    let same_def = |f: &crate::spec::PartitionField, g: &crate::spec::PartitionField| {
        g.source_ids == f.source_ids && g.transform == f.transform && g.expression == f.expression
    };
    for f in &new.fields {
        for spec in existing {
            for g in spec.fields.iter().filter(|g| g.field_id == f.field_id) {
                if !same_def(f, g) {
                    return Err(Error::Spec(format!(
                        "partition field id {:?} was defined differently in spec v{}; field ids \
                         are never reused (pick a new id)",
                        f.field_id, spec.id
                    )));
                }
                if g.result_type != f.result_type {
                    return Err(Error::Spec(format!(
                        "partition field {:?} changes its result_type",
                        f.field_id
                    )));
                }
            }
        }
    }
    for f in &new.fields {
        for spec in existing {
            for g in spec.fields.iter().filter(|g| g.field_id != f.field_id) {
                if same_def(f, g) {
                    return Err(Error::Spec(format!(
                        "partition field {:?} has the same sources and transform as field {:?} of \
                         spec v{}; it must reuse that field_id",
                        f.field_id, g.field_id, spec.id
                    )));
                }
            }
        }
    }
    Ok(())
}

/// Adds spec version `max + 1` (the id in `spec` is replaced): validates it (D7 and the field
/// id reuse rule), adds the new `partition_field_*` manifest columns, the `v<N>` namespace row,
/// then the `partition_spec_v<N>` property (the last step makes it current). Returns the new
/// spec id.
///
/// # Errors
/// `Spec` for an invalid spec or one equal to the current spec.
pub async fn evolve(root: &str, spec: &PartitionSpec) -> Result<i32> {
    use lance::dataset::NewColumnTransform;
    use lance::dataset::{MergeInsertBuilder, WhenMatched, WhenNotMatched};
    let snap = Snapshot::load(root, None).await?;
    snap.check_writable()?;
    let mut spec = spec.clone();
    spec.id = snap.root_props.specs.keys().max().copied().unwrap_or(0) + 1;
    crate::ns::naming::check_spec_fields(&spec)?;
    CompiledSpec::compile(&spec, &snap.schema(), false)?;
    let current = snap.current_spec();
    if current.fields == spec.fields {
        return Err(Error::Spec(format!(
            "the new spec is identical to the current spec v{}",
            current.id
        )));
    }
    let existing: Vec<&PartitionSpec> = snap.root_props.specs.values().collect();
    check_field_id_reuse(&existing, &spec)?;
    let mut ds = (*snap.dataset).clone();
    let wanted = manifest_schema(existing.iter().copied().chain([&spec]))?;
    let new_cols: Vec<Field> = wanted
        .fields()
        .iter()
        .filter(|f| ds.schema().field(f.name()).is_none())
        .map(|f| f.as_ref().clone())
        .collect();
    if !new_cols.is_empty() {
        ds.add_columns(
            NewColumnTransform::AllNulls(Arc::new(Schema::new(new_cols))),
            None,
            None,
        )
        .await?;
    }
    let ds = Arc::new(ds);
    let mschema: SchemaRef = Arc::new(Schema::from(ds.schema()));
    let row = Row {
        object_id: format!("v{}", spec.id),
        object_type: NAMESPACE.into(),
        ..Default::default()
    };
    let batch = rows_to_batch(&mschema, &[row])?;
    let mut b = MergeInsertBuilder::try_new(Arc::clone(&ds), vec![OBJECT_ID.to_string()])?;
    b.when_matched(WhenMatched::DoNothing)
        .when_not_matched(WhenNotMatched::InsertAll);
    let (ds, _) = b.try_build()?.execute_batches(vec![batch]).await?;
    let mut ds = (*ds).clone();
    ds.update_metadata([(format!("{SPEC_KEY_PREFIX}{}", spec.id), spec.to_json()?)])
        .await?;
    Ok(spec.id)
}

impl Snapshot {
    /// Rebuilds the missing manifest columns (D14) over every row of `batch`: partition
    /// values from the indexed namespaces and leaves, `read_version` of tables from the
    /// recovered chain heads and of `table_version` rows from their ids.
    fn restore_columns(&self) -> Result<Vec<(Field, ArrayRef)>> {
        let snap = self;
        let mut out = Vec::new();
        let expected = manifest_schema(snap.root_props.specs.values())?;
        let ids = string_column(&snap.batch, OBJECT_ID)?
            .ok_or_else(|| Error::Corrupt("no object_id column".into()))?;
        let types = string_column(&snap.batch, OBJECT_TYPE)?
            .ok_or_else(|| Error::Corrupt("no object_type column".into()))?;
        // object id -> (spec id, values of its prefix)
        let mut values_of: HashMap<&str, (i32, &[ScalarValue])> = HashMap::new();
        let keys = snap.keys()?;
        for ((spec, key), oid) in &keys.ns_by_key {
            values_of.insert(oid.as_str(), (*spec, key.as_slice()));
        }
        for (leaf, vals) in snap.leaves.iter().zip(&keys.leaf_values) {
            values_of.insert(leaf.object_id.as_str(), (leaf.spec_id, vals.as_slice()));
        }
        let read_version: HashMap<&str, Option<u64>> = snap
            .leaves
            .iter()
            .map(|l| (l.object_id.as_str(), l.read_version))
            .collect();
        let n = snap.batch.num_rows();
        for name in &snap.missing_columns {
            let f = expected.field_with_name(name)?.clone();
            let col: ArrayRef = if name == READ_VERSION {
                Arc::new(UInt64Array::from_iter((0..n).map(|r| {
                    let oid = ids.value(r);
                    match types.value(r) {
                        TABLE => read_version.get(oid).copied().flatten(),
                        TABLE_VERSION => oid.rsplit_once('$').and_then(|(_, v)| parse_version(v)),
                        _ => None,
                    }
                })))
            } else {
                let fid = name.strip_prefix(PARTITION_COLUMN_PREFIX).unwrap_or(name);
                let vals = (0..n)
                    .map(|r| {
                        let found = values_of.get(ids.value(r)).and_then(|(spec_id, vals)| {
                            let spec = snap.root_props.specs.get(spec_id)?;
                            let k = spec.fields.iter().position(|p| p.field_id == fid)?;
                            vals.get(k).cloned()
                        });
                        match found {
                            Some(v) => v.cast_to(f.data_type()),
                            None => ScalarValue::try_from(f.data_type()),
                        }
                    })
                    .collect::<std::result::Result<Vec<_>, _>>()?;
                if vals.is_empty() {
                    new_null_array(f.data_type(), 0)
                } else {
                    ScalarValue::iter_to_array(vals)?
                }
            };
            out.push((f, col));
        }
        Ok(out)
    }
}

/// Restores manifest columns another tool dropped (D14): `read_version` from the
/// `table_version` rows (the head of each table's version chain; the version in each
/// `table_version` row's id) and every `partition_field_*` column from the namespaces'
/// `partition.<field_id>` properties. One commit; the root properties are kept. Returns the
/// restored column names (empty when nothing was missing).
///
/// # Errors
/// `Corrupt` when a value cannot be recovered.
pub async fn repair(root: &str) -> Result<Vec<String>> {
    use crate::arrow::array::RecordBatchIterator;
    use lance::dataset::NewColumnTransform;
    let snap = Snapshot::load(root, None).await?;
    if snap.missing_columns.is_empty() {
        return Ok(Vec::new());
    }
    // `index` rebuilt the missing columns in memory; persist them.
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
    let schema = Arc::new(Schema::new(fields));
    let batch = RecordBatch::try_new_with_options(
        Arc::clone(&schema),
        cols,
        &crate::arrow::array::RecordBatchOptions::new().with_row_count(Some(n)),
    )?;
    let reader = RecordBatchIterator::new(vec![Ok(batch)], schema);
    let mut ds = (*snap.dataset).clone();
    ds.add_columns(NewColumnTransform::Reader(Box::new(reader)), None, None)
        .await?;
    Ok(snap.missing_columns.clone())
}
