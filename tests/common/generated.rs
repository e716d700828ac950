//! Large media files made once by the tools that make real ones (ffmpeg, heif-enc) and kept in
//! the build's temporary directory, so a test run after the first does not pay for them again.

use std::path::{Path, PathBuf};
use std::process::Command;

/// `name` in the build's temporary directory, made with `make` unless it is there already.
pub fn made(name: &str, make: impl FnOnce(&Path)) -> PathBuf {
    // The tests of one binary run in threads: one makes a file while the others wait for it.
    static MAKING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _making = MAKING.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join("generated").join(name);
    if !path.exists() {
        std::fs::create_dir_all(path.parent().expect("dir")).expect("mkdir");
        let partial = path.with_extension(format!("{}.partial", std::process::id()));
        make(&partial);
        std::fs::rename(&partial, &path).expect("rename");
    }
    path
}

/// Runs a tool the tests need, which must succeed.
pub fn run(program: &str, args: &[&str]) {
    let status = Command::new(program).args(args).status().unwrap_or_else(|e| panic!("{program} is needed: {e}"));
    assert!(status.success(), "{program} {args:?}: {status}");
}

/// ffmpeg's test pattern at `size` (`WxH`) as a PNG, then HEVC in a HEIC by heif-enc.
pub fn heic(name: &str, size: &str) -> PathBuf {
    made(name, |out| {
        let png = out.with_extension("png");
        let source = format!("testsrc2=size={size}");
        let png_path = png.to_str().expect("path");
        run("ffmpeg", &["-loglevel", "error", "-y", "-f", "lavfi", "-i", &source, "-frames:v", "1", png_path]);
        run("heif-enc", &["-p", "preset=ultrafast", "-q", "30", png_path, "-o", out.to_str().expect("path")]);
        let _ = std::fs::remove_file(png);
    })
}

/// Runs `ffmpeg` with these arguments, writing `name` in `dir`; returns its bytes.
pub fn ffmpeg(dir: &Path, name: &str, args: &[&str]) -> Vec<u8> {
    let out = dir.join(name);
    let status = Command::new("ffmpeg")
        .args(["-hide_banner", "-loglevel", "error", "-y"])
        .args(args)
        .arg(&out)
        .status()
        .expect("ffmpeg runs (scripts/test.sh installs it)");
    assert!(status.success(), "ffmpeg {args:?}");
    std::fs::read(&out).expect("the clip")
}
