//! Shared text formatting: tasks, members, messages, events and time.
//!
//! Everything here is pure (it returns strings), so commands decide where output goes
//! and the formatting can be tested without a daemon.

use std::collections::HashMap;
use std::io::Write;
use teamboard_protocol::text::fit_chars_with_ellipsis;
use teamboard_protocol::{
    Event, Liveness, Member, MemberStatus, Message, RequestKind, RequestState, Task, TaskId,
    TaskStatus, TeamRequest, TokenUsage,
};

mod review;
mod spend;
mod worktree;
pub use review::*;
pub use spend::*;
pub use worktree::*;

// ---------------------------------------------------------------- output

/// Writes one line to stdout. Errors (a closed pipe) are returned, not panicked on.
pub fn line(text: &str) -> std::io::Result<()> {
    lines(&[text])
}

/// Writes several lines to stdout at once.
pub fn lines(text: &[impl std::fmt::Display]) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    for l in text {
        writeln!(out, "{l}")?;
    }
    out.flush()
}

/// Pretty-prints a JSON value on stdout.
pub fn json(value: &serde_json::Value) -> anyhow::Result<()> {
    line(&serde_json::to_string_pretty(value)?)?;
    Ok(())
}

/// Prints a JSON value on one line (JSON Lines).
pub fn json_line<T: serde::Serialize>(value: &T) -> anyhow::Result<()> {
    line(&serde_json::to_string(value)?)?;
    Ok(())
}

/// Writes a note for people, or an error, on stderr, so that stdout stays what
/// scripts read. The one place teamctl writes to stderr.
#[allow(
    clippy::print_stderr,
    reason = "a command line's notes and errors are for the person at the terminal"
)]
pub fn note(text: impl std::fmt::Display) {
    eprintln!("{text}");
}

// ---------------------------------------------------------------- time

/// Milliseconds since the Unix epoch, now.
pub use teamboard_protocol::now_ms;

/// `HH:MM:SS` (UTC) of a unix-ms timestamp.
pub fn clock(ms: i64) -> String {
    let secs = ms.div_euclid(1000).rem_euclid(86_400);
    format!(
        "{:02}:{:02}:{:02}",
        secs / 3600,
        (secs / 60) % 60,
        secs % 60
    )
}

/// `YYYY-MM-DD HH:MM:SS UTC` of a unix-ms timestamp.
pub fn datetime(ms: i64) -> String {
    let days = ms.div_euclid(1000).div_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    format!("{y:04}-{m:02}-{d:02} {} UTC", clock(ms))
}

/// The proleptic Gregorian date of a day count since 1970-01-01 (Howard Hinnant's
/// `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// A compact duration: `450ms`, `12s`, `3m 4s`, `2h 5m`, `3d 4h`.
pub fn duration(ms: u64) -> String {
    let s = ms / 1000;
    match s {
        0 => format!("{ms}ms"),
        1..=59 => format!("{s}s"),
        60..=3599 => format!("{}m {}s", s / 60, s % 60),
        3600..=86_399 => format!("{}h {}m", s / 3600, (s / 60) % 60),
        _ => format!("{}d {}h", s / 86_400, (s / 3600) % 24),
    }
}

/// How long ago `at` was, e.g. `5s ago`, `3m ago`, `just now`.
pub fn ago(at: i64, now: i64) -> String {
    let diff = now.saturating_sub(at);
    if diff < 1000 {
        return "just now".into();
    }
    format!("{} ago", short_span(diff))
}

/// A span in its largest whole unit: `0s`, `41s`, `3m`, `2h`, `5d`.
fn short_span(ms: i64) -> String {
    let s = ms.max(0) / 1000;
    match s {
        0..=59 => format!("{s}s"),
        60..=3599 => format!("{}m", s / 60),
        3600..=86_399 => format!("{}h", s / 3600),
        _ => format!("{}d", s / 86_400),
    }
}

/// A member's liveness with its age: `working for 3m`, `stalled for 12s`,
/// `dead for 2m (killed by SIGKILL)`.
pub fn live_state(l: &Liveness, now: i64) -> String {
    let mut s = format!(
        "{} for {}",
        l.state,
        short_span(now.saturating_sub(l.since))
    );
    if let Some(exit) = &l.exit {
        s.push_str(&format!(" ({exit})"));
    }
    s
}

// ---------------------------------------------------------------- numbers

