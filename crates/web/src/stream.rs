//! `GET /api/events`: boardd's events as server-sent events, each with
//! `id: <seq>`.
//!
//! Each stream opens its own subscribed session, then catches up from the event
//! log: everything after `Last-Event-ID` (what `EventSource` sends when it
//! reconnects) or, on the first connection, after the `?since=` of the page's
//! snapshot. Subscribing first and reading the log second leaves no gap between
//! the two; the overlap is dropped by `seq`, so each event is sent once and in
//! order. When boardd closes the session (it restarts, or the stream fell too far
//! behind) the stream ends and the browser reconnects with the last id it saw.

use crate::api::ApiError;
use crate::board::Board;
use axum::extract::{Query, State};
use axum::http::HeaderMap;
use axum::response::sse::{Event as Sse, KeepAlive};
use futures_util::Stream;
use serde::Deserialize;
use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;
use teamboard_protocol::request::EventsArgs;
use teamboard_protocol::{Client, ClientError, Event};

#[derive(Deserialize)]
pub struct Since {
    since: Option<u64>,
}

pub async fn events(
    State(board): State<Arc<Board>>,
    headers: HeaderMap,
    Query(q): Query<Since>,
) -> Result<axum::response::Sse<impl Stream<Item = Result<Sse, Infallible>>>, ApiError> {
    let since = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .or(q.since);
    let client = board.subscriber().await?;
    let backlog = match since {
        Some(since) => events_after(&client, since).await?,
        None => Vec::new(),
    };
    let last = backlog.last().map_or(since.unwrap_or(0), |e| e.seq);
    tracing::debug!(?since, caught_up = backlog.len(), "event stream opened");
    let state = Feed {
        client,
        backlog: backlog.into(),
        last,
    };
    let stream = futures_util::stream::unfold(state, |mut feed| async move {
        let event = feed.next().await?;
        Some((Ok(frame(&event)), feed))
    });
    Ok(axum::response::Sse::new(stream).keep_alive(KeepAlive::default()))
}

/// The caught-up events, then the live ones after them.
struct Feed {
    client: Client,
    backlog: VecDeque<Event>,
    last: u64,
}

impl Feed {
    async fn next(&mut self) -> Option<Event> {
        if let Some(event) = self.backlog.pop_front() {
            return Some(event);
        }
        loop {
            let event = self.client.next_event().await?;
            // Already sent from the log: the subscription started before it was read.
            if event.seq > self.last {
                self.last = event.seq;
                return Some(event);
            }
        }
    }
}

fn frame(event: &Event) -> Sse {
    let data = serde_json::to_string(event).unwrap_or_else(|_| "{}".into());
    Sse::default().id(event.seq.to_string()).data(data)
}

/// Every event after `since`, oldest first, a page at a time.
async fn events_after(client: &Client, since: u64) -> Result<Vec<Event>, ClientError> {
    const PAGE: u64 = 1000;
    let (mut all, mut since) = (Vec::new(), since);
    loop {
        let page = client
            .events(EventsArgs {
                since: Some(since),
                task: None,
                limit: Some(PAGE),
            })
            .await?;
        let full = page.len() as u64 >= PAGE;
        match page.last() {
            Some(e) if e.seq > since => since = e.seq,
            _ => return Ok(all),
        }
        all.extend(page);
        if !full {
            return Ok(all);
        }
    }
}
