//! Two jobs before the server is compiled:
//!
//! - The web page's files (`static/`), compressed once here with brotli and gzip, so the
//!   server sends the smaller one a browser accepts without compressing anything per request,
//!   and named by a hash of all of them (`/static/v-{hash}/…`, see `src/http/pages.rs`): a new
//!   build gets new names, so browsers may keep the files for good. One hash for the whole set,
//!   not one per file: the modules import each other by relative names (and `gallery.js` and
//!   `lightbox.js` import each other), which a shared directory keeps working unchanged.
//!   The service worker (`sw.js`, served at `/sw.js`) gets the version and the list of files
//!   to keep written into it: its bytes change with every build, which is what makes browsers
//!   install the new one.
//! - Stops the build when `nasm` is missing on x86: libjpeg-turbo (the `mozjpeg` crate) would
//!   otherwise be built without its SIMD code, saying so only in a warning `cargo run` hides, and
//!   every thumbnail would take 2–3× as long. `CONFETTI_ALLOW_NO_SIMD=1` builds without it on
//!   purpose. (`panic = "abort"` is refused in `src/lib.rs`.)

use std::io::Write;
use std::path::Path;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    if let Err(e) = static_files() {
        eprintln!("compressing static/: {e}");
        std::process::exit(1);
    }
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

