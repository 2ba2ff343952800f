//! Creating a namespace: the manifest table with its first spec version's namespace row,
//! then the root properties (schema, spec, last field id, the caller's), in a new or empty
//! location only.

use std::collections::HashMap;
use std::sync::Arc;

use lance::dataset::{InsertBuilder, WriteMode, WriteParams};

use crate::arrow::datatypes::{Schema, SchemaRef};
use crate::error::{Error, Result};
use crate::field_ids::{assign_field_ids, max_field_id, LAST_FIELD_ID_KEY};
use crate::ns::infra::session::session;
use crate::ns::infra::storage::Storage;
use crate::ns::manifest::{
    auto_expire, column_stats_enabled, indexes_on_write, leaf_max_fragments, manifest_schema,
    max_fragments, rows_to_batch, target_rows_per_file, versions_kept, Row, INDEX_KEY_PREFIX,
    NAMESPACE,
};
use crate::ns::{MANIFEST_DIR, SCHEMA_KEY, SCRATCH_DIR, SPEC_KEY_PREFIX};
use crate::spec::{CompiledSpec, PartitionSpec};
use crate::types::JsonSchema;

/// Creates a partitioned namespace at `root`: validates the spec against the schema
/// (`docs/design.md`, "Partition expressions") and writes `__manifest` with the `v<id>`
/// namespace row and the root properties.
///
/// Returns the schema as stored (with field ids).
///
/// # Errors
/// `AlreadyExists` when a manifest exists; `Spec` for an invalid spec or schema.
pub async fn create(
    storage: &Storage,
    schema: &Schema,
    spec: &PartitionSpec,
    extra_props: &HashMap<String, String>,
) -> Result<Schema> {
    // The history policies are checked here, not first at the commit they shape.
    max_fragments(extra_props)?;
    leaf_max_fragments(extra_props)?;
    target_rows_per_file(extra_props)?;
    column_stats_enabled(extra_props)?;
    indexes_on_write(extra_props)?;
    if let Some(k) = extra_props.keys().find(|k| k.starts_with(INDEX_KEY_PREFIX)) {
        return Err(Error::InvalidArgument(format!(
            "property {k:?}: indexes are declared with create_index(), not as properties"
        )));
    }
    versions_kept(extra_props)?;
    auto_expire(extra_props)?;
    let schema = assign_field_ids(&crate::types::storage_schema(schema), 0)?;
    let spec = &spec.with_storage_types()?;
    crate::ns::infra::naming::check_column_names(&schema)?;
    crate::ns::infra::naming::check_spec_fields(spec)?;
    CompiledSpec::compile(spec, &schema, false)?.check_value_types()?;
    if spec.id < 1 {
        return Err(Error::Spec(format!(
            "spec ids start at 1 (got {})",
            spec.id
        )));
    }
    if storage.local_path().is_some_and(|p| p.is_file()) {
        return Err(Error::InvalidArgument(format!(
            "\"{storage}\" is a file: create() needs a new or empty directory"
        )));
    }
    storage.check_conditional_writes().await?;
    match storage.builder(MANIFEST_DIR)?.load().await {
        Ok(_) => {
            return Err(Error::AlreadyExists(format!(
                "a namespace already exists at \"{storage}\""
            )))
        }
        Err(lance::Error::DatasetNotFound { .. } | lance::Error::NotFound { .. }) => {}
        Err(e) => return Err(storage.error(e)),
    }
    check_empty_root(storage).await?;
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
        session: Some(session()?),
        store_params: Some(storage.store_params()),
        ..Default::default()
    };
    let mut ds = InsertBuilder::new(storage.uri(MANIFEST_DIR).as_str())
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

/// Refuses a directory (prefix) that holds anything: a namespace is created in a new or empty
/// location, never mixed into other files (which `cleanup()` could later take for leftovers).
async fn check_empty_root(storage: &Storage) -> Result<()> {
    let (store, path) = storage.object_store().await?;
    let listed = match store.list_with_delimiter(Some(&path)).await {
        Ok(l) => l,
        Err(lance::Error::NotFound { .. }) => return Ok(()),
        Err(e) => return Err(storage.error(e)),
    };
    let mut names: Vec<String> = listed
        .common_prefixes
        .iter()
        .chain(listed.objects.iter().map(|o| &o.location))
        .filter_map(|p| p.filename().map(str::to_string))
        // Our own scratch prefix: the conditional-write probe runs before this check, and a
        // store with real directories (SeaweedFS) keeps its folder after the probe's delete.
        .filter(|n| n != SCRATCH_DIR)
        .collect();
    if names.is_empty() {
        return Ok(());
    }
    if names.iter().any(|n| n == MANIFEST_DIR) {
        // Created since the check above (a concurrent create()).
        return Err(Error::AlreadyExists(format!(
            "a namespace already exists at \"{storage}\""
        )));
    }
    names.sort();
    Err(Error::InvalidArgument(format!(
        "\"{storage}\" is not empty ({} entries, e.g. {:?}) and holds no partitioned namespace: \
         create() needs a new or empty location",
        names.len(),
        names[0]
    )))
}
