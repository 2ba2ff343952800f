//! The `__manifest` table: the DirectoryNamespace V2 columns plus `read_version` and one
//! `partition_field_<field_id>` column per partition field of any spec version; root
//! properties (schema, `partition_spec_v<N>`) in its Lance table metadata (`docs/design.md`,
//! "Root properties").
//!
//! A [`Snapshot`] is the whole manifest at one version, indexed for lookups: leaves by spec
//! version and partition values, namespaces by value prefix, `table_version` rows by table.
//!
//! This module loads snapshots; the rest is split by concern (everything public is
//! re-exported here):
//! - `format`: column names, object types, the manifest Arrow schema, rows to batches;
//! - `root`: the root properties ([`Root`]; a namespace is created by
//!   `txn::create_namespace`);
//! - `cache`: snapshots loaded recently in this process, found again by version;
//! - `compact`: the policies of compacting the manifest's own fragments ([`max_fragments`])
//!   and the partitions writes leave fragmented ([`leaf_max_fragments`]);
//! - `auto_expire`: the policy of expiring old manifest versions after commits
//!   ([`auto_expire`]);
//! - `retention`: the `table_version` rows a commit keeps per partition
//!   ([`trimmed_versions`]);
//! - `versions`: the `table_version` rows by table ([`TableVersion`]);
//! - `write_ids`: the write ids recorded, stream batches by their stream ([`WriteIds`]);
//! - `index`: the leaves and the writers' lookups ([`Keys`]), and the queries on them;
//! - `indexes`: the scalar indexes the namespace declares ([`IndexDef`]);
//! - `sort_order`: the order writers give the rows of each file ([`SortOrder`]);
//! - `evolution`: the rules and manifest columns of a new partition spec version
//!   ([`spec_preparation`]);
//! - `repair`: rebuilding manifest columns another tool dropped ([`dropped_columns`]; the
//!   transaction layer's `txn::repair` persists them);
//! - `column_stats`: per-column bounds and counts of a leaf version ([`LeafColumnStats`]),
//!   recorded by writes and read by pruning;
//! - `stats`: per-partition statistics, recorded by every commit ([`LeafTotals`]) or read from
//!   Lance metadata ([`leaf_stats`]);
//! - `named`: the tables and versions one manifest version names ([`named_tables`]).
//!
//! The manifest depends on the field ids ([`crate::field_ids`]) but never on
//! [`crate::ns::ops::update_schema::rules`], which builds on it.

use std::sync::Arc;

use lance::dataset::Dataset;

use crate::arrow::array::RecordBatch;
use crate::arrow::datatypes::SchemaRef;
use crate::error::{corrupt, Error, Result};
use crate::ns::infra::storage::Storage;
use crate::ns::{MANIFEST_DIR, SPEC_KEY_PREFIX};
use crate::spec::PartitionSpec;

mod auto_expire;
mod cache;
mod column_stats;
mod compact;
mod evolution;
mod feature_flags;
mod format;
mod index;
mod indexes;
mod named;
mod repair;
mod retention;
mod root;
mod sort_order;
mod stats;
mod versions;
mod write_ids;
mod zorder;

