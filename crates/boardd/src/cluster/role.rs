//! The loop a boardd on a shared database runs: a follower until it takes the
//! lease, then the leader until it loses it, and a follower again.
//!
//! - Follower: [`proxy`] serves the socket (and `--listen-tcp`), forwarding to
//!   the leader that [`watch`] names. When the watch sees the lease run out (or
//!   released), the follower tries [`leadership::take`]; of several that try,
//!   one wins.
//! - Leader: the proxy is stopped, the core is started for the term (today's
//!   boardd, its store fenced by the term), and the lease is renewed every third
//!   of its length. On `Deposed`, or when no renewal has succeeded for a whole
//!   lease (measured from before the last good one was sent, so never later
//!   than the database's expiry), the core is stopped at once and the loop
//!   goes back to following. Stopping late cannot do harm: the store's fence
//!   refuses the deposed term's commits, and nothing is acknowledged before
//!   its commit.
//! - On `stop` (SIGTERM), a leader stops its core and releases the lease, so a
//!   follower takes over at once instead of after the lease.
//!
//! The leadership calls are blocking; each runs under `spawn_blocking`, and a
//! renewal that does not return by the deadline is abandoned (its connection
//! with it) rather than waited for.

use super::leadership::{self, LeadershipError, Renewal, Term};
use super::proxy::{self, Dial};
use super::watch::{self, Leaders};
use crate::server::TcpListen;
use crate::{Running, StartError};
use futures_util::future::BoxFuture;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::Instrument as _;

/// The most time between a follower's re-reads of the row when nothing else
/// wakes it.
const SAFETY_REREAD: Duration = Duration::from_secs(5);
/// The name of the lease's connection in `pg_stat_activity`.
const PURPOSE: &str = "teamboard-lease";

/// What the loop needs to know.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The shared database.
    pub url: String,
    /// This boardd's name in the row (`--node`).
    pub node: String,
    /// What followers dial to reach this boardd when it leads (`--advertise`).
    pub advertise: String,
    /// How long a lease lasts without renewal (`--leader-lease`).
    pub lease: Duration,
    /// Never take the lease (`--follower-only`): a host without the team's
    /// repositories.
    pub follower_only: bool,
    /// The Unix socket, served by the proxy or by the core.
    pub socket: PathBuf,
    /// The TCP listener (`--listen-tcp`), served like the socket: forwarded
    /// while following, by the core while leading.
    pub tcp: Option<TcpListen>,
}

/// Starts the core for a term: `crate::start` with the store fenced by it.
pub type StartCore =
    Arc<dyn Fn(Term) -> BoxFuture<'static, Result<Running, StartError>> + Send + Sync>;

