//! Stops the build when `nasm` is missing on x86: libjpeg-turbo (the `mozjpeg` crate) would
//! otherwise be built without its SIMD code, saying so only in a warning `cargo run` hides, and
//! every thumbnail would take 2–3× as long. `CONFETTI_ALLOW_NO_SIMD=1` builds without it on
//! purpose. (`panic = "abort"` is refused in `src/lib.rs`.)

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=CONFETTI_ALLOW_NO_SIMD");
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    if !matches!(arch.as_str(), "x86_64" | "x86") || std::env::var_os("CONFETTI_ALLOW_NO_SIMD").is_some() {
        return;
    }
    let nasm = std::process::Command::new("nasm").arg("-v").output();
    if !nasm.is_ok_and(|out| out.status.success()) {
        eprintln!(
            "nasm is missing: libjpeg-turbo would be built without its SIMD code (thumbnails 2-3x slower). \
             Install it (Debian/Ubuntu: apt-get install nasm; scripts/run.sh does it for you), \
             or set CONFETTI_ALLOW_NO_SIMD=1 to build without it."
        );
        std::process::exit(1);
    }
}
