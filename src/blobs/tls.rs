//! TLS to an S3 store: rustls with the ring crypto provider. object_store's `aws` feature would
//! bring aws-lc-rs, whose C library was the largest single step of a cold build; ring is built
//! anyway and does the same job here (request signing and TLS).

/// Makes ring the process's rustls provider, before the S3 client is built (the client refuses
/// to start without one). Harmless when a provider is already installed.
pub fn install_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}
