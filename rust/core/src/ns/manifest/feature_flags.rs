//! The `__manifest` format's feature flags: upstream Lance's directory namespace stamps a
//! reader and a writer bitmask on the manifest dataset's table metadata
//! ([`READER_FLAGS_KEY`], [`WRITER_FLAGS_KEY`], decimal `u64`, absent meaning 0). A build
//! reads a manifest only if it understands every reader bit and changes it only if it
//! understands every writer bit, so a manifest written in a newer format is refused, never
//! misread or damaged. No manifest feature is defined yet: this build understands none.
//!
//! The spec's optional `read_tag` and `read_branch` columns pin a partition to a Lance tag or
//! branch of its leaf instead of a `read_version`; this build reads partitions by
//! `read_version` only, so a manifest that pins any partition so is refused as well.

use std::collections::HashMap;

use crate::arrow::array::{Array, RecordBatch};
use crate::error::{Error, Result};

/// Table metadata key of the reader feature flags.
pub const READER_FLAGS_KEY: &str = "lance.namespace.manifest.reader_feature_flags";
/// Table metadata key of the writer feature flags.
pub const WRITER_FLAGS_KEY: &str = "lance.namespace.manifest.writer_feature_flags";
/// Reader flag bits this build understands.
const KNOWN_READER_FLAGS: u64 = 0;
/// Writer flag bits this build understands.
const KNOWN_WRITER_FLAGS: u64 = 0;
/// Manifest columns that pin a partition to something other than a `read_version`.
pub const PINNING_COLUMNS: [&str; 2] = ["read_tag", "read_branch"];

/// Refuses a manifest with reader flags this build does not understand.
///
/// # Errors
/// `IncompatibleFormat`.
pub fn check_readable(props: &HashMap<String, String>) -> Result<()> {
    check(props, READER_FLAGS_KEY, KNOWN_READER_FLAGS, "read")
}

/// Refuses a manifest with writer flags this build does not understand.
///
/// # Errors
/// `IncompatibleFormat`.
pub fn check_writable(props: &HashMap<String, String>) -> Result<()> {
    check(props, WRITER_FLAGS_KEY, KNOWN_WRITER_FLAGS, "change")
}

fn check(props: &HashMap<String, String>, key: &str, known: u64, what: &str) -> Result<()> {
    let Some(raw) = props.get(key) else {
        return Ok(());
    };
    let flags: u64 = raw.trim().parse().map_err(|_| {
        Error::IncompatibleFormat(format!(
            "the manifest's {key} is {raw:?}, not a number: it was written by a newer or \
             another implementation of the format; this version cannot {what} it"
        ))
    })?;
    let unknown = flags & !known;
    if unknown != 0 {
        return Err(Error::IncompatibleFormat(format!(
            "the manifest's {key} sets bits {unknown:#x} that this version of \
             lance-partitioned does not understand (it was written in a newer format); \
             upgrade lance-partitioned to {what} this namespace"
        )));
    }
    Ok(())
}

/// Refuses manifest rows that pin a partition to a Lance tag or branch (non-null
/// `read_tag`/`read_branch`).
///
/// # Errors
/// `IncompatibleFormat` naming the first such partition.
pub fn check_unpinned(batch: &RecordBatch, object_ids: &dyn Fn(usize) -> String) -> Result<()> {
    for name in PINNING_COLUMNS {
        let Some(col) = batch.column_by_name(name) else {
            continue;
        };
        if let Some(r) = (0..col.len()).find(|&r| !col.is_null(r)) {
            return Err(Error::IncompatibleFormat(format!(
                "the manifest pins {} to a Lance {} ({name}); this version of \
                 lance-partitioned reads partitions by read_version only",
                object_ids(r),
                name.trim_start_matches("read_")
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
            .collect()
    }

    #[test]
    fn absent_or_zero_flags_are_understood() {
        assert!(check_readable(&HashMap::new()).is_ok());
        assert!(check_writable(&HashMap::new()).is_ok());
        let zero = props(&[(READER_FLAGS_KEY, "0"), (WRITER_FLAGS_KEY, " 0 ")]);
        assert!(check_readable(&zero).is_ok());
        assert!(check_writable(&zero).is_ok());
    }

    #[test]
    fn unknown_bits_and_malformed_values_are_refused() {
        let reader = props(&[(READER_FLAGS_KEY, "1")]);
        let e = check_readable(&reader).unwrap_err();
        assert!(
            matches!(e, Error::IncompatibleFormat(ref m) if m.contains("0x1")),
            "{e}"
        );
        // A reader bit does not stop writers that understand the writer bits.
        assert!(check_writable(&reader).is_ok());
        let writer = props(&[(WRITER_FLAGS_KEY, "9223372036854775808")]);
        assert!(matches!(
            check_writable(&writer),
            Err(Error::IncompatibleFormat(ref m)) if m.contains("0x8000000000000000")
        ));
        let bad = props(&[(READER_FLAGS_KEY, "-1")]);
        assert!(matches!(
            check_readable(&bad),
            Err(Error::IncompatibleFormat(_))
        ));
    }
}
