//! Text for a team's repository, task worktrees, checks and landings.

use super::{ago, clock, datetime, duration, one_line, plural, status_word};
use teamboard_protocol::text::fit_chars_with_ellipsis;
use teamboard_protocol::{
    CheckOutcome, CheckRun, Landing, LandingStage, MergeStyle, Pruned, Repo, Task, TaskStatus,
    Worktree, WorktreeEntry, WorktreeState,
};

/// How many lines of a failed check's output `task show` prints.
pub const TAIL_LINES: usize = 12;

/// How much of a subject the worktree table keeps.
const SUBJECT_WIDTH: usize = 30;

/// What boardd reports as `unmerged_commits` when git could not count them.
const UNCOUNTED: u32 = u32::MAX;

/// A commit id as people read it: its first 7 hex digits.
pub fn short_oid(oid: &str) -> &str {
    oid.get(..7).unwrap_or(oid)
}

/// Bytes in decimal units, as `du --si` and file managers show them: `950 B`,
/// `12.3 kB`, `4.0 MB`, `1.2 GB`.
pub fn size(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["kB", "MB", "GB", "TB", "PB"];
    if bytes < 1000 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1000.0;
    let mut unit = 0;
    // Round first, so that 999,999 bytes reads 1.0 MB rather than 1000.0 kB.
    while (value * 10.0).round() / 10.0 >= 1000.0 && unit + 1 < UNITS.len() {
        value /= 1000.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

// ---------------------------------------------------------------- the repository

/// The team's repository, one `label: value` line per setting.
pub fn repo_lines(r: &Repo, now: i64) -> Vec<String> {
    let mut out = vec![
        format!("repository:  {}", r.path),
        format!(
            "branch:      {}  (the target: finished tasks land here)",
            r.branch
        ),
        format!("merge:       {}", merge_words(r.merge)),
    ];
    if r.checks.is_empty() {
        out.push("checks:      none (tasks may still have their own)".into());
    }
    out.extend(listed("checks:      ", &r.checks));
    out.push(format!(
        "check limit: {} per check",
        duration(r.check_timeout_ms)
    ));
    if r.review {
        out.push(
            "review:      every task's work waits for your review once its checks pass \
             (`teamctl review`)"
                .into(),
        );
    }
    out.push(format!("worktrees:   {}", r.worktrees));
    if !r.git_version.is_empty() {
        // boardd stores `git --version` whole: "git version 2.43.0".
        let version = r.git_version.trim();
        let version = version.strip_prefix("git version ").unwrap_or(version);
        out.push(format!("git:         {version}"));
    }
    out.push(format!(
        "set:         {} ({})",
        datetime(r.set_at),
        ago(r.set_at, now)
    ));
    out
}

/// `label` and the first item, then each other item on a line of its own under it.
fn listed<'a>(label: &'a str, items: &'a [String]) -> impl Iterator<Item = String> + 'a {
    let indent = " ".repeat(label.len());
    let heads = std::iter::once(label.to_string()).chain(std::iter::repeat(indent));
    heads
        .zip(items)
        .map(|(head, item)| format!("{head}{}", one_line(item)))
}

fn merge_words(style: MergeStyle) -> &'static str {
    match style {
        MergeStyle::Rebase => "rebase (a fast-forward after a rebase)",
        MergeStyle::Merge => "merge (a merge commit per task)",
    }
}

// ---------------------------------------------------------------- one task

/// What `task show` adds for a task's worktree, checks, landing and check runs:
/// nothing for a task that has none of them.
pub fn task_worktree_lines(t: &Task, now: i64) -> Vec<String> {
    let mut out = Vec::new();
    if t.no_worktree {
        out.push("worktree:   none: works in the team's directory (--no-worktree)".into());
    }
    if let Some(w) = &t.worktree {
        out.extend(worktree_lines(w));
    }
    out.extend(listed("checks:     ", &t.checks));
    if !t.proposed_checks.is_empty() {
        out.extend(listed("proposed:   ", &t.proposed_checks));
        out.push(format!(
            "            not run until you accept them: teamctl task accept-checks {} [--reject]",
            t.id
        ));
    }
    if let Some(l) = &t.landing {
        out.push(format!("landing:    {}", landing_words(l, now)));
    }
    out
}

fn worktree_lines(w: &Worktree) -> Vec<String> {
    let pruned = if w.pruned {
        "  (pruned: the directory and the branch are gone)"
    } else {
        ""
    };
    let mut out = vec![format!("worktree:   {}{pruned}", w.path)];
    let base = match &w.base {
        Some(base) => format!("from {}", short_oid(base)),
        None => "not created yet (its owner creates it when it starts)".to_string(),
    };
    out.push(format!("branch:     {}  {base}", w.branch));
    match (&w.merged, &w.landed_on) {
        (Some(merged), Some(on)) => out.push(format!(
            "landed:     {} on top of {}",
            short_oid(merged),
            short_oid(on)
        )),
        (Some(merged), None) => out.push(format!("landed:     {}", short_oid(merged))),
        _ => {}
    }
    if w.discard {
        out.push(
            "discard:    yes: cancelled with --discard, `teamctl worktrees prune` removes it"
                .into(),
        );
    }
    out
}

/// `checking for 12s` or `queued for 5s (checks passed; completion asked 20s ago)`.
fn landing_words(l: &Landing, now: i64) -> String {
    let since = |at: i64| duration(u64::try_from(now.saturating_sub(at)).unwrap_or(0));
    match (l.stage, l.queued_at) {
        (LandingStage::Checking, _) => {
            format!("checking for {} (commit, update, checks)", since(l.since))
        }
        (LandingStage::Review, _) => {
            let mut s = format!(
                "review: waiting for {}",
                since(l.review_at.unwrap_or(l.since))
            );
            if let Some(head) = &l.head {
                s.push_str(&format!(", {} passed its checks", short_oid(head)));
            }
            if let Some(d) = &l.diff {
                s.push_str(&format!(" ({})", super::diff_size(d)));
            }
            s.push_str("; `teamctl merge` lands it, `teamctl send-back` returns it");
            s
        }
        (LandingStage::Queued, queued_at) => {
            let mut s = format!(
                "queued for {} in the merge queue",
                since(queued_at.unwrap_or(l.since))
            );
            if let Some(head) = &l.head {
                s.push_str(&format!(", {} passed its checks", short_oid(head)));
            }
            s.push_str(&format!("; completion asked {} ago", since(l.since)));
            s
        }
        (LandingStage::Blocked, _) => format!(
            "blocked: {} has changes in the way ({}); it lands once they are committed or undone, or on `teamctl task retry`; completion asked {} ago",
            l.checkout
                .as_deref()
                .unwrap_or("the checkout of the target"),
            l.paths.join(", "),
            since(l.since)
        ),
        (LandingStage::Conflict, _) => format!(
            "conflict with the target at {} in {}: resolve it in the worktree, commit, then complete again or `teamctl task retry`",
            l.onto.as_deref().map(short_oid).unwrap_or("?"),
            l.paths.join(", ")
        ),
    }
}

/// The last run of each check: one line per run, and for a run that did not pass
/// the end of its output.
pub fn check_run_lines(runs: &[CheckRun], now: i64) -> Vec<String> {
    let width = runs
        .iter()
        .map(|r| one_line(&r.command).chars().count())
        .max()
        .unwrap_or(0)
        .min(40);
    let mut out = Vec::new();
    for r in runs {
        let exit = match r.exit_code {
            Some(code) => format!("exit {code}"),
            None => "no exit code".to_string(),
        };
        let command = fit_chars_with_ellipsis(&one_line(&r.command), 40);
        let mut line = format!(
            "{:<11}  {command:<width$}  {exit}  {}  at {} ({})",
            r.outcome,
            duration(r.duration_ms),
            clock(r.at),
            ago(r.at, now),
        );
        if !r.commit.is_empty() {
            line.push_str(&format!("  on {}", short_oid(&r.commit)));
        }
        out.push(line);
        if r.outcome != CheckOutcome::Passed {
            out.extend(tail_lines(&r.tail));
        }
    }
    out
}

/// The last [`TAIL_LINES`] lines of a check's output, indented.
fn tail_lines(tail: &str) -> Vec<String> {
    let lines: Vec<&str> = tail.trim_end().lines().collect();
    if lines.is_empty() {
        return vec!["    (no output)".into()];
    }
    let skip = lines.len().saturating_sub(TAIL_LINES);
    let mut out = Vec::new();
    if skip > 0 {
        out.push(format!(
            "    ... {} (--json has the last 4 KiB)",
            plural(skip as u64, "earlier line")
        ));
    }
    out.extend(lines[skip..].iter().map(|l| format!("    {l}")));
    out
}

// ---------------------------------------------------------------- worktrees

/// The worktree table, with a header row.
pub fn worktree_table(entries: &[WorktreeEntry]) -> Vec<String> {
    let header = [
        "TASK",
        "SUBJECT",
        "STATUS",
        "OWNER",
        "STATE",
        "UNCOMMITTED",
        "UNMERGED",
        "SIZE",
        "PATH",
    ];
    let mut rows: Vec<[String; 9]> = vec![header.map(str::to_string)];
    rows.extend(entries.iter().map(|e| {
        [
            format!("#{}", e.task),
            fit_chars_with_ellipsis(&one_line(&e.subject), SUBJECT_WIDTH),
            status_word(e.status).to_string(),
            e.owner.clone().unwrap_or_else(|| "-".into()),
            e.state.to_string(),
            e.uncommitted.to_string(),
            match e.unmerged_commits {
                UNCOUNTED => "?".to_string(),
                n => n.to_string(),
            },
            size(e.size),
            e.worktree.path.clone(),
        ]
    }));
    let mut widths = [0usize; 9];
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |row: &[String; 9]| {
        let cells = row
            .iter()
            .zip(widths)
            .enumerate()
            .map(|(i, (cell, w))| match i {
                // The path is last: no padding. Counts and sizes line up on the right.
                8 => cell.clone(),
                5..=7 => format!("{cell:>w$}"),
                _ => format!("{cell:<w$}"),
            });
        cells.collect::<Vec<_>>().join("  ")
    };
    rows.iter().map(line).collect()
}

/// Why a worktree has the state it has: `active (task in progress)`,
/// `unmerged (cancelled without --discard)`.
pub fn state_reason(e: &WorktreeEntry) -> String {
    let why = match e.state {
        WorktreeState::Reserved => "claimed, not created yet".to_string(),
        WorktreeState::Active => format!("task {}", status_word(e.status)),
        WorktreeState::Merged => "its work is on the target branch".to_string(),
        WorktreeState::Discarded => "cancelled with --discard".to_string(),
        WorktreeState::Unmerged => match e.status {
            TaskStatus::Cancelled => "cancelled without --discard".to_string(),
            _ if e.unmerged_commits == UNCOUNTED => {
                "git could not count its commits against the target".to_string()
            }
            _ if e.unmerged_commits > 0 => format!(
                "{} not on the target branch",
                plural(u64::from(e.unmerged_commits), "commit")
            ),
            _ => "work not on the target branch".to_string(),
        },
        WorktreeState::Missing => "the directory is gone; its branch may remain".to_string(),
    };
    let mut s = format!("{} ({why}", e.state);
    if e.uncommitted > 0 && e.state != WorktreeState::Discarded {
        s.push_str(&format!(
            ", {}",
            plural(u64::from(e.uncommitted), "uncommitted path")
        ));
    }
    s.push(')');
    s
}

/// What `worktrees prune` did (or, on a dry run, would do): a line per worktree
/// removed, a line per worktree kept with the reason, and a count.
pub fn prune_lines(p: &Pruned, dry_run: bool) -> Vec<String> {
    let verb = if dry_run { "would remove" } else { "removed" };
    let mut out: Vec<String> = p
        .removed
        .iter()
        .map(|e| {
            format!(
                "{verb} #{}: {}  {}",
                e.task,
                state_reason(e),
                e.worktree.path
            )
        })
        .collect();
    out.extend(
        p.kept
            .iter()
            .map(|e| format!("kept #{}: {}", e.task, state_reason(e))),
    );
    let removed = plural(p.removed.len() as u64, "worktree");
    out.push(match (p.removed.is_empty(), dry_run) {
        (true, _) if p.kept.is_empty() => "no worktrees to prune".to_string(),
        (true, _) => format!("nothing to prune, {} kept", p.kept.len()),
        (false, true) => format!(
            "would remove {removed}, keep {} (nothing removed: --dry-run)",
            p.kept.len()
        ),
        (false, false) => format!("removed {removed}, kept {}", p.kept.len()),
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_human() {
        assert_eq!(size(0), "0 B");
        assert_eq!(size(999), "999 B");
        assert_eq!(size(1000), "1.0 kB");
        assert_eq!(size(12_345), "12.3 kB");
        assert_eq!(size(12_345_678), "12.3 MB");
        assert_eq!(size(999_999), "1.0 MB");
        assert_eq!(size(4_000_000_000), "4.0 GB");
        assert_eq!(size(u64::MAX), "18446.7 PB");
    }

    #[test]
    fn short_oids() {
        assert_eq!(short_oid("0123456789abcdef"), "0123456");
        assert_eq!(short_oid("abc"), "abc");
    }

    fn entry(task: u64, status: TaskStatus, state: WorktreeState) -> WorktreeEntry {
        WorktreeEntry {
            task,
            subject: format!("task {task}"),
            status,
            owner: None,
            worktree: Worktree {
                path: format!("/w/task-{task}"),
                branch: format!("teamboard/default/task-{task}"),
                base: None,
                merged: None,
                landed_on: None,
                discard: false,
                pruned: false,
            },
            state,
            uncommitted: 0,
            unmerged_commits: 0,
            size: 0,
        }
    }

    #[test]
    fn prune_says_what_went_and_why_the_rest_stayed() {
        let mut kept_cancelled = entry(7, TaskStatus::Cancelled, WorktreeState::Unmerged);
        kept_cancelled.uncommitted = 1;
        let mut failed = entry(8, TaskStatus::Completed, WorktreeState::Unmerged);
        failed.unmerged_commits = 2;
        let pruned = Pruned {
            removed: vec![
                entry(3, TaskStatus::Completed, WorktreeState::Merged),
                entry(5, TaskStatus::Cancelled, WorktreeState::Discarded),
            ],
            kept: vec![
                entry(4, TaskStatus::InProgress, WorktreeState::Active),
                kept_cancelled,
                failed,
                entry(9, TaskStatus::Pending, WorktreeState::Reserved),
                entry(10, TaskStatus::Pending, WorktreeState::Missing),
            ],
        };
        assert_eq!(
            prune_lines(&pruned, false),
            vec![
                "removed #3: merged (its work is on the target branch)  /w/task-3",
                "removed #5: discarded (cancelled with --discard)  /w/task-5",
                "kept #4: active (task in progress)",
                "kept #7: unmerged (cancelled without --discard, 1 uncommitted path)",
                "kept #8: unmerged (2 commits not on the target branch)",
                "kept #9: reserved (claimed, not created yet)",
                "kept #10: missing (the directory is gone; its branch may remain)",
                "removed 2 worktrees, kept 5",
            ]
        );
        let dry = prune_lines(&pruned, true);
        assert!(dry[0].starts_with("would remove #3: merged"), "{dry:?}");
        assert_eq!(
            dry.last().map(String::as_str),
            Some("would remove 2 worktrees, keep 5 (nothing removed: --dry-run)")
        );
        assert_eq!(
            prune_lines(&Pruned::default(), false),
            vec!["no worktrees to prune"]
        );
    }

    #[test]
    fn the_table_aligns_columns_and_truncates_subjects() {
        let mut a = entry(3, TaskStatus::InProgress, WorktreeState::Active);
        a.subject = "a subject far longer than the thirty characters kept".into();
        a.owner = Some("alice".into());
        a.uncommitted = 12;
        a.size = 12_345_678;
        let b = entry(12, TaskStatus::Cancelled, WorktreeState::Unmerged);
        let mut c = entry(13, TaskStatus::Completed, WorktreeState::Unmerged);
        c.unmerged_commits = UNCOUNTED;
        let table = worktree_table(&[a, b, c.clone()]);
        assert_eq!(table.len(), 4);
        assert!(table[3].contains(" ?      0 B"), "{table:?}");
        assert_eq!(
            state_reason(&c),
            "unmerged (git could not count its commits against the target)"
        );
        assert!(table[0].starts_with("TASK  SUBJECT"), "{table:?}");
        assert!(
            table[1].contains("a subject far longer than the…  "),
            "{table:?}"
        );
        assert!(table[1].contains("in progress  alice"), "{table:?}");
        assert!(table[1].ends_with("12.3 MB  /w/task-3"), "{table:?}");
        assert!(table[2].ends_with("    0 B  /w/task-12"), "{table:?}");
        // Every path starts in the same column.
        let col = |l: &str, what: &str| {
            let at = l.find(what).expect("column");
            l[..at].chars().count()
        };
        assert_eq!(col(&table[1], "/w/"), col(&table[2], "/w/"));
        assert_eq!(col(&table[0], "PATH"), col(&table[1], "/w/"));
    }

    #[test]
    fn the_repository_in_lines() {
        let r = Repo {
            path: "/src/app".into(),
            branch: "main".into(),
            merge: MergeStyle::Merge,
            checks: vec!["cargo test".into(), "ruff .".into()],
            check_timeout_ms: 600_000,
            worktrees: "/state/worktrees/default".into(),
            git_version: "git version 2.43.0".into(),
            set_at: 0,
            review: false,
        };
        assert_eq!(
            repo_lines(&r, 180_000),
            vec![
                "repository:  /src/app",
                "branch:      main  (the target: finished tasks land here)",
                "merge:       merge (a merge commit per task)",
                "checks:      cargo test",
                "             ruff .",
                "check limit: 10m 0s per check",
                "worktrees:   /state/worktrees/default",
                "git:         2.43.0",
                "set:         1970-01-01 00:00:00 UTC (3m ago)",
            ]
        );
    }

    fn run(command: &str, outcome: CheckOutcome, tail: &str) -> CheckRun {
        CheckRun {
            command: command.into(),
            outcome,
            exit_code: match outcome {
                CheckOutcome::Passed => Some(0),
                CheckOutcome::Failed => Some(101),
                _ => None,
            },
            tail: tail.into(),
            duration_ms: 12_000,
            commit: "0123456789".into(),
            at: 60_000,
        }
    }

    #[test]
    fn a_failed_check_shows_the_end_of_its_output() {
        let long: String = (1..=20).map(|i| format!("line {i}\n")).collect();
        let runs = [
            run("cargo fmt --check", CheckOutcome::Passed, "ignored"),
            run("cargo test", CheckOutcome::Failed, &long),
            run("sleep 999", CheckOutcome::TimedOut, ""),
        ];
        let lines = check_run_lines(&runs, 120_000);
        assert_eq!(
            lines[0],
            "passed       cargo fmt --check  exit 0  12s  at 00:01:00 (1m ago)  on 0123456"
        );
        assert_eq!(
            lines[1],
            "failed       cargo test         exit 101  12s  at 00:01:00 (1m ago)  on 0123456"
        );
        assert_eq!(
            lines[2],
            "    ... 8 earlier lines (--json has the last 4 KiB)"
        );
        assert_eq!(lines[3], "    line 9");
        assert_eq!(lines[14], "    line 20");
        assert!(lines[15].starts_with("timed_out    sleep 999"), "{lines:?}");
        assert_eq!(lines[16], "    (no output)");
        assert_eq!(lines.len(), 17);
    }

    #[test]
    fn a_task_without_a_worktree_adds_nothing() {
        let t: Task = serde_json::from_value(serde_json::json!({
            "id": 1, "subject": "s", "status": "pending", "created_at": 0, "updated_at": 0
        }))
        .expect("task");
        assert!(task_worktree_lines(&t, 0).is_empty());
    }

    #[test]
    fn a_landed_task_shows_where_and_a_queued_one_how_long() {
        let t: Task = serde_json::from_value(serde_json::json!({
            "id": 1, "subject": "s", "status": "in_progress", "created_at": 0, "updated_at": 0,
            "worktree": {
                "path": "/w/task-1", "branch": "teamboard/default/task-1",
                "base": "aaaaaaaaaa", "merged": "bbbbbbbbbb", "landed_on": "cccccccccc",
                "discard": true, "pruned": true
            },
            "checks": ["make test"],
            "landing": {"stage": "queued", "result": "done", "head": "dddddddddd",
                        "since": 0, "queued_at": 15000}
        }))
        .expect("task");
        assert_eq!(
            task_worktree_lines(&t, 20_000),
            vec![
                "worktree:   /w/task-1  (pruned: the directory and the branch are gone)",
                "branch:     teamboard/default/task-1  from aaaaaaa",
                "landed:     bbbbbbb on top of ccccccc",
                "discard:    yes: cancelled with --discard, `teamctl worktrees prune` removes it",
                "checks:     make test",
                "landing:    queued for 5s in the merge queue, ddddddd passed its checks; completion asked 20s ago",
            ]
        );
    }

    #[test]
    fn a_blocked_landing_names_the_files_and_a_conflict_the_target_commit() {
        let task = |landing: serde_json::Value| -> Task {
            serde_json::from_value(serde_json::json!({
                "id": 1, "subject": "s", "status": "in_progress", "created_at": 0, "updated_at": 0,
                "landing": landing
            }))
            .expect("task")
        };
        let blocked = task(serde_json::json!({
            "stage": "blocked", "result": "done", "head": "dddddddddd", "since": 0,
            "paths": ["README.md", "src/a.rs"], "checkout": "/home/me/app"
        }));
        assert_eq!(
            task_worktree_lines(&blocked, 20_000),
            vec![
                "landing:    blocked: /home/me/app has changes in the way (README.md, src/a.rs); it lands once they are committed or undone, or on `teamctl task retry`; completion asked 20s ago"
            ]
        );
        let conflict = task(serde_json::json!({
            "stage": "conflict", "result": "done", "since": 0,
            "paths": ["same.txt"], "onto": "eeeeeeeeee"
        }));
        assert_eq!(
            task_worktree_lines(&conflict, 20_000),
            vec![
                "landing:    conflict with the target at eeeeeee in same.txt: resolve it in the worktree, commit, then complete again or `teamctl task retry`"
            ]
        );
    }
}
