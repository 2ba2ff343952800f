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

/// A 16-character base36 id derived from a per-write random `nonce` and a partition-value
/// prefix: every task of one distributed write derives the same id for the same new
/// namespace, and ids of different writes are as unpredictable as the nonce.
///
/// # Errors
/// `Internal` if a value cannot be serialised.
pub fn derived_id(
    nonce: &str,
    spec_id: i32,
    prefix: &[crate::datafusion::scalar::ScalarValue],
) -> Result<String> {
    let mut data = Vec::with_capacity(64);
    data.extend_from_slice(nonce.as_bytes());
    data.push(0);
    data.extend_from_slice(&spec_id.to_le_bytes());
    for v in prefix {
        // Type, then the serialised value (or a NULL marker): distinct values never collide.
        data.extend_from_slice(v.data_type().to_string().as_bytes());
        data.push(0);
        // NULL has a marker of its own ('' is a value); the exact text never merges values.
        if v.is_null() {
            data.push(0);
        } else {
            let s = crate::values::to_exact_text(v)?;
            data.push(1);
            data.extend_from_slice(&(s.len() as u64).to_le_bytes());
            data.extend_from_slice(s.as_bytes());
        }
    }
    let mut acc: u128 = 0;
    for seed in 0..4u32 {
        let h = crate::hash::murmur3_x86_32(&data, 0x9e37_79b9 ^ seed.wrapping_mul(0x85eb_ca6b));
        acc = (acc << 32) | u128::from(h);
    }
    let mut out = String::with_capacity(16);
    for _ in 0..16 {
        out.push(ALPHABET[(acc % 36) as usize] as char);
        acc /= 36;
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

/// A fresh nonce (32 random characters): one distributed write's, or a probe object's.
///
/// # Errors
/// `Internal` without a random number source.
pub fn new_nonce() -> Result<String> {
    Ok(format!("{}{}", random_id()?, random_id()?))
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
    fn derived_ids_are_stable_per_nonce_and_distinct_per_value() {
        use crate::datafusion::scalar::ScalarValue as S;
        let us = [S::Utf8(Some("US".into()))];
        let a = derived_id("n1", 1, &us).unwrap();
        assert!(is_id(&a), "{a}");
        assert_eq!(a, derived_id("n1", 1, &us).unwrap());
        assert_ne!(a, derived_id("n2", 1, &us).unwrap());
        assert_ne!(a, derived_id("n1", 2, &us).unwrap());
        assert_ne!(
            a,
            derived_id("n1", 1, &[S::Utf8(Some("FR".into()))]).unwrap()
        );
        assert_ne!(a, derived_id("n1", 1, &[S::Utf8(None)]).unwrap());
        assert_ne!(
            derived_id("n1", 1, &[S::Utf8(Some(String::new()))]).unwrap(),
            derived_id("n1", 1, &[S::Utf8(None)]).unwrap()
        );
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
