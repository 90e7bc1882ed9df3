//! What the demo prints while the team works and when it is done, built from the
//! events boardd pushes: one line per interesting event, and the board after every
//! change of a task's state. The worktree events say where each task works, from
//! which commit of the target, what its checks did and where its work landed.

use std::collections::BTreeMap;
use teamboard_protocol::{
    CheckOutcome, CheckRun, Event, EventKind, Member, Task, TaskId, TaskStatus, Worktree,
};

/// The demo's own tasks as the events describe them.
pub struct Board {
    tasks: BTreeMap<TaskId, Entry>,
    /// The repository's target branch, where finished work lands.
    target: String,
    /// When the first task was created (boardd's clock, ms since the epoch): the
    /// demo's time zero. Event times come from boardd, so they do not depend on
    /// when the demo got around to reading the events.
    t0: i64,
    last_completed: i64,
    /// The board line printed last, so an event that changes nothing visible does
    /// not repeat it.
    shown: String,
}

struct Entry {
    subject: String,
    status: TaskStatus,
    owner: Option<String>,
    blocked_by: Vec<TaskId>,
    /// The result once completed; the last error once failed.
    outcome: Option<String>,
    /// The task's worktree, as last fetched: its branch, base and merged commit.
    worktree: Option<Worktree>,
    /// Its checks' last runs, as last fetched.
    check_runs: Vec<CheckRun>,
}

impl Board {
    /// An empty board whose work lands on `target`.
    pub fn new(target: &str) -> Board {
        Board {
            tasks: BTreeMap::new(),
            target: target.to_string(),
            t0: 0,
            last_completed: 0,
            shown: String::new(),
        }
    }

    /// Adds a task the lead created (from its `task_created` event); the first one
    /// sets the demo's time zero.
    pub fn add(&mut self, t: &Task) {
        if self.tasks.is_empty() {
            (self.t0, self.last_completed) = (t.created_at, t.created_at);
        }
        let entry = Entry {
            subject: t.subject.clone(),
            status: t.status,
            owner: t.owner.clone(),
            blocked_by: t.blocked_by.clone(),
            outcome: None,
            worktree: t.worktree.clone(),
            check_runs: t.check_runs.clone(),
        };
        self.tasks.insert(t.id, entry);
    }

    /// Whether `e` is about one of the demo's tasks and the task is worth fetching
    /// before [`Board::apply`]: for its outcome (result or error), its worktree's
    /// base or merged commit, or its check runs.
    pub fn wants_task(&self, e: &Event) -> Option<TaskId> {
        use EventKind::*;
        let id = e.task.filter(|id| self.tasks.contains_key(id))?;
        let wanted = [
            TaskCompleted,
            TaskFailed,
            TaskReleased,
            WorktreeOpened,
            MergeQueued,
        ];
        wanted.contains(&e.kind).then_some(id)
    }

    /// Takes what the view shows from the task as boardd has it now.
    pub fn set_task(&mut self, t: &Task) {
        if let Some(entry) = self.tasks.get_mut(&t.id) {
            entry.outcome = t.result.clone().or_else(|| t.last_error.clone());
            entry.worktree = t.worktree.clone();
            entry.check_runs = t.check_runs.clone();
        }
    }

