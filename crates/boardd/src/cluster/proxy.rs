//! A follower's socket: every client connection, piped byte for byte to the
//! boardd that decides.
//!
//! The follower binds the same Unix socket path a deciding boardd would (with
//! [`server::bind`]'s checks: mode 0600, stale sockets, peers of another user),
//! so clients never know which one they reached. Each connection is dialled
//! through a [`Dial`] to the leader's advertised address and copied both ways
//! until either side closes or the leader changes: then it is closed, and the
//! clients reconnect (teammated's session does so with backoff and registers
//! again; a teamctl command fails with the closed connection and is run again),
//! reaching the new leader.
//!
//! A follower given `--listen-tcp` serves it too, as the leader does: it ends
//! the client's TLS (with the same certificate) and forwards the bytes
//! within, so a teammate on another host may connect to any boardd. The
//! leader sees every forwarded client as a network one, vouched for by its
//! token or credential alone.
//!
//! The dialler takes the leader's advertised address in the forms clients'
//! `--connect` takes: a socket path (several boardd on one host), `tls://` (between
//! hosts), `tcp://` on loopback. It is a [`Dial`] so that tests may dial otherwise.
//!
//! Alternatives that lost:
//! - Decoding frames and re-sending them: the follower would have to keep up with
//!   every protocol change, and the leader would see requests, not sessions. Bytes
//!   keep one session per client end to end.
//! - Answering a leaderless client with `reject`: teammated takes a refusal as
//!   final and stops; the `error` frame with `shutting_down` it takes as a
//!   restarting boardd, and tries again.

use super::watch::Leaders;
use crate::server;
use crate::server::tcp::Relayed;
use futures_util::future::BoxFuture;
use futures_util::{SinkExt as _, StreamExt as _};
use std::sync::Arc;
use std::time::Duration;
use teamboard_protocol::{ErrorBody, ErrorCode, ServerFrame, tls};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::mpsc;
use tokio_util::codec::Framed;
use tokio_util::sync::CancellationToken;
use tracing::Instrument as _;

/// How long dialling the leader may take before the client is told it cannot be
/// reached.
const DIAL_TIMEOUT: Duration = Duration::from_secs(2);
/// How long a refused client has to send its hello, so that it reads the answer
/// as the handshake's.
const HELLO_TIMEOUT: Duration = Duration::from_secs(2);

/// A connection to the leader: any byte stream.
pub trait Upstream: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Upstream for T {}

/// Opens a connection to a leader's advertised address.
pub type Dial =
    Arc<dyn Fn(String) -> BoxFuture<'static, std::io::Result<Box<dyn Upstream>>> + Send + Sync>;

/// Why an advertised address cannot be dialled.
#[derive(Debug, thiserror::Error)]
pub enum AddrError {
    #[error(
        "'{0}' is not an address a leader can advertise: give its socket's absolute path, \
         tls://HOST:PORT, or tcp://127.0.0.1:PORT (loopback only)"
    )]
    Unknown(String),
    #[error("'{0}': plain tcp:// is only for loopback addresses; use tls://")]
    PlaintextOffLoopback(String),
}

/// An advertised address, in the forms clients' `--connect` takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Addr {
    /// Its socket, for several boardd on one host: no network between them.
    Unix(std::path::PathBuf),
    /// Its TCP listener, in plain TCP on loopback.
    Tcp(std::net::SocketAddr),
    /// Its TCP listener over TLS, between hosts.
    Tls { host: String, port: u16 },
}

impl Addr {
    /// Parses an absolute path, `tls://HOST:PORT` or `tcp://LOOPBACK:PORT`.
    pub fn parse(text: &str) -> Result<Addr, AddrError> {
        let unknown = || AddrError::Unknown(text.to_string());
        if text.starts_with('/') {
            return Ok(Addr::Unix(text.into()));
        }
        if let Some(rest) = text.strip_prefix("tcp://") {
            let addr: std::net::SocketAddr = rest.parse().map_err(|_| unknown())?;
            if !addr.ip().is_loopback() {
                return Err(AddrError::PlaintextOffLoopback(text.to_string()));
            }
            return Ok(Addr::Tcp(addr));
        }
        let rest = text.strip_prefix("tls://").ok_or_else(unknown)?;
        let (host, port) = rest.rsplit_once(':').ok_or_else(unknown)?;
        let port = port.parse().map_err(|_| unknown())?;
        if host.is_empty() {
            return Err(unknown());
        }
        Ok(Addr::Tls {
            host: host.to_string(),
            port,
        })
    }
}

