//! `set_sort_order()`: the order every writer gives the rows of each file it writes within a
//! partition, and `optimize()` the files it compacts ([`crate::ns::manifest::SortOrder`]).
//! Committed as a root property change planned on the latest manifest, with the schema set
//! again unchanged, so a concurrent schema change conflicts instead of both landing. Rows
//! written before keep their order until `optimize()` compacts their files.

use futures::future::BoxFuture;

use crate::error::Result;
use crate::ns::infra::storage::Storage;
use crate::ns::manifest::{Snapshot, SortOrder};
use crate::ns::txn::root_commit::{
    commit_root, schema_unchanged, RootChange, RootUpdate, ROOT_ATTEMPTS,
};

/// Sets the sort order to `items` (`column [ASC|DESC] [NULLS FIRST|NULLS LAST]`; none when
/// empty); returns the manifest version it landed as.
///
/// # Errors
/// `InvalidArgument` for an item that does not parse against the latest schema;
/// `CommitConflict` after too many lost races.
pub(crate) async fn set_sort_order(storage: &Storage, items: &[String]) -> Result<u64> {
    let committed = commit_root(storage, ROOT_ATTEMPTS, &mut SetOrder { items }).await?;
    Ok(committed.version)
}

struct SetOrder<'a> {
    items: &'a [String],
}

impl RootUpdate for SetOrder<'_> {
    fn plan<'a>(&'a mut self, latest: &'a Snapshot) -> BoxFuture<'a, Result<Option<RootChange>>> {
        Box::pin(async move {
            let order = SortOrder::parse(self.items, &latest.schema())?;
            if order == SortOrder::of(&latest.root_props.props)? {
                return Ok(None);
            }
            let mut change: RootChange = order.to_props()?.into();
            change.push(schema_unchanged(latest)?);
            Ok(Some(change))
        })
    }
}
