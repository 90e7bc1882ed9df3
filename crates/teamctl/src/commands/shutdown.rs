//! `teamctl shutdown NAME`: ask a teammate to leave and wait for its answer.
//!
//! The session subscribes before it opens the request, so that the event that
//! settles it cannot slip by; the request itself (`get_request`) is the truth the
//! outcome is read from. boardd settles a request that is still pending at its
//! deadline, so the wait is bounded by the deadline, plus a margin for a daemon
//! that is slow to do it.

use super::{Ctx, decode, within};
use crate::cli::ShutdownArgs;
use crate::render;
use std::time::Duration;
use teamboard_protocol::request::ShutdownArgs as WireShutdownArgs;
use teamboard_protocol::{Client, EventKind, Request, TeamRequest};

/// How long each exchange with boardd may take when `--timeout` was given for the
/// shutdown (and so is not the global one): the global default.
const EXCHANGE: Duration = Duration::from_secs(30);

/// How long after the deadline teamctl still waits for boardd to settle it.
const SETTLE_MARGIN: Duration = Duration::from_secs(10);

/// How long a stopped teammate may take to disconnect: boardd's grace between
/// SIGTERM and SIGKILL (5 s), and a margin.
const STOP_WAIT: Duration = Duration::from_secs(10);

/// How often the roster is read while waiting for a stopped teammate to go.
const POLL: Duration = Duration::from_millis(100);

pub async fn run(ctx: &Ctx, args: ShutdownArgs) -> anyhow::Result<()> {
    let deadline = match (args.deadline_given, args.timeout) {
        (false, _) => None,
        (true, Some(0) | None) => anyhow::bail!(
            "--timeout 0 leaves {} no time to answer; give it at least 1 s, or use --force to stop it now",
            args.name
        ),
        (true, Some(secs)) => Some(secs.saturating_mul(1000)),
    };
    let exchange = if args.deadline_given {
        Some(EXCHANGE)
    } else {
        ctx.timeout()
    };
    let wait = !args.no_wait && !args.force;
    let client = within(exchange, ctx.connect()).await?;
    if wait {
        within(exchange, client.subscribe()).await?;
    }
    // The task it holds now, to say afterwards whether a stop gave it back.
    let held = within(exchange, client.team())
        .await?
        .into_iter()
        .find(|m| m.name == args.name)
        .and_then(|m| m.task);
    let request = Request::RequestShutdown(WireShutdownArgs {
        to: args.name.clone(),
        reason: args.reason.clone().filter(|r| !r.trim().is_empty()),
        timeout_ms: deadline,
        force: args.force,
    });
    let raw = within(exchange, client.call_value(request)).await?;
    let opened: TeamRequest = decode(&raw, "request_shutdown")?;
    if args.no_wait {
        if ctx.json {
            return render::json(&raw);
        }
        render::line(&render::request_line(&opened, render::now_ms()))?;
        return Ok(());
    }
    let settled = if opened.is_pending() {
        settle(&client, &opened).await?
    } else {
        opened
    };
    let (text, gone) = render::shutdown_outcome(&settled);
    if ctx.json {
        render::json_line(&settled)?;
    }
    if !gone {
        anyhow::bail!("{text}");
    }
    let mut lines = vec![text];
    if settled.forced {
        within(exchange, stopped(&client, &settled.to)).await?;
        if let Some(id) = held {
            let task = within(exchange, client.get_task(id)).await?;
            lines.push(format!(
                "{} is gone; its task #{id} is {} now",
                settled.to,
                render::status_word(task.task.status)
            ));
        } else {
            lines.push(format!("{} is gone", settled.to));
        }
    }
    if !ctx.json {
        render::lines(&lines)?;
    }
    Ok(())
}

/// Waits until the stopped teammate's session has ended, which is when boardd
/// has given its task back.
async fn stopped(client: &Client, name: &str) -> anyhow::Result<()> {
    let waited = tokio::time::timeout(STOP_WAIT, async {
        loop {
            let team = client.team().await?;
            if !team.iter().any(|m| m.name == name && m.connected) {
                return anyhow::Ok(());
            }
            tokio::time::sleep(POLL).await;
        }
    })
    .await;
    match waited {
        Ok(result) => result,
        Err(_) => anyhow::bail!(
            "boardd signalled {name}'s processes, but {name} is still connected after {} s; \
             see `teamctl team` for its pid",
            STOP_WAIT.as_secs()
        ),
    }
}

/// Waits for the request to leave `pending` and returns it as boardd keeps it.
async fn settle(client: &Client, opened: &TeamRequest) -> anyhow::Result<TeamRequest> {
    let left_ms = opened
        .deadline
        .map(|d| d.saturating_sub(render::now_ms()))
        .and_then(|ms| u64::try_from(ms).ok())
        .unwrap_or(0);
    let limit = Duration::from_millis(left_ms) + SETTLE_MARGIN;
    let wait = async {
        loop {
            match client.next_event().await {
                Some(e) if e.kind == EventKind::RequestSettled && e.request == Some(opened.id) => {
                    return Ok(client.get_request(opened.id).await?);
                }
                Some(_) => {}
                None => anyhow::bail!(
                    "the connection to boardd closed while waiting for {}'s answer; \
                     see `teamctl requests --all` for what became of request r{}",
                    opened.to,
                    opened.id
                ),
            }
        }
    };
    match tokio::time::timeout(limit, wait).await {
        Ok(result) => result,
        Err(_) => anyhow::bail!(
            "request r{} is still pending after its deadline; boardd should have settled it \
             (see `teamctl requests` and `journalctl --user -u boardd`)",
            opened.id
        ),
    }
}
