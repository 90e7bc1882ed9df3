//! The `glob` tool: find files by name pattern.
//!
//! The pattern is split at `/`; `**` as a whole component matches any number of
//! directories (zero included), and every other component is a `globset` glob matched
//! against one path component: `*`, `?`, `[a-z]`, `[!a-z]`, `{a,b}`, `\*`. `*` also
//! matches names starting with a dot: a teammate looking for `*.yml` wants
//! `.github/workflows/ci.yml` too. A `[` that is never closed is an ordinary character.
//!
//! The walk follows the pattern instead of listing everything and filtering: it only
//! descends into directories some part of the pattern can still match, so `src/*.rs`
//! never reads `target/`. Symlinked directories are not followed (they may lead out of
//! the working directory, or in a loop) and `.git` is skipped.
//!
//! The walk is written here, not taken from `walkdir` or `ignore` (whose sequential
//! walk is `walkdir`'s): `walkdir` opens every directory it yields, and reads it whole
//! when sorted, before its caller can skip it, so `src/*.rs` would read `target/` and
//! an unreadable directory the pattern never reaches would be reported. `ignore`
//! also skips what `.gitignore` names, where a teammate asking for
//! `target/**/*.log` means it.

use super::call::{LocalEnv, ToolOutput, str_arg};
use globset::{GlobBuilder, GlobMatcher};
use serde_json::Value;
use std::fs;
use std::path::{Component, Path};

/// Matches listed at most; the model should narrow the pattern rather than page.
const MAX_MATCHES: usize = 1000;
/// Directory entries examined at most, so a pattern like `**/x` in a huge tree ends.
const MAX_VISITED: usize = 200_000;

/// `glob {pattern}`.
pub async fn run(env: &LocalEnv, input: &Value) -> ToolOutput {
    let pattern = match str_arg(input, "pattern") {
        Ok(p) => p.to_string(),
        Err(e) => return e,
    };
    let env = env.clone();
    match tokio::task::spawn_blocking(move || glob(&env.workdir, &pattern)).await {
        Ok(out) => out,
        Err(e) => ToolOutput::error(format!("internal error: glob failed: {e}")),
    }
}

fn glob(workdir: &Path, pattern: &str) -> ToolOutput {
    let canon_wd = match workdir.canonicalize() {
        Ok(p) => p,
        Err(e) => {
            return ToolOutput::error(format!(
                "the working directory {} is not accessible: {e}",
                workdir.display()
            ));
        }
    };
    let segments = match parse(workdir, &canon_wd, pattern) {
        Ok(s) => s,
        Err(e) => return e,
    };

    let mut walk = Walk {
        segments: &segments,
        matches: Vec::new(),
        visited: 0,
        truncated: false,
        errors: 0,
    };
    walk.dir(&canon_wd, "", &closure(&segments, vec![0]));
    let Walk {
        mut matches,
        truncated,
        visited,
        errors,
        ..
    } = walk;

    matches.sort();
    let mut out = if matches.is_empty() {
        format!("no files match '{pattern}'")
    } else {
        matches.join("\n")
    };
    if truncated {
        if visited >= MAX_VISITED {
            out.push_str(&format!(
                "\n[stopped after looking at {MAX_VISITED} entries; narrow the pattern, e.g. \
                 with a directory prefix]"
            ));
        } else {
            out.push_str(&format!(
                "\n[more than {MAX_MATCHES} matches; showing {MAX_MATCHES}. Narrow the pattern]"
            ));
        }
    }
    if errors > 0 {
        out.push_str(&format!(
            "\n[{errors} director(y/ies) could not be read and were skipped]"
        ));
    }
    ToolOutput::ok(out)
}

/// One `/`-separated part of a pattern.
#[derive(Debug, Clone)]
enum Segment {
    /// `**`: any number of path components.
    AnyDirs,
    /// A pattern for one component.
    Name(GlobMatcher),
}

/// The matcher of one component pattern. `globset`'s `**` next to other characters
/// is `*`, as it is here.
fn component(pattern: &str) -> Result<GlobMatcher, globset::Error> {
    let glob = GlobBuilder::new(pattern)
        .literal_separator(true)
        .backslash_escape(true)
        .allow_unclosed_class(true)
        .build()?;
    Ok(glob.compile_matcher())
}