pub use auto_expire::{
    auto_expire, AutoExpire, DEFAULT_EXPIRE_INTERVAL, DEFAULT_EXPIRE_OLDER_THAN,
    EXPIRE_INTERVAL_KEY, EXPIRE_OLDER_THAN_KEY, EXPIRE_RETAIN_KEY,
};
pub use column_stats::{
    cast_bound, column_stats_enabled, ColumnStats, FragmentGroup, FragmentStats, LeafColumnStats,
    Rewritten, COLUMN_STATS_ENABLED_KEY, COLUMN_STATS_KEY, FRAGMENT_STATS_KEY, PREFIX_BYTES,
};
pub use compact::{
    kept_base, leaf_max_fragments, max_fragments, target_rows_per_file, too_fragmented,
    ManifestFragment, DEFAULT_LEAF_MAX_FRAGMENTS, DEFAULT_MAX_FRAGMENTS, LEAF_MAX_FRAGMENTS_KEY,
    MAX_FRAGMENTS_KEY, TARGET_ROWS_PER_FILE_KEY,
};
pub use evolution::{check_field_id_reuse, spec_preparation};
pub use feature_flags::{READER_FLAGS_KEY, WRITER_FLAGS_KEY};
pub(crate) use format::required_string as string_column_of;
pub use format::{
    base_fields, check_repeatable, check_write_id, manifest_schema, parse_props, parse_version,
    partition_column, props_json, rows_to_batch, spec_of, Row, BASE_OBJECTS, LOCATION,
    MAX_WRITE_ID_LEN, METADATA, NAMESPACE, OBJECT_ID, OBJECT_TYPE, READ_VERSION, ROWS_KEY, TABLE,
    TABLE_VERSION, WRITE_ID_KEY,
};
pub(crate) use format::{required_string, scan_rows};
pub use index::{count_rows, describe_key, leaf_sizes, Keys, Leaf};
pub use indexes::{
    check_index_name, declared_indexes, indexes_on_write, IndexDef, IndexKind,
    INDEXES_ON_WRITE_KEY, INDEX_KEY_PREFIX,
};
pub use named::{named_tables, NamedTable};
pub use repair::dropped_columns;
pub use retention::{
    surplus_versions, trimmed_versions, version_row_id, versions_kept, DEFAULT_VERSIONS_KEPT,
    VERSIONS_KEPT_KEY,
};
pub use root::Root;
pub use sort_order::{SortKey, SortOrder, SORT_CURVE_KEY, SORT_ORDER_KEY};
pub use stats::{
    leaf_column_stats, leaf_fragment_stats, leaf_stats, recorded_totals, LeafStats, LeafTotals,
    LeafVersion,
};
pub use versions::{TableVersion, VersionRow};
pub use write_ids::{stream_batch, WriteIds, STREAM_PREFIX};
// Kept at its old path; field ids live in `crate::field_ids`.
pub use crate::field_ids::assign_field_ids;

/// The whole manifest at one version, indexed.
#[derive(Debug, Clone)]
pub struct Snapshot {
    /// Root URI of the namespace.
    pub storage: Storage,
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
    keys: Arc<std::sync::OnceLock<Keys>>,
    /// The write ids recorded, see [`Snapshot::write_ids`].
    write_ids: Arc<std::sync::OnceLock<WriteIds>>,
    /// Where each leaf's recorded totals are, see `stats::Recorded`.
    recorded: Arc<tokio::sync::OnceCell<stats::Recorded>>,
    /// Per leaf, its recorded column statistics (see [`leaf_column_stats`]).
    column_stats: Arc<tokio::sync::OnceCell<Arc<Vec<Option<LeafColumnStats>>>>>,
    /// Loaded without the property columns (see [`Snapshot::load_with`]).
    pub light: bool,
    /// Expected manifest columns that are missing (another writer dropped them; see
    /// `docs/design.md`, "Manifest columns other tools drop").
    pub missing_columns: Vec<String>,
}

