//! The retried, conflict-checked commit of root properties (the namespace schema, spec
//! versions): schema updates and spec evolution are planned on the latest manifest and
//! committed like writes, never from a cached copy.
//!
//! A [`RootUpdate`] plans the properties it sets on top of the latest manifest (validating
//! them against what is there); [`commit_root`] commits them as one Lance `UpdateConfig` on
//! that manifest version. Lance refuses it when a concurrent commit since that version set one
//! of the same keys, and the update then plans again on the new latest version. So every
//! update that validates against a property also sets it (to its unchanged value when it does
//! not change it): a spec version validated against the schema rewrites the schema key, and
//! a schema update and a spec evolution racing each other conflict instead of both landing.

use futures::future::BoxFuture;

use crate::error::{lost_race, Error, Result};
use crate::ns::infra::storage::Storage;
use crate::ns::manifest::Snapshot;
use crate::ns::txn::retry::{backoff, manifest_race, Committed};

/// How many lost races a schema or spec change retries: every schema change and evolution
/// conflicts with every other (they all set the schema key), so many processes changing the
/// schema at once take turns.
pub(crate) const ROOT_ATTEMPTS: u32 = 200;

/// Root property changes planned on one manifest version: `(key, value)` pairs to set, a
/// `None` value removing the key.
pub(crate) type RootChange = Vec<(String, Option<String>)>;

/// A root property change that plans itself on the latest manifest.
pub(crate) trait RootUpdate: Send {
    /// The properties to set on top of `latest`; `None` when there is nothing to commit.
    /// Planning may prepare the manifest (idempotent commits that change no root property,
    /// such as adding manifest columns), but makes nothing visible.
    ///
    /// # Errors
    /// Typed errors for a change that no longer applies to `latest`.
    fn plan<'a>(&'a mut self, latest: &'a Snapshot) -> BoxFuture<'a, Result<Option<RootChange>>>;
}

/// The schema property set again to its value: a root change validated against the schema
/// (a spec evolution, an index declaration, a sort order) sets it too, so a concurrent schema
/// change conflicts with it instead of both landing.
///
/// # Errors
/// `Corrupt` when the namespace has no schema property.
pub(crate) fn schema_unchanged(latest: &Snapshot) -> Result<(String, Option<String>)> {
    let schema = latest
        .root_props
        .props
        .get(crate::ns::SCHEMA_KEY)
        .cloned()
        .ok_or_else(|| Error::Corrupt("the namespace has no schema property".into()))?;
    Ok((crate::ns::SCHEMA_KEY.to_string(), Some(schema)))
}

/// Commits `update` (see the module docs); returns the manifest version it landed as.
///
/// # Errors
/// `Corrupt` for a manifest another tool stripped; the update's own errors;
/// `CommitConflict` after `max_attempts` lost races; `Lance` for I/O errors.
pub(crate) async fn commit_root(
    storage: &Storage,
    max_attempts: u32,
    update: &mut dyn RootUpdate,
) -> Result<Committed> {
    storage.check_conditional_writes().await?;
    let mut attempt = 0u32;
    loop {
        attempt += 1;
        let latest = Snapshot::load(storage, None).await?;
        latest.check_writable()?;
        let planned = match update.plan(&latest).await {
            // Preparing the manifest (its own commits) lost a race: plan again.
            Err(Error::Lance(e)) if manifest_race(&e) && attempt < max_attempts => {
                backoff(attempt).await;
                continue;
            }
            other => other?,
        };
        let Some(props) = planned else {
            return Ok(Committed {
                version: latest.version,
                attempts: attempt,
            });
        };
        crate::ns::txn::hooks::pause("before_root_commit");
        crate::ns::txn::interrupt::enter_commit()?;
        // The transaction reads `latest.version`: Lance checks every commit since then.
        let mut ds = (*latest.dataset).clone();
        match ds.update_metadata(props).await {
            Ok(_) => {
                return Ok(Committed {
                    version: ds.version().version,
                    attempts: attempt,
                })
            }
            Err(e) if lost_race(&e) && attempt < max_attempts => backoff(attempt).await,
            Err(e) if lost_race(&e) => {
                return Err(Error::CommitConflict(format!(
                    "gave up after {attempt} attempts to commit a schema or spec change: \
                     concurrent changes kept landing first ({})",
                    crate::error::user_message(&e.to_string())
                )))
            }
            Err(e) => return Err(storage.error(e)),
        }
    }
}
