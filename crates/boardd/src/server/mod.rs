//! The server: one accept loop, one task per connection, and the actor behind them.
//!
//! [`run`] is the entry. It starts the actor, accepts connections until `shutdown`
//! resolves, and then stops in this order:
//!
//! 1. It stops accepting.
//! 2. It stops the actor, which applies every command already sent to it, answers
//!    parked waiters with `shutting_down`, and returns once the writer has
//!    committed and answered everything.
//! 3. It closes the connections still open. Their answers were queued in step 2,
//!    and each connection's write task sends what is queued before it ends.
//!
//! A connection that closes in step 3 is not a teammate going away: its claim waits
//! for the restart grace instead of being released (see `connection`).

mod bind;
mod connection;

pub use bind::{BindError, PeerError, bind};

use crate::actor::{Actor, Cmd};
use crate::outbox::Budget;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use teamboard_board::SessionId;
use tokio::net::UnixListener;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Commands queued for the actor before connections wait to send more. Deep
/// enough that a burst from every client fits, so that the actor takes whole
/// batches.
const ACTOR_QUEUE: usize = 65_536;

/// What the server needs besides its listener and its actor.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Announced to clients in `welcome`.
    pub lease_ttl: Duration,
    /// Live connections: counted here, read by `status`.
    pub live: Arc<AtomicU64>,
}

/// Serves `listener` until `shutdown` resolves; see the module doc for the order
/// in which it stops.
pub async fn run(
    listener: UnixListener,
    actor: Actor,
    settings: Settings,
    shutdown: impl Future<Output = ()>,
) {
    let (tx, rx) = mpsc::channel::<Cmd>(ACTOR_QUEUE);
    let actor_stop = CancellationToken::new();
    let actor_task = tokio::spawn(actor.run(rx, actor_stop.clone()));
    let mut accept = Accept {
        listener,
        actor: tx,
        settings,
        next_session: 1,
        closed: CancellationToken::new(),
        budget: Arc::default(),
    };
    tokio::select! {
        _ = accept.run() => {}
        _ = shutdown => {}
    }
    // Connections still open keep their sender; stopping the actor explicitly
    // lets it answer what is queued and flush to disk first.
    actor_stop.cancel();
    let _ = actor_task.await;
    accept.closed.cancel();
}

/// The accept loop's state.
struct Accept {
    /// Bound by [`bind`], mode 0600.
    listener: UnixListener,
    /// Where connections send their commands.
    actor: mpsc::Sender<Cmd>,
    settings: Settings,
    /// The next session id; ids are never reused while the daemon runs.
    next_session: SessionId,
    /// Cancelled once the actor has stopped, to close the connections still open.
    closed: CancellationToken,
    /// The bytes of replies and events waiting for all connections together.
    budget: Arc<Budget>,
}

impl Accept {
    /// Accepts connections and spawns a task for each, forever.
    async fn run(&mut self) {
        loop {
            let stream = match self.listener.accept().await {
                Ok((stream, _)) => stream,
                Err(e) => {
                    // Running out of file descriptors must not end the daemon.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            };
            if let Err(why) = bind::same_user(&stream) {
                tracing::warn!(%why, "refusing peer");
                tokio::spawn(connection::reject(stream, why.to_string()));
                continue;
            }
            let session = self.next_session;
            self.next_session += 1;
            let conn = connection::Connection {
                session,
                actor: self.actor.clone(),
                lease_ttl: self.settings.lease_ttl,
                closed: self.closed.clone(),
                budget: self.budget.clone(),
            };
            let live = self.settings.live.clone();
            live.fetch_add(1, Ordering::Relaxed);
            tokio::spawn(async move {
                conn.serve(stream).await;
                live.fetch_sub(1, Ordering::Relaxed);
            });
        }
    }
}
