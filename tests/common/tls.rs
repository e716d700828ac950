//! TLS for tests that put a real TLS endpoint (haproxy) in front of a server.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A self-signed certificate for 127.0.0.1 and localhost, with its key, in one PEM file (as
/// haproxy's `crt` wants it).
pub fn self_signed_pem(dir: &Path) -> PathBuf {
    let (cert, key, pem) = (dir.join("lb-cert.pem"), dir.join("lb-key.pem"), dir.join("lb.pem"));
    let output = Command::new("openssl")
        .args(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2"])
        .args(["-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output()
        .unwrap_or_else(|e| panic!("this test makes its certificate with openssl: {e}"));
    assert!(output.status.success(), "openssl req failed: {}", String::from_utf8_lossy(&output.stderr));
    let mut both = std::fs::read(&cert).expect("certificate");
    both.extend(std::fs::read(&key).expect("key"));
    std::fs::write(&pem, both).expect("PEM");
    pem
}
