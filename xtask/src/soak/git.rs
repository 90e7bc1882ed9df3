//! Running the git command line for the soak: the driver's repository set-up
//! and checks, and the teammates' own git in their worktrees.

use anyhow::{Context, bail};
use std::path::Path;
use std::process::{Command, Output};

/// `git` in `dir`, with neither the user's nor the system's configuration: the
/// soak's repository must behave the same on every machine (no signing, no
/// hooks, no `status.showUntrackedFiles`), and messages are in English.
pub fn command(dir: &Path) -> Command {
    let mut c = Command::new("git");
    c.current_dir(dir);
    isolate(&mut c);
    c
}

/// The environment every git of the soak runs with, boardd's included.
pub fn isolate(c: &mut Command) {
    for (k, v) in ENV {
        c.env(k, v);
    }
}

/// See [`command`].
pub const ENV: [(&str, &str); 6] = [
    ("GIT_CONFIG_NOSYSTEM", "1"),
    ("GIT_CONFIG_GLOBAL", "/dev/null"),
    ("LC_ALL", "C"),
    ("GIT_TERMINAL_PROMPT", "0"),
    ("GIT_EDITOR", "true"),
    ("GIT_MERGE_AUTOEDIT", "no"),
];

/// Runs git and answers how it ended, whatever that was.
pub fn output(dir: &Path, args: &[&str]) -> anyhow::Result<Output> {
    let out = command(dir).args(args).output();
    out.with_context(|| format!("cannot run git {}", args.join(" ")))
}

/// Runs git; a failure is an error carrying what git said.
pub fn run(dir: &Path, args: &[&str]) -> anyhow::Result<String> {
    let out = output(dir, args)?;
    if !out.status.success() {
        bail!("{}", failure(args, &out));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Like [`run`], trimmed.
pub fn line(dir: &Path, args: &[&str]) -> anyhow::Result<String> {
    Ok(run(dir, args)?.trim().to_string())
}

/// "git ARGS failed (STATUS): OUTPUT", for errors.
pub fn failure(args: &[&str], out: &Output) -> String {
    let [stdout, stderr] = [&out.stdout, &out.stderr].map(|b| String::from_utf8_lossy(b));
    let (args, status) = (args.join(" "), out.status);
    format!(
        "git {args} failed ({status}): {}{}",
        stdout.trim(),
        stderr.trim()
    )
}

/// One changed path of `git status --porcelain=v1 -z`: its code and path,
/// read by the git crate's own parser.
pub use teamboard_git::StatusEntry as Changed;
use teamboard_git::parse_status;

/// The paths with uncommitted changes in `wt`, every untracked file listed
/// (not just its directory). Takes no lock, so it can look at a worktree
/// while someone else works in it.
pub fn status(wt: &Path) -> anyhow::Result<Vec<Changed>> {
    let args = ["status", "--porcelain=v1", "-z", "--untracked-files=all"];
    let out = command(wt)
        .env("GIT_OPTIONAL_LOCKS", "0")
        .args(args)
        .output();
    let out = out.context("cannot run git status")?;
    if !out.status.success() {
        bail!("{}", failure(&["status"], &out));
    }
    Ok(parse_status(&String::from_utf8_lossy(&out.stdout)))
}

/// Whether a rebase is stopped (or running) in `wt`.
pub fn rebasing(wt: &Path) -> anyhow::Result<bool> {
    let paths = [
        "rev-parse",
        "--git-path",
        "rebase-merge",
        "--git-path",
        "rebase-apply",
    ];
    Ok(run(wt, &paths)?.lines().any(|p| wt.join(p).exists()))
}

/// The paths a stopped merge or rebase left unmerged.
pub fn unmerged(wt: &Path) -> anyhow::Result<Vec<String>> {
    let unmerged = ["DD", "AU", "UD", "UA", "DU", "AA", "UU"];
    let changed = status(wt)?.into_iter();
    Ok(changed
        .filter(|c| unmerged.contains(&c.code.as_str()))
        .map(|c| c.path)
        .collect())
}

/// The content of `path` at commit `rev`, if it has one.
pub fn show(repo: &Path, rev: &str, path: &str) -> anyhow::Result<Option<String>> {
    let out = output(repo, &["show", &format!("{rev}:{path}")])?;
    Ok(out
        .status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_reads_renames_and_conflicts() {
        let got = parse_status("UU shared/s1.txt\0R  new\0old\0?? tasks/t3.txt\0");
        let paths: Vec<&str> = got.iter().map(|c| c.path.as_str()).collect();
        assert_eq!(paths, ["shared/s1.txt", "new", "tasks/t3.txt"]);
        assert_eq!(got[0].code, "UU");
    }
}