#[derive(Debug, thiserror::Error)]
pub enum RoleError {
    #[error("cannot start watching the leadership: {0}")]
    Watch(#[source] std::io::Error),
    #[error(transparent)]
    Bind(#[from] crate::server::BindError),
    #[error(transparent)]
    Tcp(#[from] crate::server::TcpError),
}

/// Runs the loop until `stop` is cancelled.
pub async fn run(
    settings: Settings,
    start: StartCore,
    dial: Dial,
    stop: CancellationToken,
) -> Result<(), RoleError> {
    let safety = SAFETY_REREAD.min(settings.lease);
    let mut leaders = watch::spawn(settings.url.clone(), safety).map_err(RoleError::Watch)?;
    let mut lease = Lease::new(&settings.url);
    loop {
        let span = tracing::info_span!("follower", node = %settings.node);
        let following = follow(&settings, &mut leaders, &mut lease, dial.clone(), &stop);
        let Some((term, sent)) = following.instrument(span).await? else {
            return Ok(());
        };
        let span = tracing::info_span!("leader", node = %settings.node, term);
        let leading = lead(&settings, term, sent, &start, &mut lease, &stop);
        if let Some(()) = leading.instrument(span).await {
            return Ok(());
        }
    }
}

/// Serves the socket as a follower until this boardd takes the lease (its
/// term, and when the take was sent) or `stop` (`None`).
async fn follow(
    settings: &Settings,
    leaders: &mut Leaders,
    lease: &mut Lease,
    dial: Dial,
    stop: &CancellationToken,
) -> Result<Option<(Term, Instant)>, RoleError> {
    let listener = crate::server::bind(&settings.socket).await?;
    let network = match &settings.tcp {
        Some(spec) => Some(crate::server::tcp::listen(spec).await?),
        None => None,
    };
    let (incoming, accepting) = network.map(|n| (n.incoming, n.accepting)).unzip();
    let proxy_stop = stop.child_token();
    let proxy = tokio::spawn(proxy::run(
        listener,
        incoming,
        leaders.clone(),
        dial,
        settings.node.clone(),
        proxy_stop.clone(),
    ));
    let taken = wait_to_take(settings, leaders, lease, stop).await;
    proxy_stop.cancel();
    let _ = proxy.await;
    // The core binds the same path and port: the proxy's socket file is gone
    // first so that no client reaches a listener nobody accepts on, and the
    // port is closed before the core binds it.
    let _ = std::fs::remove_file(&settings.socket);
    if let Some(accepting) = accepting {
        accepting.close().await;
    }
    Ok(taken)
}

/// Waits for the lease to be free and takes it: the term, and when the take
/// was sent. `None` once `stop` is cancelled.
async fn wait_to_take(
    settings: &Settings,
    leaders: &mut Leaders,
    lease: &mut Lease,
    stop: &CancellationToken,
) -> Option<(Term, Instant)> {
    loop {
        let free = leaders
            .borrow_and_update()
            .as_ref()
            .is_some_and(|l| !l.live());
        if free && !settings.follower_only {
            let (node, addr, length) = (
                settings.node.clone(),
                settings.advertise.clone(),
                settings.lease,
            );
            let sent = Instant::now();
            match lease
                .call(move |c| leadership::take(c, &node, &addr, length))
                .await
            {
                Ok(Some(term)) => {
                    tracing::info!(term, "took the board");
                    return Some((term, sent));
                }
                // Another follower was quicker: its NOTIFY wakes the watch.
                Ok(None) => {}
                Err(error) => {
                    tracing::warn!(%error, "cannot take the board; trying again");
                    tokio::select! {
                        _ = stop.cancelled() => return None,
                        _ = tokio::time::sleep(settings.lease / 3) => {}
                    }
                    continue;
                }
            }
        }
        tokio::select! {
            _ = stop.cancelled() => return None,
            changed = leaders.changed() => if changed.is_err() { return None },
        }
    }
}

/// Leads for `term`, taken at `taken`, until deposed (`None`: follow again) or
/// `stop` (`Some`).
async fn lead(
    settings: &Settings,
    term: Term,
    taken: Instant,
    start: &StartCore,
    lease: &mut Lease,
    stop: &CancellationToken,
) -> Option<()> {
    // Counted from before the take was sent: never later than the row's expiry.
    let mut held_until = taken + settings.lease;
    let every = settings.lease / 3;
    // The lease is renewed while the core starts too: restoring a large board
    // may take longer than the lease, and a leader that renewed only once it
    // had started would give the board up at once, and so would the next.
    let started = {
        let mut starting = std::pin::pin!(start(term));
        loop {
            tokio::select! {
                started = &mut starting => break Some(started),
                _ = tokio::time::sleep(every) => {
                    if !renew(settings, term, lease, &mut held_until).await {
                        break None;
                    }
                }
            }
        }
    };
    let core = match started {
        Some(Ok(core)) => core,
        None => {
            release(lease, term).await;
            return None;
        }
        Some(Err(error)) => {
            tracing::error!(%error, "cannot start the board; giving it up");
            release(lease, term).await;
            tokio::select! {
                _ = stop.cancelled() => return Some(()),
                _ = tokio::time::sleep(settings.lease) => return None,
            }
        }
    };
    crate::notify("READY=1\nSTATUS=deciding");
    let failed = core.fatal_token();
    let outcome = loop {
        tokio::select! {
            _ = stop.cancelled() => break Some(()),
            _ = failed.cancelled() => {
                tracing::error!("the board's storage failed; giving the board up");
                break None;
            }
            // After a failed renewal the lease may run out before the next try.
            _ = tokio::time::sleep_until(held_until) => {
                tracing::warn!("no renewal for a whole lease: stopping before another boardd decides");
                break None;
            }
            _ = tokio::time::sleep(every) => {}
        }
        if !renew(settings, term, lease, &mut held_until).await {
            break None;
        }
    };
    core.shutdown().await;
    // Released whichever way leading ended: a no-op once deposed (it names the
    // term), and otherwise followers need not wait out a lease that a renewal
    // abandoned above may even have extended when it landed late.
    let length = settings.lease;
    if tokio::time::timeout(length, release(lease, term))
        .await
        .is_err()
    {
        tracing::warn!("cannot release the lease; it runs out by itself");
    }
    crate::notify("STATUS=following");
    outcome
}

/// Renews the lease once, within what is left of it: true while it is held
/// (`held_until` moves on), false once deposed or out of time.
async fn renew(
    settings: &Settings,
    term: Term,
    lease: &mut Lease,
    held_until: &mut Instant,
) -> bool {
    let sent = Instant::now();
    let length = settings.lease;
    let renewal = tokio::time::timeout_at(
        *held_until,
        lease.call(move |c| leadership::renew(c, term, length)),
    )
    .await;
    match renewal {
        Ok(Ok(Renewal::Held)) => {
            *held_until = sent + settings.lease;
            true
        }
        Ok(Ok(Renewal::Deposed { term_now })) => {
            tracing::warn!(term_now, "deposed: another boardd took the board");
            false
        }
        Ok(Err(error)) if Instant::now() < *held_until => {
            tracing::warn!(%error, "cannot renew the lease; trying again");
            true
        }
        Ok(Err(_)) | Err(_) => {
            tracing::warn!("no renewal for a whole lease: stopping before another boardd decides");
            false
        }
    }
}

/// Gives the lease up, for a follower to take at once; a failure only makes it
/// wait for the lease to run out.
async fn release(lease: &mut Lease, term: Term) {
    if let Err(error) = lease.call(move |c| leadership::release(c, term)).await {
        tracing::warn!(%error, "cannot release the lease; it runs out by itself");
    }
}

/// The lease's connection, opened on first use and again after any failure.
///
/// Trap: dropping a `postgres::Client` blocks on its runtime to close it, which
/// panics on a runtime worker; [`Drop`] hands it to a thread of its own.
struct Lease {
    url: String,
    client: Option<postgres::Client>,
}

impl Lease {
    fn new(url: &str) -> Lease {
        Lease {
            url: url.to_string(),
            client: None,
        }
    }

    /// Runs `f` on the connection off the runtime's workers. Dropped before it
    /// returns, the call finishes on its own and its connection is let go.
    async fn call<T: Send + 'static>(
        &mut self,
        f: impl FnOnce(&mut postgres::Client) -> Result<T, LeadershipError> + Send + 'static,
    ) -> Result<T, LeadershipError> {
        let client = self.client.take();
        let url = self.url.clone();
        let called = tokio::task::spawn_blocking(move || {
            let mut client = match client.filter(|c| !c.is_closed()) {
                Some(client) => client,
                None => match leadership::connect(&url, PURPOSE) {
                    Ok(client) => client,
                    Err(e) => return (None, Err(e)),
                },
            };
            let result = f(&mut client);
            // After a failure the connection may be half-way through
            // anything: the next call opens a new one.
            (result.is_ok().then_some(client), result)
        })
        .await;
        match called {
            Ok((client, result)) => {
                self.client = client;
                result
            }
            Err(_) => Err(LeadershipError::Closed),
        }
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        if let Some(client) = self.client.take() {
            let _ = std::thread::Builder::new()
                .name("lease-close".into())
                .spawn(move || drop(client));
        }
    }
}