/// Writes `static_files.rs` into `OUT_DIR`: every file of `static/` with its content type and
/// its bytes raw, gzipped and brotli-compressed (`include_bytes!` of files written next to it),
/// the version the set's hash gives, and `index.html` with its links pointing at that version.
fn static_files() -> std::io::Result<()> {
    println!("cargo:rerun-if-changed=static");
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR").map_err(std::io::Error::other)?);
    let mut names: Vec<String> = std::fs::read_dir("static")?
        .filter_map(|e| e.ok())
        .filter(|e| e.path().is_file())
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    names.sort();
    let mut files = Vec::new();
    for name in &names {
        files.push((name.clone(), std::fs::read(Path::new("static").join(name))?));
    }
    // FNV-1a over names and bytes: a name, not a secret.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for (name, bytes) in &files {
        for b in name.bytes().chain([0]).chain(bytes.iter().copied()).chain([0]) {
            hash = (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
    let version = format!("v-{:012x}", hash & 0xffff_ffff_ffff);
    let dir = out.join("static");
    std::fs::create_dir_all(&dir)?;
    let mut code =
        format!("/// The static files' version: the hash of them all.\npub const VERSION: &str = {version:?};\n\n");
    code.push_str("/// name, content type, raw, gzip, brotli\npub const FILES: &[StaticFile] = &[\n");
    let mut index = None;
    let mut worker = None;
    for (name, bytes) in &files {
        let bytes = if name == "sw.js" {
            service_worker(bytes, &version, &files)
        } else if name == "index.html" {
            let page = String::from_utf8_lossy(bytes).replace("\"/static/", &format!("\"/static/{version}/"));
            // The modules `app.js` imports (not the pages it loads on demand), all at once,
            // instead of one level of imports per round trip.
            let preload: String = static_imports(&files, "app.js")
                .iter()
                .map(|n| format!("  <link rel=\"modulepreload\" href=\"/static/{version}/{n}\">\n"))
                .collect();
            page.replace("</head>", &format!("{preload}</head>")).into_bytes()
        } else {
            bytes.clone()
        };
        let gz = {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
            e.write_all(&bytes)?;
            e.finish()?
        };
        let br = {
            let mut v = Vec::new();
            let params = brotli::enc::BrotliEncoderParams { quality: 11, lgwin: 22, ..Default::default() };
            brotli::BrotliCompress(&mut &bytes[..], &mut v, &params)?;
            v
        };
        for (suffix, data) in [("", &bytes), (".gz", &gz), (".br", &br)] {
            std::fs::write(dir.join(format!("{name}{suffix}")), data)?;
        }
        let path = |suffix: &str| format!("{:?}", dir.join(format!("{name}{suffix}")).display().to_string());
        let entry = format!(
            "    StaticFile {{ name: {name:?}, content_type: {:?}, raw: include_bytes!({}), gzip: include_bytes!({}), brotli: include_bytes!({}) }},\n",
            content_type(name),
            path(""),
            path(".gz"),
            path(".br"),
        );
        let alone = || entry.replacen("    ", "", 1).trim_end().trim_end_matches(',').to_owned();
        if name == "index.html" {
            index = Some(alone());
        } else if name == "sw.js" {
            worker = Some(alone());
        } else {
            code.push_str(&entry);
        }
    }
    code.push_str("];\n\n");
    let index = index.ok_or_else(|| std::io::Error::other("static/index.html is missing"))?;
    code.push_str(&format!(
        "/// The page itself, its links pointing at `VERSION`.\npub const INDEX: StaticFile = {index};\n"
    ));
    let worker = worker.ok_or_else(|| std::io::Error::other("static/sw.js is missing"))?;
    code.push_str(&format!(
        "/// The service worker, its imports and the files it keeps pointing at `VERSION`.\npub const SERVICE_WORKER: StaticFile = {worker};\n"
    ));
    std::fs::write(out.join("static_files.rs"), code)
}

/// `sw.js` as served at `/sw.js`: its imports under `/static/{version}/` (relative names would
/// resolve against `/`), `VERSION` the build's, and `FILES` the files it keeps at once: the
/// guest's page (what `app.js` imports, and every module `guest.js` loads), the stylesheet and
/// the icons. Most are in the browser's cache already when the worker installs; the organiser's,
/// the screen's and the admin's modules are kept once used, never fetched on a guest's phone.
fn service_worker(bytes: &[u8], version: &str, files: &[(String, Vec<u8>)]) -> Vec<u8> {
    let mut keep = static_imports(files, "app.js");
    keep.extend(imports(files, "guest.js", true));
    keep.extend(files.iter().map(|(n, _)| n.clone()).filter(|n| !n.ends_with(".js") && n != "index.html"));
    keep.sort();
    keep.dedup();
    let keep: Vec<String> = keep.iter().map(|n| format!("/static/{version}/{n}")).collect();
    let keep = format!("{keep:?}");
    String::from_utf8_lossy(bytes)
        .replace(" from './", &format!(" from '/static/{version}/"))
        .replacen("const VERSION = 'dev';", &format!("const VERSION = '{version}';"), 1)
        .replacen("const FILES = [];", &format!("const FILES = {keep};"), 1)
        .into_bytes()
}

/// `root` and every module it imports statically (`from './x.js'`), transitively, sorted.
fn static_imports(files: &[(String, Vec<u8>)], root: &str) -> Vec<String> {
    imports(files, root, false)
}

/// `root` and every module it imports (`from './x.js'`, and with `dynamic` `import('./x.js')`
/// too), transitively, sorted.
fn imports(files: &[(String, Vec<u8>)], root: &str, dynamic: bool) -> Vec<String> {
    let mut seen = std::collections::BTreeSet::new();
    let mut todo = vec![root.to_owned()];
    while let Some(name) = todo.pop() {
        let Some((_, bytes)) = files.iter().find(|(n, _)| *n == name) else { continue };
        if !seen.insert(name) {
            continue;
        }
        let text = String::from_utf8_lossy(bytes);
        let mut found: Vec<&str> = text.split(" from './").skip(1).collect();
        if dynamic {
            found.extend(text.split("import('./").skip(1));
        }
        for part in found {
            if let Some((import, _)) = part.split_once('\'') {
                todo.push(import.to_owned());
            }
        }
    }
    seen.into_iter().collect()
}

fn content_type(name: &str) -> &'static str {
    match name.rsplit('.').next() {
        Some("js") => "text/javascript; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("html") => "text/html; charset=utf-8",
        Some("svg") => "image/svg+xml",
        Some("png") => "image/png",
        _ => "application/octet-stream",
    }
}
