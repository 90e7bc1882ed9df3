//! The teammate's session with boardd, kept open across daemon restarts.
//!
//! boardd binds a claim to the session that made it. If the daemon restarts, the
//! teammate reconnects and registers again under the same name, and boardd hands it
//! back the claim it still holds for that name (within its restart grace). So every
//! call here goes through [`Session::call`], which reconnects with backoff when the
//! connection is gone and then repeats the call.
//!
//! Repeating is safe for reads, waits and heartbeats. A state-changing call whose
//! answer was lost with the connection may have happened already; callers that care
//! (completing a task) check the board after a refusal rather than trust the repeat.
//!
//! A teammate that approved its shutdown ([`Session::approve_shutdown`]) is leaving:
//! from then on a lost connection is not repaired, and calls fail at once. What is
//! left to say (the acknowledgement, the `shutdown` status) is not worth waiting
//! for: a boardd that stops right after the approval would otherwise hold the
//! teammate for the whole reconnect timeout, and boardd releases whatever a closed
//! session held anyway.

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use teamboard_protocol::Endpoint;
use teamboard_protocol::request::RegisterArgs;
use teamboard_protocol::{
    Client, ClientError, Credential, ErrorCode, Event, Member, RequestId, TaskId, TeamRequest,
};
use tokio::sync::{RwLock, watch};
use tokio_util::sync::CancellationToken;

/// Who the teammate is, as boardd knows it.
#[derive(Debug, Clone)]
pub struct Identity {
    pub name: String,
    pub role: String,
    pub team: String,
    /// Registered with the member, so that boardd holds every claim to a plan.
    pub require_plan: bool,
    /// The runtime that does the work, for the roster; `None` for the native one.
    pub runtime: Option<String>,
    /// The native loop's model, for the roster (`scripted`, `anthropic/MODEL`).
    pub model: Option<String>,
    /// The sandbox its commands run in, for the roster and its tasks' checks.
    pub sandbox: teamboard_protocol::Sandbox,
}

/// One teammate's connection to boardd. Cheap to share: the state lives behind an
/// `Arc`, so a reconnect can run on a task of its own and finish even if the caller
/// that started it goes away (see [`Session::reconnect_after`]).
#[derive(Clone)]
pub struct Session {
    inner: Arc<Inner>,
}

struct Inner {
    socket: Endpoint,
    who: Identity,
    /// What vouches for the name: the lead's credential until the first
    /// registration, then the member's own, which boardd gave it then.
    credential: Vouch,
    /// How long boardd may stay unreachable before the teammate gives up.
    give_up: Duration,
    client: RwLock<Arc<Client>>,
    /// Bumped on every reconnect, so that concurrent callers that saw the same broken
    /// connection reconnect once, not once each.
    generation: AtomicU64,
    /// Told the new generation once a new connection is in place, so that a reader
    /// of pushed events moves on to it.
    reconnected: watch::Sender<u64>,
    reconnect: tokio::sync::Mutex<()>,
    /// A claim boardd handed back when we registered again after a restart, not yet
    /// looked at by the lifecycle.
    adopted: Mutex<Option<TaskId>>,
    /// Cancelled when the teammate is told to stop, or once it approved its
    /// shutdown: a lost connection is not repaired after that.
    cancel: CancellationToken,
}

/// The credential a session presents; replaced by the member's own once boardd
/// issues it (see [`connect_loop`]).
type Vouch = Mutex<Option<Credential>>;

/// The first and the longest pause between reconnect attempts.
const BACKOFF_START: Duration = Duration::from_millis(50);
const BACKOFF_MAX: Duration = Duration::from_secs(5);
/// How long one connect-and-register attempt may take: a hung daemon must not stop
/// the give-up clock.
const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(10);
/// A call that loses its connection this many times in a row, even though every
/// reconnect succeeded, is what kills the connection; it fails instead of looping.
const MAX_REPEATS: u32 = 8;

