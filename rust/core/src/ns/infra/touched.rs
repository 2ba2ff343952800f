//! The partitions an operation wrote or deleted from, as lineage reports them: each leaf's
//! object id, location, spec version and partition values in their string form
//! (`crate::values::to_string`, the one implementation of value text).

use crate::datafusion::scalar::ScalarValue;
use crate::spec::PartitionSpec;

/// One partition a write or delete touched.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TouchedPartition {
    /// The leaf table's object id (`v<N>$...$dataset`).
    pub object_id: String,
    /// The leaf table's directory, relative to the namespace root.
    pub location: String,
    /// The spec version the partition belongs to.
    pub spec_id: i32,
    /// Partition field id and value string form (`None` for NULL and empty values), in spec
    /// order.
    pub values: Vec<(String, Option<String>)>,
}

impl TouchedPartition {
    /// The partition with values `key` of `spec`.
    pub fn new(object_id: &str, location: &str, spec: &PartitionSpec, key: &[ScalarValue]) -> Self {
        Self {
            object_id: object_id.to_string(),
            location: location.to_string(),
            spec_id: spec.id,
            values: spec
                .fields
                .iter()
                .zip(key)
                .map(|(f, v)| (f.field_id.clone(), value_text(v)))
                .collect(),
        }
    }
}

/// The string form of a partition value. Every partition result type has one; should a
/// value ever lack it, its exact text stands in rather than failing a committed operation's
/// report.
fn value_text(v: &ScalarValue) -> Option<String> {
    match crate::values::to_string(v) {
        Ok(text) => text,
        Err(_) => crate::values::to_exact_text(v).ok(),
    }
}
