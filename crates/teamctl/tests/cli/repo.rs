//! `teamctl repo`, `teamctl worktrees`, `teamctl task diff` and the worktree parts
//! of `task add`, `task show` and `task cancel`, with real git repositories.

use crate::{Cli, base_command, stderr, stdout};
use std::path::{Path, PathBuf};
use std::process::Output;
use teamboard_protocol::Client;
use teamboard_testkit::git::git;
use teamboard_testkit::{GitRepo, short_tempdir};
use tempfile::TempDir;

/// A team whose repository is a scratch one with `main` checked out nowhere.
struct Team {
    d: Cli,
    repo: GitRepo,
    // Last: the repository is removed after the daemon stopped using it.
    _dir: TempDir,
}

impl Team {
    fn start() -> Team {
        let dir = short_tempdir();
        let repo = GitRepo::new(dir.path());
        let d = Cli::start();
        d.ok(&[
            "repo",
            "set",
            &repo.path.display().to_string(),
            "--branch",
            "main",
        ]);
        Team { d, repo, _dir: dir }
    }

    /// `teamctl ARGS` with the git it runs cut off from the user's configuration,
    /// so that a pager or colour setting of the machine cannot change the output.
    fn run_git(&self, args: &[&str]) -> Output {
        base_command(&self.d.socket)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .args(args)
            .output()
            .expect("teamctl runs")
    }

    fn ok_git(&self, args: &[&str]) -> String {
        let out = self.run_git(args);
        assert!(out.status.success(), "{args:?}: {out:?}");
        stdout(&out)
    }

    /// A teammate that claims `id` and opens its worktree, as teammated does;
    /// answers the client (keep it: dropping it ends the claim), the epoch and the
    /// worktree's directory.
    fn claim_and_open(&self, name: &str, id: u64) -> (Client, u64, PathBuf) {
        let who = self.d.teammate(name, "coder");
        let (epoch, path) = self.d.block_on(async {
            let claim = who.claim_task(id).await.expect("claim");
            let opened = who.open_worktree(id, claim.epoch).await.expect("open");
            (claim.epoch, PathBuf::from(opened.worktree.path))
        });
        (who, epoch, path)
    }
}

/// The row of task `id` in `teamctl worktrees`.
fn row_of(table: &str, id: u64) -> String {
    let tag = format!("#{id}");
    table
        .lines()
        .find(|l| l.split_whitespace().next() == Some(tag.as_str()))
        .unwrap_or_else(|| panic!("no row for {tag} in:\n{table}"))
        .to_string()
}

fn write(dir: &Path, file: &str, content: &str) {
    std::fs::write(dir.join(file), content).expect("write");
}

#[test]
fn repo_set_takes_a_relative_path_and_repo_shows_the_settings() {
    let dir = short_tempdir();
    let repo = GitRepo::new(dir.path());
    let d = Cli::start();

    let out = d.run(&["repo"]);
    assert!(out.status.success(), "{out:?}");
    assert!(stdout(&out).is_empty(), "{out:?}");
    assert!(
        stderr(&out)
            .contains("team 'default' has no repository; attach one with `teamctl repo set PATH`"),
        "{out:?}"
    );
    assert_eq!(d.json(&["repo"]), serde_json::Value::Null);

    // `repo` relative to the current directory, which boardd does not share.
    let out = base_command(&d.socket)
        .current_dir(dir.path())
        .args([
            "repo",
            "set",
            "repo",
            "--branch",
            "main",
            "--merge",
            "merge",
            "--check",
            "test -f README.md",
            "--check",
            "true",
            "--check-timeout",
            "90",
        ])
        .output()
        .expect("teamctl runs");
    assert!(out.status.success(), "{out:?}");
    let top = repo.path.canonicalize().expect("canonical");
    let set = stdout(&out);
    assert!(
        set.starts_with(&format!("team 'default' works in {} now", top.display())),
        "{set}"
    );

    let shown = d.ok(&["repo"]);
    for want in [
        format!("repository:  {}", top.display()),
        "branch:      main  (the target: finished tasks land here)".to_string(),
        "merge:       merge (a merge commit per task)".to_string(),
        "checks:      test -f README.md\n             true\n".to_string(),
        "check limit: 1m 30s per check".to_string(),
        "git:         ".to_string(),
    ] {
        assert!(shown.contains(&want), "{want:?} in:\n{shown}");
    }
    // `repo set` prints what `repo` shows (but the age of the setting).
    for line in shown.lines().filter(|l| !l.starts_with("set:")) {
        assert!(set.contains(line), "{line:?} in:\n{set}");
    }
    let json = d.json(&["repo"]);
    assert_eq!(json["branch"], "main");
    assert_eq!(json["merge"], "merge");
    assert_eq!(json["check_timeout_ms"], 90_000);
    assert_eq!(
        json["checks"],
        serde_json::json!(["test -f README.md", "true"])
    );
}

