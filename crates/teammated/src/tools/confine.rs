//! Keeping the file tools inside the working directory.
//!
//! Every path a file tool receives from the model goes through [`resolve`]. The check
//! has two layers, because each alone is not enough:
//!
//! 1. **Lexical**: `.` and `..` are folded without touching the disk, so `a/../../x`
//!    is refused before anything is looked up, and an absolute path is accepted only
//!    when it names something under the working directory.
//! 2. **Physical**: the longest prefix of the path that exists is canonicalised (which
//!    follows every symbolic link in it) and must still lie under the canonical
//!    working directory. This is what catches `link/x` where `link` points outside.
//!    Checking only the longest *existing* prefix is what lets `write_file` create a
//!    new file in a new subdirectory: the missing part cannot contain a link yet.
//!
//! The path handed back is the canonical prefix joined with the missing rest, so the
//! caller operates on exactly the path that was checked, not on the model's spelling
//! of it (with `link/../x`, the OS would walk the link; we never let it).
//!
//! This confines the file tools only. `bash` runs with the teammate's own rights and
//! can reach anything that user can; see `docs/tools.md`.

use super::call::ToolOutput;
use std::io;
use std::path::{Component, Path, PathBuf};

/// Resolves `requested` for `write_file` and `edit_file`: as [`resolve`], and
/// never into git's own files (`.git`, a file or a directory, anywhere in the
/// path). Trap: a worktree's `.git` file names the directories its sandbox
/// binds back and where the person's and boardd's git look; rewritten, it would
/// point them at paths the sandbox hides or at a forged configuration.
pub fn resolve_for_write(
    workdir: &Path,
    requested: &str,
    must_exist: bool,
) -> Result<PathBuf, ToolOutput> {
    let path = resolve(workdir, requested, must_exist)?;
    let rel = path
        .strip_prefix(
            workdir
                .canonicalize()
                .unwrap_or_else(|_| workdir.to_path_buf()),
        )
        .unwrap_or(&path);
    if rel.components().any(|c| c.as_os_str() == ".git") {
        return Err(ToolOutput::error(format!(
            "'{requested}' is one of git's own files; the file tools do not write them \
             (boardd commits your work when the task completes)"
        )));
    }
    Ok(path)
}

/// Resolves `requested` (relative to `workdir`, or absolute inside it) to a path the
/// file tools may use. With `must_exist`, a path that does not exist is refused too.
///
/// Errors are [`ToolOutput`]s written for the model: they say what was wrong and what
/// to do instead.
pub fn resolve(workdir: &Path, requested: &str, must_exist: bool) -> Result<PathBuf, ToolOutput> {
    if requested.is_empty() {
        return Err(ToolOutput::error(
            "the path is empty; give a file path relative to the working directory",
        ));
    }
    if requested.contains('\0') {
        return Err(ToolOutput::error(format!(
            "path '{}' contains a NUL byte (shown as \\0); give a plain file path",
            requested.escape_debug()
        )));
    }
    let canon_wd = workdir.canonicalize().map_err(|e| {
        ToolOutput::error(format!(
            "the working directory {} is not accessible ({e}); no file tool can run",
            workdir.display()
        ))
    })?;
    let outside = || {
        ToolOutput::error(format!(
            "path '{requested}' is outside the working directory {}; use a path inside it",
            workdir.display()
        ))
    };

    let rel = relative_part(workdir, &canon_wd, Path::new(requested)).ok_or_else(outside)?;

    // Walk down from the working directory while the entries exist. `symlink_metadata`
    // (not `exists`) so that a dangling link counts as existing and is then refused by
    // `canonicalize` below, instead of being silently written through.
    let mut existing = canon_wd.clone();
    let mut components = rel.components().peekable();
    while let Some(c) = components.peek() {
        let next = existing.join(c);
        match std::fs::symlink_metadata(&next) {
            Ok(_) => {
                existing = next;
                components.next();
            }
            Err(e) if is_missing(&e) => break,
            Err(e) => {
                return Err(ToolOutput::error(format!(
                    "cannot look up '{requested}': {e}"
                )));
            }
        }
    }
    let missing: PathBuf = components.collect();

    let canon_existing = existing.canonicalize().map_err(|e| {
        ToolOutput::error(format!(
            "path '{requested}' goes through a symbolic link that cannot be followed ({e}); \
             use a path inside the working directory {} that does not go through it",
            workdir.display()
        ))
    })?;
    if !canon_existing.starts_with(&canon_wd) {
        return Err(ToolOutput::error(format!(
            "path '{requested}' goes through a symbolic link to {}, which is outside the \
             working directory {}; use a path inside it",
            canon_existing.display(),
            workdir.display()
        )));
    }
    if must_exist && !missing.as_os_str().is_empty() {
        return Err(ToolOutput::error(format!(
            "'{requested}' does not exist (looked for {}); check the name, or use glob to find it",
            canon_wd.join(&rel).display()
        )));
    }
    // Not `join` unconditionally: joining an empty path appends a `/`, and `file.txt/`
    // is "not a directory" to every syscall.
    if missing.as_os_str().is_empty() {
        Ok(canon_existing)
    } else {
        Ok(canon_existing.join(missing))
    }
}

/// `requested` as a normalised path relative to the working directory, with no `.` or
/// `..` left in it; `None` when it points outside.
fn relative_part(workdir: &Path, canon_wd: &Path, requested: &Path) -> Option<PathBuf> {
    if requested.is_absolute() {
        let abs = normalize(requested)?;
        // The model may spell the working directory either as it was configured or in
        // its canonical form (e.g. after running `pwd` in a symlinked directory).
        let given = normalize(workdir);
        abs.strip_prefix(canon_wd)
            .ok()
            .or_else(|| given.as_deref().and_then(|g| abs.strip_prefix(g).ok()))
            .map(Path::to_path_buf)
    } else {
        normalize(requested)
    }
}

