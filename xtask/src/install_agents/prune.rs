//! What earlier pins left behind: the install directories (and npm logs) of
//! our CLIs and of our Node at versions other than today's pins. Each is a
//! whole npm prefix, hundreds of MB, that nothing reads once its pin changed.
//!
//! Only names of the layout `install-agents` writes are touched:
//! `<cli>-<version>` and `<cli>-<version>.log` for `claude`, `codex`, `gemini`
//! and `node`, where the version starts with a digit. Anything else in the
//! directory (a user's own files, `claude-home`, partial installs, which
//! [`super::run::remove_partials`] handles) stays.

use std::path::{Path, PathBuf};
use teamboard_agent_clis::{Cli, NODE_PACKAGE};

/// One entry that was removed, or could not be.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Pruned {
    /// The entry's name in the agents directory.
    pub name: String,
    /// `claude`, `node`, ...
    pub label: &'static str,
    /// Its version, and the pinned one.
    pub version: String,
    pub pinned: &'static str,
    /// The bytes it held.
    pub bytes: u64,
    /// Why it could not be removed; `None` when it is gone.
    pub failed: Option<String>,
}

/// Each label of the layout with the version pinned today.
fn pins() -> Vec<(&'static str, &'static str)> {
    Cli::ALL
        .iter()
        .map(|c| (c.name(), c.package().1))
        .chain([("node", NODE_PACKAGE.1)])
        .collect()
}

/// The label and version of an entry named for another pin than today's.
fn stale_name(name: &str) -> Option<(&'static str, &'static str, String)> {
    let stem = name.strip_suffix(".log").unwrap_or(name);
    pins().into_iter().find_map(|(label, pinned)| {
        let version = stem.strip_prefix(label)?.strip_prefix('-')?;
        let looks_like_one = version.starts_with(|c: char| c.is_ascii_digit())
            && version
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '+'));
        (looks_like_one && version != pinned).then(|| (label, pinned, version.to_string()))
    })
}

/// Removes the entries of `dir` named for other versions than today's pins,
/// and says what each was. A failure to remove one is reported with it; the
/// others go on.
pub(crate) fn prune(dir: &Path) -> Vec<Pruned> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut found: Vec<(String, PathBuf)> = entries
        .flatten()
        .filter_map(|e| Some((e.file_name().to_str()?.to_string(), e.path())))
        .collect();
    found.sort();
    let mut pruned = Vec::new();
    for (name, path) in found {
        let Some((label, pinned, version)) = stale_name(&name) else {
            continue;
        };
        let bytes = size_of(&path);
        // Not followed: a link is removed, never what it points to.
        let removed = match std::fs::symlink_metadata(&path) {
            Ok(m) if m.is_dir() => std::fs::remove_dir_all(&path),
            Ok(_) => std::fs::remove_file(&path),
            Err(e) => Err(e),
        };
        pruned.push(Pruned {
            name,
            label,
            version,
            pinned,
            bytes,
            failed: removed.err().map(|e| e.to_string()),
        });
    }
    pruned
}

/// The bytes of the files under `path`, links not followed.
fn size_of(path: &Path) -> u64 {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return 0;
    };
    if !meta.is_dir() {
        return meta.len();
    }
    std::fs::read_dir(path)
        .map(|entries| entries.flatten().map(|e| size_of(&e.path())).sum())
        .unwrap_or(0)
}

/// `212 MB`, `4 KB`, `120 B`.
pub(crate) fn human(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["B", "KB", "MB", "GB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1000.0 && unit + 1 < UNITS.len() {
        value /= 1000.0;
        unit += 1;
    }
    format!("{value:.0} {}", UNITS[unit])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_other_versions_of_our_clis_and_node_go_and_each_is_named() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        let (_, claude) = Cli::Claude.package();
        let (_, gemini) = Cli::Gemini.package();
        let keep = [
            format!("claude-{claude}"),
            format!("gemini-{gemini}"),
            format!("node-{}", NODE_PACKAGE.1),
            "claude-home".to_string(),
            "codex-latest".to_string(),
            "mine-1.0.0".to_string(),
        ];
        let old = ["claude-1.0.0", "codex-0.1.0", "node-18.20.0"];
        for name in keep.iter().map(String::as_str).chain(old) {
            let bin = root.join(name).join("node_modules/.bin");
            std::fs::create_dir_all(&bin).expect("mkdir");
            std::fs::write(bin.join("program"), "x".repeat(1000)).expect("write");
        }
        let files = [
            format!("claude-{claude}.log"),
            "claude-1.0.0.log".to_string(),
            "claude.log".to_string(),
            "installed".to_string(),
        ];
        for name in &files {
            std::fs::write(root.join(name), "log").expect("write");
        }
        // A link to a directory elsewhere: the link goes, its target stays.
        let elsewhere = tempfile::tempdir().expect("tempdir");
        std::fs::write(elsewhere.path().join("keep-me"), "").expect("write");
        std::os::unix::fs::symlink(elsewhere.path(), root.join("gemini-0.1.0")).expect("link");

        let pruned = prune(root);
        let names: Vec<(&str, &str, u64)> = pruned
            .iter()
            .map(|p| (p.name.as_str(), p.label, p.bytes))
            .collect();
        assert_eq!(
            names,
            [
                ("claude-1.0.0", "claude", 1000),
                ("claude-1.0.0.log", "claude", 3),
                ("codex-0.1.0", "codex", 1000),
                (
                    "gemini-0.1.0",
                    "gemini",
                    elsewhere.path().as_os_str().len() as u64
                ),
                ("node-18.20.0", "node", 1000),
            ]
        );
        assert!(pruned.iter().all(|p| p.failed.is_none()), "{pruned:?}");
        assert_eq!(pruned[0].version, "1.0.0");
        assert_eq!(pruned[0].pinned, claude);
        for name in &old {
            assert!(!root.join(name).exists(), "{name} stayed");
        }
        assert!(!root.join("gemini-0.1.0").exists());
        assert!(
            elsewhere.path().join("keep-me").exists(),
            "the link was followed"
        );
        for name in keep
            .iter()
            .chain(&files)
            .filter(|n| *n != "claude-1.0.0.log")
        {
            assert!(root.join(name).exists(), "{name} was removed");
        }
        // Again: nothing left to do.
        assert_eq!(prune(root), []);
    }

    #[test]
    fn sizes_read_as_people_write_them() {
        assert_eq!(human(120), "120 B");
        assert_eq!(human(4_096), "4 KB");
        assert_eq!(human(212_400_000), "212 MB");
        assert_eq!(human(3_000_000_000_000), "3000 GB");
    }
}
