//! Listing and opening versions of a table while an `expire()` may be removing some: a
//! version removed after the listing is skipped, never an error (what only it named is the
//! expire's to remove).

use lance::dataset::{Dataset, Version};

use crate::error::{is_not_found, Result};

/// How often a listing is repeated when a version it listed vanished while it was read.
const RELISTS: u32 = 5;

/// The versions of `ds`, listed again when one it listed was removed while being read.
///
/// # Errors
/// `Lance` for I/O errors, or when versions keep vanishing.
pub(crate) async fn list(ds: &Dataset) -> Result<Vec<Version>> {
    let mut attempt = 0;
    loop {
        attempt += 1;
        match ds.versions().await {
            Ok(v) => return Ok(v),
            Err(e) if is_not_found(&e) && attempt < RELISTS => {}
            Err(e) => return Err(e.into()),
        }
    }
}

/// `ds` at `version`; None when that version was removed.
///
/// # Errors
/// `Lance` for other I/O errors.
pub(crate) async fn checkout(ds: &Dataset, version: u64) -> Result<Option<Dataset>> {
    match ds.checkout_version(version).await {
        Ok(d) => Ok(Some(d)),
        Err(e) if is_not_found(&e) => Ok(None),
        Err(e) => Err(e.into()),
    }
}