/// Dials a leader at its advertised [`Addr`], trusting `ca` (PEM) for TLS, or
/// the platform's roots without one; the trust is loaded at the first TLS dial.
pub fn dialler(ca: Option<std::path::PathBuf>) -> Dial {
    let trust = Arc::new(std::sync::OnceLock::new());
    Arc::new(move |addr: String| {
        let (ca, trust) = (ca.clone(), trust.clone());
        Box::pin(async move {
            let addr = Addr::parse(&addr).map_err(std::io::Error::other)?;
            match addr {
                Addr::Unix(path) => {
                    Ok(Box::new(UnixStream::connect(path).await?) as Box<dyn Upstream>)
                }
                Addr::Tcp(addr) => {
                    let stream = tokio::net::TcpStream::connect(addr).await?;
                    stream.set_nodelay(true)?;
                    Ok(Box::new(stream) as Box<dyn Upstream>)
                }
                Addr::Tls { host, port } => {
                    let config = trust
                        .get_or_init(|| {
                            tls::client_config(ca.as_deref()).map_err(|e| e.to_string())
                        })
                        .clone()
                        .map_err(std::io::Error::other)?;
                    let name = tls::server_name(&host).map_err(std::io::Error::other)?;
                    // As one string, so that an IPv6 host keeps its brackets
                    // and parses (a bare `[fd00::1]` host neither parses nor
                    // resolves).
                    let stream = tokio::net::TcpStream::connect(format!("{host}:{port}")).await?;
                    stream.set_nodelay(true)?;
                    let stream = tokio_rustls::TlsConnector::from(config)
                        .connect(name, stream)
                        .await?;
                    Ok(Box::new(stream) as Box<dyn Upstream>)
                }
            }
        })
    })
}

/// Forwards the clients of `listener`, and the network clients of `network`
/// (this boardd's `--listen-tcp`, its TLS ended here), to the leader that
/// `leaders` names until `stop` is cancelled; then closes every forwarded
/// connection and returns. `me` is this boardd's node: a row naming it is a
/// lease this boardd gave up, never forwarded to (it would forward to itself,
/// without end).
pub async fn run(
    listener: UnixListener,
    mut network: Option<mpsc::Receiver<Relayed>>,
    leaders: Leaders,
    dial: Dial,
    me: String,
    stop: CancellationToken,
) {
    let me: Arc<str> = Arc::from(me);
    let connections = CancellationToken::new();
    loop {
        // A network client's relay is told when its connection is done with.
        let (stream, relay_done) = tokio::select! {
            _ = stop.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    if let Err(why) = server::bind::same_user(&stream) {
                        tracing::warn!(%why, "refusing peer");
                        server::connection::reject(&stream, why.to_string());
                        continue;
                    }
                    (stream, None)
                }
                Err(error) => {
                    tracing::warn!(%error, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            Some(relayed) = server::next_relayed(&mut network) => {
                tracing::debug!(peer = %relayed.peer, "network client");
                (relayed.stream, Some(relayed.done.drop_guard()))
            }
        };
        let leaders = leaders.clone();
        let (dial, me) = (dial.clone(), me.clone());
        let closed = connections.child_token();
        tokio::spawn(async move {
            tokio::select! {
                _ = forward(stream, leaders, dial, &me) => {}
                _ = closed.cancelled() => {}
            }
            drop(relay_done);
        });
    }
    connections.cancel();
}

/// One client: to the leader while it leads, or an answer saying why not.
async fn forward(mut client: UnixStream, mut leaders: Leaders, dial: Dial, me: &str) {
    let leader = leaders.borrow_and_update().clone();
    let Some(leader) = leader.filter(|l| l.live() && l.node != me) else {
        let why = "no boardd holds the board yet (the last one stopped or its lease ran out); \
                   one takes it over within a few seconds. Try again";
        return refuse(client, why.to_string()).await;
    };
    let dialled = tokio::time::timeout(DIAL_TIMEOUT, dial(leader.addr.clone())).await;
    let mut upstream = match dialled {
        Ok(Ok(upstream)) => upstream,
        Ok(Err(e)) => {
            let why = format!(
                "boardd {} holds the board, and {} cannot be reached: {e}. Try again",
                leader.node, leader.addr
            );
            return refuse(client, why).await;
        }
        Err(_) => {
            let why = format!(
                "boardd {} holds the board, and {} does not answer. Try again",
                leader.node, leader.addr
            );
            return refuse(client, why).await;
        }
    };
    let span = tracing::debug_span!("forward", term = leader.term, node = %leader.node);
    let moved = leaders.wait_for(|now| now.as_ref().is_none_or(|l| l.term != leader.term));
    let piped = async {
        tokio::select! {
        result = tokio::io::copy_bidirectional(&mut client, &mut upstream) => {
            if let Err(error) = result {
                tracing::debug!(%error, "forwarded connection ended");
            }
        }
        // The board moved: this connection served a boardd that no longer
        // decides. Closing it sends the client to the new one.
        _ = moved => tracing::debug!("leader changed; closing a forwarded connection"),
        }
    };
    piped.instrument(span).await;
}

/// Answers a client that cannot be forwarded: reads its hello (so that it reads
/// the answer as the handshake's), then sends a connection-level `error` with
/// `shutting_down`, which clients take as "try again", and closes.
async fn refuse(client: UnixStream, why: String) {
    tracing::info!(%why, "refusing a client");
    let mut framed = Framed::new(client, teamboard_protocol::codec::codec());
    let _ = tokio::time::timeout(HELLO_TIMEOUT, framed.next()).await;
    let frame = ServerFrame::Error {
        error: ErrorBody::new(ErrorCode::ShuttingDown, why),
    };
    if let Ok(bytes) = serde_json::to_vec(&frame) {
        let _ = framed.send(bytes::Bytes::from(bytes)).await;
    }
}
