//! The commit of a new leaf table without Lance's two extra requests.
//!
//! A new leaf lives at a fresh random location, so nothing can exist there. Committed by URI,
//! Lance would still (1) look for an existing dataset first (a listing of `_versions/`, one
//! request per new partition on object storage) and (2) after the manifest, write the version
//! hint file (`_versions/latest_version_hint.json`; on a local disk a temp file and a rename,
//! and readers of local datasets do not use it). [`NewLeafCommit`] answers (1) with "not
//! found" until its commit has happened and skips (2); the manifest itself is written as
//! Lance's conditional-put handler does (encoded in memory, then one create-only put, so a
//! dataset that does exist after all is a conflict, never overwritten).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use lance::io::ObjectStore;
use lance_table::format::{IndexMetadata, Manifest, Transaction};
use lance_table::io::commit::{
    CommitError, CommitHandler, ConditionalPutCommitHandler, ManifestLocation,
    ManifestNamingScheme, ManifestWriter,
};
use object_store::path::Path;
use object_store::{Error as StoreError, PutMode, PutOptions};

/// The handler of one new leaf's first commit (see the module docs). After that commit it
/// resolves versions as Lance does, so the returned dataset stays usable.
#[derive(Debug, Default)]
pub(crate) struct NewLeafCommit {
    committed: AtomicBool,
}

impl NewLeafCommit {
    /// The handler for a new leaf at `uri`, or None where Lance would not commit with a
    /// create-only put (other stores keep Lance's own handler and its checks).
    pub(crate) fn for_uri(uri: &str) -> Option<Arc<dyn CommitHandler>> {
        let scheme = uri.split_once("://").map(|(s, _)| s.to_ascii_lowercase());
        let conditional_put = match scheme.as_deref() {
            None | Some("file") => !cfg!(windows),
            Some("s3" | "gs" | "az" | "abfss" | "memory") => true,
            Some(_) => false,
        };
        conditional_put.then(|| Arc::new(Self::default()) as Arc<dyn CommitHandler>)
    }
}

#[async_trait::async_trait]
impl CommitHandler for NewLeafCommit {
    fn is_version_not_found_definitive(&self) -> bool {
        true
    }

    fn propagate_commit_error_after_success(&self) -> bool {
        false
    }

    async fn resolve_latest_location(
        &self,
        base_path: &Path,
        object_store: &ObjectStore,
    ) -> lance::Result<ManifestLocation> {
        if !self.committed.load(Ordering::Acquire) {
            return Err(lance::Error::not_found(base_path.to_string()));
        }
        ConditionalPutCommitHandler
            .resolve_latest_location(base_path, object_store)
            .await
    }

    async fn commit(
        &self,
        manifest: &mut Manifest,
        indices: Option<Vec<IndexMetadata>>,
        base_path: &Path,
        object_store: &ObjectStore,
        manifest_writer: ManifestWriter,
        naming_scheme: ManifestNamingScheme,
        transaction: Option<Transaction>,
    ) -> std::result::Result<ManifestLocation, CommitError> {
        let path = naming_scheme.manifest_path(base_path, manifest.version);
        let memory = ObjectStore::memory();
        let staged: Path = "manifest".into();
        manifest_writer(&memory, manifest, indices, &staged, transaction).await?;
        let bytes = memory.read_one_all(&staged).await?;
        let size = bytes.len() as u64;
        let put = PutOptions {
            mode: PutMode::Create,
            ..Default::default()
        };
        let res = object_store
            .inner
            .put_opts(&path, bytes.into(), put)
            .await
            .map_err(|e| match e {
                StoreError::AlreadyExists { .. } | StoreError::Precondition { .. } => {
                    CommitError::CommitConflict
                }
                e => CommitError::OtherError(e.into()),
            })?;
        self.committed.store(true, Ordering::Release);
        Ok(ManifestLocation {
            version: manifest.version,
            path,
            size: Some(size),
            naming_scheme,
            e_tag: res.e_tag,
            identity: None,
        })
    }
}
