//! The end of a run: the teammates asked to shut down through the protocol,
//! boardd's history and board read back, boardd stopped, and the run's
//! processes that outlived it all found (and then killed, so that a failed
//! run leaves nothing running either).

use super::connect::Conn;
use super::marker::{Marked, Marker};
use super::mates::Teammate;
use anyhow::Context;
use std::time::{Duration, Instant};
use teamboard_process::Boardd;
use teamboard_protocol::request::{EventsArgs, ShutdownArgs};
use teamboard_protocol::{ErrorCode, Event, Task};

/// How long a teammate has to answer its shutdown before boardd stops it.
const SHUTDOWN_MS: u64 = 5_000;
/// How long the run waits for the teammates to be gone.
const GONE_WITHIN: Duration = Duration::from_secs(20);
/// How long the rest of the run's processes have, once boardd is stopped:
/// time for the tool guards to end what they watch. Far shorter than the
/// background `sleep`s the tasks start, so a leak cannot hide by finishing.
const LEFT_GRACE: Duration = Duration::from_secs(3);
/// Events read per request.
const PAGE: u64 = 10_000;

/// Asks each teammate to shut down and waits until their processes exit.
/// Answers the teammates still running when the time ran out.
pub async fn shut_down(lead: &mut Conn, mates: &mut [Teammate]) -> anyhow::Result<Vec<String>> {
    let t = Instant::now();
    for m in mates.iter() {
        ask(lead, &m.name, t).await?;
    }
    while t.elapsed() < GONE_WITHIN && !mates.iter_mut().all(Teammate::exited) {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut stayed = Vec::new();
    for m in mates.iter_mut() {
        if !m.exited() {
            stayed.push(m.name.clone());
            m.kill().await;
        }
    }
    Ok(stayed)
}

/// Asks `name` to shut down. A teammate that boardd's last restart (or a
/// freeze) left reconnecting is not connected yet: asked again until it is.
async fn ask(lead: &mut Conn, name: &str, since: Instant) -> anyhow::Result<()> {
    loop {
        let args = ShutdownArgs {
            to: name.to_string(),
            reason: Some("the soak is over".into()),
            timeout_ms: Some(SHUTDOWN_MS),
            force: false,
        };
        let c = lead.client().await?;
        match c.request_shutdown(args).await {
            Ok(_) => return Ok(()),
            Err(e)
                if e.code() == Some(ErrorCode::NotConnected) && since.elapsed() < GONE_WITHIN =>
            {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(e) if e.code().is_none() => lead.drop_connection(),
            Err(e) => return Err(e).with_context(|| format!("request_shutdown of {name}")),
        }
    }
}

/// The team's whole history, oldest first, and its tasks.
pub async fn read_back(lead: &mut Conn) -> anyhow::Result<(Vec<Event>, Vec<Task>)> {
    let mut events: Vec<Event> = Vec::new();
    loop {
        let args = EventsArgs {
            since: Some(events.last().map_or(0, |e| e.seq)),
            task: None,
            limit: Some(PAGE),
        };
        let c = lead.client().await?;
        let page = c.events(args).await.context("events")?;
        let full = page.len() as u64 == PAGE;
        events.extend(page);
        if !full {
            break;
        }
    }
    let c = lead.client().await?;
    let tasks = c.list_tasks(None).await.context("list_tasks")?;
    Ok((events, tasks))
}

/// Stops boardd (SIGTERM), waits for the run's processes to be gone, and
/// answers those that are not; then kills them.
pub async fn stop(boardd: &mut Boardd, marker: &Marker) -> anyhow::Result<Vec<Marked>> {
    boardd.stop(Duration::from_secs(10)).await?;
    let t = Instant::now();
    while t.elapsed() < LEFT_GRACE && !marker.processes().is_empty() {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let left = marker.processes();
    for p in &left {
        marker.kill9(p.pid);
    }
    Ok(left)
}