    /// Applies an event and returns the line to print for it, if it is one the
    /// demo shows.
    pub fn apply(&mut self, e: &Event) -> Option<String> {
        use EventKind::*;
        // The teammates' registration comes before time zero and is shown by the
        // spawn step already.
        if e.at < self.t0 {
            return None;
        }
        let actor = &e.actor;
        let text = match e.kind {
            // "cy asks lead to approve a plan for #3", "lead approved ...".
            RequestOpened | RequestSettled => e.detail.clone(),
            // "working" always follows a claim, which is shown already.
            MemberStatus if e.detail.ends_with(" is working") => return None,
            // boardd's liveness: only what the demo does not narrate itself.
            MemberStatus if e.actor == "boardd" && !is_trouble(&e.detail) => return None,
            MemberStatus => e.detail.clone(),
            WorktreeOpened | MergeQueued | ChecksFailed | MergeConflict => {
                let id = e.task?;
                let entry = self.tasks.get(&id)?;
                repo_line(e, &format!("#{id} {}", entry.subject), entry, &self.target)
            }
            TaskCreated | TaskClaimed | TaskCompleted | TaskReleased | TaskFailed
            | TaskCancelled | TaskRetried => {
                let id = e.task?;
                let entry = self.tasks.get_mut(&id)?;
                let name = format!("#{id} {}", entry.subject);
                let outcome = first_line(entry.outcome.as_deref());
                let (status, text) = match e.kind {
                    TaskCreated if entry.blocked_by.is_empty() => {
                        (entry.status, format!("{actor} created {name}"))
                    }
                    TaskCreated => {
                        let blockers: Vec<String> =
                            entry.blocked_by.iter().map(|b| format!("#{b}")).collect();
                        let blockers = blockers.join(" ");
                        (
                            entry.status,
                            format!("{actor} created {name}, blocked by {blockers}"),
                        )
                    }
                    TaskClaimed => {
                        entry.owner = Some(actor.clone());
                        (TaskStatus::InProgress, format!("{actor} claimed {name}"))
                    }
                    TaskCompleted => {
                        self.last_completed = self.last_completed.max(e.at);
                        let merged = entry.worktree.as_ref().and_then(|w| w.merged.as_ref());
                        let landed = merged.map_or_else(String::new, |m| {
                            format!("; landed on {} as {}", self.target, short(m))
                        });
                        let text = format!("{actor} completed {name}: {outcome}{landed}");
                        (TaskStatus::Completed, text)
                    }
                    TaskFailed => (
                        TaskStatus::Failed,
                        format!("{name} failed for good: {outcome}"),
                    ),
                    TaskCancelled => (TaskStatus::Cancelled, format!("{actor} cancelled {name}")),
                    // The outcome is the attempt's error; the task itself is
                    // pending again, for whoever claims it next.
                    TaskReleased => {
                        entry.outcome = None;
                        (
                            TaskStatus::Pending,
                            format!("{name} is back on the board: {outcome}"),
                        )
                    }
                    _ => {
                        let why = first_line(Some(&e.detail));
                        (
                            TaskStatus::Pending,
                            format!("{name} is back on the board: {why}"),
                        )
                    }
                };
                if matches!(e.kind, TaskReleased | TaskRetried) {
                    entry.owner = None;
                }
                entry.status = status;
                text
            }
            _ => return None,
        };
        let elapsed = (e.at - self.t0) as f64 / 1000.0;
        Some(format!("{elapsed:>7.2}s  {text}"))
    }

    /// The board as one line, after an event that changed a task's state, if the
    /// line differs from the last one shown. Creation is not such a change: the
    /// board starts out with every task pending.
    pub fn line_after(&mut self, e: &Event) -> Option<String> {
        use EventKind::*;
        let changes = [
            TaskClaimed,
            TaskCompleted,
            TaskReleased,
            TaskFailed,
            TaskCancelled,
            TaskRetried,
        ];
        if !changes.contains(&e.kind) || !e.task.is_some_and(|id| self.tasks.contains_key(&id)) {
            return None;
        }
        let cell = |(id, t): (&TaskId, &Entry)| {
            let mark = match t.status {
                TaskStatus::Pending => "[ ]",
                TaskStatus::InProgress => "[>]",
                TaskStatus::Completed => "[x]",
                TaskStatus::Failed => "[!]",
                TaskStatus::Cancelled => "[-]",
            };
            let owner = match (&t.owner, t.status) {
                (Some(o), TaskStatus::InProgress | TaskStatus::Completed) => format!(" @{o}"),
                _ => String::new(),
            };
            format!("{mark} #{id} {}{owner}", t.subject)
        };
        let cells: Vec<String> = self.tasks.iter().map(cell).collect();
        let line = format!("          {}", cells.join("  "));
        if line == self.shown {
            return None;
        }
        self.shown = line.clone();
        Some(line)
    }

    pub fn all_completed(&self) -> bool {
        let mut tasks = self.tasks.values();
        !self.tasks.is_empty() && tasks.all(|t| t.status == TaskStatus::Completed)
    }

    /// A task that has failed for good or was cancelled: the demo cannot finish.
    pub fn stuck(&self) -> Option<String> {
        self.tasks.iter().find_map(|(id, t)| {
            let what = match t.status {
                TaskStatus::Failed => "failed for good",
                TaskStatus::Cancelled => "was cancelled",
                _ => return None,
            };
            let why = t.outcome.as_deref().unwrap_or("no reason given");
            Some(format!("task #{id} {} {what}: {why}", t.subject))
        })
    }

    /// Milliseconds from the first task's creation to the last completion.
    pub fn wall_ms(&self) -> i64 {
        self.last_completed - self.t0
    }

