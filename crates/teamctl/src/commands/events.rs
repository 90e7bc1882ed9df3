//! `teamctl events`: the history, and with `--follow` the live stream.
//!
//! To leave no gap between the history and the stream, the session subscribes
//! first, then reads the history, then prints streamed events whose `seq` is larger
//! than the last one printed. If boardd cuts the stream off (a subscriber that falls
//! too far behind is disconnected), teamctl reconnects and catches up from the last
//! `seq` it printed; if boardd has stopped, it says so and exits 1.

use super::{Ctx, Reconnects, events_after};
use crate::cli::EventsArgs;
use crate::render;
use teamboard_protocol::Event;
use teamboard_protocol::request::EventsArgs as WireEventsArgs;
use tokio::signal::unix::{SignalKind, signal};

pub async fn run(ctx: &Ctx, args: EventsArgs) -> anyhow::Result<()> {
    // Install the Ctrl-C handler before anything is printed.
    let mut interrupt = args
        .follow
        .then(|| signal(SignalKind::interrupt()))
        .transpose()?;
    let mut client = ctx.connect().await?;
    if let Some(task) = args.task {
        // A mistyped id would otherwise print "no events", or with --follow wait
        // forever for a task that will never exist.
        client.get_task(task).await?;
    }
    if args.follow {
        client.subscribe().await?;
    }
    let (since, task, limit) = (args.since, args.task, args.limit);
    let history = match (since, limit) {
        // From a point on, all of it: page forward.
        (Some(since), None) => events_after(&client, since, task).await?,
        _ => client.events(WireEventsArgs { since, task, limit }).await?,
    };
    let mut last = args.since.unwrap_or(0);
    for e in &history {
        print(ctx, e)?;
        last = last.max(e.seq);
    }
    let Some(interrupt) = interrupt.as_mut() else {
        if history.is_empty() && !ctx.json {
            render::note("no events");
        }
        return Ok(());
    };

    let mut reconnects = Reconnects::default();
    loop {
        let next = tokio::select! {
            _ = interrupt.recv() => return Ok(()),
            event = client.next_event() => event,
        };
        match next {
            Some(e) => {
                if e.seq <= last || args.task.is_some_and(|t| e.task != Some(t)) {
                    continue;
                }
                last = e.seq;
                reconnects.reset();
                print(ctx, &e)?;
            }
            None => {
                client = reconnects.again(ctx).await?;
                // Catch up on what was missed while disconnected.
                for e in events_after(&client, last, args.task).await? {
                    if e.seq > last {
                        last = e.seq;
                        print(ctx, &e)?;
                    }
                }
            }
        }
    }
}

fn print(ctx: &Ctx, e: &Event) -> anyhow::Result<()> {
    if ctx.json {
        render::json_line(e)
    } else {
        render::line(&render::event_line(e))?;
        Ok(())
    }
}
