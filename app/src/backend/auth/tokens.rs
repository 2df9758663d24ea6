//! Personal API tokens: 32 random bytes, shown once as `berth_…`, stored as a SHA-256 hash.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest, Sha256};

/// Prefix that makes Berth tokens recognisable (secret scanners, logs).
pub const TOKEN_PREFIX: &str = "berth_";

/// A fresh token and the hash to store for it.
pub fn generate() -> (String, String) {
    let bytes: [u8; 32] = rand::random();
    let token = format!("{TOKEN_PREFIX}{}", URL_SAFE_NO_PAD.encode(bytes));
    let hash = hash(&token);
    (token, hash)
}

/// Hex SHA-256 of a token, the form it is stored and looked up in. Tokens are high-entropy
/// random values, so a fast hash is enough (no password stretching needed).
pub fn hash(token: &str) -> String {
    Sha256::digest(token.as_bytes())
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_prefixed_random_and_hashed() {
        let (a, hash_a) = generate();
        let (b, _) = generate();
        assert!(a.starts_with(TOKEN_PREFIX));
        assert_eq!(a.len(), TOKEN_PREFIX.len() + 43);
        assert_ne!(a, b);
        assert_eq!(hash_a, hash(&a));
        assert_eq!(hash_a.len(), 64);
        assert!(!hash_a.contains(&a[TOKEN_PREFIX.len()..]));
    }
}
