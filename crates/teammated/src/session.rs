//! The teammate's session with boardd, kept open across daemon restarts.
//!
//! boardd binds a claim to the session that made it. If the daemon restarts, the
//! teammate reconnects and registers again under the same name, and boardd hands it
//! back the claim it still holds for that name (within its restart grace). So every
//! call here goes through [`Session::call`], which reconnects with backoff when the
//! connection is gone and then repeats the call.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use teamboard_protocol::{Client, ClientError, ErrorCode, Member};
use tokio::sync::RwLock;
use tokio_util::sync::CancellationToken;

/// Who the teammate is, as boardd knows it.
#[derive(Debug, Clone)]
pub struct Identity {
    pub name: String,
    pub role: String,
    pub team: String,
}

/// One teammate's connection to boardd.
pub struct Session {
    socket: std::path::PathBuf,
    /// How long boardd may stay unreachable before the teammate gives up.
    give_up: Duration,
    who: Identity,
    client: RwLock<Arc<Client>>,
    /// Bumped on every reconnect, so that concurrent callers that saw the same broken
    /// connection reconnect once, not once each.
    generation: std::sync::atomic::AtomicU64,
    reconnect: tokio::sync::Mutex<()>,
    cancel: CancellationToken,
}

/// The first and the longest pause between reconnect attempts.
const BACKOFF_START: Duration = Duration::from_millis(50);
const BACKOFF_MAX: Duration = Duration::from_secs(5);

/// Whether an error means the connection is gone (as opposed to boardd refusing the
/// request), so reconnecting and repeating the call is the right answer.
pub fn is_disconnect(e: &ClientError) -> bool {
    match e {
        ClientError::NotRunning { .. } | ClientError::Connect { .. } | ClientError::Closed(_) => {
            true
        }
        ClientError::Server(body) => body.code == ErrorCode::ShuttingDown,
        ClientError::Rejected(_) | ClientError::Protocol(_) => false,
    }
}

impl Session {
    /// Connects and registers, waiting for boardd with backoff if it is not up yet
    /// (a teammate started by systemd may come up before the daemon does).
    pub async fn open(
        socket: std::path::PathBuf,
        who: Identity,
        give_up: Duration,
        cancel: CancellationToken,
    ) -> Result<(Session, Member), ClientError> {
        let (client, member) = connect_loop(&socket, &who, &cancel, true, give_up).await?;
        let session = Session {
            socket,
            give_up,
            who,
            client: RwLock::new(Arc::new(client)),
            generation: Default::default(),
            reconnect: tokio::sync::Mutex::new(()),
            cancel,
        };
        Ok((session, member))
    }

    pub fn who(&self) -> &Identity {
        &self.who
    }

    /// The lease boardd gives claims, from the current connection's welcome.
    pub async fn lease_ttl(&self) -> Duration {
        Duration::from_millis(self.client.read().await.welcome().lease_ttl_ms.max(300))
    }

    /// Runs `f` against the current connection. If the connection is gone, reconnects
    /// (re-registering) and runs `f` again, until it gets an answer or the teammate is
    /// cancelled.
    pub async fn call<T, F, Fut>(&self, f: F) -> Result<T, ClientError>
    where
        F: Fn(Arc<Client>) -> Fut,
        Fut: Future<Output = Result<T, ClientError>>,
    {
        loop {
            let generation = self.generation.load(std::sync::atomic::Ordering::Acquire);
            let client = self.client.read().await.clone();
            match f(client).await {
                Err(e) if is_disconnect(&e) && !self.cancel.is_cancelled() => {
                    tracing::warn!(error = %e, "lost the connection to boardd; reconnecting");
                    self.reconnect_after(generation).await?;
                }
                other => return other,
            }
        }
    }

    async fn reconnect_after(&self, seen: u64) -> Result<(), ClientError> {
        let _one_at_a_time = self.reconnect.lock().await;
        if self.generation.load(std::sync::atomic::Ordering::Acquire) != seen {
            // Someone else reconnected while we waited for the lock.
            return Ok(());
        }
        let (client, member) =
            connect_loop(&self.socket, &self.who, &self.cancel, false, self.give_up).await?;
        tracing::info!(task = ?member.task, "reconnected to boardd");
        *self.client.write().await = Arc::new(client);
        self.generation
            .fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        Ok(())
    }
}

/// Connects and registers, retrying with exponential backoff while boardd is down or
/// still remembers our previous session, for at most `give_up`: a teammate whose
/// board is gone for good (its daemon was killed and not restarted) must not linger
/// forever.
async fn connect_loop(
    socket: &std::path::Path,
    who: &Identity,
    cancel: &CancellationToken,
    first: bool,
    give_up: Duration,
) -> Result<(Client, Member), ClientError> {
    let started = tokio::time::Instant::now();
    let mut pause = BACKOFF_START;
    let mut logged = false;
    loop {
        let attempt = async {
            let client = Client::connect(socket, "teammated", &who.name, &who.team).await?;
            let member = client.register(&who.role, Some(std::process::id())).await?;
            Ok::<_, ClientError>((client, member))
        };
        let err = match attempt.await {
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
