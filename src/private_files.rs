//! Confetti's files are its user's only: guests' photos are private to their event, and other
//! accounts on the machine are not in it.

use std::path::Path;

use anyhow::Context;

/// Makes every file and directory this process creates from now on readable by its user only
/// (umask 077): the database and its journals, photos, derivatives — whichever library writes
/// them. Guests' photos are private to their event; other accounts on the machine are not in it.
pub fn keep_files_private() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // SAFETY: umask only swaps the process's file-creation mask; it cannot fail.
        unsafe { libc::umask(0o077) };
    });
}

/// Creates `dir` (mode 0700, parents too) or narrows an existing one to 0700, so an install
/// made before this rule becomes private as well; sets the umask above first.
pub fn private_dir(dir: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    keep_files_private();
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .with_context(|| format!("creating {}", dir.display()))?;
    narrow(dir, 0o700);
    Ok(())
}

/// Narrows an existing file or directory to `mode`. Failing is not fatal (a directory owned by
/// another account, mounted by a container runtime): the operator is told and Confetti runs.
pub fn narrow(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    match std::fs::metadata(path) {
        Ok(meta) if meta.permissions().mode() & 0o777 != mode => {
            if let Err(e) = std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)) {
                tracing::warn!(error = %e, path = %path.display(), "could not make this private to Confetti's user");
            }
        }
        _ => {}
    }
}