/// `1 commit`, `3 commits`: `n` and `one` with an `s` unless `n` is 1.
pub fn plural(n: u64, one: &str) -> String {
    format!("{n} {one}{}", if n == 1 { "" } else { "s" })
}

/// `950`, `12.3k`, `4.5M`.
pub fn count(n: u64) -> String {
    match n {
        0..=999 => n.to_string(),
        1000..=999_999 => format!("{:.1}k", n as f64 / 1000.0),
        _ => format!("{:.1}M", n as f64 / 1_000_000.0),
    }
}

/// Token use in words: `1.2k tokens (1.0k in, 0 cached, 200 out)`. "in" is fresh
/// input and "cached" input read from the provider's prompt cache; input written
/// to the cache is named only when there is some (the scripted model and OpenAI
/// write none).
pub fn tokens(t: &TokenUsage) -> String {
    let written = if t.cache_write > 0 {
        format!(", {} to cache", count(t.cache_write))
    } else {
        String::new()
    };
    format!(
        "{} tokens ({} in, {} cached{written}, {} out)",
        count(t.total()),
        count(t.input),
        count(t.cache_read),
        count(t.output)
    )
}

// ---------------------------------------------------------------- tasks

/// The board's marker for a status.
pub fn marker(status: TaskStatus) -> &'static str {
    match status {
        TaskStatus::Pending => "[ ]",
        TaskStatus::InProgress => "[>]",
        TaskStatus::Completed => "[x]",
        TaskStatus::Failed => "[!]",
        TaskStatus::Cancelled => "[-]",
    }
}

/// A status for people: `in progress` rather than `in_progress`.
pub fn status_word(status: TaskStatus) -> &'static str {
    match status {
        TaskStatus::InProgress => "in progress",
        other => other.into(),
    }
}

/// What the renderer needs to know about the rest of the board: every task's status.
#[derive(Debug, Default)]
pub struct Board {
    statuses: HashMap<TaskId, TaskStatus>,
}

impl Board {
    pub fn new(tasks: &[Task]) -> Board {
        Board {
            statuses: tasks.iter().map(|t| (t.id, t.status)).collect(),
        }
    }

    /// The blockers of `task` that are not completed (unknown ones count as open).
    pub fn open_blockers(&self, task: &Task) -> Vec<TaskId> {
        task.blocked_by
            .iter()
            .copied()
            .filter(|b| self.statuses.get(b) != Some(&TaskStatus::Completed))
            .collect()
    }

    pub fn status_of(&self, id: TaskId) -> Option<TaskStatus> {
        self.statuses.get(&id).copied()
    }
}