    /// Who did what, and what each teammate did and spent.
    pub fn report(&self, members: &[Member]) -> Vec<String> {
        let secs = self.wall_ms() as f64 / 1000.0;
        let mut out = vec![
            format!(
                "All {} tasks completed in {secs:.2} s (first task created to last task completed).",
                self.tasks.len()
            ),
            String::new(),
            "Who did what:".to_string(),
        ];
        let sw = self
            .tasks
            .values()
            .map(|t| t.subject.len())
            .max()
            .unwrap_or(0);
        let owners = self.tasks.values().filter_map(|t| t.owner.as_ref());
        let ow = owners.map(String::len).max().unwrap_or(0);
        for (id, t) in &self.tasks {
            let owner = t.owner.as_deref().unwrap_or("-");
            let text = t.outcome.as_deref().unwrap_or("");
            let lines: Vec<&str> = text
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .collect();
            let lead = format!("  #{id} {:<sw$}  {owner:<ow$}  ", t.subject);
            let indent = " ".repeat(lead.chars().count());
            for (i, line) in lines.iter().take(2).enumerate() {
                let more = if i == 1 && lines.len() > 2 {
                    format!("  (+{} more lines)", lines.len() - 2)
                } else {
                    String::new()
                };
                let prefix = if i == 0 { &lead } else { &indent };
                out.push(format!("{prefix}{line}{more}"));
            }
            if lines.is_empty() {
                out.push(format!("{lead}(no output)"));
            }
        }
        out.push(String::new());
        out.push("The team:".to_string());
        let mut members: Vec<&Member> = members.iter().collect();
        members.sort_by(|a, b| a.name.cmp(&b.name));
        let nw = members.iter().map(|m| m.name.len()).max().unwrap_or(0);
        for m in members {
            let mine =
                |t: &&Entry| t.status == TaskStatus::Completed && t.owner.as_ref() == Some(&m.name);
            let done = self.tasks.values().filter(mine).count();
            let s = if done == 1 { " " } else { "s" };
            let (input, output) = (m.tokens.input, m.tokens.output);
            out.push(format!(
                "  {:<nw$}  {}  {done} task{s}  {input} input + {output} output tokens",
                m.name, m.role
            ));
        }
        out
    }
}

/// The line for a worktree event: where the task works and from which commit,
/// what its checks did, a refusal.
fn repo_line(e: &Event, name: &str, entry: &Entry, target: &str) -> String {
    let worktree = entry.worktree.as_ref();
    match e.kind {
        EventKind::WorktreeOpened => {
            // boardd's words say whether the worktree is new or what was left in it.
            let mut s = e.detail.clone();
            if let Some(w) = worktree {
                s.push_str(&format!(" ({}", w.branch));
                if let Some(base) = &w.base {
                    s.push_str(&format!(", from {target} at {}", short(base)));
                }
                s.push(')');
            }
            s
        }
        EventKind::MergeQueued => {
            let runs: Vec<String> = entry
                .check_runs
                .iter()
                .map(|r| {
                    format!(
                        "`{}` {} in {:.2} s",
                        r.command,
                        outcome_word(r.outcome),
                        r.duration_ms as f64 / 1000.0
                    )
                })
                .collect();
            if runs.is_empty() {
                format!("{name} has no checks; queued to land on {target}")
            } else {
                format!(
                    "{name} passed its checks ({}); queued to land on {target}",
                    runs.join(", ")
                )
            }
        }
        // A refusal: the check that failed or the conflicting paths, in boardd's
        // words; the owner keeps the task. A failed check's output follows on the
        // next lines, and its last line says most ("3 passed, 1 failed").
        _ => {
            let (head, output) = e.detail.split_once('\n').unwrap_or((&e.detail, ""));
            let last = output.lines().map(str::trim).rfind(|l| !l.is_empty());
            match last {
                Some(last) => format!("{name} refused: {} {last}", head.trim()),
                None => format!("{name} refused: {}", head.trim()),
            }
        }
    }
}

fn outcome_word(o: CheckOutcome) -> &'static str {
    match o {
        CheckOutcome::Passed => "passed",
        CheckOutcome::Failed => "failed",
        CheckOutcome::TimedOut => "timed out",
        CheckOutcome::Interrupted => "was interrupted",
    }
}

/// A commit id as people read it.
fn short(oid: &str) -> &str {
    oid.get(..7).unwrap_or(oid)
}

