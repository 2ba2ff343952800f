//! Random partition namespace ids (D8) and table locations.

use crate::error::{Error, Result};

const ALPHABET: &[u8; 36] = b"abcdefghijklmnopqrstuvwxyz0123456789";

/// A 16-character base36 id from the operating system's cryptographic RNG (~82.7 bits).
///
/// # Errors
/// `Internal` if the RNG is unavailable.
pub fn random_id() -> Result<String> {
    let mut out = String::with_capacity(16);
    let mut buf = [0u8; 32];
    while out.len() < 16 {
        getrandom::fill(&mut buf)
            .map_err(|e| Error::Internal(format!("no random numbers available: {e}")))?;
        // Rejection sampling keeps every character uniform: 252 = 7 * 36.
        for b in buf {
            if b < 252 && out.len() < 16 {
                out.push(ALPHABET[(b % 36) as usize] as char);
            }
        }
    }
    Ok(out)
}

/// Whether `s` looks like an id made by [`random_id`].
pub fn is_id(s: &str) -> bool {
    s.len() == 16
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
}

/// The directory of a table relative to the root: `<8 lowercase hex>_<object_id>`.
///
/// The prefix is the first 32 bits of the FNV-1a hash of the object id, which spreads
/// directories across object-store key prefixes; readers use the manifest's `location`
/// column and never recompute it.
pub fn table_location(object_id: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in object_id.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{:08x}_{object_id}", (h >> 32) as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_16_base36_and_distinct() {
        let a = random_id().unwrap();
        let b = random_id().unwrap();
        assert!(is_id(&a) && is_id(&b), "{a} {b}");
        assert_ne!(a, b);
    }

    #[test]
    fn locations_have_an_8_hex_prefix() {
        let loc = table_location("v1$abc$dataset");
        assert_eq!(loc.len(), 8 + 1 + "v1$abc$dataset".len());
        assert!(loc[..8]
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()));
        assert_eq!(loc, table_location("v1$abc$dataset"));
    }
}
