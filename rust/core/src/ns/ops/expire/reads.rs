//! Which leaf versions the kept and the expired manifest versions read, found by fragment:
//! a manifest version reads the rows of its fragments its deletion files leave, and
//! consecutive versions share almost all of their fragments. Each fragment's data is read
//! once (every row it was written with, by position) and each deletion file once, however
//! many versions name them; a version then costs a pass over rows already in memory. An
//! expiry's I/O follows what the history wrote, not versions times partitions.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use futures::stream::{self, StreamExt, TryStreamExt};
use lance::dataset::fragment::FileFragment;
use lance::dataset::{Dataset, Version};
use lance::table::format::Fragment;

use crate::arrow::array::{Array, AsArray};
use crate::arrow::compute::cast;
use crate::arrow::datatypes::{DataType, UInt64Type};
use crate::error::{Error, Result};
use crate::ns::manifest::{required_string, Snapshot, LOCATION, OBJECT_TYPE, READ_VERSION, TABLE};

/// Versions, fragments and deletion files read at a time.
const CONCURRENCY: usize = 8;

/// The leaf versions the kept and the expired manifest versions read, by location.
#[derive(Default)]
pub(super) struct ReadSets {
    pub(super) kept: HashMap<String, HashSet<u64>>,
    pub(super) gone: HashMap<String, HashSet<u64>>,
    /// Leaves the latest version reads without a version (weak mode).
    pub(super) weak: HashSet<String>,
    /// Leaves a kept strong-mode manifest version reads at an unrecorded version (another
    /// tool's row): nothing of them is expired.
    pub(super) unknown: HashSet<String>,
}

/// A fragment's data files: the same files hold the same rows in every version.
type FragmentKey = Vec<String>;
/// A fragment as one version has it: its data files and its deletion file.
type ViewKey = (FragmentKey, Option<(u64, u64)>);

/// A fragment as some versions have it: which of them are kept and which expire.
struct View {
    at: Arc<Dataset>,
    fragment: Fragment,
    kept: bool,
    gone: bool,
    /// Whether one of them is the latest version.
    latest: bool,
}

/// The table rows of a fragment by position: (location, read version), `None` for other rows.
type Rows = Vec<Option<(String, Option<u64>)>>;

/// What the manifest versions `all` read, split by whether `gone` expires them.
///
/// # Errors
/// `Lance` for I/O errors; `Corrupt` for a manifest without our columns.
pub(super) async fn read_sets(
    snap: &Snapshot,
    all: &[Version],
    gone: &HashSet<u64>,
    strong: bool,
) -> Result<ReadSets> {
    let views = views(snap, fragments_by_version(snap, all).await?, gone);
    let rows = fragment_rows(&views).await?;
    let mut out = ReadSets::default();
    let applied: Vec<(View, Option<Arc<_>>)> = stream::iter(views.into_values().map(|v| async {
        let frag = FileFragment::new(Arc::clone(&v.at), v.fragment.clone());
        let deleted = frag.get_deletion_vector().await?;
        Ok::<_, Error>((v, deleted))
    }))
    .buffer_unordered(CONCURRENCY)
    .try_collect()
    .await?;
    for (view, deleted) in applied {
        let key: FragmentKey = view.fragment.files.iter().map(|d| d.path.clone()).collect();
        let live = rows[&key]
            .iter()
            .enumerate()
            .filter(|(i, _)| deleted.as_ref().is_none_or(|d| !d.contains(*i as u32)))
            .filter_map(|(_, r)| r.as_ref());
        for (loc, rv) in live {
            if view.kept {
                let set = out.kept.entry(loc.clone()).or_default();
                match rv {
                    Some(v) => {
                        set.insert(*v);
                    }
                    None if strong => {
                        out.unknown.insert(loc.clone());
                    }
                    None if view.latest => {
                        out.weak.insert(loc.clone());
                    }
                    None => {}
                }
            }
            if view.gone {
                let set = out.gone.entry(loc.clone()).or_default();
                if let Some(v) = rv {
                    set.insert(*v);
                }
            }
        }
    }
    Ok(out)
}

