//! The write ids a manifest records, and how a repeated commit is recognised.
//!
//! A strong-mode commit records its write id on every `table_version` row it adds. Most ids
//! are opaque (a distributed write's nonce, a caller's id): a commit is recognised by its id
//! while one of its rows is retained (see `retention`). A stream's micro-batches commit under
//! `stream:<stream id>:<batch id>` with batch ids that only grow, so the newest batch a stream
//! committed stands for all of its earlier ones: a replayed batch is recognised however many
//! commits ago it landed, and the manifest needs to keep only that one row per stream.

use std::collections::{HashMap, HashSet};

use super::format::{
    parse_props, required_string, string_column, METADATA, OBJECT_TYPE, TABLE_VERSION, WRITE_ID_KEY,
};
use super::Snapshot;
use crate::arrow::array::Array;
use crate::error::Result;

/// The prefix of a stream micro-batch's write id.
pub const STREAM_PREFIX: &str = "stream:";

/// The stream id and batch id of a stream micro-batch's write id (`None` for other ids).
pub fn stream_batch(write_id: &str) -> Option<(&str, u64)> {
    let rest = write_id.strip_prefix(STREAM_PREFIX)?;
    let (stream, batch) = rest.rsplit_once(':')?;
    if stream.is_empty() || batch.is_empty() || !batch.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((stream, batch.parse().ok()?))
}

/// The write ids one manifest version records.
#[derive(Debug, Clone, Default)]
pub struct WriteIds {
    /// Ids other than stream batches.
    exact: HashSet<String>,
    /// The newest batch id per stream id.
    streams: HashMap<String, u64>,
}

impl WriteIds {
    /// Records `write_id`.
    pub fn insert(&mut self, write_id: &str) {
        match stream_batch(write_id) {
            Some((stream, batch)) => {
                let newest = self.streams.entry(stream.to_string()).or_insert(batch);
                *newest = (*newest).max(batch);
            }
            None => {
                self.exact.insert(write_id.to_string());
            }
        }
    }

    /// Whether a commit under `write_id` landed: the id itself, or (a stream batch) a batch of
    /// the same stream at least as new.
    pub fn contains(&self, write_id: &str) -> bool {
        match stream_batch(write_id) {
            Some((stream, batch)) => self.streams.get(stream).is_some_and(|n| *n >= batch),
            None => self.exact.contains(write_id),
        }
    }

    /// Whether `write_id` is the newest batch of its stream (rows carrying it are kept).
    pub fn is_newest_batch(&self, write_id: &str) -> bool {
        stream_batch(write_id)
            .is_some_and(|(stream, batch)| self.streams.get(stream) == Some(&batch))
    }
}

impl Snapshot {
    /// Whether a commit recorded `write_id` (strong mode: its `table_version` rows carry it;
    /// a stream batch is also recorded by a newer batch of its stream, see `write_ids`).
    ///
    /// # Errors
    /// As [`Snapshot::keys`].
    pub fn has_write(&self, write_id: &str) -> Result<bool> {
        Ok(self.write_ids()?.contains(write_id))
    }

    /// The write ids the recorded versions carry (strong-mode distributed writes and stream
    /// micro-batches), built on first use: only rows whose properties mention a write id are
    /// parsed, and a repeated commit's lookup is one hash probe.
    ///
    /// # Errors
    /// `Corrupt` for malformed properties or a manifest without its columns.
    pub fn write_ids(&self) -> Result<&WriteIds> {
        if let Some(ids) = self.write_ids.get() {
            return Ok(ids);
        }
        let mut ids = WriteIds::default();
        if let Some(metadata) = string_column(&self.batch, METADATA)? {
            let types = required_string(&self.batch, OBJECT_TYPE)?;
            for r in 0..self.batch.num_rows() {
                if types.value(r) != TABLE_VERSION
                    || metadata.is_null(r)
                    || !metadata.value(r).contains(WRITE_ID_KEY)
                {
                    continue;
                }
                if let Some(id) = parse_props(Some(metadata.value(r)))?.get(WRITE_ID_KEY) {
                    ids.insert(id);
                }
            }
        }
        Ok(self.write_ids.get_or_init(|| ids))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_ids_parse_from_the_right() {
        assert_eq!(stream_batch("stream:q:1:7"), Some(("q:1", 7)));
        assert_eq!(stream_batch("stream:q:"), None);
        assert_eq!(stream_batch("stream::3"), None);
        assert_eq!(stream_batch("stream:q:-3"), None);
        assert_eq!(stream_batch("stream:q:+3"), None);
        assert_eq!(stream_batch("nonce-3"), None);
    }

    #[test]
    fn a_newer_batch_stands_for_the_older_ones_of_its_stream_only() {
        let mut ids = WriteIds::default();
        for id in ["stream:a:5", "stream:a:2", "stream:b:1", "w-1"] {
            ids.insert(id);
        }
        assert!(ids.contains("stream:a:0") && ids.contains("stream:a:5"));
        assert!(!ids.contains("stream:a:6"));
        assert!(ids.contains("stream:b:1") && !ids.contains("stream:b:2"));
        assert!(!ids.contains("stream:c:0"));
        assert!(ids.contains("w-1") && !ids.contains("w-2"));
        assert!(ids.is_newest_batch("stream:a:5") && !ids.is_newest_batch("stream:a:2"));
        assert!(!ids.is_newest_batch("w-1"));
    }
}
