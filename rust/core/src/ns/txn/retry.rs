//! What every retried commit of the transaction layer shares: the outcome, which Lance errors
//! are lost races, and the backoff between attempts.

use std::time::Duration;

use crate::error::lost_race;

/// The outcome of a retried commit (`commit_manifest`, `commit_root`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Committed {
    /// The manifest version after the commit (the latest one when nothing was committed).
    pub(crate) version: u64,
    /// Commit attempts.
    pub(crate) attempts: u32,
}

/// Lance errors of a manifest commit that mean "another commit landed first": a lost race
/// (`lost_race`), or a manifest whose columns a concurrent spec evolution changed after the
/// change was planned (the next plan builds its rows in the new columns).
pub(crate) fn manifest_race(e: &lance::Error) -> bool {
    lost_race(e) || matches!(e, lance::Error::SchemaMismatch { .. })
}

/// Lance errors that mean "another commit landed first" (for leaf commits).
pub(crate) fn is_retryable(e: &lance::Error) -> bool {
    lost_race(e)
}

/// Sleeps before attempt `attempt + 1` of a commit: linear backoff with jitter, so racing
/// committers spread out.
pub(crate) async fn backoff(attempt: u32) {
    let step = u64::from(attempt.min(10));
    let jitter = u64::from(getrandom::u32().unwrap_or(0)) % (50_000 * step);
    let wait = Duration::from_millis(20 * step) + Duration::from_micros(jitter);
    tokio::time::sleep(wait).await;
}
