//! Tags: names for manifest versions, so that a version stays readable (`as_of="name"`) and
//! `expire()` keeps it, with every leaf version it reads, for as long as the tag exists (ML
//! users pin the exact data a model was trained on).
//!
//! A tag is a Lance tag of `__manifest` (`_refs/tags/<name>.json`, created only if absent),
//! so Lance's own tools see it too. Tags are references, not changes of the table: creating
//! or deleting one commits nothing to the manifest.

use std::sync::Arc;

use lance::dataset::Dataset;

use crate::error::{Error, Result};
use crate::ns::infra::storage::Storage;
use crate::ns::manifest::Snapshot;
use crate::ns::MANIFEST_DIR;

/// Names manifest version `version` (the latest when `None`) `name`; returns the version.
///
/// # Errors
/// `InvalidArgument` for a malformed name or one that names a version already; `NotFound`
/// for a version that does not exist (or was expired).
pub(crate) async fn create_tag(storage: &Storage, name: &str, version: Option<u64>) -> Result<u64> {
    let snap = Snapshot::load(storage, version).await?;
    let v = snap.version;
    snap.dataset
        .tags()
        .create(name, v)
        .await
        .map_err(|e| tag_error(name, e))?;
    // An expire() that listed the tags before this one was created may have removed the
    // version meanwhile: then the tag names nothing, and goes.
    if let Err(e) = Snapshot::load(storage, Some(v)).await {
        let _ = snap.dataset.tags().delete(name).await;
        return Err(e);
    }
    Ok(v)
}

/// Removes the tag `name` (its version may then be expired).
///
/// # Errors
/// `NotFound` when there is no such tag; `InvalidArgument` for a malformed name.
pub(crate) async fn delete_tag(storage: &Storage, name: &str) -> Result<()> {
    manifest(storage)
        .await?
        .tags()
        .delete(name)
        .await
        .map_err(|e| tag_error(name, e))
}

/// Every tag and the manifest version it names, by version then name.
///
/// # Errors
/// `NotFound` when there is no namespace; `Lance` for I/O errors.
pub(crate) async fn list_tags(storage: &Storage) -> Result<Vec<(String, u64)>> {
    let mut out: Vec<(String, u64)> = manifest(storage)
        .await?
        .tags()
        .list()
        .await?
        .into_iter()
        .map(|(name, t)| (name, t.version))
        .collect();
    out.sort_by(|a, b| (a.1, &a.0).cmp(&(b.1, &b.0)));
    Ok(out)
}

/// The manifest version the tag `name` names.
///
/// # Errors
/// `NotFound` when there is no such tag; `InvalidArgument` for a malformed name.
pub(crate) async fn tag_version(storage: &Storage, name: &str) -> Result<u64> {
    manifest(storage)
        .await?
        .tags()
        .get_version(name)
        .await
        .map_err(|e| tag_error(name, e))
}

async fn manifest(storage: &Storage) -> Result<Dataset> {
    let ds = storage.open(MANIFEST_DIR, None).await.map_err(|e| {
        crate::error::gone(e, || format!("no partitioned namespace at \"{storage}\""))
    })?;
    Ok(Arc::unwrap_or_clone(ds))
}

fn tag_error(name: &str, e: lance::Error) -> Error {
    match e {
        lance::Error::InvalidRef { message } => Error::InvalidArgument(format!(
            "{name:?} is not a valid tag name: {message} (letters, digits, '.', '-' and '_'; \
             not starting with '.')"
        )),
        lance::Error::RefConflict { .. } => Error::InvalidArgument(format!(
            "tag {name:?} already exists; delete it first to move it"
        )),
        lance::Error::RefNotFound { .. } => Error::NotFound(format!("there is no tag {name:?}")),
        other => other.into(),
    }
}
