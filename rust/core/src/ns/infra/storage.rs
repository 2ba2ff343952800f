//! [`Storage`]: where a namespace lives and how to reach it: its root URI and the options of
//! its object store.
//!
//! Every dataset the namespace opens or writes (the manifest, each leaf) and every listing
//! (cleanup) goes through one `Storage`, so the storage options (credentials, endpoint,
//! region, ...) reach every request, and all of them share the process's Lance session (one
//! object-store client per store and option set). Options are Lance's keys (`aws_endpoint`,
//! `aws_region`, `allow_http`, `google_service_account`, `azure_storage_account_name`, ...);
//! the standard `AWS_*`, `GOOGLE_*` and `AZURE_*` environment variables apply without any.
//! Values of options that may be secret never appear in `Debug` output or errors.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::sync::{Arc, Mutex};

use lance::dataset::builder::DatasetBuilder;
use lance::io::{ObjectStore, ObjectStoreParams, StorageOptionsAccessor};
use lance::Dataset;
use object_store::path::Path;
use object_store::{ObjectStoreExt, PutMode, PutOptions, PutPayload};

use crate::error::{Error, Result};
use crate::ns::infra::session::session;

/// Option keys whose values are never secret (shown as they are in `Debug` output); every
/// other value is redacted.
const PUBLIC_KEYS: &[&str] = &[
    "allow_http",
    "allow_invalid_certificates",
    "aws_endpoint",
    "aws_endpoint_url",
    "endpoint",
    "aws_region",
    "region",
    "aws_virtual_hosted_style_request",
    "virtual_hosted_style_request",
    "aws_conditional_put",
    "conditional_put",
    "aws_s3_express",
    "azure_storage_account_name",
    "account_name",
    "azure_endpoint",
    "azure_use_emulator",
    "connect_timeout",
    "timeout",
    "client_max_retries",
    "client_retry_timeout",
    "pool_idle_timeout",
    "proxy_url",
    "user_agent",
    "download_retry_count",
];

/// A namespace's root URI with its storage options. Cheap to clone.
#[derive(Clone, PartialEq, Eq)]
pub struct Storage {
    root: Arc<str>,
    options: Arc<HashMap<String, String>>,
}

impl Storage {
    /// The namespace at `root` (a local path or an `s3://`, `gs://`, `az://`, ... URI), its
    /// store configured by `options`.
    ///
    /// # Errors
    /// `InvalidArgument` for options that would put the namespace's objects where no other
    /// tool finds them: Lance's OpenDAL client for GCS and Azure (`use_opendal=true`) stores
    /// every dataset under its path twice (`gs://b/ns/leaf` at `ns/leaf/ns/leaf/...`).
    pub fn new(root: &str, options: HashMap<String, String>) -> Result<Self> {
        let opendal = options
            .iter()
            .any(|(k, v)| k.eq_ignore_ascii_case("use_opendal") && is_truthy(v));
        let scheme = root.split_once("://").map(|(s, _)| s.to_ascii_lowercase());
        if opendal && matches!(scheme.as_deref(), Some("gs" | "az" | "abfss")) {
            return Err(Error::InvalidArgument(format!(
                "use_opendal=true is not supported for \"{root}\": Lance's OpenDAL client for \
                 this store writes every dataset under its path twice, where other tools and \
                 cleanup() do not look; leave use_opendal unset (the default client)"
            )));
        }
        Ok(Self {
            root: Arc::from(root),
            options: Arc::new(options),
        })
    }

    /// The root URI.
    pub fn root(&self) -> &str {
        &self.root
    }

    /// The storage options.
    pub fn options(&self) -> &HashMap<String, String> {
        &self.options
    }

    /// The URI of `rel` (a path relative to the root).
    pub fn uri(&self, rel: &str) -> String {
        if self.root.ends_with('/') {
            format!("{}{rel}", self.root)
        } else {
            format!("{}/{rel}", self.root)
        }
    }

    /// The object-store parameters every Lance call on this namespace uses.
    pub fn store_params(&self) -> ObjectStoreParams {
        ObjectStoreParams {
            storage_options_accessor: (!self.options.is_empty()).then(|| {
                Arc::new(StorageOptionsAccessor::with_static_options(
                    self.options.as_ref().clone(),
                ))
            }),
            ..Default::default()
        }
    }

    /// A builder opening the dataset at `rel` (a path relative to the root) with the shared
    /// session and the storage options.
    ///
    /// # Errors
    /// Never in practice (the session is built on first use).
    pub fn builder(&self, rel: &str) -> Result<DatasetBuilder> {
        let mut b = DatasetBuilder::from_uri(self.uri(rel)).with_session(session()?);
        if !self.options.is_empty() {
            b = b.with_storage_options(self.options.as_ref().clone());
        }
        Ok(b)
    }

