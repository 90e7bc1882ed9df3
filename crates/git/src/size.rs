//! How much disk a worktree takes, for `teamctl worktrees`.

use std::path::Path;

/// The apparent size in bytes of the files under `path` (the sum of their
/// lengths), walked without following symlinks. Entries that cannot be read
/// (removed meanwhile, no permission) are skipped: this is a display figure.
pub fn dir_size(path: &Path) -> u64 {
    let mut total = 0;
    let mut pending = vec![path.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(meta) = entry.metadata() else {
                continue;
            };
            if meta.is_dir() {
                pending.push(entry.path());
            } else if meta.is_file() {
                total += meta.len();
            }
        }
    }
    total
}