/// Whether an error means the connection is gone (as opposed to boardd refusing the
/// request), so reconnecting and repeating the call is the right answer.
pub fn is_disconnect(e: &ClientError) -> bool {
    match e {
        ClientError::NotRunning { .. }
        | ClientError::Connect { .. }
        | ClientError::Unreachable { .. }
        | ClientError::Closed(_) => true,
        ClientError::Server(body) => body.code == ErrorCode::ShuttingDown,
        // A certificate that does not check out will not check out later.
        ClientError::Rejected(_)
        | ClientError::Protocol(_)
        | ClientError::NotASocket { .. }
        | ClientError::Tls { .. }
        | ClientError::TlsSetup(_) => false,
    }
}

/// Whether boardd says the claim is no longer ours.
pub(crate) fn is_claim_gone(e: &ClientError) -> bool {
    matches!(
        e.code(),
        Some(
            ErrorCode::StaleEpoch
                | ErrorCode::InvalidState
                | ErrorCode::NotFound
                | ErrorCode::Conflict
        )
    )
}

impl Session {
    /// Connects and registers, waiting for boardd with backoff if it is not up yet
    /// (a teammate started by systemd may come up before the daemon does).
    ///
    /// `lead_key` registers the member; the member's own credential, from
    /// that registration, opens every connection after it. A token (over the
    /// network) registers it too, and is kept: boardd issues nothing for it.
    pub async fn open(
        socket: Endpoint,
        who: Identity,
        lead_key: Option<Credential>,
        give_up: Duration,
        cancel: CancellationToken,
    ) -> Result<(Session, Member), ClientError> {
        let credential = Mutex::new(lead_key);
        let (client, member) =
            connect_loop(&socket, &who, &credential, &cancel, true, give_up).await?;
        let beat = beat_of(client.welcome().lease_ttl_ms);
        let inner = Inner {
            socket,
            who,
            credential,
            give_up,
            client: RwLock::new(Arc::new(client)),
            generation: AtomicU64::new(0),
            reconnected: watch::Sender::new(0),
            reconnect: tokio::sync::Mutex::new(()),
            adopted: Mutex::new(None),
            // A child: approving a shutdown stops the reconnects, not the teammate.
            cancel: cancel.child_token(),
        };
        let inner = Arc::new(inner);
        tokio::spawn(ping(Arc::downgrade(&inner), beat));
        Ok((Session { inner }, member))
    }

    pub fn who(&self) -> &Identity {
        &self.inner.who
    }

    /// The lease boardd gives claims, from the current connection's welcome.
    pub async fn lease_ttl(&self) -> Duration {
        let ms = self.inner.client.read().await.welcome().lease_ttl_ms;
        Duration::from_millis(ms.max(300))
    }

    /// A claim boardd gave back to us on a reconnect, once.
    pub fn take_adopted(&self) -> Option<TaskId> {
        self.inner
            .adopted
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
    }

    /// The next event boardd pushes to this teammate, from whichever connection is
    /// current: after a reconnect, the new one's. A teammate does not subscribe, so
    /// what comes is what boardd pushes to every holder of a claim: the event that
    /// ended it, when someone else did (protocol §6). Waits as long as it takes;
    /// cancel-safe.
    ///
    /// A connection that closes under it is replaced at once, not at the next
    /// call: a restarted boardd keeps the claim only for its restart grace, and
    /// pushes only to the connection that holds it.
    pub async fn next_event(&self) -> Event {
        let mut reconnected = self.inner.reconnected.subscribe();
        loop {
            reconnected.borrow_and_update();
            // Read before the client, so that a reconnect in between makes the
            // one below a no-op rather than replace a fresh connection.
            let generation = self.inner.generation.load(Ordering::Acquire);
            let client = self.inner.client.read().await.clone();
            if let Some(event) = client.next_event().await {
                return event;
            }
            if self.inner.cancel.is_cancelled() {
                std::future::pending::<()>().await;
            }
            tracing::warn!("lost the connection to boardd; reconnecting");
            if let Err(e) = self.reconnect_after(generation).await {
                tracing::warn!(error = %e, "cannot reconnect to boardd");
                // Someone else's call may still succeed; the sender lives as long
                // as the session, so this cannot fail while we hold it.
                if reconnected.changed().await.is_err() {
                    std::future::pending::<()>().await;
                }
            }
        }
    }