    /// Opens the dataset at `rel` at `version` (the latest when `None`).
    ///
    /// # Errors
    /// `Lance` when it does not exist or cannot be read.
    pub async fn open(&self, rel: &str, version: Option<u64>) -> Result<Arc<Dataset>> {
        let mut b = self.builder(rel)?;
        if let Some(v) = version {
            b = b.with_version(v);
        }
        Ok(Arc::new(b.load().await?))
    }

    /// Opens the dataset at `rel` at `version` for reading: the dataset already opened by this
    /// process for the same table version and options when there is one
    /// ([`super::opened`]).
    ///
    /// # Errors
    /// `Lance` when it does not exist or cannot be read.
    pub async fn open_to_read(&self, rel: &str, version: u64) -> Result<Arc<Dataset>> {
        let mut options: Vec<(String, String)> = self
            .options
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        options.sort_unstable();
        let key = (self.uri(rel), version, options);
        if let Some(ds) = super::opened::get(&key) {
            return Ok(ds);
        }
        let ds = self.open(rel, Some(version)).await?;
        super::opened::put(key, &ds);
        Ok(ds)
    }

    /// The object store of the namespace and the root's path in it (for listings and
    /// existence checks).
    ///
    /// # Errors
    /// `Lance` when the URI or the options do not make a store.
    pub async fn object_store(&self) -> Result<(Arc<ObjectStore>, Path)> {
        let registry = session()?.store_registry();
        Ok(ObjectStore::from_uri_and_params(registry, &self.root, &self.store_params()).await?)
    }

    /// Whether the root is on an object store (a URI whose scheme is not a local file
    /// system or Lance's in-memory store).
    pub fn is_object_store(&self) -> bool {
        match self.root.split_once("://") {
            Some((scheme, _)) => !matches!(
                scheme.to_ascii_lowercase().as_str(),
                "file" | "file-object-store" | "memory"
            ),
            None => false,
        }
    }

    /// The root as a local file-system path (`None` on an object store or in memory).
    pub fn local_path(&self) -> Option<std::path::PathBuf> {
        match self.root.split_once("://") {
            Some((scheme, rest)) if scheme.eq_ignore_ascii_case("file") => Some(rest.into()),
            Some(_) => None,
            None => Some(self.root.as_ref().into()),
        }
    }

    /// `NotFound` when the root is a local file (nothing Lance could open under it), for the
    /// error of a failed open.
    pub fn file_instead_of_namespace(&self) -> Option<Error> {
        self.local_path().filter(|p| p.is_file()).map(|_| {
            Error::NotFound(format!(
                "\"{}\" is a file, not a partitioned namespace (a directory holding a \
                 {} table)",
                self.root,
                crate::ns::MANIFEST_DIR
            ))
        })
    }

    /// The options with secret values replaced by `***`.
    pub fn redacted_options(&self) -> BTreeMap<String, String> {
        self.options
            .iter()
            .map(|(k, v)| {
                let public = PUBLIC_KEYS.contains(&k.to_ascii_lowercase().as_str());
                (k.clone(), if public { v.clone() } else { "***".into() })
            })
            .collect()
    }
}

/// Stores whose conditional writes this process has checked (see
/// [`Storage::check_conditional_writes`]), by root URI and options.
static CHECKED: Mutex<Option<HashSet<String>>> = Mutex::new(None);

impl Storage {
    /// The error for a failed request to the store: I/O failures (unreachable endpoint,
    /// refused credentials, missing bucket) become `Storage` errors naming the URI.
    pub fn error(&self, e: lance::Error) -> Error {
        match e {
            lance::Error::IO { .. } | lance::Error::Wrapped { .. } => {
                Error::Storage(format!("the object store of \"{}\" failed: {e}", self.root))
            }
            other => other.into(),
        }
    }