/// The first non-empty line of a result or an error, for a one-line view. A line
/// that ends in ':' ("command 2 of 2 exited with code 1:") introduces the next one,
/// so the two go together.
fn first_line(text: Option<&str>) -> String {
    let mut lines = text
        .unwrap_or_default()
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty());
    match (lines.next(), lines.next()) {
        (None, _) => "(no output)".to_string(),
        (Some(first), Some(next)) if first.ends_with(':') => format!("{first} {next}"),
        (Some(first), _) => first.to_string(),
    }
}

/// Whether a liveness event tells of trouble: a member stalled, offline or dead.
fn is_trouble(detail: &str) -> bool {
    ["stalled", "offline", "dead"]
        .iter()
        .any(|w| detail.contains(&format!(" is now {w}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use teamboard_protocol::TokenUsage;

    fn board(tasks: &[Task]) -> Board {
        let mut b = Board::new("main");
        tasks.iter().for_each(|t| b.add(t));
        b
    }

    fn task(id: TaskId, subject: &str, blocked_by: Vec<TaskId>) -> Task {
        serde_json::from_value(serde_json::json!({
            "id": id, "subject": subject, "status": "pending", "blocked_by": blocked_by,
            "created_at": 1_000 + id as i64, "updated_at": 1_000,
        }))
        .expect("a task")
    }

    /// Task `id` as boardd would answer after it ended: its result, or for a
    /// release or a failure its error (the view shows either).
    fn with_result(id: TaskId, text: &str) -> Task {
        let mut t = task(id, "any", vec![]);
        t.result = Some(text.to_string());
        t
    }

    fn event(at: i64, kind: EventKind, actor: &str, task: Option<TaskId>, detail: &str) -> Event {
        Event {
            seq: at as u64,
            team: "default".into(),
            at,
            actor: actor.into(),
            kind,
            task,
            member: Some(actor.into()),
            message: None,
            detail: detail.into(),
            request: None,
        }
    }

    #[test]
    fn events_drive_the_board_to_completion() {
        let mut b = board(&[task(1, "config", vec![]), task(2, "tests", vec![1])]);
        let created = event(1_002, EventKind::TaskCreated, "lead", Some(2), "");
        assert_eq!(
            b.apply(&created).as_deref(),
            Some("   0.00s  lead created #2 tests, blocked by #1")
        );
        assert_eq!(b.line_after(&created), None, "creation changes no state");

        let claimed = event(1_500, EventKind::TaskClaimed, "ada", Some(1), "");
        assert_eq!(
            b.apply(&claimed).as_deref(),
            Some("   0.50s  ada claimed #1 config")
        );
        assert_eq!(
            b.line_after(&claimed).as_deref(),
            Some("          [>] #1 config @ada  [ ] #2 tests")
        );

        let done = event(2_250, EventKind::TaskCompleted, "ada", Some(1), "");
        assert_eq!(b.wants_task(&done), Some(1));
        b.set_task(&with_result(1, "\nmoved 4 settings\nmore"));
        assert_eq!(
            b.apply(&done).as_deref(),
            Some("   1.25s  ada completed #1 config: moved 4 settings")
        );
        assert!(!b.all_completed());

        b.apply(&event(2_300, EventKind::TaskClaimed, "cy", Some(2), ""));
        b.set_task(&with_result(2, "PASS"));
        b.apply(&event(3_001, EventKind::TaskCompleted, "cy", Some(2), ""));
        assert!(b.all_completed());
        assert_eq!(b.stuck(), None);
        assert_eq!(b.wall_ms(), 2_000);

        let members = [Member {
            name: "ada".into(),
            role: "dev".into(),
            status: teamboard_protocol::MemberStatus::Idle,
            last_seen: 0,
            pid: None,
            task: None,
            tokens: TokenUsage {
                input: 10,
                output: 2,
                ..Default::default()
            },
            cost: Default::default(),
            waiting: None,
            connected: true,
            joined_at: 0,
            require_plan: false,
            runtime: None,
            model: None,
            tokens_estimated: false,
            liveness: None,
            sandbox: None,
        }];
        let report = b.report(&members).join("\n");
        assert!(
            report.contains("All 2 tasks completed in 2.00 s"),
            "{report}"
        );
        assert!(
            report.contains("#1 config  ada  moved 4 settings"),
            "{report}"
        );
        assert!(
            report.contains("ada  dev  1 task   10 input + 2 output tokens"),
            "{report}"
        );
    }

    #[test]
    fn a_release_and_a_failure_are_explained_in_one_line() {
        let mut b = board(&[task(1, "tests", vec![])]);
        b.apply(&event(1_001, EventKind::TaskClaimed, "cy", Some(1), ""));
        let released = event(
            1_101,
            EventKind::TaskReleased,
            "cy",
            Some(1),
            "back to pending",
        );
        b.set_task(&with_result(
            1,
            "command 2 of 2 exited with code 1:\n3 passed, 1 failed",
        ));
        assert_eq!(
            b.apply(&released).as_deref(),
            Some(
                "   0.10s  #1 tests is back on the board: command 2 of 2 exited with code 1: 3 passed, 1 failed"
            )
        );
        assert_eq!(b.stuck(), None);
        b.set_task(&with_result(1, "boom"));
        b.apply(&event(1_201, EventKind::TaskFailed, "cy", Some(1), ""));
        assert_eq!(
            b.stuck().as_deref(),
            Some("task #1 tests failed for good: boom")
        );
    }

    #[test]
    fn worktree_events_say_where_a_task_works_what_its_checks_did_and_where_it_landed() {
        let mut b = board(&[task(3, "tests", vec![])]);
        b.apply(&event(1_010, EventKind::TaskClaimed, "cy", Some(3), ""));
        let mut t = task(3, "tests", vec![]);
        t.worktree = Some(Worktree {
            path: "/s/worktrees/default/task-3".into(),
            branch: "teamboard/default/task-3".into(),
            base: Some("abcdef0123456789".into()),
            merged: None,
            landed_on: None,
            discard: false,
            pruned: false,
        });
        let opened = event(
            1_020,
            EventKind::WorktreeOpened,
            "cy",
            Some(3),
            "cy opened a new worktree for #3",
        );
        assert_eq!(b.wants_task(&opened), Some(3));
        b.set_task(&t);
        assert_eq!(
            b.apply(&opened).as_deref(),
            Some(
                "   0.02s  cy opened a new worktree for #3 (teamboard/default/task-3, from main at abcdef0)"
            )
        );
        assert_eq!(b.line_after(&opened), None, "the board did not change");

        let refused = event(
            1_100,
            EventKind::ChecksFailed,
            "boardd",
            Some(3),
            "check `sh backend/test.sh` failed with exit code 1 on 1234567890; the end of its output:\nPASS config\nFAIL auth\n3 passed, 1 failed\n",
        );
        assert_eq!(
            b.apply(&refused).as_deref(),
            Some(
                "   0.10s  #3 tests refused: check `sh backend/test.sh` failed with exit code 1 on 1234567890; the end of its output: 3 passed, 1 failed"
            )
        );
        let conflict = event(
            1_110,
            EventKind::MergeConflict,
            "boardd",
            Some(3),
            "the branch conflicts with main in backend/app.py; run `git rebase main` …",
        );
        assert_eq!(
            b.apply(&conflict).as_deref(),
            Some(
                "   0.11s  #3 tests refused: the branch conflicts with main in backend/app.py; run `git rebase main` …"
            )
        );

        t.check_runs = vec![CheckRun {
            command: "sh backend/test.sh".into(),
            outcome: CheckOutcome::Passed,
            exit_code: Some(0),
            tail: String::new(),
            duration_ms: 25,
            commit: "1234567".into(),
            at: 1_200,
        }];
        b.set_task(&t);
        let queued = event(1_200, EventKind::MergeQueued, "boardd", Some(3), "");
        assert_eq!(
            b.apply(&queued).as_deref(),
            Some(
                "   0.20s  #3 tests passed its checks (`sh backend/test.sh` passed in 0.03 s); queued to land on main"
            )
        );

        if let Some(w) = t.worktree.as_mut() {
            w.merged = Some("fedcba9876543210".into());
        }
        t.result = Some("4 passed, 0 failed".into());
        b.set_task(&t);
        let done = event(1_300, EventKind::TaskCompleted, "cy", Some(3), "");
        assert_eq!(
            b.apply(&done).as_deref(),
            Some("   0.30s  cy completed #3 tests: 4 passed, 0 failed; landed on main as fedcba9")
        );
    }

    #[test]
    fn events_before_the_first_task_are_not_shown() {
        let mut b = board(&[task(1, "config", vec![])]);
        let early = event(900, EventKind::MemberStatus, "ada", None, "ada is idle");
        assert_eq!(b.apply(&early), None);
    }
}