    /// Approves shutdown request `id`. Once boardd has the approval, the teammate
    /// is leaving, and a lost connection is no longer repaired (see the module's
    /// notes). An approval that boardd refused leaves the session as it was.
    pub async fn approve_shutdown(&self, id: RequestId) -> Result<TeamRequest, ClientError> {
        let answer = self
            .call(|c| async move { c.respond_shutdown(id, true, None).await })
            .await;
        if answer.is_ok() {
            self.inner.cancel.cancel();
        }
        answer
    }

    /// Runs `f` against the current connection. If the connection is gone, reconnects
    /// (re-registering) and runs `f` again, until it gets an answer, the teammate is
    /// cancelled, or boardd stays away longer than the give-up time.
    pub async fn call<T, F, Fut>(&self, f: F) -> Result<T, ClientError>
    where
        F: Fn(Arc<Client>) -> Fut,
        Fut: Future<Output = Result<T, ClientError>>,
    {
        let mut repeats = 0u32;
        loop {
            let generation = self.inner.generation.load(Ordering::Acquire);
            let client = self.inner.client.read().await.clone();
            match f(client).await {
                Err(e) if is_disconnect(&e) && !self.inner.cancel.is_cancelled() => {
                    repeats += 1;
                    if repeats > MAX_REPEATS {
                        tracing::error!(error = %e, "the connection keeps dropping on this call; giving up on it");
                        return Err(e);
                    }
                    if repeats > 1 {
                        // Reconnecting worked but the call broke the connection again.
                        let pause = (BACKOFF_START * 2u32.pow(repeats.min(7))).min(BACKOFF_MAX);
                        tokio::time::sleep(pause).await;
                    }
                    tracing::warn!(error = %e, "lost the connection to boardd; reconnecting");
                    self.reconnect_after(generation).await?;
                }
                other => return other,
            }
        }
    }

    /// Replaces the connection. The work runs on a task of its own: if the caller is
    /// dropped half way (a heartbeat stopped because its task ended), the new,
    /// registered connection is still installed instead of being dropped, which
    /// boardd would see as a disconnect that abandons the claim it just gave back.
    async fn reconnect_after(&self, seen: u64) -> Result<(), ClientError> {
        let inner = self.inner.clone();
        let job = tokio::spawn(async move {
            let _one_at_a_time = inner.reconnect.lock().await;
            if inner.generation.load(Ordering::Acquire) != seen {
                // Someone else reconnected while we waited for the lock.
                return Ok(());
            }
            // Make sure the old session is over, or registering again would find our
            // name still bound to it.
            inner.client.read().await.close().await;
            let (client, member) = connect_loop(
                &inner.socket,
                &inner.who,
                &inner.credential,
                &inner.cancel,
                false,
                inner.give_up,
            )
            .await?;
            tracing::info!(task = ?member.task, "reconnected to boardd");
            if let Some(id) = member.task {
                *inner.adopted.lock().unwrap_or_else(|p| p.into_inner()) = Some(id);
            }
            *inner.client.write().await = Arc::new(client);
            let generation = inner.generation.fetch_add(1, Ordering::AcqRel) + 1;
            inner.reconnected.send_replace(generation);
            Ok(())
        });
        match job.await {
            Ok(r) => r,
            Err(e) => Err(ClientError::Closed(format!(
                " (reconnect task failed: {e})"
            ))),
        }
    }
}

/// How often a teammate lets boardd hear from it: a third of the lease, as the
/// claim's heartbeat, so that boardd (which calls a member stalled after two
/// silent beats) hears a live one well before its lease could run out.
fn beat_of(lease_ttl_ms: u64) -> Duration {
    Duration::from_millis(lease_ttl_ms.max(300) / 3)
}