    /// Checks once per process and store that an object store (`s3://`, `gs://`, `az://`,
    /// ...) honours conditional writes (S3's `If-None-Match: *`, GCS's
    /// `ifGenerationMatch=0`, Azure's `If-None-Match`), which every commit relies on: a store
    /// that ignores them would let two concurrent commits overwrite each other. The services
    /// themselves have them; S3-compatible servers and emulators may not. Local paths and
    /// `memory://` always have them.
    ///
    /// # Errors
    /// `Storage` when the store accepted a second create of the same object, refuses
    /// conditional writes (`aws_conditional_put=disabled`), or cannot be reached.
    pub async fn check_conditional_writes(&self) -> Result<()> {
        if !self.is_object_store() {
            return Ok(());
        }
        let key = format!("{}\u{0}{:?}", self.root, sorted(&self.options));
        let seen =
            |set: &mut Option<HashSet<String>>| set.get_or_insert_with(HashSet::new).contains(&key);
        if seen(&mut CHECKED.lock().unwrap_or_else(|e| e.into_inner())) {
            return Ok(());
        }
        let (store, base) = self.object_store().await?;
        let nonce = crate::ns::infra::ids::new_nonce()?;
        let path = base
            .join(crate::ns::SCRATCH_DIR)
            .join(format!("conditional-write-check-{nonce}").as_str());
        let create = || PutOptions {
            mode: PutMode::Create,
            ..Default::default()
        };
        let first = store
            .inner
            .put_opts(&path, PutPayload::from_static(b"1"), create())
            .await;
        let second = match first {
            Ok(_) => {
                store
                    .inner
                    .put_opts(&path, PutPayload::from_static(b"2"), create())
                    .await
            }
            Err(e) => Err(e),
        };
        let _ = store.inner.delete(&path).await;
        match second {
            Err(object_store::Error::AlreadyExists { .. })
            | Err(object_store::Error::Precondition { .. }) => {
                CHECKED
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .get_or_insert_with(HashSet::new)
                    .insert(key);
                Ok(())
            }
            Ok(_) => Err(Error::Storage(format!(
                "the object store of \"{}\" accepted a second create of the same object: it \
                 ignores conditional writes (If-None-Match), so two concurrent commits could \
                 overwrite each other and lose one. Use a store with conditional writes (AWS \
                 S3, Google Cloud Storage, Azure Blob Storage, recent MinIO, Ceph RGW 18+, ...)",
                self.root
            ))),
            Err(object_store::Error::NotImplemented { .. }) => Err(Error::Storage(format!(
                "the object store of \"{}\" is configured without conditional writes \
                 (aws_conditional_put, or a store without them): commits need them to be safe \
                 against concurrent writers",
                self.root
            ))),
            Err(e) => Err(Error::Storage(format!(
                "the object store of \"{}\" failed a conditional write: {e}",
                self.root
            ))),
        }
    }
}

fn sorted(options: &HashMap<String, String>) -> BTreeMap<&str, &str> {
    options
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect()
}

impl From<&str> for Storage {
    /// A location without storage options (a local path, or a store configured by the
    /// environment).
    fn from(root: &str) -> Self {
        Self {
            root: Arc::from(root),
            options: Arc::new(HashMap::new()),
        }
    }
}

/// Lance's reading of a boolean option.
fn is_truthy(v: &str) -> bool {
    matches!(
        v.trim().to_ascii_lowercase().as_str(),
        "1" | "true" | "yes" | "on" | "y"
    )
}

impl fmt::Debug for Storage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Storage")
            .field("root", &self.root)
            .field("options", &self.redacted_options())
            .finish()
    }
}

impl fmt::Display for Storage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.root)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_output_redacts_secrets() {
        let st = Storage::new(
            "s3://bucket/ns",
            HashMap::from([
                ("aws_secret_access_key".to_string(), "hunter2".to_string()),
                ("aws_session_token".to_string(), "tok".to_string()),
                (
                    "aws_endpoint".to_string(),
                    "http://127.0.0.1:9000".to_string(),
                ),
            ]),
        )
        .unwrap();
        let shown = format!("{st:?}");
        assert!(
            !shown.contains("hunter2") && !shown.contains("tok\""),
            "{shown}"
        );
        assert!(shown.contains("http://127.0.0.1:9000"), "{shown}");
        assert_eq!(st.to_string(), "s3://bucket/ns");
    }

    #[test]
    fn opendal_refused_where_it_doubles_paths() {
        let opts = |v: &str| HashMap::from([("use_opendal".to_string(), v.to_string())]);
        for root in [
            "gs://b/ns",
            "az://c/ns",
            "abfss://c@a.dfs.core.windows.net/ns",
        ] {
            let e = Storage::new(root, opts("true")).unwrap_err();
            assert!(e.to_string().contains("use_opendal"), "{e}");
            assert!(Storage::new(root, opts("false")).is_ok());
        }
        assert!(Storage::new("s3://b/ns", opts("true")).is_ok());
    }

    #[test]
    fn object_store_schemes() {
        for remote in [
            "s3://b/ns",
            "gs://b/ns",
            "az://c/ns",
            "abfss://c@a/ns",
            "S3://b",
        ] {
            assert!(Storage::from(remote).is_object_store(), "{remote}");
        }
        for local in ["/tmp/ns", "file:///tmp/ns", "memory://ns", "relative/ns"] {
            assert!(!Storage::from(local).is_object_store(), "{local}");
        }
    }

    #[test]
    fn uri_joins_with_one_slash() {
        assert_eq!(Storage::from("s3://b/ns").uri("x/y"), "s3://b/ns/x/y");
        assert_eq!(Storage::from("s3://b/ns/").uri("x"), "s3://b/ns/x");
    }
}
