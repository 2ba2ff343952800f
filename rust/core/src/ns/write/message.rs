//! The message a task of a distributed write sends to the committer: its [`StagedPart`]s in a
//! small, versioned JSON form (partition values as strings, fragment metadata).

use lance::table::format::Fragment;
use serde::{Deserialize, Serialize};

use crate::arrow::datatypes::Schema;
use crate::datafusion::scalar::ScalarValue;
use crate::error::{Error, Result};
use crate::ns::manifest::LeafColumnStats;
use crate::ns::write::options::Mode;
use crate::ns::write::staged::StagedPart;
use crate::ns::write::target::Target;
use crate::values;

/// Version of the [`StagedMessage`] layout.
const FORMAT: u32 = 1;

/// What one task wrote for one partition.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MessagePart {
    /// Partition values in their exact text form ([`values::to_exact_text`]); None is NULL
    /// and an empty string is `Some("")`.
    pub key: Vec<Option<String>>,
    /// Existing leaf: its object id; None for a new partition.
    pub object_id: Option<String>,
    /// Leaf table location relative to the root.
    pub location: String,
    /// New partition: the namespace id segment of every level.
    pub path: Vec<String>,
    /// Existing leaf: the version the rows were written against (strong mode).
    pub base: Option<u64>,
    /// Whether the fragments replace the leaf's content (overwrite, or a leaf written under an
    /// older schema whose old rows the committer rewrites).
    pub rewrite: bool,
    /// The uncommitted fragments.
    pub fragments: Vec<Fragment>,
    /// Rows in them.
    pub rows: u64,
    /// Column statistics of those rows, in their recorded form (absent: not taken).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub column_stats: Option<String>,
}

impl MessagePart {
    fn from_part(p: StagedPart) -> Result<Self> {
        let key = key_to_text(&p.key)?;
        let (object_id, path, base) = match &p.target {
            Target::Existing {
                object_id, base, ..
            } => (Some(object_id.clone()), Vec::new(), *base),
            Target::New { path, .. } => (None, path.clone(), None),
        };
        Ok(Self {
            key,
            object_id,
            location: p.target.location().to_string(),
            path,
            base,
            rewrite: p.rewrite,
            fragments: p.fragments,
            rows: p.rows,
            column_stats: p.stats.as_ref().map(LeafColumnStats::to_json),
        })
    }

    /// The part, its values typed by `key_types` (the spec's output schema).
    ///
    /// # Errors
    /// `InvalidArgument` for values that do not fit the spec.
    pub fn to_part(&self, key_types: &Schema) -> Result<StagedPart> {
        let key = key_from_text(&self.key, key_types)?;
        let target = match &self.object_id {
            Some(object_id) => Target::Existing {
                object_id: object_id.clone(),
                location: self.location.clone(),
                base: self.base,
            },
            None => Target::New {
                location: self.location.clone(),
                path: self.path.clone(),
            },
        };
        Ok(StagedPart {
            key,
            target,
            rewrite: self.rewrite,
            fragments: self.fragments.clone(),
            rows: self.rows,
            stats: self
                .column_stats
                .as_deref()
                .and_then(LeafColumnStats::from_json),
            dataset: None,
        })
    }
}

/// Partition values in their exact text form ([`values::to_exact_text`]; None is NULL).
///
/// # Errors
/// `Internal` for a value without a string form.
pub(crate) fn key_to_text(key: &[ScalarValue]) -> Result<Vec<Option<String>>> {
    key.iter()
        .map(|v| {
            Ok(if v.is_null() {
                None
            } else {
                Some(values::to_exact_text(v)?)
            })
        })
        .collect()
}

/// Partition values from [`key_to_text`]'s form, typed by `key_types` (the spec's output
/// schema).
///
/// # Errors
/// `InvalidArgument` for values that do not fit the spec.
pub(crate) fn key_from_text(
    texts: &[Option<String>],
    key_types: &Schema,
) -> Result<Vec<ScalarValue>> {
    if texts.len() != key_types.fields().len() {
        return Err(Error::InvalidArgument(format!(
            "staged partition with {} values for a spec with {} fields",
            texts.len(),
            key_types.fields().len()
        )));
    }
    texts
        .iter()
        .zip(key_types.fields())
        .map(|(v, f)| match v {
            Some(text) => values::from_exact_text(text, f.data_type()),
            None => Ok(ScalarValue::try_from(f.data_type())?),
        })
        .collect()
}

/// One task's output: everything it wrote, against which manifest version.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StagedMessage {
    /// Message layout version.
    pub format: u32,
    /// The manifest version every task planned against (the write's S0).
    pub manifest_version: u64,
    /// The spec version the rows were partitioned by.
    pub spec_id: i32,
    /// The write's nonce (all messages of one write share it).
    pub nonce: String,
    /// Append or overwrite.
    pub mode: Mode,
    /// Strong or weak commits.
    pub strong: bool,
    /// Rows staged.
    pub rows: u64,
    /// When the task started staging (its clock, ms since the epoch; 0: unknown, as in
    /// messages of earlier versions).
    #[serde(default)]
    pub staged_since_ms: i64,
    /// Partitions written.
    pub parts: Vec<MessagePart>,
}

/// Which write a message belongs to (every message of one write agrees on all of it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteIdentity {
    /// The manifest version the tasks planned against.
    pub manifest_version: u64,
    /// The spec version they partitioned by.
    pub spec_id: i32,
    /// The write's nonce.
    pub nonce: String,
    /// Append or overwrite.
    pub mode: Mode,
    /// Strong or weak commits.
    pub strong: bool,
}

impl StagedMessage {
    /// The message of one task's staged parts.
    ///
    /// # Errors
    /// `Internal` for a partition value without a string form.
    pub fn new(
        id: &WriteIdentity,
        rows: u64,
        staged_since_ms: i64,
        parts: Vec<StagedPart>,
    ) -> Result<Self> {
        Ok(Self {
            staged_since_ms,
            format: FORMAT,
            manifest_version: id.manifest_version,
            spec_id: id.spec_id,
            nonce: id.nonce.clone(),
            mode: id.mode,
            strong: id.strong,
            rows,
            parts: parts
                .into_iter()
                .map(MessagePart::from_part)
                .collect::<Result<_>>()?,
        })
    }

    /// The write this message belongs to.
    pub fn identity(&self) -> WriteIdentity {
        WriteIdentity {
            manifest_version: self.manifest_version,
            spec_id: self.spec_id,
            nonce: self.nonce.clone(),
            mode: self.mode,
            strong: self.strong,
        }
    }

    /// Serialises the message (JSON).
    ///
    /// # Errors
    /// `Internal` if serialisation fails.
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        serde_json::to_vec(self).map_err(|e| Error::Internal(format!("staged message: {e}")))
    }

    /// Parses a message made by [`StagedMessage::to_bytes`].
    ///
    /// # Errors
    /// `InvalidArgument` for anything else.
    pub fn from_bytes(b: &[u8]) -> Result<Self> {
        let s: Self = serde_json::from_slice(b)
            .map_err(|e| Error::InvalidArgument(format!("not a staged write message: {e}")))?;
        if s.format != FORMAT {
            return Err(Error::InvalidArgument(format!(
                "staged write message format {} is not supported (expected {FORMAT})",
                s.format
            )));
        }
        Ok(s)
    }
}
