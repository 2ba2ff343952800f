//! Uncommitted Lance fragments of leaf tables: the parameters of every leaf write, the
//! fragments of an uncommitted insert, and their data files.

use lance::dataset::transaction::Operation;
use lance::dataset::{WriteMode, WriteParams};
use lance::table::format::Fragment;
use lance_file::writer::FileWriterOptions;

use crate::error::{Error, Result};
use crate::ns::infra::session::session;
use crate::ns::infra::storage::Storage;

/// Lance write parameters of every leaf write.
pub(crate) fn write_params(storage: &Storage, mode: WriteMode) -> Result<WriteParams> {
    Ok(WriteParams {
        mode,
        session: Some(session()?),
        store_params: Some(storage.store_params()),
        enable_v2_manifest_paths: true,
        skip_auto_cleanup: true,
        max_rows_per_file: usize::MAX / 2,
        // Our batches are owned, contiguous Rust arrays (routing copies them out of the
        // input), so Lance can keep them instead of copying every buffered slice again.
        file_writer_options: Some(FileWriterOptions {
            keep_original_array: Some(true),
            ..Default::default()
        }),
        ..Default::default()
    })
}

/// The fragments (and, for an overwrite, the schema) of an uncommitted insert.
pub(crate) fn op_fragments(
    op: Operation,
) -> Result<(Vec<Fragment>, Option<lance::datatypes::Schema>)> {
    match op {
        Operation::Append { fragments } => Ok((fragments, None)),
        Operation::Overwrite {
            fragments, schema, ..
        } => Ok((fragments, Some(schema))),
        other => Err(Error::Internal(format!(
            "unexpected uncommitted operation {}",
            other.name()
        ))),
    }
}

/// Data files and bytes of `frags`.
pub(crate) fn data_files(frags: &[Fragment]) -> (u64, u64) {
    let files = frags.iter().map(|f| f.files.len() as u64).sum();
    let bytes = frags
        .iter()
        .flat_map(|f| f.files.iter())
        .filter_map(|d| d.file_size_bytes.get().map(|n| n.get()))
        .sum();
    (files, bytes)
}
