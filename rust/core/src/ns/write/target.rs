//! Where a partition's rows go: an existing leaf table, or a new one whose namespace ids are
//! planned while routing (so that its location can name its object id).

use std::collections::HashMap;

use crate::datafusion::scalar::ScalarValue;
use crate::error::Result;
use crate::ns::infra::ids::{derived_id, random_id, table_location};
use crate::ns::manifest::Snapshot;
use crate::ns::LEAF_TABLE;

/// Where a partition's rows go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// An existing leaf, read at `base` (None = latest, weak mode).
    Existing {
        /// The leaf's object id.
        object_id: String,
        /// The leaf's location relative to the root.
        location: String,
        /// The version the rows are written against.
        base: Option<u64>,
    },
    /// A new leaf at a fresh location; `path` holds the planned namespace id of every level
    /// (existing ones where the snapshot had them), so that the location names the object id.
    New {
        /// The new leaf's location relative to the root.
        location: String,
        /// The namespace id segment of every level.
        path: Vec<String>,
    },
}

impl Target {
    /// The leaf's location relative to the root.
    pub fn location(&self) -> &str {
        match self {
            Self::Existing { location, .. } | Self::New { location, .. } => location,
        }
    }

    /// The target of the partition `key` of spec `spec_id`: its leaf in `snap`, or a new leaf
    /// whose ids `ids` plans.
    ///
    /// # Errors
    /// `Corrupt` for a manifest that does not index.
    pub(crate) fn plan(
        snap: &Snapshot,
        spec_id: i32,
        key: &[ScalarValue],
        strong: bool,
        ids: &mut IdPlan,
    ) -> Result<Self> {
        if let Some(leaf) = snap.leaf(spec_id, key)? {
            return Ok(Self::Existing {
                object_id: leaf.object_id.clone(),
                location: leaf.location.clone(),
                base: if strong { leaf.read_version } else { None },
            });
        }
        let path = plan_path(snap, spec_id, key, ids)?;
        let oid = format!("v{spec_id}${}${LEAF_TABLE}", path.join("$"));
        Ok(Self::New {
            location: table_location(&oid),
            path,
        })
    }
}

/// How new partitions get their namespace ids.
pub enum IdPlan {
    /// Fresh random ids, one per new namespace prefix of this write.
    Random(HashMap<Vec<ScalarValue>, String>),
    /// Ids derived from a per-job random nonce and the partition values, so that every task
    /// of a distributed write names a new partition the same way.
    Derived(String),
}

/// The namespace id segment of every level of a new partition: the snapshot's where the
/// namespace exists, else one shared by every new partition of this write with that prefix.
fn plan_path(
    snap: &Snapshot,
    spec_id: i32,
    key: &[ScalarValue],
    ids: &mut IdPlan,
) -> Result<Vec<String>> {
    let mut path = Vec::with_capacity(key.len());
    for level in 1..=key.len() {
        let prefix = key[..level].to_vec();
        let seg = match snap.keys()?.ns_by_key.get(&(spec_id, prefix.clone())) {
            Some(oid) => oid.rsplit('$').next().unwrap_or_default().to_string(),
            None => match ids {
                IdPlan::Random(planned) => match planned.get(&prefix) {
                    Some(seg) => seg.clone(),
                    None => {
                        let seg = random_id()?;
                        planned.insert(prefix, seg.clone());
                        seg
                    }
                },
                IdPlan::Derived(nonce) => derived_id(nonce, spec_id, &prefix)?,
            },
        };
        path.push(seg);
    }
    Ok(path)
}
