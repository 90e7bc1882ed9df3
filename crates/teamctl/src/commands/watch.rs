//! `teamctl watch`: a live full-screen view of the board, the team and the latest
//! events.
//!
//! What the view shows is fetched again when boardd pushes an event, never on a
//! timer: boardd's events drive the content. A burst of events (a completion
//! that makes five tasks ready, say) is coalesced: after the first event the view
//! waits [`DEBOUNCE`] for more, then refetches and redraws once.
//!
//! The clock and the ages (`working for 3m`, `last heartbeat 41s ago`) tick on
//! their own: every [`TICK`] the last fetched state is laid out again against
//! the current time, without asking boardd anything. A view that only redrew on
//! events would freeze them between events, and a member that went silent would
//! look `just now` heard from until something else happened.

use super::{Ctx, Reconnects, decode, fetch_tasks};
use crate::cli::WatchArgs;
use crate::render;
use std::collections::VecDeque;
use std::io::{IsTerminal, Write};
use std::time::Duration;
use teamboard_protocol::request::{EventsArgs, ListRequestsArgs, NoArgs};
use teamboard_protocol::{
    Client, ClientError, Event, Member, Request, RequestKind, RequestState, Task, TaskStatus,
    TeamRequest,
};
use tokio::signal::unix::{SignalKind, signal};
use tokio::time::Instant;

/// How long to gather further events after the first one before redrawing.
const DEBOUNCE: Duration = Duration::from_millis(50);

/// How often the clock and the ages are redrawn between events.
const TICK: Duration = Duration::from_secs(1);

