//! Scratch git repositories for the worktree tests, made with the real `git`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A repository with one commit on `main`, whose working tree is detached so
/// that `main` is checked out nowhere and can be a team's target branch.
pub struct GitRepo {
    pub path: PathBuf,
}

/// Runs git in `dir` with a fixed identity and no user or system config;
/// panics with git's output if it fails. Answers stdout, trimmed.
pub fn git(dir: &Path, args: &[&str]) -> String {
    stdout_of(git_command(dir).args(args))
}

/// What `cmd` printed, trimmed; panics with its output if it fails.
fn stdout_of(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A git command in `dir` that ignores the user's configuration.
pub fn git_command(dir: &Path) -> Command {
    let mut c = Command::new("git");
    c.current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "test")
        .env("GIT_AUTHOR_EMAIL", "test@example.invalid")
        .env("GIT_COMMITTER_NAME", "test")
        .env("GIT_COMMITTER_EMAIL", "test@example.invalid")
        .env("LC_ALL", "C");
    c
}

impl GitRepo {
    /// `dir/repo`, with `README.md` committed on `main`, detached.
    pub fn new(dir: &Path) -> GitRepo {
        let path = dir.join("repo");
        std::fs::create_dir_all(&path).expect("repo dir");
        git(&path, &["init", "-q", "-b", "main"]);
        git(&path, &["config", "user.name", "test"]);
        git(&path, &["config", "user.email", "test@example.invalid"]);
        std::fs::write(path.join("README.md"), "hello\n").expect("readme");
        git(&path, &["add", "README.md"]);
        git(&path, &["commit", "-q", "-m", "first"]);
        git(&path, &["switch", "-q", "--detach", "main"]);
        GitRepo { path }
    }

    /// Commits `content` to `file` on `branch` without touching any checkout
    /// (as another person pushing to the target would).
    pub fn commit_on(&self, branch: &str, file: &str, content: &str) -> String {
        let scratch = self.path.join(".git");
        let (blob, index) = (scratch.join("testkit-blob"), scratch.join("testkit-index"));
        std::fs::write(&blob, content).expect("write blob");
        let run = |args: &[&str]| {
            let mut cmd = git_command(&self.path);
            stdout_of(cmd.env("GIT_INDEX_FILE", &index).args(args))
        };
        // As it is: no filter of the repository's may change it.
        let path = blob.display().to_string();
        let blob = run(&["hash-object", "-w", "--no-filters", &path]);
        run(&["read-tree", branch]);
        run(&[
            "update-index",
            "--add",
            "--cacheinfo",
            &format!("100644,{blob},{file}"),
        ]);
        let tree = run(&["write-tree"]);
        let parent = self.head(branch);
        let commit = run(&[
            "commit-tree",
            &tree,
            "-p",
            &parent,
            "-m",
            &format!("edit {file}"),
        ]);
        run(&[
            "update-ref",
            &format!("refs/heads/{branch}"),
            &commit,
            &parent,
        ]);
        let _ = std::fs::remove_file(&index);
        let _ = std::fs::remove_file(&path);
        commit
    }

    /// `set_repo` of this repository with `main` as the target and nothing
    /// else set.
    pub fn repo_args(&self) -> teamboard_protocol::request::SetRepoArgs {
        teamboard_protocol::request::SetRepoArgs {
            path: self.path.display().to_string(),
            branch: Some("main".into()),
            merge: None,
            checks: Vec::new(),
            check_timeout_ms: None,
            review: false,
        }
    }

    /// The commit `branch` points at.
    pub fn head(&self, branch: &str) -> String {
        git(&self.path, &["rev-parse", &format!("refs/heads/{branch}")])
    }

