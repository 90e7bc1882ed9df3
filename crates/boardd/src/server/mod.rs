//! The server: one accept loop, one task per connection, and the actor behind them.
//!
//! [`run`] is the entry. It starts the actor, accepts connections until `shutdown`
//! resolves, and then stops in this order:
//!
//! 1. It stops accepting.
//! 2. It stops the actor, which applies every command already sent to it, answers
//!    parked waiters with `shutting_down`, and returns once the writer has
//!    committed and answered everything.
//! 3. It closes the connections still open and waits until their tasks have
//!    ended. Their replies were queued in step 2, and each connection's write
//!    task sends what is queued before it ends (for at most a few seconds, see
//!    `connection`); returning before would let the runtime drop them unsent.
//!
//! Network clients (`tcp`) join the same loop: each arrives as boardd's end
//! of a Unix socket pair that a relay task fills from its TLS stream.
//!
//! A connection that closes in step 3 is not a teammate going away: its claim waits
//! for the restart grace instead of being released (see `connection`).

pub(crate) mod bind;
pub(crate) mod connection;
pub mod fds;
pub mod tcp;

pub use bind::{BindError, PeerError, bind};
/// The decoding of a client's frames, for the fuzz targets (`crates/fuzz-entry`).
#[doc(hidden)]
pub use connection::{Decoded, decode, refusal};
pub use tcp::{TcpError, TcpListen, TlsFiles};

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
    /// The most connections served at once; see [`fds`].
    pub max_connections: usize,
}

/// Serves `listener` until `shutdown` resolves; see the module doc for the order
/// in which it stops.
pub async fn run(
    listener: UnixListener,
    network: Option<mpsc::Receiver<tcp::Relayed>>,
    actor: Actor,
    settings: Settings,
    shutdown: impl Future<Output = ()>,
) {
    let (tx, rx) = mpsc::channel::<Cmd>(ACTOR_QUEUE);
    let (done_tx, mut all_done) = mpsc::channel::<()>(1);
    let actor_stop = CancellationToken::new();
    let actor_task = tokio::spawn(actor.run(rx, actor_stop.clone()));
    let mut accept = Accept {
        listener,
        network,
        actor: tx,
        settings,
        next_session: 1,
        closed: CancellationToken::new(),
        done: done_tx,
        budget: Arc::default(),
        spare: fds::Spare::open(),
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
    // Each connection task holds a clone of `done`: once the last one has ended,
    // the channel closes.
    drop(accept);
    let _ = all_done.recv().await;
}

/// The accept loop's state.
struct Accept {
    /// Bound by [`bind`], mode 0600.
    listener: UnixListener,
    /// Network clients, relayed (see `tcp`), when boardd listens on TCP.
    network: Option<mpsc::Receiver<tcp::Relayed>>,
    /// Where connections send their commands.
    actor: mpsc::Sender<Cmd>,
    settings: Settings,
    /// The next session id; ids are never reused while the daemon runs.
    next_session: SessionId,
    /// Cancelled once the actor has stopped, to close the connections still open.
    closed: CancellationToken,
    /// Cloned into every connection's task and dropped when it ends, so that
    /// [`run`] can wait for all of them on the way out (nothing is ever sent).
    done: mpsc::Sender<()>,
    /// The bytes of replies and events waiting for all connections together.
    budget: Arc<Budget>,
    /// Given up for a moment to refuse a client when no descriptor is left.
    spare: fds::Spare,
}

impl Accept {
    /// Accepts connections and spawns a task for each, forever. A client past
    /// the connection limit is refused at once, never left waiting.
    async fn run(&mut self) {
        loop {
            let (stream, peer_pid, relay_done) = tokio::select! {
                accepted = self.listener.accept() => {
                    let stream = match accepted {
                        Ok((stream, _)) => stream,
                        Err(e) if out_of_descriptors(&e) => {
                            self.refuse_without_descriptors().await;
                            continue;
                        }
                        Err(e) => {
                            tracing::warn!(error = %e, "accept failed");
                            tokio::time::sleep(Duration::from_millis(50)).await;
                            continue;
                        }
                    };
                    match bind::same_user(&stream) {
                        Ok(pid) => (stream, pid, None),
                        Err(why) => {
                            tracing::warn!(%why, "refusing peer");
                            connection::reject(&stream, why.to_string());
                            continue;
                        }
                    }
                }
                Some(relayed) = next_relayed(&mut self.network) => {
                    tracing::debug!(peer = %relayed.peer, "network client");
                    (relayed.stream, None, Some(relayed.done))
                }
            };
            // Cancelled when this connection is done with, whichever way.
            let relay_done = relay_done.map(|done| done.drop_guard());
            let max = self.settings.max_connections;
            if self.settings.live.load(Ordering::Relaxed) >= max as u64 {
                tracing::warn!(max, "connection limit reached; refusing a client");
                let reason = format!(
                    "boardd serves at most {max} connections at once, and all are in use; \
                     close some (other teamctl or teammated processes) and try again"
                );
                connection::reject(&stream, reason);
                continue;
            }
            let session = self.next_session;
            self.next_session += 1;
            let conn = connection::Connection {
                session,
                peer_pid,
                network: relay_done.is_some(),
                actor: self.actor.clone(),
                lease_ttl: self.settings.lease_ttl,
                closed: self.closed.clone(),
                budget: self.budget.clone(),
            };
            let live = self.settings.live.clone();
            live.fetch_add(1, Ordering::Relaxed);
            let done = self.done.clone();
            tokio::spawn(async move {
                conn.serve(stream).await;
                live.fetch_sub(1, Ordering::Relaxed);
                drop(relay_done);
                drop(done);
            });
        }
    }

    /// `accept` failed for lack of descriptors: frees the spare one for long
    /// enough to take the waiting client and refuse it. Without that, the
    /// client would wait in the listen queue, unanswered, and `accept` would
    /// fail again at once.
    async fn refuse_without_descriptors(&mut self) {
        if !self.spare.release() {
            tracing::warn!("out of file descriptors, and no spare one; waiting");
            tokio::time::sleep(Duration::from_millis(50)).await;
            self.spare.restore();
            return;
        }
        match self.listener.accept().await {
            Ok((stream, _)) => {
                tracing::warn!("out of file descriptors; refusing a client");
                let reason = "boardd has run out of file descriptors; close some connections \
                              (other teamctl or teammated processes) and try again";
                connection::reject(&stream, reason.to_string());
            }
            Err(e) => tracing::warn!(error = %e, "accept failed"),
        }
        self.spare.restore();
    }
}

/// The next relayed network client; never, without a TCP listener.
pub(crate) async fn next_relayed(
    network: &mut Option<mpsc::Receiver<tcp::Relayed>>,
) -> Option<tcp::Relayed> {
    match network {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}

/// Whether `accept` failed because this process (EMFILE) or the system (ENFILE)
/// has no descriptor left.
fn out_of_descriptors(e: &std::io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE))
}