pub async fn run(ctx: &Ctx, args: WatchArgs) -> anyhow::Result<()> {
    if ctx.json {
        anyhow::bail!(
            "watch draws a screen for people and has no JSON form; for a stream of JSON \
             use `teamctl events --follow --json`, and `teamctl tasks --json` or \
             `teamctl team --json` for the state"
        );
    }
    let mut client = ctx.connect().await?;
    let tty = std::io::stdout().is_terminal();

    if args.once {
        let recent = fetch_recent(&client, args.events).await?;
        let state = fetch(&client).await?;
        return draw(
            &layout(ctx, &client, &state, &recent, render::now_ms()),
            tty,
        );
    }

    // Ctrl-C, `kill`/`timeout` (SIGTERM) and a closed terminal (SIGHUP) all end the
    // view through the same return, so the screen below is restored; their default
    // actions would end the process with the terminal still in the alternate
    // screen, without a cursor and without line wrapping.
    let mut interrupt = signal(SignalKind::interrupt())?;
    let mut terminate = signal(SignalKind::terminate())?;
    let mut hangup = signal(SignalKind::hangup())?;
    // Subscribe before the first fetch so that nothing falls between the two.
    client.subscribe().await?;
    let mut recent = fetch_recent(&client, args.events).await?;
    let mut state = fetch(&client).await?;
    let _screen = Screen::enter(tty)?;
    draw(
        &layout(ctx, &client, &state, &recent, render::now_ms()),
        tty,
    )?;

    let mut reconnects = Reconnects::default();
    let mut tick = tokio::time::interval(TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    loop {
        let first = tokio::select! {
            _ = interrupt.recv() => return Ok(()),
            _ = terminate.recv() => return Ok(()),
            _ = hangup.recv() => return Ok(()),
            _ = tick.tick() => {
                draw(&layout(ctx, &client, &state, &recent, render::now_ms()), tty)?;
                continue;
            }
            event = client.next_event() => event,
        };
        match first {
            Some(first) => {
                reconnects.reset();
                remember(&mut recent, first, args.events);
                // Coalesce whatever else arrives right behind it.
                let deadline = Instant::now() + DEBOUNCE;
                loop {
                    let more = tokio::select! {
                        _ = tokio::time::sleep_until(deadline) => break,
                        more = client.next_event() => more,
                    };
                    match more {
                        Some(e) => remember(&mut recent, e, args.events),
                        // Redraw what we have; the next wait notices the end.
                        None => break,
                    }
                }
            }
            None => {
                // Cut off (too far behind) or the daemon stopped: find out which.
                client = reconnects.again(ctx).await?;
                recent = fetch_recent(&client, args.events).await?;
            }
        }
        match fetch(&client).await {
            Ok(fetched) => state = fetched,
            // The connection closed mid-fetch: the next wait finds out why.
            Err(e) if is_closed(&e) => continue,
            Err(e) => return Err(e),
        }
        draw(
            &layout(ctx, &client, &state, &recent, render::now_ms()),
            tty,
        )?;
    }
}

fn is_closed(e: &anyhow::Error) -> bool {
    matches!(e.downcast_ref(), Some(ClientError::Closed(_)))
}

/// The newest `keep` events.
async fn fetch_recent(client: &Client, keep: usize) -> anyhow::Result<VecDeque<Event>> {
    let mut recent = VecDeque::new();
    if keep > 0 {
        let limit = Some(u64::try_from(keep).unwrap_or(u64::MAX));
        let (since, task) = (None, None);
        for e in client.events(EventsArgs { since, task, limit }).await? {
            remember(&mut recent, e, keep);
        }
    }
    Ok(recent)
}

fn remember(recent: &mut VecDeque<Event>, e: Event, keep: usize) {
    if keep == 0 {
        return;
    }
    if recent.back().is_some_and(|last| e.seq <= last.seq) {
        return; // already seen (history and stream overlap)
    }
    recent.push_back(e);
    while recent.len() > keep {
        recent.pop_front();
    }
}

/// What one frame shows, as boardd last said it.
struct Fetched {
    tasks: Vec<Task>,
    members: Vec<Member>,
    /// Pending requests.
    open: Vec<TeamRequest>,
}

/// Fetches the board, the team and the pending requests.
async fn fetch(client: &Client) -> anyhow::Result<Fetched> {
    let tasks = fetch_tasks(client).await?;
    let raw_team = client.call_value(Request::Team(NoArgs {})).await?;
    let members: Vec<Member> = decode(&raw_team, "team")?;
    let open = client
        .list_requests(ListRequestsArgs {
            state: Some(RequestState::Pending),
            kind: None,
            task: None,
        })
        .await?;
    Ok(Fetched {
        tasks,
        members,
        open,
    })
}

/// Lays out one frame of `state` as of `now`.
fn layout(
    ctx: &Ctx,
    client: &Client,
    state: &Fetched,
    recent: &VecDeque<Event>,
    now: i64,
) -> Vec<String> {
    let Fetched {
        tasks,
        members,
        open,
    } = state;
    let board = render::Board::new(tasks);

    let mut out = vec![
        format!(
            "teamboard  team {}  {}  {} UTC",
            ctx.team,
            client.welcome().server,
            render::clock(now)
        ),
        format!("tasks: {}", render::task_summary(tasks)),
    ];
    let plans = open.iter().filter(|r| r.kind == RequestKind::Plan).count();
    let shutdowns = open.len() - plans;
    if plans + shutdowns > 0 {
        out.push(format!(
            "requests: {} waiting for your decision (teamctl plans), {} pending",
            render::plural(plans as u64, "plan"),
            render::plural(shutdowns as u64, "shutdown"),
        ));
    }
    out.extend([String::new(), "TASKS".to_string()]);
    let shown = fit_tasks(
        tasks,
        members.len() + recent.len() + usize::from(!open.is_empty()),
    );
    if tasks.is_empty() {
        out.push("  (none yet: teamctl task add SUBJECT)".into());
    } else {
        out.extend(
            render::task_lines(&shown, &board)
                .into_iter()
                .map(|l| format!("  {l}")),
        );
        if shown.len() < tasks.len() {
            out.push(format!(
                "  ... {} more (teamctl tasks)",
                tasks.len() - shown.len()
            ));
        }
    }
    out.push(String::new());
    out.push("TEAM".to_string());
    if members.is_empty() {
        out.push("  (nobody yet: start a teammate with `teamctl spawn NAME --role ROLE`)".into());
    } else {
        out.extend(
            render::member_lines(members, tasks, open, now)
                .into_iter()
                .map(|l| format!("  {l}")),
        );
    }
    if !recent.is_empty() {
        out.push(String::new());
        out.push("EVENTS".to_string());
        out.extend(
            recent
                .iter()
                .map(|e| format!("  {}", render::event_line(e))),
        );
    }
    out.push(String::new());
    out.push("Ctrl-C to quit".to_string());
    out
}

/// When the terminal's height is known (`$LINES`), keeps the task list short enough
/// to fit, dropping finished tasks (oldest first) before anything else.
fn fit_tasks(tasks: &[Task], other_lines: usize) -> Vec<Task> {
    let rows = std::env::var("LINES")
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok());
    let Some(rows) = rows else {
        return tasks.to_vec();
    };
    // Header, blank lines, section titles, footer and the "more" line.
    let budget = rows.saturating_sub(other_lines + 11).max(5);
    if tasks.len() <= budget {
        return tasks.to_vec();
    }
    let mut excess = tasks.len() - budget;
    let mut shown: Vec<Task> = Vec::new();
    for t in tasks {
        if excess > 0 && matches!(t.status, TaskStatus::Completed | TaskStatus::Cancelled) {
            excess -= 1;
        } else {
            shown.push(t.clone());
        }
    }
    shown.truncate(budget);
    shown
}

