//! A scratch repository per test, and git run by hand to set up what the
//! crate under test then has to cope with.

use std::path::{Path, PathBuf};
use std::process::Command;
use teamboard_git::{Created, Oid, Repo};

/// A repository on branch `main` with one commit (README), and a place for
/// worktrees beside it.
pub struct Fixture {
    _tmp: tempfile::TempDir,
    pub root: PathBuf,
    pub repo: Repo,
    base: PathBuf,
}

impl Fixture {
    /// With a local identity, like a user's configured repository.
    pub fn new() -> Fixture {
        Self::build(true)
    }

    /// With no identity of its own (the global one is hidden by the caller).
    pub fn without_identity() -> Fixture {
        Self::build(false)
    }

    fn build(identity: bool) -> Fixture {
        let tmp = tempfile::tempdir().expect("temp dir");
        let base = tmp.path().canonicalize().expect("canonical temp dir");
        let root = base.join("repo");
        std::fs::create_dir(&root).expect("repo dir");
        git(&root, &["-c", "init.defaultBranch=main", "init", "-q"]);
        if identity {
            git(&root, &["config", "user.name", "Lead"]);
            git(&root, &["config", "user.email", "lead@example.invalid"]);
        }
        write(&root, "README", "hello\n");
        git(&root, &["add", "README"]);
        git_as_lead(&root, &["commit", "-q", "-m", "initial"]);
        let repo = Repo::open(&root).expect("open the new repository");
        Fixture {
            _tmp: tmp,
            root,
            repo,
            base,
        }
    }

    /// A path for a worktree named `name`, beside the repository.
    pub fn wt_path(&self, name: &str) -> PathBuf {
        self.base.join("wt").join(name)
    }

    /// A scratch path inside the fixture's temp dir.
    pub fn scratch(&self, name: &str) -> PathBuf {
        self.base.join(name)
    }

    /// Worktree `name` on new branch `teamboard/NAME` from main.
    pub fn task(&self, name: &str) -> (PathBuf, String) {
        let path = self.wt_path(name);
        let branch = format!("teamboard/{name}");
        let created = self
            .repo
            .add_worktree(&path, &branch, "main")
            .expect("add worktree");
        assert_eq!(created, Created::Fresh);
        (path, branch)
    }

    /// Commits `content` to `file` in the worktree `dir`, by hand.
    pub fn commit(&self, dir: &Path, file: &str, content: &str) -> Oid {
        write(dir, file, content);
        git(dir, &["add", "-A"]);
        git_as_lead(dir, &["commit", "-q", "-m", &format!("edit {file}")]);
        head(dir)
    }

    /// Commits `content` to `file` on main without a checkout of main: main's
    /// worktree (the root) is kept on main for these tests.
    pub fn commit_on_main(&self, file: &str, content: &str) -> Oid {
        self.commit(&self.root, file, content)
    }

    /// Commits conflicting edits of `same.txt` in the worktree `dir` and on
    /// main, then starts `git rebase main` in `dir`, which stops on the
    /// conflict. Answers the worktree's commit before the rebase.
    pub fn stopped_rebase(&self, dir: &Path) -> Oid {
        let before = self.commit(dir, "same.txt", "task side\n");
        self.commit_on_main("same.txt", "main side\n");
        let (ok, _) = try_git(
            dir,
            &[
                "-c",
                "user.name=L",
                "-c",
                "user.email=l@x",
                "rebase",
                "main",
            ],
        );
        assert!(!ok, "the rebase stops on the conflict");
        before
    }

    pub fn branch(&self, name: &str) -> Oid {
        git(&self.root, &["rev-parse", &format!("refs/heads/{name}")])
    }
}

/// Runs git in `dir` with the machine's configuration hidden; panics with
/// git's output if it fails.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = try_git(dir, args);
    assert!(out.0, "git {args:?} in {} failed: {}", dir.display(), out.1);
    out.1.trim().to_string()
}

/// Like [`git`], but returns (success, stdout + stderr) instead of panicking.
pub fn try_git(dir: &Path, args: &[&str]) -> (bool, String) {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_EDITOR", "true")
        .env("LC_ALL", "C")
        .output()
        .expect("run git");
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.success(), text)
}

/// git with an identity given on the command line, for repositories without one.
pub fn git_as_lead(dir: &Path, args: &[&str]) -> String {
    let mut all = vec![
        "-c",
        "user.name=Lead",
        "-c",
        "user.email=lead@example.invalid",
    ];
    all.extend_from_slice(args);
    git(dir, &all)
}

pub fn head(dir: &Path) -> Oid {
    git(dir, &["rev-parse", "HEAD"])
}

pub fn parents(dir: &Path, commit: &str) -> Vec<Oid> {
    git(dir, &["rev-list", "--parents", "-n", "1", commit])
        .split_whitespace()
        .skip(1)
        .map(str::to_string)
        .collect()
}

pub fn write(dir: &Path, file: &str, content: &str) {
    let path = dir.join(file);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).expect("parent dir");
    }
    std::fs::write(path, content).expect("write file");
}

pub fn read(dir: &Path, file: &str) -> String {
    std::fs::read_to_string(dir.join(file)).expect("read file")
}

/// Installs an executable hook shared by every worktree of the repository.
pub fn hook(root: &Path, name: &str, script: &str) {
    use std::os::unix::fs::PermissionsExt;
    let path = root.join(".git/hooks").join(name);
    std::fs::write(&path, script).expect("write hook");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod hook");
}

/// Runs the `#[ignore]`d test `name` of this test binary in a child process
/// with `env` set (and the listed variables removed), and fails if it fails.
/// Tests that need a different PATH or git configuration for the crate's own
/// git calls use this instead of changing the environment of a process whose
/// other tests run in parallel.
pub fn run_in_child(name: &str, env: &[(&str, &Path)], remove: &[&str]) {
    let exe = std::env::current_exe().expect("test binary path");
    let mut cmd = Command::new(exe);
    cmd.args(["--ignored", "--exact", name, "--test-threads=1"]);
    for (key, value) in env {
        cmd.env(key, value);
    }
    for key in remove {
        cmd.env_remove(key);
    }
    let out = cmd.output().expect("run the test binary");
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "child test {name} failed:\n{text}");
    assert!(
        text.contains("1 passed"),
        "child test {name} did not run:\n{text}"
    );
}