/// The fragments of every version of `all` (a version an expire removed since the listing
/// reads nothing that must stay, and is left out).
async fn fragments_by_version(
    snap: &Snapshot,
    all: &[Version],
) -> Result<Vec<(u64, Arc<Dataset>, Vec<Fragment>)>> {
    stream::iter(all.iter().map(|v| {
        let ds = &snap.dataset;
        let version = v.version;
        async move {
            let at = if version == snap.version {
                Some(Arc::clone(ds))
            } else {
                crate::ns::infra::versions::checkout(ds, version)
                    .await?
                    .map(Arc::new)
            };
            Ok::<_, Error>(at.map(|at| {
                let frags = at.manifest().fragments.iter().cloned().collect();
                (version, at, frags)
            }))
        }
    }))
    .buffer_unordered(CONCURRENCY)
    .try_filter_map(|r| async move { Ok(r) })
    .try_collect()
    .await
}

/// The distinct fragment views of the versions, each with whether a kept or an expired
/// version has it.
fn views(
    snap: &Snapshot,
    by_version: Vec<(u64, Arc<Dataset>, Vec<Fragment>)>,
    gone: &HashSet<u64>,
) -> HashMap<ViewKey, View> {
    let mut out: HashMap<ViewKey, View> = HashMap::new();
    for (version, at, frags) in by_version {
        let expired = gone.contains(&version);
        for f in frags {
            let files: FragmentKey = f.files.iter().map(|d| d.path.clone()).collect();
            let deletion = f.deletion_file.as_ref().map(|d| (d.read_version, d.id));
            let view = out.entry((files, deletion)).or_insert_with(|| View {
                at: Arc::clone(&at),
                fragment: f,
                kept: false,
                gone: false,
                latest: false,
            });
            view.kept |= !expired;
            view.gone |= expired;
            view.latest |= version == snap.version;
        }
    }
    out
}

/// Every distinct fragment's table rows by position, each read once without its deletion
/// file.
async fn fragment_rows(views: &HashMap<ViewKey, View>) -> Result<HashMap<FragmentKey, Rows>> {
    let mut first: HashMap<&FragmentKey, &View> = HashMap::new();
    for ((files, _), v) in views {
        first.entry(files).or_insert(v);
    }
    stream::iter(first.into_iter().map(|(files, v)| async move {
        let whole = Fragment {
            deletion_file: None,
            ..v.fragment.clone()
        };
        Ok::<_, Error>((files.clone(), table_rows(&v.at, whole).await?))
    }))
    .buffer_unordered(CONCURRENCY)
    .try_collect()
    .await
}

/// The rows of `fragment` (read whole) by position: table rows as (location, read
/// version), others `None`.
async fn table_rows(ds: &Dataset, fragment: Fragment) -> Result<Rows> {
    let has_rv = ds.schema().field(READ_VERSION).is_some();
    let mut cols = vec![OBJECT_TYPE, LOCATION];
    if has_rv {
        cols.push(READ_VERSION);
    }
    let mut scan = ds.scan();
    scan.with_fragments(vec![fragment]);
    scan.scan_in_order(true);
    scan.project(&cols)?;
    let batch = scan.try_into_batch().await?;
    let types = required_string(&batch, OBJECT_TYPE)?;
    let locs = required_string(&batch, LOCATION)?;
    let rvs = match batch.column_by_name(READ_VERSION) {
        Some(c) => Some(cast(c, &DataType::UInt64)?),
        None => None,
    };
    let rvs = rvs.as_ref().map(|c| c.as_primitive::<UInt64Type>());
    Ok((0..batch.num_rows())
        .map(|r| {
            if types.is_null(r) || types.value(r) != TABLE || locs.is_null(r) {
                return None;
            }
            let loc = locs.value(r).trim_end_matches('/').to_string();
            let rv = rvs.and_then(|c| (!c.is_null(r)).then(|| c.value(r)));
            Some((loc, rv))
        })
        .collect())
}
