//! The root properties of a namespace: its schema and every partition spec version, stored
//! in the manifest's table metadata (created by `txn::create_namespace`).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use crate::arrow::datatypes::SchemaRef;
use crate::error::{corrupt, Error, Result};
use crate::ns::{SCHEMA_KEY, SPEC_KEY_PREFIX};
use crate::spec::PartitionSpec;
use crate::types::JsonSchema;

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
        // Namespaces created before view and dictionary types were stored as their plain
        // equivalents read as if they had been (`types::storage_schema`).
        let schema = Arc::new(crate::types::storage_schema(
            &js.to_arrow()
                .map_err(|e| Error::Corrupt(format!("bad schema property: {e}")))?,
        ));
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