#[test]
fn repo_set_takes_a_checked_out_branch_and_its_refusals_repeat_every_option() {
    let dir = short_tempdir();
    let repo = GitRepo::new(dir.path());
    let plain = dir.path().join("plain");
    std::fs::create_dir_all(&plain).expect("dir");
    let d = Cli::start();

    let out = d.run(&["repo", "set", &plain.display().to_string()]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = stderr(&out);
    assert!(err.starts_with("teamctl: "), "{err}");
    assert!(err.contains("not inside a git repository"), "{err}");
    assert!(stdout(&out).is_empty(), "{out:?}");

    // Without --branch, the refusal's command repeats every option given.
    git(&repo.path, &["switch", "-q", "main"]);
    let root = repo.path.display().to_string();
    let out = d.run(&[
        "repo",
        "set",
        &root,
        "--merge",
        "merge",
        "--check",
        "make test",
        "--check",
        "true",
        "--check-timeout",
        "90",
    ]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let want = format!(
        "teamctl repo set {root} --branch main --merge merge --check 'make test' --check true --check-timeout 90"
    );
    assert!(stderr(&out).contains(&want), "{want}\n{out:?}");
    // So does the one for a branch that does not exist.
    let out = d.run(&[
        "repo",
        "set",
        &root,
        "--branch",
        "trunk",
        "--check",
        "make test",
    ]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let want = format!("teamctl repo set {root} --branch trunk --check 'make test'");
    assert!(stderr(&out).contains(&want), "{want}\n{out:?}");
    assert_eq!(
        d.json(&["repo"]),
        serde_json::Value::Null,
        "nothing was set"
    );

    // A target checked out in the person's tree is taken, with every option.
    let repo_set = d.json(&[
        "repo",
        "set",
        &root,
        "--branch",
        "main",
        "--check",
        "make test",
    ]);
    assert_eq!(repo_set["branch"], "main", "{repo_set}");
    assert_eq!(
        repo_set["checks"],
        serde_json::json!(["make test"]),
        "{repo_set}"
    );

    // Mistakes teamctl catches itself are usage errors.
    for bad in [
        vec!["repo", "set", ".", "--check", " "],
        vec!["repo", "set", ".", "--check-timeout", "0"],
        vec!["repo", "set", ".", "--merge", "squash"],
    ] {
        let out = d.run(&bad);
        assert_eq!(out.status.code(), Some(2), "{bad:?}: {out:?}");
    }
}

#[test]
fn task_checks_and_no_worktree_show_in_task_show() {
    let d = Cli::start();
    d.ok(&[
        "task",
        "add",
        "parser",
        "--check",
        "cargo test",
        "--check",
        "ruff .",
    ]);
    d.ok(&["task", "add", "summary", "--no-worktree"]);
    d.ok(&["task", "add", "plain"]);

    let shown = d.ok(&["task", "show", "1"]);
    assert!(
        shown.contains("checks:     cargo test\n            ruff .\n"),
        "{shown}"
    );
    assert_eq!(
        d.json(&["task", "show", "1"])["checks"],
        serde_json::json!(["cargo test", "ruff ."])
    );
    let shown = d.ok(&["task", "show", "2"]);
    assert!(shown.contains("worktree:   none"), "{shown}");
    assert_eq!(d.json(&["task", "show", "2"])["no_worktree"], true);
    // A task with neither shows no new lines.
    let shown = d.ok(&["task", "show", "3"]);
    assert!(
        !shown.contains("worktree:") && !shown.contains("checks:"),
        "{shown}"
    );

    // Checks run in a worktree: a task without one cannot have them.
    let out = d.run(&["task", "add", "x", "--check", "true", "--no-worktree"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let out = d.run(&["task", "add", "x", "--check", ""]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(stderr(&out).contains("cannot be empty"), "{out:?}");

    // No repository: nothing to diff, and teamctl says why.
    let out = d.run(&["task", "diff", "1"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        stderr(&out).contains("task #1 has no worktree: its team has no repository"),
        "{out:?}"
    );
    let out = d.run(&["task", "diff", "2"]);
    assert!(stderr(&out).contains("--no-worktree"), "{out:?}");
    let out = d.run(&["worktrees"]);
    assert!(out.status.success() && stdout(&out).is_empty(), "{out:?}");
    assert!(stderr(&out).contains("no worktrees"), "{out:?}");
}

#[test]
fn worktrees_list_a_claimed_task_and_task_diff_shows_its_uncommitted_work() {
    let t = Team::start();
    t.d.ok(&["task", "add", "edit the readme"]);
    t.d.ok(&["task", "add", "not claimed yet"]);
    let (_alice, _, wt) = t.claim_and_open("alice", 1);
    write(&wt, "README.md", "hello\nedited by alice\n");
    write(&wt, "notes.txt", "scratch\n");

    let table = t.d.ok(&["worktrees"]);
    assert!(table.starts_with("TASK  SUBJECT"), "{table}");
    let row = row_of(&table, 1);
    for want in ["edit the readme", "in progress", "alice", "active"] {
        assert!(row.contains(want), "{want:?} in {row}");
    }
    assert!(row.ends_with(&wt.display().to_string()), "{row}");
    let cells: Vec<&str> = row.split_whitespace().collect();
    // ... active, 2 uncommitted paths, 0 commits, a size, the path.
    let at = cells.iter().position(|c| *c == "active").expect("state");
    assert_eq!(&cells[at + 1..at + 3], &["2", "0"], "{row}");
    assert!(["B", "kB", "MB"].contains(&cells[at + 4]), "{row}");
    let json = t.d.json(&["worktrees"]);
    assert_eq!(json[0]["task"], 1);
    assert_eq!(json[0]["state"], "active");

    let shown = t.d.ok(&["task", "show", "1"]);
    let base = git(&t.repo.path, &["rev-parse", "main"]);
    assert!(
        shown.contains(&format!("worktree:   {}\n", wt.display())),
        "{shown}"
    );
    assert!(
        shown.contains(&format!(
            "branch:     teamboard/default/task-1  from {}",
            &base[..7]
        )),
        "{shown}"
    );

    let diff = t.ok_git(&["task", "diff", "1"]);
    assert!(diff.contains("+edited by alice"), "{diff}");
    assert!(
        diff.contains(
            "untracked files (not in the diff above; completing commits them):\n  notes.txt\n"
        ),
        "{diff}"
    );
    let stat = t.ok_git(&["task", "diff", "#1", "--stat"]);
    assert!(stat.contains("README.md | 1 +"), "{stat}");
    let names = t.ok_git(&["task", "diff", "1", "--name-only"]);
    assert!(names.starts_with("README.md\n"), "{names}");

    let out = t.run_git(&["task", "diff", "2"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        stderr(&out)
            .contains("task #2 has no worktree: it gets one when a teammate first claims it"),
        "{out:?}"
    );
    let out = t.run_git(&["task", "diff", "1", "--json"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(stderr(&out).contains("no JSON form"), "{out:?}");
}

#[test]
fn prune_removes_only_discarded_and_merged_work_and_says_why_it_kept_the_rest() {
    let t = Team::start();
    for subject in ["kept", "discarded", "landed", "open"] {
        t.d.ok(&["task", "add", subject]);
    }
    let (bob, _, kept) = t.claim_and_open("bob", 1);
    write(&kept, "kept.txt", "bob's work\n");
    git(&kept, &["add", "kept.txt"]);
    git(&kept, &["commit", "-q", "-m", "bob's work"]);
    let (carol, _, discarded) = t.claim_and_open("carol", 2);
    write(&discarded, "discarded.txt", "carol's work\n");
    let (dave, epoch, landed) = t.claim_and_open("dave", 3);
    write(&landed, "landed.txt", "dave's work\n");
    t.d.block_on(async {
        dave.complete_task(3, epoch, "done").await.expect("lands");
    });
    let (_erin, _, open) = t.claim_and_open("erin", 4);

    let cancelled = t.d.ok(&["task", "cancel", "1"]);
    assert!(cancelled.starts_with("[-] #1"), "{cancelled}");
    t.d.ok(&["task", "cancel", "2", "--discard"]);
    drop((bob, carol));
    let shown = t.d.ok(&["task", "show", "2"]);
    assert!(shown.contains("discard:    yes"), "{shown}");
    let shown = t.d.ok(&["task", "show", "3"]);
    assert!(shown.contains("landed:     "), "{shown}");

    // The landed task's change, from the repository.
    let diff = t.ok_git(&["task", "diff", "3"]);
    assert!(diff.contains("+dave's work"), "{diff}");

    let dry = t.d.ok(&["worktrees", "prune", "--dry-run"]);
    assert!(
        dry.contains("would remove #2: discarded (cancelled with --discard)"),
        "{dry}"
    );
    assert!(
        dry.contains("would remove #3: merged (its work is on the target branch)"),
        "{dry}"
    );
    assert!(
        dry.contains("kept #1: unmerged (cancelled without --discard)"),
        "{dry}"
    );
    assert!(dry.contains("kept #4: active (task in progress)"), "{dry}");
    assert!(
        dry.trim_end().ends_with("(nothing removed: --dry-run)"),
        "{dry}"
    );
    assert!(
        discarded.is_dir() && landed.is_dir(),
        "a dry run removes nothing"
    );
    let pruned = t.d.ok(&["worktrees", "prune"]);
    assert!(pruned.contains("removed #2: discarded"), "{pruned}");
    assert!(pruned.contains("removed #3: merged"), "{pruned}");
    assert!(pruned.contains("kept #1: unmerged"), "{pruned}");
    assert!(
        pruned.trim_end().ends_with("removed 2 worktrees, kept 2"),
        "{pruned}"
    );
    assert!(!discarded.exists() && !landed.exists(), "{pruned}");
    assert!(kept.join("kept.txt").is_file() && open.is_dir(), "{pruned}");
    let json = t.d.json(&["worktrees", "prune", "--dry-run"]);
    assert_eq!(json["removed"], serde_json::json!([]));
    assert_eq!(json["kept"].as_array().map(Vec::len), Some(2));

    // After the prune: the landed change is still in the repository, the
    // discarded one is gone, and a kept branch without its directory still diffs.
    assert!(t.ok_git(&["task", "diff", "3"]).contains("+dave's work"));
    let out = t.run_git(&["task", "diff", "2"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(stderr(&out).contains("were pruned"), "{out:?}");
    std::fs::remove_dir_all(&kept).expect("remove by hand");
    let diff = t.ok_git(&["task", "diff", "1"]);
    assert!(diff.contains("+bob's work"), "{diff}");
    let table = t.d.ok(&["worktrees"]);
    assert!(row_of(&table, 1).contains("missing"), "{table}");
}

#[test]
fn task_show_has_the_evidence_of_a_failed_check() {
    let t = Team::start();
    t.d.ok(&[
        "task",
        "add",
        "gated",
        "--check",
        "printf 'line %s\\n' $(seq 1 20); exit 3",
    ]);
    let (alice, epoch, _) = t.claim_and_open("alice", 1);
    let refused = t.d.block_on(alice.complete_task(1, epoch, "done"));
    assert!(refused.is_err(), "{refused:?}");

    let shown = t.d.ok(&["task", "show", "1"]);
    assert!(
        shown.contains("check runs (the last of each):\n  failed "),
        "{shown}"
    );
    assert!(shown.contains("exit 3"), "{shown}");
    assert!(
        shown.contains("      ... 8 earlier lines (--json has the last 4 KiB)\n      line 9\n"),
        "{shown}"
    );
    assert!(shown.contains("      line 20\n"), "{shown}");
    let json = t.d.json(&["task", "show", "1"]);
    assert_eq!(json["check_runs"][0]["outcome"], "failed");
    assert_eq!(json["check_runs"][0]["exit_code"], 3);
}