/// Writes a frame in one go. On a terminal: cursor home, each line cleared to its
/// end, the rest of the screen cleared, so that the view does not flicker.
fn draw(frame: &[String], ansi: bool) -> anyhow::Result<()> {
    let mut buf = String::new();
    if ansi {
        buf.push_str("\x1b[H");
    }
    for l in frame {
        buf.push_str(l);
        if ansi {
            buf.push_str("\x1b[K");
        }
        buf.push('\n');
    }
    if ansi {
        buf.push_str("\x1b[J");
    }
    let mut out = std::io::stdout().lock();
    out.write_all(buf.as_bytes())?;
    out.flush()?;
    Ok(())
}

/// The alternate screen, without a cursor and without line wrapping (long lines are
/// clipped at the edge), restored when dropped: on Ctrl-C, on errors and when the
/// daemon goes away.
struct Screen {
    active: bool,
}

impl Screen {
    fn enter(tty: bool) -> std::io::Result<Screen> {
        if tty {
            let mut out = std::io::stdout().lock();
            out.write_all(b"\x1b[?1049h\x1b[?25l\x1b[?7l\x1b[H\x1b[2J")?;
            out.flush()?;
        }
        Ok(Screen { active: tty })
    }
}

impl Drop for Screen {
    fn drop(&mut self) {
        if self.active {
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(b"\x1b[?7h\x1b[?25h\x1b[?1049l");
            let _ = out.flush();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use teamboard_protocol::EventKind;

    fn event(seq: u64, kind: EventKind) -> Event {
        Event {
            seq,
            team: "default".into(),
            at: 0,
            actor: "lead".into(),
            kind,
            task: None,
            member: None,
            message: None,
            detail: String::new(),
            request: None,
        }
    }

    #[test]
    fn recent_events_skip_duplicates_and_keep_the_newest() {
        let mut recent = VecDeque::new();
        remember(&mut recent, event(1, EventKind::TaskCreated), 2);
        remember(&mut recent, event(1, EventKind::TaskCreated), 2);
        remember(&mut recent, event(2, EventKind::MessageSent), 2);
        remember(&mut recent, event(3, EventKind::TaskClaimed), 2);
        remember(&mut recent, event(4, EventKind::TaskCompleted), 2);
        let seqs: Vec<u64> = recent.iter().map(|e| e.seq).collect();
        assert_eq!(seqs, vec![3, 4]);
    }
}
