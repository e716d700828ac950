//! Credentials: random bearer tokens (stored only as SHA-256 digests), the cookies that carry
//! them for the web page, and organiser password hashing (bcrypt, on the blocking pool).
//! A token's prefix says whose it is, so one lookup answers "who is this".

use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest, Sha256};

pub const GUEST_COOKIE: &str = "confetti_guest";
pub const ORGANISER_COOKIE: &str = "confetti_organiser";
pub const GUEST_PREFIX: &str = "g_";
pub const ORGANISER_PREFIX: &str = "o_";
/// The venue screen's cookie and token prefix (`http::screens`): it reads what guests see.
pub const SCREEN_COOKIE: &str = "confetti_screen";
pub const SCREEN_PREFIX: &str = "s_";

/// bcrypt cost: about 50 ms per check on these machines, run off the async runtime.
const BCRYPT_COST: u32 = 10;

/// `n` random bytes, URL-safe base64 without padding.
pub fn random_string(n: usize) -> anyhow::Result<String> {
    let mut bytes = vec![0u8; n];
    getrandom::fill(&mut bytes).map_err(|e| anyhow::anyhow!("no randomness: {e}"))?;
    Ok(URL_SAFE_NO_PAD.encode(bytes))
}

/// A new bearer token with the given prefix, and the digest to store.
pub fn new_token(prefix: &str) -> anyhow::Result<(String, Vec<u8>)> {
    let token = format!("{prefix}{}", random_string(32)?);
    let digest = token_digest(&token);
    Ok((token, digest))
}

pub fn token_digest(token: &str) -> Vec<u8> {
    Sha256::digest(token.as_bytes()).to_vec()
}

/// Compares two secrets in time independent of where they differ.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Synchronous: call through `Blocking::crypto`.
pub fn hash_password(password: &str) -> anyhow::Result<String> {
    Ok(bcrypt::hash(password, BCRYPT_COST)?)
}

/// Synchronous: call through `Blocking::crypto`. A malformed stored hash never matches.
pub fn verify_password(password: &str, hash: &str) -> bool {
    bcrypt::verify(password, hash).unwrap_or(false)
}

/// How long a guest's cookie lasts: a guest token does not expire, and a phone should still
/// know its guest when the photos are looked at again months later.
pub const GUEST_COOKIE_LIFETIME: Duration = Duration::from_secs(365 * 24 * 60 * 60);

/// The `Set-Cookie` value for a session token; the browser forgets it after `lifetime`, which
/// for an organiser is the session's own lifetime.
pub fn session_cookie(name: &str, token: &str, lifetime: Duration, secure: bool) -> String {
    let secure = if secure { "; Secure" } else { "" };
    let max_age = lifetime.as_secs();
    format!("{name}={token}; HttpOnly; SameSite=Lax; Path=/; Max-Age={max_age}{secure}")
}

/// The `Set-Cookie` value that makes the browser drop a session cookie at once.
pub fn cleared_cookie(name: &str, secure: bool) -> String {
    let secure = if secure { "; Secure" } else { "" };
    format!("{name}=; HttpOnly; SameSite=Lax; Path=/; Max-Age=0{secure}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_carry_their_prefix_and_differ() -> anyhow::Result<()> {
        let (a, da) = new_token(GUEST_PREFIX)?;
        let (b, _) = new_token(GUEST_PREFIX)?;
        assert!(a.starts_with("g_") && a.len() > 40);
        assert_ne!(a, b);
        assert_eq!(token_digest(&a), da);
        Ok(())
    }

    #[test]
    fn constant_time_eq_compares_whole_values() {
        assert!(constant_time_eq(b"secret", b"secret"));
        assert!(!constant_time_eq(b"secret", b"secreT"));
        assert!(!constant_time_eq(b"secret", b"secret2"));
    }
}