/// Folds `.` and `..` lexically. `None` when `..` climbs above the start (for a
/// relative path: out of the working directory; for an absolute one: above `/`).
fn normalize(path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    let mut depth = 0usize;
    for c in path.components() {
        match c {
            Component::Prefix(_) | Component::RootDir => out.push(c),
            Component::CurDir => {}
            Component::ParentDir => {
                if depth == 0 {
                    return None;
                }
                out.pop();
                depth -= 1;
            }
            Component::Normal(part) => {
                out.push(part);
                depth += 1;
            }
        }
    }
    Some(out)
}

fn is_missing(e: &io::Error) -> bool {
    // ENOTDIR: a prefix exists but is a file (`notes.txt/x`); the rest cannot exist,
    // and the tool that uses the path will say so in its own words.
    matches!(
        e.kind(),
        io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::os::unix::fs::symlink;

    fn setup() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let wd = dir.path().join("work");
        fs::create_dir(&wd).unwrap();
        fs::write(wd.join("a.txt"), "a").unwrap();
        fs::create_dir(wd.join("src")).unwrap();
        fs::write(dir.path().join("secret"), "s").unwrap();
        (dir, wd)
    }

    #[test]
    fn gits_own_files_are_never_written() {
        let (_dir, wd) = setup();
        fs::write(wd.join(".git"), "gitdir: /somewhere\n").unwrap();
        for path in [".git", "./.git", "src/../.git", "sub/.git/config"] {
            let err = resolve_for_write(&wd, path, false).unwrap_err();
            assert!(err.is_error, "{path}");
            assert!(
                err.content.contains("git's own files"),
                "{path}: {}",
                err.content
            );
        }
        // Reading them, and writing anything else, is as before.
        assert!(resolve(&wd, ".git", true).is_ok());
        assert!(resolve_for_write(&wd, "src/new.rs", false).is_ok());
        assert!(resolve_for_write(&wd, ".gitignore", false).is_ok());
    }

    #[test]
    fn relative_paths_resolve_inside() {
        let (_d, wd) = setup();
        let canon = wd.canonicalize().unwrap();
        let a = resolve(&wd, "a.txt", true).unwrap();
        // Compared as strings too: `PathBuf` equality ignores a trailing `/`, the OS not.
        assert_eq!(a.to_str(), canon.join("a.txt").to_str());
        assert!(a.is_file());
        assert_eq!(
            resolve(&wd, "./src/../a.txt", true).unwrap(),
            canon.join("a.txt")
        );
        assert_eq!(resolve(&wd, ".", true).unwrap(), canon);
    }

    #[test]
    fn dotdot_escape_is_refused() {
        let (_d, wd) = setup();
        let err = resolve(&wd, "../secret", false).unwrap_err();
        assert!(err.is_error);
        assert!(
            err.content.contains("outside the working directory"),
            "{}",
            err.content
        );
        assert!(err.content.contains("'../secret'"));
        assert!(resolve(&wd, "src/../../secret", false).is_err());
    }

    #[test]
    fn absolute_paths_only_inside() {
        let (d, wd) = setup();
        let canon = wd.canonicalize().unwrap();
        let inside = wd.join("a.txt");
        assert_eq!(
            resolve(&wd, inside.to_str().unwrap(), true).unwrap(),
            canon.join("a.txt")
        );
        let outside = d.path().join("secret");
        let err = resolve(&wd, outside.to_str().unwrap(), false).unwrap_err();
        assert!(err.content.contains("outside the working directory"));
        assert!(resolve(&wd, "/etc/passwd", true).is_err());
        // `..` in an absolute path that climbs out of the working directory.
        let sneaky = format!("{}/../secret", wd.display());
        assert!(resolve(&wd, &sneaky, false).is_err());
    }

    #[test]
    fn symlink_escape_is_refused() {
        let (d, wd) = setup();
        symlink(d.path(), wd.join("up")).unwrap();
        symlink(d.path().join("secret"), wd.join("secret-link")).unwrap();
        let err = resolve(&wd, "up/secret", true).unwrap_err();
        assert!(err.content.contains("symbolic link"), "{}", err.content);
        assert!(resolve(&wd, "secret-link", true).is_err());
        // Writing a new file through a link to outside is refused as well.
        assert!(resolve(&wd, "up/new.txt", false).is_err());
        // A dangling link is refused rather than written through.
        symlink(d.path().join("nothing"), wd.join("dangling")).unwrap();
        assert!(resolve(&wd, "dangling", false).is_err());
    }

    #[test]
    fn symlink_inside_is_fine() {
        let (_d, wd) = setup();
        symlink(wd.join("src"), wd.join("code")).unwrap();
        let canon = wd.canonicalize().unwrap();
        assert_eq!(
            resolve(&wd, "code/new.rs", false).unwrap(),
            canon.join("src/new.rs")
        );
    }

    #[test]
    fn new_file_in_new_subdir_is_ok() {
        let (_d, wd) = setup();
        let canon = wd.canonicalize().unwrap();
        assert_eq!(
            resolve(&wd, "x/y/z.txt", false).unwrap(),
            canon.join("x/y/z.txt")
        );
        let err = resolve(&wd, "x/y/z.txt", true).unwrap_err();
        assert!(err.content.contains("does not exist"), "{}", err.content);
    }

    #[test]
    fn empty_path_is_refused() {
        let (_d, wd) = setup();
        assert!(resolve(&wd, "", false).is_err());
    }
}