fn parse(workdir: &Path, canon_wd: &Path, pattern: &str) -> Result<Vec<Segment>, ToolOutput> {
    let outside = || {
        ToolOutput::error(format!(
            "pattern '{pattern}' reaches outside the working directory {}; use a pattern \
             relative to it (e.g. 'src/**/*.rs')",
            workdir.display()
        ))
    };
    if pattern.trim().is_empty() {
        return Err(ToolOutput::error(
            "the pattern is empty; give one like '**/*.rs' or 'docs/*.md'",
        ));
    }
    let mut rel = pattern;
    if pattern.starts_with('/') {
        // An absolute pattern is fine if it starts with the working directory (as
        // configured or canonical); the rest is then a relative pattern.
        let p = Path::new(pattern);
        rel = [canon_wd, workdir]
            .iter()
            .find_map(|wd| p.strip_prefix(wd).ok())
            .and_then(Path::to_str)
            .ok_or_else(outside)?;
    }
    if Path::new(rel)
        .components()
        .any(|c| matches!(c, Component::ParentDir))
    {
        return Err(outside());
    }
    let segments = rel
        .split('/')
        .filter(|s| !s.is_empty() && *s != ".")
        .map(|s| match s {
            "**" => Ok(Segment::AnyDirs),
            _ => component(s).map(Segment::Name),
        })
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| {
            ToolOutput::error(format!(
                "pattern '{pattern}' is not a valid glob: {}",
                e.kind()
            ))
        })?;
    if segments.is_empty() {
        return Err(ToolOutput::error(format!(
            "pattern '{pattern}' names the working directory itself; use e.g. '*' to list it"
        )));
    }
    Ok(segments)
}

/// Adds the positions reachable without consuming a component: `**` may match zero.
fn closure(segments: &[Segment], mut states: Vec<usize>) -> Vec<usize> {
    let mut i = 0;
    while i < states.len() {
        let s = states[i];
        if matches!(segments.get(s), Some(Segment::AnyDirs)) && !states.contains(&(s + 1)) {
            states.push(s + 1);
        }
        i += 1;
    }
    states
}

struct Walk<'a> {
    segments: &'a [Segment],
    matches: Vec<String>,
    visited: usize,
    truncated: bool,
    errors: usize,
}

