//! The policy of expiring old manifest versions automatically: every
//! [`EXPIRE_INTERVAL_KEY`] manifest versions (default [`DEFAULT_EXPIRE_INTERVAL`]; `0` turns
//! it off), the process whose commit reaches a multiple of the interval runs `expire()` with
//! the namespace's rules, [`EXPIRE_OLDER_THAN_KEY`] (seconds, default
//! [`DEFAULT_EXPIRE_OLDER_THAN`], seven days; `0`: no age rule) and
//! [`EXPIRE_RETAIN_KEY`] (versions, default none; `0`: no count rule). A version goes when
//! every rule given lets it go, never the latest or a tagged one. What a long history costs
//! every commit and read (listing versions, finding the latest) is bounded by what the rules
//! keep.

use std::collections::HashMap;
use std::time::Duration;

use crate::error::{Error, Result};

use super::compact::whole_number;

/// The root property of the interval, in manifest versions.
pub const EXPIRE_INTERVAL_KEY: &str = "lance_partitioned.expire.interval";
/// The interval when [`EXPIRE_INTERVAL_KEY`] is not set.
pub const DEFAULT_EXPIRE_INTERVAL: usize = 100;
/// The root property of the age rule, in seconds.
pub const EXPIRE_OLDER_THAN_KEY: &str = "lance_partitioned.expire.older_than_seconds";
/// The age rule when [`EXPIRE_OLDER_THAN_KEY`] is not set: seven days.
pub const DEFAULT_EXPIRE_OLDER_THAN: usize = 7 * 24 * 3600;
/// The root property of the count rule.
pub const EXPIRE_RETAIN_KEY: &str = "lance_partitioned.expire.retain_versions";

/// The automatic expiry a namespace's root properties set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AutoExpire {
    /// Manifest versions between two expiries.
    pub interval: u64,
    /// Keep versions younger than this.
    pub older_than: Option<Duration>,
    /// Keep the last this many versions.
    pub retain_versions: Option<usize>,
}

impl AutoExpire {
    /// Whether a commit that moved the manifest from `from` to `to` reached a multiple of
    /// the interval.
    pub fn due(&self, from: u64, to: u64) -> bool {
        self.interval > 0 && to > from && to / self.interval > from / self.interval
    }
}

/// The automatic expiry `props` set (`None`: turned off).
///
/// # Errors
/// `InvalidArgument` for a property that is not a whole number, or for both rules turned
/// off (every version but the latest would go).
pub fn auto_expire(props: &HashMap<String, String>) -> Result<Option<AutoExpire>> {
    let interval = whole_number(
        props,
        EXPIRE_INTERVAL_KEY,
        DEFAULT_EXPIRE_INTERVAL,
        "manifest versions (0: never expire automatically)",
    )?;
    let older = whole_number(
        props,
        EXPIRE_OLDER_THAN_KEY,
        DEFAULT_EXPIRE_OLDER_THAN,
        "seconds (0: no age rule)",
    )?;
    let retain = whole_number(props, EXPIRE_RETAIN_KEY, 0, "versions (0: no count rule)")?;
    if interval == 0 {
        return Ok(None);
    }
    if older == 0 && retain == 0 {
        return Err(Error::InvalidArgument(format!(
            "{EXPIRE_OLDER_THAN_KEY} and {EXPIRE_RETAIN_KEY} are both 0: automatic expiry \
             would keep only the latest version (set {EXPIRE_INTERVAL_KEY} to 0 to turn it \
             off)"
        )));
    }
    Ok(Some(AutoExpire {
        interval: interval as u64,
        older_than: (older > 0).then(|| Duration::from_secs(older as u64)),
        retain_versions: (retain > 0).then_some(retain),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(kv: &[(&str, &str)]) -> HashMap<String, String> {
        kv.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn defaults_expire_week_old_versions_every_hundred() {
        let p = auto_expire(&HashMap::new()).unwrap().unwrap();
        assert_eq!(p.interval, 100);
        assert_eq!(p.older_than, Some(Duration::from_secs(604_800)));
        assert_eq!(p.retain_versions, None);
    }

    #[test]
    fn due_when_a_commit_reaches_a_multiple() {
        let p = auto_expire(&props(&[(EXPIRE_INTERVAL_KEY, "10")]))
            .unwrap()
            .unwrap();
        assert!(p.due(9, 10));
        assert!(p.due(9, 11));
        assert!(!p.due(10, 11));
        assert!(!p.due(11, 19));
        assert!(!p.due(12, 12));
    }

    #[test]
    fn off_and_malformed() {
        assert_eq!(
            auto_expire(&props(&[(EXPIRE_INTERVAL_KEY, "0")])).unwrap(),
            None
        );
        assert!(matches!(
            auto_expire(&props(&[(EXPIRE_RETAIN_KEY, "many")])),
            Err(Error::InvalidArgument(_))
        ));
        assert!(matches!(
            auto_expire(&props(&[(EXPIRE_OLDER_THAN_KEY, "0")])),
            Err(Error::InvalidArgument(_))
        ));
        let count_only = auto_expire(&props(&[
            (EXPIRE_OLDER_THAN_KEY, "0"),
            (EXPIRE_RETAIN_KEY, "50"),
        ]))
        .unwrap()
        .unwrap();
        assert_eq!(count_only.older_than, None);
        assert_eq!(count_only.retain_versions, Some(50));
    }
}