/// The error for a manifest version that does not exist, naming those that do.
async fn missing_version(storage: &Storage, version: u64, cause: lance::Error) -> Error {
    let listed = match storage.open(MANIFEST_DIR, None).await {
        Ok(ds) => ds.versions().await.ok(),
        Err(_) => None,
    };
    let Some(versions) = listed else {
        return Error::NotFound(format!(
            "no partitioned namespace at \"{storage}\" (no {MANIFEST_DIR} table)"
        ));
    };
    let mut ids: Vec<u64> = versions.iter().map(|v| v.version).collect();
    ids.sort_unstable();
    if ids.contains(&version) && !crate::error::is_not_found(&cause) {
        return cause.into();
    }
    Error::NotFound(format!(
        "manifest version {version} of \"{storage}\" does not exist; it has versions {}",
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
    pub async fn load(storage: &Storage, version: Option<u64>) -> Result<Self> {
        Self::load_with(storage, version, false).await
    }

    /// Like [`Snapshot::load`]; a `light` snapshot (for reads: pruning and scans) skips the
    /// `metadata` and `base_objects` columns, so it has no stored properties and its
    /// [`Snapshot::keys`] hold no `table_version` properties. Writers load full snapshots.
    ///
    /// # Errors
    /// As [`Snapshot::load`].
    pub async fn load_with(storage: &Storage, version: Option<u64>, light: bool) -> Result<Self> {
        let mut builder = storage.builder(MANIFEST_DIR)?;
        if let Some(v) = version {
            builder = builder.with_version(v);
        }
        let dataset = match builder.load().await {
            Ok(d) => d,
            Err(e) if version.is_some() => {
                return Err(missing_version(storage, version.unwrap_or_default(), e).await)
            }
            Err(lance::Error::DatasetNotFound { .. } | lance::Error::NotFound { .. }) => {
                return Err(Error::NotFound(format!(
                    "no partitioned namespace at \"{storage}\" (no {MANIFEST_DIR} table)"
                )))
            }
            Err(e) => {
                return Err(storage
                    .file_instead_of_namespace()
                    .unwrap_or(storage.error(e)))
            }
        };
        let key = cache::Key::of(storage.to_string(), &dataset, light);
        if let Some(hit) = cache::get(&key) {
            return Ok(hit);
        }
        let snap = Self::from_dataset(storage, Arc::new(dataset), light).await;
        if let Ok(s) = &snap {
            cache::put(key, s);
        }
        match version {
            // An old version's files removed by an `expire()` running since it was opened.
            Some(v) => snap.map_err(|e| {
                crate::error::gone(e, || {
                    format!("manifest version {v} of \"{storage}\" was removed while it was read")
                })
            }),
            None => snap,
        }
    }

    /// A read snapshot at manifest version `version` (time travel, `as_of`).
    ///
    /// # Errors
    /// `NotFound` naming the versions that exist; `InvalidArgument` on a weak-mode namespace,
    /// whose manifest records no leaf versions (an old manifest version cannot say what the
    /// leaves held then).
    pub async fn load_as_of(storage: &Storage, version: u64) -> Result<Self> {
        let snap = Self::load_with(storage, Some(version), true).await?;
        if !snap.strong_mode(None)? {
            return Err(Error::InvalidArgument(format!(
                "as_of is not available on \"{storage}\": it commits in weak mode, where leaves are \
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
    pub async fn from_dataset(
        storage: &Storage,
        dataset: Arc<Dataset>,
        light: bool,
    ) -> Result<Self> {
        feature_flags::check_readable(dataset.metadata())?;
        let mut props = dataset.metadata().clone();
        if !props.keys().any(|k| k.starts_with(SPEC_KEY_PREFIX)) {
            // Another writer's form: root properties in the Arrow schema metadata
            // (`docs/design.md`, "Root properties").
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
        let ids = required_string(&batch, OBJECT_ID)?;
        feature_flags::check_unpinned(&batch, &|r| format!("{:?}", ids.value(r)))?;
        Self::index(storage, dataset, root_props, batch, light)
    }

    /// The newest spec version.
    pub fn current_spec(&self) -> &PartitionSpec {
        self.root_props.current_spec()
    }

    /// The namespace schema.
    pub fn schema(&self) -> SchemaRef {
        Arc::clone(&self.root_props.schema)
    }

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

    /// Refuses every change through a manifest another tool stripped of our columns (their
    /// values are only rebuilt in memory until `repair()` persists them), or whose writer
    /// feature flags this build does not understand.
    ///
    /// # Errors
    /// `Corrupt` naming the missing columns; `IncompatibleFormat`.
    pub fn check_writable(&self) -> Result<()> {
        feature_flags::check_writable(self.dataset.metadata())?;
        if !self.missing_columns.is_empty() {
            return corrupt!(
                "the manifest lacks columns {:?} (another tool rewrote it); run repair() first",
                self.missing_columns
            );
        }
        Ok(())
    }
}