impl Walk<'_> {
    /// Visits `dir` (shown as `rel`), where `states` are the pattern positions still
    /// to be matched by its entries.
    fn dir(&mut self, dir: &Path, rel: &str, states: &[usize]) {
        let Ok(entries) = fs::read_dir(dir) else {
            self.errors += 1;
            return;
        };
        let mut entries: Vec<_> = entries.filter_map(Result::ok).collect();
        // Sorted, so that when the cap cuts the walk short the listing is stable.
        entries.sort_by_key(|e| e.file_name());
        for entry in entries {
            if self.truncated {
                return;
            }
            self.visited += 1;
            if self.visited >= MAX_VISITED {
                self.truncated = true;
                return;
            }
            let name_os = entry.file_name();
            let name = name_os.to_string_lossy();
            // `file_type` does not follow symlinks: a link to a directory is listed
            // (it may match) but never entered.
            let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
            if is_dir && name == ".git" {
                continue;
            }
            let next = self.step(states, &name);
            if next.is_empty() {
                continue;
            }
            let path = if rel.is_empty() {
                name.to_string()
            } else {
                format!("{rel}/{name}")
            };
            if next.contains(&self.segments.len()) {
                if self.matches.len() >= MAX_MATCHES {
                    self.truncated = true;
                    return;
                }
                self.matches.push(if is_dir {
                    format!("{path}/")
                } else {
                    path.clone()
                });
            }
            if is_dir && next.iter().any(|&s| s < self.segments.len()) {
                self.dir(&entry.path(), &path, &next);
            }
        }
    }

    /// The positions after matching one component called `name`.
    fn step(&self, states: &[usize], name: &str) -> Vec<usize> {
        let mut next = Vec::new();
        for &s in states {
            match self.segments.get(s) {
                // `**` swallows this component and may swallow more.
                Some(Segment::AnyDirs) => next.push(s),
                Some(Segment::Name(p)) if p.is_match(name) => next.push(s + 1),
                _ => {}
            }
        }
        next.sort_unstable();
        next.dedup();
        closure(self.segments, next)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::time::Duration;

    fn m(pat: &str, name: &str) -> bool {
        component(pat).unwrap().is_match(name)
    }

    #[test]
    fn component_matching() {
        assert!(m("*.rs", "main.rs"));
        assert!(m("*.rs", ".hidden.rs"));
        assert!(!m("*.rs", "main.rsx"));
        assert!(m("a*b*c", "aXXbYYc"));
        assert!(!m("a*b*c", "aXXbYY"));
        assert!(m("?.md", "a.md"));
        assert!(!m("?.md", "ab.md"));
        assert!(m("[abc].txt", "b.txt"));
        assert!(!m("[abc].txt", "d.txt"));
        assert!(m("v[0-9]", "v7"));
        assert!(!m("v[!0-9]", "v7"));
        assert!(m("v[!0-9]", "vx"));
        assert!(m("[]]", "]"));
        assert!(m("a[", "a["));
        assert!(m("[a[", "[a["));
        assert!(m("*.{md,txt}", "a.txt"));
        assert!(!m("*.{md,txt}", "a.rs"));
        assert!(m(r"\*", "*"));
        assert!(!m(r"\*", "x"));
        assert!(m("*", ""));
        assert!(m("**", "anything"));
        assert!(!m(
            "*****************b",
            "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
        ));
    }

    fn tree() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for f in [
            "README.md",
            "CHANGES.md",
            "src/lib.rs",
            "src/main.rs",
            "src/tools/mod.rs",
            "src/tools/deep/x.rs",
            "src/notes.txt",
            ".git/config",
            ".github/ci.yml",
            "target/debug/build.rs",
        ] {
            let p = root.join(f);
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            fs::write(p, "").unwrap();
        }
        dir
    }

    async fn glob_out(dir: &Path, pattern: &str) -> ToolOutput {
        let env = LocalEnv::new(dir.to_path_buf(), Duration::from_secs(10));
        run(&env, &json!({ "pattern": pattern })).await
    }

    #[tokio::test]
    async fn patterns_over_a_tree() {
        let dir = tree();
        let d = dir.path();
        assert_eq!(glob_out(d, "*.md").await.content, "CHANGES.md\nREADME.md");
        assert_eq!(
            glob_out(d, "src/*.rs").await.content,
            "src/lib.rs\nsrc/main.rs"
        );
        assert_eq!(
            glob_out(d, "src/**/*.rs").await.content,
            "src/lib.rs\nsrc/main.rs\nsrc/tools/deep/x.rs\nsrc/tools/mod.rs"
        );
        assert_eq!(glob_out(d, "**/mod.rs").await.content, "src/tools/mod.rs");
        assert_eq!(
            glob_out(d, "./src/[lm]*.rs").await.content,
            "src/lib.rs\nsrc/main.rs"
        );
        assert_eq!(glob_out(d, "src/*").await.content.lines().count(), 4);
        assert!(glob_out(d, "src/*").await.content.contains("src/tools/"));
        // `.git` is skipped, other dot directories are not.
        assert_eq!(
            glob_out(d, "**/config").await.content,
            "no files match '**/config'"
        );
        assert_eq!(glob_out(d, "**/*.yml").await.content, ".github/ci.yml");
        let abs = format!("{}/src/*.rs", d.display());
        assert_eq!(glob_out(d, &abs).await.content, "src/lib.rs\nsrc/main.rs");
    }

    #[tokio::test]
    async fn no_match_is_not_an_error() {
        let dir = tree();
        let out = glob_out(dir.path(), "*.py").await;
        assert_eq!(out, ToolOutput::ok("no files match '*.py'"));
    }

    #[tokio::test]
    async fn outside_patterns_are_refused() {
        let dir = tree();
        for p in ["../*", "src/../../*", "/etc/*", ""] {
            let out = glob_out(dir.path(), p).await;
            assert!(out.is_error, "{p}: {}", out.content);
        }
    }

    #[tokio::test]
    async fn an_invalid_pattern_says_why() {
        let dir = tree();
        let out = glob_out(dir.path(), "src/[z-a].rs").await;
        assert!(out.is_error);
        assert!(
            out.content
                .starts_with("pattern 'src/[z-a].rs' is not a valid glob: invalid range"),
            "{}",
            out.content
        );
        // Alternatives stay within one component.
        assert_eq!(
            glob_out(dir.path(), "{src,.github}/*.{rs,yml}")
                .await
                .content,
            ".github/ci.yml\nsrc/lib.rs\nsrc/main.rs"
        );
    }

    #[tokio::test]
    async fn symlinked_dirs_are_not_followed() {
        let dir = tree();
        let outside = tempfile::tempdir().unwrap();
        fs::write(outside.path().join("secret.rs"), "").unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("link")).unwrap();
        let out = glob_out(dir.path(), "**/*.rs").await;
        assert!(!out.content.contains("secret"), "{}", out.content);
        // The link itself is an entry and can match by name.
        assert_eq!(glob_out(dir.path(), "lin?").await.content, "link");
    }

    #[tokio::test]
    async fn matches_are_capped() {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..(MAX_MATCHES + 5) {
            fs::write(dir.path().join(format!("f{i:05}")), "").unwrap();
        }
        let out = glob_out(dir.path(), "f*").await;
        assert!(!out.is_error);
        assert_eq!(out.content.lines().count(), MAX_MATCHES + 1);
        assert!(
            out.content.ends_with("Narrow the pattern]"),
            "{}",
            out.content
        );
    }
}