    /// The content of `file` at `rev`, or `None` if it has no such file.
    pub fn show(&self, rev: &str, file: &str) -> Option<String> {
        let out = git_command(&self.path)
            .args(["show", &format!("{rev}:{file}")])
            .output()
            .expect("git show");
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).to_string())
    }

    /// Subjects of the commits on `branch`, newest first.
    pub fn log(&self, branch: &str) -> Vec<String> {
        git(&self.path, &["log", "--format=%s", branch])
            .lines()
            .map(str::to_string)
            .collect()
    }

    /// Installs `script` (run by `/bin/sh`) as the repository's hook `name`,
    /// shared by all its worktrees.
    pub fn hook(&self, name: &str, script: &str) {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = self.path.join(".git").join("hooks");
        std::fs::create_dir_all(&dir).expect("hooks dir");
        let path = dir.join(name);
        std::fs::write(&path, format!("#!/bin/sh\n{script}\n")).expect("write hook");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
            .expect("chmod hook");
    }

    /// `git fsck --full --strict`, asserting that it finds nothing wrong;
    /// answers what it printed.
    pub fn fsck(&self) -> String {
        let out = git_command(&self.path)
            .args(["fsck", "--full", "--strict", "--no-progress"])
            .output()
            .expect("git fsck");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "git fsck failed:\n{text}");
        assert!(
            !text.contains("error") && !text.contains("missing") && !text.contains("broken"),
            "git fsck complains:\n{text}"
        );
        text
    }

    /// Every `*.lock` file under `.git`, relative to it: what a git killed
    /// while it held a lock leaves behind.
    pub fn lock_files(&self) -> Vec<String> {
        fn walk(dir: &Path, root: &Path, out: &mut Vec<String>) {
            let Ok(entries) = std::fs::read_dir(dir) else {
                return;
            };
            for e in entries.flatten() {
                let path = e.path();
                if path.is_dir() {
                    walk(&path, root, out);
                } else if path.extension().is_some_and(|x| x == "lock") {
                    let rel = path.strip_prefix(root).unwrap_or(&path);
                    out.push(rel.display().to_string());
                }
            }
        }
        let root = self.path.join(".git");
        let mut out = Vec::new();
        walk(&root, &root, &mut out);
        out.sort();
        out
    }

    /// The branches named `teamboard/…`, as `git branch --list` shows them.
    pub fn task_branches(&self) -> Vec<String> {
        git(
            &self.path,
            &[
                "branch",
                "--list",
                "--format=%(refname:short)",
                "teamboard/*",
            ],
        )
        .lines()
        .map(str::to_string)
        .collect()
    }

    /// The linked worktrees (the main one left out), as `git worktree list`
    /// shows them.
    pub fn linked_worktrees(&self) -> Vec<PathBuf> {
        git(&self.path, &["worktree", "list", "--porcelain"])
            .lines()
            .filter_map(|l| l.strip_prefix("worktree "))
            .skip(1)
            .map(PathBuf::from)
            .collect()
    }

    /// The commits `branch` has whose subject is `subject`.
    pub fn commits_with_subject(&self, branch: &str, subject: &str) -> usize {
        self.log(branch).iter().filter(|s| *s == subject).count()
    }
}

/// A hash manifest of the uncommitted work in worktree `wt`: every changed or
/// untracked file (each file of an untracked directory too), by path, with
/// its content's blob id, or "deleted".
pub fn manifest(wt: &Path) -> BTreeMap<String, String> {
    // Not `git()`: its trimming would eat the first entry's leading blank.
    let status = git_command(wt)
        .args(["status", "--porcelain=v1", "-z", "--untracked-files=all"])
        .output()
        .expect("git status");
    assert!(status.status.success(), "git status in {}", wt.display());
    let status = String::from_utf8_lossy(&status.stdout);
    let mut out = BTreeMap::new();
    let mut fields = status.split('\0').filter(|f| !f.is_empty());
    while let Some(field) = fields.next() {
        let (Some(code), Some(path)) = (field.get(..2), field.get(3..)) else {
            continue;
        };
        if code.contains('R') || code.contains('C') {
            fields.next();
        }
        let hash = if wt.join(path).exists() {
            git(wt, &["hash-object", "--", path])
        } else {
            "deleted".to_string()
        };
        out.insert(path.to_string(), hash);
    }
    out
}