/// Pings boardd once per `beat` for as long as the session lives, whatever the
/// teammate is doing: an idle teammate parked in `wait_for_work` sends nothing
/// else, and boardd would have no way to tell it from a stopped process
/// (protocol §9). Through whichever connection is current; a broken one is
/// left to the callers that repair it. A boardd that predates `ping` refuses
/// it, and never expected it either: the pinging stops.
async fn ping(inner: std::sync::Weak<Inner>, beat: Duration) {
    let mut every = tokio::time::interval(beat);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    every.tick().await;
    loop {
        every.tick().await;
        let Some(inner) = inner.upgrade() else { return };
        let client = inner.client.read().await.clone();
        drop(inner);
        match client.ping().await {
            Ok(()) => {}
            Err(e) if e.code() == Some(ErrorCode::UnknownRequest) => {
                tracing::debug!("boardd does not know `ping`; not pinging");
                return;
            }
            Err(e) => tracing::debug!(error = %e, "ping failed"),
        }
    }
}

/// Connects and registers, retrying with exponential backoff while boardd is down or
/// still remembers our previous session, for at most `give_up`: a teammate whose
/// board is gone for good (its daemon was killed and not restarted) must not linger
/// forever. Presents `credential`, and keeps there the member's own credential
/// when the registration issues one.
async fn connect_loop(
    socket: &Endpoint,
    who: &Identity,
    credential: &Vouch,
    cancel: &CancellationToken,
    first: bool,
    give_up: Duration,
) -> Result<(Client, Member), ClientError> {
    let started = tokio::time::Instant::now();
    let mut pause = BACKOFF_START;
    let mut logged = false;
    loop {
        let attempt = async {
            // The team must exist: a mistyped --team is refused with the teams
            // there are, rather than becoming a team of one. `teamctl spawn
            // --new-team` creates it before the teammate starts.
            let key = credential.lock().unwrap_or_else(|p| p.into_inner()).clone();
            let client = Client::open(
                socket,
                "teammated",
                &who.name,
                &who.team,
                Some(false),
                key.as_ref(),
            )
            .await?;
            let beat = beat_of(client.welcome().lease_ttl_ms);
            let registered = client
                .register_with(RegisterArgs {
                    role: who.role.clone(),
                    pid: Some(std::process::id()),
                    require_plan: who.require_plan,
                    runtime: who.runtime.clone(),
                    model: who.model.clone(),
                    beat_ms: u64::try_from(beat.as_millis()).ok(),
                    sandbox: Some(who.sandbox),
                })
                .await?;
            if let Some(own) = registered.credential {
                *credential.lock().unwrap_or_else(|p| p.into_inner()) = Some(own);
            }
            Ok::<_, ClientError>((client, registered.member))
        };
        // A list of boardd gets each of its tries on top (`Client::open`).
        let tries = u32::try_from(socket.alternatives().len()).unwrap_or(u32::MAX);
        let within =
            ATTEMPT_TIMEOUT + teamboard_protocol::client::ATTEMPT_TIMEOUT * tries.saturating_sub(1);
        let result = match tokio::time::timeout(within, attempt).await {
            Ok(r) => r,
            Err(_) => Err(ClientError::Closed(format!(
                " (boardd did not answer the handshake within {within:?})"
            ))),
        };
        let err = match result {
            Ok(ok) => return Ok(ok),
            Err(e) => e,
        };
        // A name that is still bound to our old session clears as soon as boardd sees
        // that connection close, so it is worth waiting for too. Anything else boardd
        // refuses (a bad name, a protocol mismatch) will not get better.
        let transient = is_disconnect(&err) || err.code() == Some(ErrorCode::AlreadyConnected);
        if !transient || (first && err.code() == Some(ErrorCode::AlreadyConnected)) {
            return Err(err);
        }
        if started.elapsed() >= give_up {
            tracing::error!(error = %err, "boardd has been unreachable for {give_up:?}; giving up");
            return Err(err);
        }
        if !logged {
            tracing::warn!(error = %err, "boardd is not reachable; retrying with backoff for up to {give_up:?}");
            logged = true;
        }
        tokio::select! {
            _ = cancel.cancelled() => return Err(err),
            _ = tokio::time::sleep(pause) => {}
        }
        pause = (pause * 2).min(BACKOFF_MAX);
    }
}
