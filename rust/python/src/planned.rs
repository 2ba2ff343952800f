//! What a distributed operation (a write or a merge) fixes on the driver and shares with every
//! task and the committer: where the namespace lives, the manifest version every part reads,
//! the commit mode and the nonce new partitions' ids derive from.

use std::collections::HashMap;

use lance_partitioned_core::ns::infra::ids::new_nonce;
use lance_partitioned_core::ns::infra::storage::Storage;
use lance_partitioned_core::ns::namespace::Namespace;
use lance_partitioned_core::ns::ops::WritePlan;
use lance_partitioned_core::ns::write::key_hasher;
use pyo3::prelude::*;

use crate::errors::{invalid_arg, run, to_py};
use crate::runtime::block_on;
use crate::writes::{redacted, KeyHasher};

/// The plan of one distributed operation; see the module docs.
pub(crate) struct Planned {
    /// Root and storage options (which travel with the pickle).
    pub(crate) storage: Storage,
    /// The manifest version every part reads.
    pub(crate) manifest_version: u64,
    /// Strong (true) or weak commits.
    pub(crate) strong: bool,
    /// The operation's random id.
    pub(crate) nonce: String,
}

impl Planned {
    /// Plans on the latest manifest version of the namespace at `root`.
    pub(crate) fn plan(
        py: Python<'_>,
        root: &str,
        strong: Option<bool>,
        storage_options: Option<HashMap<String, String>>,
    ) -> PyResult<Self> {
        Self::plan_by(py, root, None, strong, storage_options)
    }

    /// The plan the tasks of one write share under `key` (published by the first of them;
    /// see `shared_plan` in the core).
    pub(crate) fn shared(
        py: Python<'_>,
        root: &str,
        key: &str,
        strong: Option<bool>,
        storage_options: Option<HashMap<String, String>>,
    ) -> PyResult<Self> {
        Self::plan_by(py, root, Some(key), strong, storage_options)
    }

    /// A new plan with a fresh nonce, or the one shared under `key`.
    fn plan_by(
        py: Python<'_>,
        root: &str,
        key: Option<&str>,
        strong: Option<bool>,
        storage_options: Option<HashMap<String, String>>,
    ) -> PyResult<Self> {
        let storage = Storage::new(root, storage_options.unwrap_or_default()).map_err(to_py)?;
        let (p, nonce) = run(py, || {
            let ns = Namespace::open(storage.clone());
            match key {
                Some(key) => block_on(ns.plan_shared(key, strong)),
                None => Ok((block_on(ns.plan_distributed(strong))?, new_nonce()?)),
            }
        })?;
        Ok(Self {
            storage,
            manifest_version: p.manifest_version,
            strong: p.strong,
            nonce,
        })
    }

    /// Rebuilds a plan (what unpickling calls); `what` names the operation in errors.
    pub(crate) fn restore(
        root: &str,
        manifest_version: u64,
        strong: bool,
        nonce: String,
        storage_options: Option<HashMap<String, String>>,
        what: &str,
    ) -> PyResult<Self> {
        if nonce.len() < 16 {
            return Err(invalid_arg(format!("a {what} needs its planned nonce")));
        }
        Ok(Self {
            storage: Storage::new(root, storage_options.unwrap_or_default()).map_err(to_py)?,
            manifest_version,
            strong,
            nonce,
        })
    }

    /// The core's view of the plan.
    pub(crate) fn write_plan(&self) -> WritePlan {
        WritePlan {
            manifest_version: self.manifest_version,
            strong: self.strong,
        }
    }

    /// The namespace the plan is for.
    pub(crate) fn namespace(&self) -> Namespace {
        Namespace::open(self.storage.clone())
    }

    /// The partition-key hasher of the planned version's spec.
    pub(crate) fn key_hasher(&self, py: Python<'_>) -> PyResult<KeyHasher> {
        let (storage, version) = (&self.storage, self.manifest_version);
        let inner = run(py, || {
            block_on(key_hasher::KeyHasher::new(storage, version))
        })?;
        Ok(KeyHasher::from(inner))
    }

    /// `Name("root", <extra>manifest_version=…, strong=…, storage_options={redacted})`.
    pub(crate) fn repr(&self, name: &str, extra: &str) -> String {
        format!(
            "{name}({:?}, {extra}manifest_version={}, strong={}{})",
            self.storage.root(),
            self.manifest_version,
            if self.strong { "True" } else { "False" },
            redacted(&self.storage)
        )
    }

    /// The namespace root.
    pub(crate) fn root(&self) -> String {
        self.storage.root().to_string()
    }

    /// The storage options (with their secrets: they travel to the tasks; never printed).
    pub(crate) fn options(&self) -> HashMap<String, String> {
        self.storage.options().clone()
    }
}