/// `#1, #2`.
pub fn id_list(ids: &[TaskId]) -> String {
    ids.iter()
        .map(|id| format!("#{id}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The width of the widest `#id` among `tasks`, for alignment.
pub fn id_width(tasks: &[Task]) -> usize {
    tasks
        .iter()
        .map(|t| t.id.to_string().len() + 1)
        .max()
        .unwrap_or(2)
}

/// One line for a task: `[ ] #3  Write tests  @alice  (role: tester)  blocked by #1, #2`.
pub fn task_line(task: &Task, board: &Board, id_width: usize) -> String {
    let id = format!("#{}", task.id);
    let mut s = format!(
        "{} {id:<id_width$}  {}",
        marker(task.status),
        one_line(&task.subject)
    );
    if let Some(owner) = &task.owner {
        s.push_str(&format!("  @{owner}"));
    }
    if let Some(role) = &task.role {
        s.push_str(&format!("  (role: {role})"));
    }
    if task.priority != 0 {
        s.push_str(&format!("  (priority {})", task.priority));
    }
    if matches!(task.status, TaskStatus::Pending | TaskStatus::InProgress) {
        let open = board.open_blockers(task);
        if !open.is_empty() {
            s.push_str(&format!("  blocked by {}", id_list(&open)));
        }
    }
    if task.status == TaskStatus::InProgress
        && let Some(l) = &task.landing
    {
        s.push_str(&format!("  landing: {}", l.stage));
    }
    if task.status == TaskStatus::Failed
        && let Some(err) = &task.last_error
    {
        s.push_str(&format!(
            "  error: {}",
            fit_chars_with_ellipsis(&one_line(err), 60)
        ));
    }
    s
}

/// Lines for every task, aligned.
pub fn task_lines(tasks: &[Task], board: &Board) -> Vec<String> {
    let w = id_width(tasks);
    tasks.iter().map(|t| task_line(t, board, w)).collect()
}

/// `3 pending (1 ready), 1 in progress, 5 completed, 1 failed, 0 cancelled`.
/// Readiness is boardd's to decide; this only counts what it says.
pub fn task_summary(tasks: &[Task]) -> String {
    let n = |s: TaskStatus| tasks.iter().filter(|t| t.status == s).count();
    let ready = tasks.iter().filter(|t| t.ready).count();
    format!(
        "{} pending ({ready} ready), {} in progress, {} completed, {} failed, {} cancelled",
        n(TaskStatus::Pending),
        n(TaskStatus::InProgress),
        n(TaskStatus::Completed),
        n(TaskStatus::Failed),
        n(TaskStatus::Cancelled),
    )
}

// ---------------------------------------------------------------- members

/// What does the member's work, in a word: the agent (`claude`), or the native
/// loop's model as it registered (`scripted`, `anthropic/claude-sonnet-4-5`);
/// `None` for a native teammate that did not say (an older teammated).
pub fn engine(m: &Member) -> Option<String> {
    m.runtime.clone().or_else(|| m.model.clone())
}

/// [`engine`], `native` when the member did not say.
fn engine_of(m: &Member) -> String {
    engine(m).unwrap_or_else(|| teamboard_protocol::names::NATIVE_RUNTIME.to_string())
}

/// A member's token use: [`tokens`], marked `~` and `estimated` when the scripted
/// model counted them, so that they never read as a provider's bill.
pub fn member_tokens(m: &Member) -> String {
    let words = tokens(&m.tokens);
    if m.tokens_estimated {
        format!(
            "~{}",
            words.replacen(" tokens (", " tokens (estimated: ", 1)
        )
    } else {
        words
    }
}

/// `#3 Write tests` (the subject cut to `width` characters), `#3`, or `no task`.
fn task_ref(task: Option<TaskId>, subject: Option<&str>, width: usize) -> String {
    match (task, subject) {
        (Some(id), Some(subject)) => {
            format!(
                "#{id} {}",
                fit_chars_with_ellipsis(&one_line(subject), width)
            )
        }
        (Some(id), None) => format!("#{id}"),
        (None, _) => "no task".to_string(),
    }
}

/// A line for every member, aligned, with its task's subject looked up in `tasks`
/// and its pending shutdown in `requests`:
/// `alice  coder  working for 3m  pid 4242  #3 Write tests  1.2k tokens (1.0k in, 0 cached, 200 out)  $0.0123  last heartbeat 5s ago`
/// (the state is boardd's liveness, docs/teamctl.md; from a boardd without it,
/// the member's own status and `seen 5s ago`; for a member held by a rate limit
/// or a budget, `waiting: rate limit (resets in 12m)`, with the reason after
/// `why:` at the end), then `plans need approval` for a member spawned with
/// `--require-plan`, and
/// its pending shutdown request, if any. When any member in the list said what
/// runs it, each line has that after the role ([`engine`]: `alice  coder
/// scripted  idle ...`, `bob  coder  claude  working ...`): up front, where
/// `watch` does not clip it at the terminal's edge as it would the end of a long
/// line. Tokens the scripted model estimated read `~1.2k tokens (estimated: ...)`.
pub fn member_lines(
    members: &[Member],
    tasks: &[Task],
    requests: &[TeamRequest],
    now: i64,
) -> Vec<String> {
    let width = |of: fn(&Member) -> &str| members.iter().map(|m| of(m).len()).max();
    let (nw, rw) = (width(|m| &m.name), width(|m| &m.role));
    // None: no member said what runs it, and the lines have no such column.
    let tw = members
        .iter()
        .map(|m| engine_of(m).len())
        .max()
        .filter(|_| members.iter().any(|m| engine(m).is_some()));
    let subjects: HashMap<TaskId, &str> =
        tasks.iter().map(|t| (t.id, t.subject.as_str())).collect();
    // With boardd's liveness, the state column is the facts (`working for 3m`)
    // and the line ends with the last heartbeat; without (an older boardd), the
    // member's own status and when it was last seen.
    let state = |m: &Member| match (&m.waiting, &m.liveness) {
        (Some(w), _) => wait_state(w, now).0,
        (None, Some(l)) => live_state(l, now),
        (None, None)
            if !m.connected && matches!(m.status, MemberStatus::Working | MemberStatus::Idle) =>
        {
            format!("{} (disconnected)", m.status)
        }
        (None, None) => m.status.to_string(),
    };
    let sw = members
        .iter()
        .filter(|m| m.liveness.is_some() || m.waiting.is_some())
        .map(|m| state(m).len())
        .max()
        .map_or(8, |w| w.max(8));
    let line = |m: &Member| {
        let status = state(m);
        let heard = match &m.liveness {
            Some(l) => match l.last_heartbeat {
                Some(at) => format!("last heartbeat {}", ago(at, now)),
                None => "never heard".to_string(),
            },
            None => format!("seen {}", ago(m.last_seen, now)),
        };
        let pid = m
            .pid
            .map_or_else(|| "pid -".to_string(), |p| format!("pid {p}"));
        let subject = m.task.and_then(|id| subjects.get(&id).copied());
        let task = task_ref(m.task, subject, 40);
        let runtime = tw.map_or_else(String::new, |w| format!("{:<w$}  ", engine_of(m)));
        let mut line = format!(
            "{:<nw$}  {:<rw$}  {runtime}{status:<sw$}  {pid:<9}  {task}  {}  {}  {heard}",
            m.name,
            m.role,
            member_tokens(m),
            cost(&m.cost),
            nw = nw.unwrap_or(4),
            rw = rw.unwrap_or(4),
        );
        if m.liveness.is_some() && m.status == MemberStatus::Shutdown {
            line.push_str("  shutting down");
        }
        if let Some(why) = m.waiting.as_ref().and_then(|w| wait_state(w, now).1) {
            line.push_str(&format!("  why: {}", one_line(&why)));
        }
        if m.require_plan {
            line.push_str("  plans need approval");
        }
        if let Some(sandbox) = m.sandbox {
            line.push_str(&format!("  {sandbox}"));
        }
        let shutdown = requests
            .iter()
            .find(|r| r.kind == RequestKind::Shutdown && r.is_pending() && r.to == m.name);
        if let Some(r) = shutdown {
            line.push_str(&format!(
                "  shutdown requested {} (request {})",
                ago(r.created_at, now),
                request_tag(r.id)
            ));
        }
        line
    };
    members.iter().map(line).collect()
}

// ---------------------------------------------------------------- requests

/// How a request is named in listings: `r7`. Commands take `7`, `r7` or `R7`.
pub use teamboard_protocol::request_tag;

/// One line for a request:
/// `r4  shutdown  lead -> bob  pending  opened 12s ago  answer due in 1m 48s  reason: ...`
/// or `r5  plan  alice -> lead  #3  approved by lead 2s ago: looks good`.
pub fn request_line(r: &TeamRequest, now: i64) -> String {
    let mut s = format!(
        "{:<4}  {:<8}  {} -> {}",
        request_tag(r.id),
        r.kind,
        r.from,
        r.to
    );
    if let Some(task) = r.task {
        s.push_str(&format!("  #{task}"));
    }
    s.push_str(&format!("  {}  opened {}", r.state, ago(r.created_at, now)));
    if r.is_pending()
        && let Some(deadline) = r.deadline
    {
        let left = u64::try_from(deadline.saturating_sub(now)).unwrap_or(0);
        s.push_str(&format!("  answer due in {}", duration(left)));
    }
    if let Some(by) = &r.answered_by {
        s.push_str(&format!(
            ", {} by {by} {}",
            r.state,
            r.answered_at.map_or_else(String::new, |at| ago(at, now))
        ));
    }
    if r.forced {
        s.push_str(" (forced)");
    }
    if let Some(f) = &r.feedback {
        s.push_str(&format!(": {}", fit_chars_with_ellipsis(&one_line(f), 80)));
    }
    if let Some(reason) = &r.reason {
        s.push_str(&format!(
            "  reason: {}",
            fit_chars_with_ellipsis(&one_line(reason), 60)
        ));
    }
    s
}

/// A plan with its text: a header line, the plan indented, and for a decided plan
/// the decision's feedback.
pub fn plan_lines(r: &TeamRequest, subject: Option<&str>, now: i64) -> Vec<String> {
    let task = task_ref(r.task, subject, 50);
    let mut header = format!(
        "{}  {}  {task}  {}  submitted {}",
        request_tag(r.id),
        r.from,
        r.state,
        ago(r.created_at, now)
    );
    if let Some(by) = &r.answered_by {
        header.push_str(&format!(", {} by {by}", r.state));
    }
    let mut out = vec![header];
    let plan = r.plan.as_deref().unwrap_or_default();
    out.extend(plan.lines().map(|l| format!("    {l}")));
    if plan.trim().is_empty() {
        out.push("    (empty)".into());
    }
    if let Some(f) = &r.feedback {
        out.push(format!("  feedback: {}", one_line(f)));
    }
    out
}

/// What became of a shutdown request, for the person who asked, and whether the
/// teammate is gone or going (approved, stopped, or its session ended).
pub fn shutdown_outcome(r: &TeamRequest) -> (String, bool) {
    let tag = format!("request r{}", r.id);
    let feedback = r.feedback.as_deref().map(one_line);
    let with = |s: String| match &feedback {
        Some(f) => format!("{s}: {f}"),
        None => s,
    };
    match r.state {
        RequestState::Pending => (format!("{} has not answered yet ({tag})", r.to), false),
        RequestState::Approved if r.forced => (
            format!("boardd stopped {}'s processes ({tag}, forced)", r.to),
            true,
        ),
        RequestState::Approved => (
            with(format!(
                "{} approved the shutdown and is leaving ({tag})",
                r.to
            )),
            true,
        ),
        RequestState::Rejected => (
            with(format!("{} rejected the shutdown ({tag})", r.to)),
            false,
        ),
        RequestState::Expired => (
            format!(
                "{} did not answer in time: expired, and boardd stopped its processes ({tag})",
                r.to
            ),
            true,
        ),
        RequestState::Cancelled => {
            let gone = r.answered_by.as_deref() == Some("boardd");
            (
                with(format!(
                    "the shutdown was cancelled by {} ({tag})",
                    r.answered_by.as_deref().unwrap_or("boardd")
                )),
                gone,
            )
        }
    }
}

// ---------------------------------------------------------------- events and messages

/// One line for an event in the log: `   42  12:00:01  lead         task_created     ...`.
pub fn event_line(e: &Event) -> String {
    format!("{:>5}  {}", e.seq, history_line(e))
}

/// One line for an event in a task's history (no sequence number).
pub fn history_line(e: &Event) -> String {
    format!(
        "{}  {:<12} {:<17} {}",
        clock(e.at),
        e.actor,
        e.kind,
        one_line(&e.detail)
    )
}

/// A message: a header line, then the content indented.
pub fn message_lines(m: &Message) -> Vec<String> {
    let mut header = format!(
        "message {}  {}  from {}  [{}]",
        m.id,
        datetime(m.at),
        m.from,
        m.kind
    );
    if let Some(r) = &m.request_id {
        header.push_str(&format!("  request {r}"));
    }
    let mut out = vec![header];
    out.extend(m.content.lines().map(|l| format!("    {l}")));
    if m.content.is_empty() {
        out.push("    (empty)".into());
    }
    out
}

// ---------------------------------------------------------------- text helpers

/// Folds newlines and tabs into spaces so a value cannot break a one-line layout.
pub fn one_line(s: &str) -> String {
    s.split(['\n', '\r', '\t'])
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use teamboard_protocol::RequestId;

    fn task(id: TaskId, status: TaskStatus, blocked_by: Vec<TaskId>) -> Task {
        Task {
            id,
            subject: format!("task {id}"),
            description: String::new(),
            status,
            owner: None,
            blocked_by,
            priority: 0,
            role: None,
            attempts: 0,
            result: None,
            last_error: None,
            epoch: 0,
            tokens: TokenUsage::default(),
            cost: Default::default(),
            created_at: 0,
            updated_at: 0,
            ready: false,
            handoff: None,
            no_worktree: false,
            worktree: None,
            checks: vec![],
            proposed_checks: vec![],
            check_runs: vec![],
            landing: None,
            require_plan: false,
            review: false,
        }
    }

    #[test]
    fn tokens_show_fresh_and_cached_input_apart() {
        let plain = TokenUsage {
            input: 1_000,
            output: 200,
            ..TokenUsage::default()
        };
        assert_eq!(tokens(&plain), "1.2k tokens (1.0k in, 0 cached, 200 out)");
        let cached = TokenUsage {
            input: 300,
            output: 200,
            cache_read: 12_000,
            cache_write: 2_500,
        };
        assert_eq!(
            tokens(&cached),
            "15.0k tokens (300 in, 12.0k cached, 2.5k to cache, 200 out)"
        );
    }

    #[test]
    fn clock_and_date() {
        assert_eq!(clock(0), "00:00:00");
        assert_eq!(clock(3_723_000), "01:02:03");
        assert_eq!(datetime(0), "1970-01-01 00:00:00 UTC");
        // 2024-02-29 12:34:56 UTC
        assert_eq!(datetime(1_709_210_096_000), "2024-02-29 12:34:56 UTC");
        assert_eq!(datetime(951_782_400_000), "2000-02-29 00:00:00 UTC");
    }

    #[test]
    fn relative_times() {
        assert_eq!(ago(1000, 1500), "just now");
        assert_eq!(ago(0, 5_000), "5s ago");
        assert_eq!(ago(0, 180_000), "3m ago");
        assert_eq!(ago(0, 7_200_000), "2h ago");
        assert_eq!(ago(0, 3 * 86_400_000), "3d ago");
        assert_eq!(duration(500), "500ms");
        assert_eq!(duration(65_000), "1m 5s");
        assert_eq!(duration(3_900_000), "1h 5m");
    }

    #[test]
    fn task_lines_show_markers_owner_and_open_blockers() {
        let mut t3 = task(3, TaskStatus::Pending, vec![1, 2]);
        t3.role = Some("tester".into());
        let mut t2 = task(2, TaskStatus::InProgress, vec![]);
        t2.owner = Some("alice".into());
        let tasks = vec![task(1, TaskStatus::Completed, vec![]), t2, t3];
        let board = Board::new(&tasks);
        let lines = task_lines(&tasks, &board);
        assert_eq!(lines[0], "[x] #1  task 1");
        assert_eq!(lines[1], "[>] #2  task 2  @alice");
        assert_eq!(lines[2], "[ ] #3  task 3  (role: tester)  blocked by #2");
        assert_eq!(marker(TaskStatus::Failed), "[!]");
        assert_eq!(marker(TaskStatus::Cancelled), "[-]");
    }

    #[test]
    fn the_summary_counts_what_boardd_says_is_ready() {
        let mut ready = task(1, TaskStatus::Pending, vec![]);
        ready.ready = true;
        // Looks claimable, but boardd did not say so: it is not counted.
        let unsaid = task(2, TaskStatus::Pending, vec![]);
        let tasks = vec![ready, unsaid, task(3, TaskStatus::Completed, vec![])];
        assert_eq!(
            task_summary(&tasks),
            "2 pending (1 ready), 0 in progress, 1 completed, 0 failed, 0 cancelled"
        );
    }

    fn request(id: RequestId, kind: RequestKind, state: RequestState) -> TeamRequest {
        TeamRequest {
            id,
            kind,
            from: "lead".into(),
            to: "bob".into(),
            task: None,
            epoch: None,
            state,
            plan: None,
            reason: None,
            deadline: None,
            answered_by: None,
            answered_at: None,
            feedback: None,
            forced: false,
            created_at: 0,
        }
    }

    #[test]
    fn requests_show_state_age_deadline_and_answer() {
        let mut open = request(4, RequestKind::Shutdown, RequestState::Pending);
        open.deadline = Some(120_000);
        open.reason = Some("release\ncut".into());
        assert_eq!(
            request_line(&open, 12_000),
            "r4    shutdown  lead -> bob  pending  opened 12s ago  answer due in 1m 48s  reason: release cut"
        );
        let mut plan = request(5, RequestKind::Plan, RequestState::Rejected);
        plan.from = "alice".into();
        plan.to = "lead".into();
        plan.task = Some(3);
        plan.answered_by = Some("lead".into());
        plan.answered_at = Some(2_000);
        plan.feedback = Some("keep the API".into());
        plan.plan = Some("1. read\n2. write".into());
        assert_eq!(
            request_line(&plan, 5_000),
            "r5    plan      alice -> lead  #3  rejected  opened 5s ago, rejected by lead 3s ago: keep the API"
        );
        assert_eq!(
            plan_lines(&plan, Some("Parser"), 5_000),
            vec![
                "r5  alice  #3 Parser  rejected  submitted 5s ago, rejected by lead",
                "    1. read",
                "    2. write",
                "  feedback: keep the API",
            ]
        );
    }

    #[test]
    fn a_shutdown_outcome_says_whether_the_teammate_goes() {
        let mut r = request(4, RequestKind::Shutdown, RequestState::Rejected);
        r.feedback = Some("busy with #3".into());
        assert_eq!(
            shutdown_outcome(&r),
            (
                "bob rejected the shutdown (request r4): busy with #3".into(),
                false
            )
        );
        r.state = RequestState::Expired;
        r.forced = true;
        let (text, gone) = shutdown_outcome(&r);
        assert!(gone && text.contains("stopped its processes"), "{text}");
        r.state = RequestState::Cancelled;
        r.answered_by = Some("lead".into());
        assert!(!shutdown_outcome(&r).1);
        r.answered_by = Some("boardd".into());
        r.feedback = Some("its session ended before it answered".into());
        assert!(shutdown_outcome(&r).1);
    }

    #[test]
    fn a_member_line_shows_a_pending_shutdown_and_the_plan_rule() {
        let m = Member {
            name: "bob".into(),
            role: "coder".into(),
            status: MemberStatus::Idle,
            last_seen: 0,
            pid: Some(7),
            task: None,
            tokens: TokenUsage::default(),
            cost: Default::default(),
            waiting: None,
            connected: true,
            joined_at: 0,
            require_plan: true,
            runtime: None,
            model: None,
            sandbox: None,
            tokens_estimated: false,
            liveness: None,
        };
        let pending = request(4, RequestKind::Shutdown, RequestState::Pending);
        let mut other = request(3, RequestKind::Shutdown, RequestState::Pending);
        other.to = "alice".into();
        let lines = member_lines(std::slice::from_ref(&m), &[], &[other, pending], 12_000);
        assert!(
            lines[0].ends_with(
                "seen 12s ago  plans need approval  shutdown requested 12s ago (request r4)"
            ),
            "{}",
            lines[0]
        );
        assert!(
            !lines[0].contains("native"),
            "no agent, no column: {}",
            lines[0]
        );
    }

    #[test]
    fn each_member_shows_its_liveness_with_its_age_and_last_heartbeat() {
        use teamboard_protocol::LiveState;
        let base = Member {
            name: "alice".into(),
            role: "coder".into(),
            status: MemberStatus::Working,
            last_seen: 0,
            pid: Some(7),
            task: Some(3),
            tokens: TokenUsage::default(),
            cost: Default::default(),
            waiting: None,
            connected: true,
            joined_at: 0,
            require_plan: false,
            runtime: None,
            model: None,
            sandbox: None,
            tokens_estimated: false,
            liveness: Some(Liveness {
                state: LiveState::Working,
                since: 20_000,
                last_heartbeat: Some(200_000),
                exit: None,
            }),
        };
        let dead = Member {
            name: "bob".into(),
            task: None,
            connected: false,
            liveness: Some(Liveness {
                state: LiveState::Dead,
                since: 199_000,
                last_heartbeat: Some(159_000),
                exit: Some("killed by SIGKILL".into()),
            }),
            ..base.clone()
        };
        let lines = member_lines(&[base, dead], &[], &[], 200_500);
        assert!(
            lines[0].starts_with(&format!("alice  coder  {:<31}  pid 7", "working for 3m")),
            "{}",
            lines[0]
        );
        assert!(
            lines[0].ends_with("last heartbeat just now"),
            "{}",
            lines[0]
        );
        assert!(
            lines[1].starts_with("bob    coder  dead for 1s (killed by SIGKILL)  pid 7"),
            "{}",
            lines[1]
        );
        assert!(lines[1].ends_with("last heartbeat 41s ago"), "{}", lines[1]);
    }

    #[test]
    fn the_runtime_is_a_column_after_the_role_when_anyone_runs_an_agent() {
        let native = Member {
            name: "alice".into(),
            role: "coder".into(),
            status: MemberStatus::Working,
            last_seen: 0,
            pid: Some(7),
            task: Some(3),
            tokens: TokenUsage::default(),
            cost: Default::default(),
            waiting: None,
            connected: true,
            joined_at: 0,
            require_plan: false,
            runtime: None,
            model: None,
            sandbox: None,
            tokens_estimated: false,
            liveness: None,
        };
        let agent = Member {
            name: "bob".into(),
            runtime: Some("claude".into()),
            ..native.clone()
        };
        let scripted = Member {
            name: "cleo".into(),
            model: Some("scripted".into()),
            tokens: TokenUsage {
                input: 1000,
                output: 200,
                ..TokenUsage::default()
            },
            sandbox: None,
            tokens_estimated: true,
            ..native.clone()
        };
        let real = Member {
            name: "dan".into(),
            model: Some("anthropic/claude-sonnet-4-5".into()),
            tokens: scripted.tokens,
            cost: Default::default(),
            waiting: None,
            ..native.clone()
        };
        let lines = member_lines(&[native, agent, scripted, real], &[], &[], 12_000);
        assert!(
            lines[0].starts_with("alice  coder  native                       working   pid 7"),
            "{}",
            lines[0]
        );
        assert!(
            lines[1].starts_with("bob    coder  claude                       working   pid 7"),
            "{}",
            lines[1]
        );
        assert!(
            lines[2].starts_with("cleo   coder  scripted                     working   pid 7"),
            "{}",
            lines[2]
        );
        assert!(
            lines[2].contains("  ~1.2k tokens (estimated: 1.0k in, 0 cached, 200 out)  "),
            "{}",
            lines[2]
        );
        assert!(
            lines[3].starts_with("dan    coder  anthropic/claude-sonnet-4-5  working   pid 7"),
            "{}",
            lines[3]
        );
        assert!(
            lines[3].contains("  1.2k tokens (1.0k in, 0 cached, 200 out)  "),
            "{}",
            lines[3]
        );
    }

    #[test]
    fn a_member_shows_what_its_tokens_cost_and_why_it_waits() {
        use teamboard_protocol::LiveState;
        use teamboard_protocol::spend::{Cost, MemberWait, MicroUsd};
        let now = 1_000_000;
        let priced = Member {
            name: "alice".into(),
            role: "coder".into(),
            status: MemberStatus::Working,
            last_seen: now,
            pid: Some(7),
            task: Some(3),
            tokens: TokenUsage {
                input: 1000,
                output: 200,
                ..TokenUsage::default()
            },
            cost: Cost {
                usd: MicroUsd(12_300),
                unpriced_tokens: 0,
            },
            waiting: None,
            connected: true,
            joined_at: 0,
            require_plan: false,
            runtime: None,
            model: None,
            sandbox: None,
            tokens_estimated: false,
            liveness: Some(Liveness {
                state: LiveState::Working,
                since: now - 180_000,
                last_heartbeat: Some(now),
                exit: None,
            }),
        };
        let unpriced = Member {
            name: "bob".into(),
            cost: Cost {
                usd: MicroUsd::ZERO,
                unpriced_tokens: 1_200,
            },
            waiting: Some(MemberWait {
                reason: "rate limit on work (usage_limit_reached)".into(),
                until_ms: Some(now + 12 * 60_000),
            }),
            ..priced.clone()
        };
        let broke = Member {
            name: "cleo".into(),
            waiting: Some(MemberWait {
                reason: "budget: team budget limit of 50000 tokens reached".into(),
                until_ms: None,
            }),
            ..priced.clone()
        };
        let lines = member_lines(&[priced, unpriced, broke], &[], &[], now);
        let state_width = "waiting: rate limit (resets in 12m)".len();
        assert_eq!(
            lines[0],
            format!(
                "alice  coder  {:<state_width$}  pid 7      #3  \
                 1.2k tokens (1.0k in, 0 cached, 200 out)  $0.0123  last heartbeat just now",
                "working for 3m"
            )
        );
        assert_eq!(
            lines[1],
            "bob    coder  waiting: rate limit (resets in 12m)  pid 7      #3  \
             1.2k tokens (1.0k in, 0 cached, 200 out)  unpriced  last heartbeat just now  \
             why: rate limit on work (usage_limit_reached)"
        );
        assert!(
            lines[2].starts_with(&format!(
                "cleo   coder  {:<state_width$}  pid 7",
                "waiting: budget"
            )),
            "{}",
            lines[2]
        );
        assert!(
            lines[2].ends_with("why: budget: team budget limit of 50000 tokens reached"),
            "{}",
            lines[2]
        );
        assert!(!lines[1].contains("working"), "{}", lines[1]);
    }

    #[test]
    fn request_events_render_on_one_line() {
        let e = Event {
            seq: 9,
            team: "default".into(),
            at: 0,
            actor: "boardd".into(),
            kind: teamboard_protocol::EventKind::RequestSettled,
            task: None,
            member: Some("bob".into()),
            message: None,
            request: Some(4),
            detail: "shutdown request 4 to bob expired by boardd: no answer".into(),
        };
        assert_eq!(
            event_line(&e),
            "    9  00:00:00  boardd       request_settled   shutdown request 4 to bob expired by boardd: no answer"
        );
    }

    #[test]
    fn text_helpers() {
        assert_eq!(one_line("a\nb\tc"), "a b c");
        assert_eq!(fit_chars_with_ellipsis("abcdef", 4), "abc…");
        assert_eq!(count(12_345), "12.3k");
        assert_eq!(id_list(&[1, 2]), "#1, #2");
    }
}
