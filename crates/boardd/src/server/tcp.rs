//! The TCP listener: TLS (or, on loopback only, plain TCP for tests), relayed
//! onto a Unix socket pair so that a network client is served by the very code
//! that serves a local one.
//!
//! Each accepted connection finishes its TLS handshake in a task of its own,
//! bounded by the hello's timeout, so a client that stalls or sends garbage
//! holds up only itself. The finished stream is then copied both ways to one
//! end of a `socketpair`; the other end goes to the accept loop like a Unix
//! client, with no pid and no same-user check (a network peer is vouched for
//! by its token alone).
//!
//! Alternatives that lost:
//! - A `Connection` generic over the stream: the outbox writes replies
//!   straight from the actor's thread with `try_write` on a shared write half,
//!   waits on `writable()`, and shuts the socket down by descriptor (see
//!   `outbox`). A TLS stream has none of these: its writes need `&mut` and a
//!   record layer, so each would have to go through a lock or a task, and the
//!   Unix path, which carries the benchmarks, would pay for it too.
//! - Plain TCP off loopback: the token would cross the network in clear.
//!
//! The relay costs a copy of each byte and two descriptors per network
//! client; back-pressure is kept, since the relay stops reading its end of the
//! pair while the client's TCP window is full. Once boardd is done with the
//! connection, the relay gets the outbox's linger to hand the last frames to
//! a client that does not read, and then drops it.

use super::connection::HANDSHAKE_TIMEOUT;
use crate::outbox::LINGER;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, UnixStream};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;

/// Where boardd listens on TCP, and how.
#[derive(Debug, Clone)]
pub struct TcpListen {
    pub addr: SocketAddr,
    /// The certificate chain and key (PEM files); `None`: plain TCP, which
    /// only a loopback address may use (tests and benchmarks).
    pub tls: Option<TlsFiles>,
}

/// A certificate chain and its private key, as PEM files.
#[derive(Debug, Clone)]
pub struct TlsFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
}

#[derive(Debug, thiserror::Error)]
pub enum TcpError {
    #[error(
        "plain TCP is only for loopback addresses (tests); {0} is not one. Give --tls-cert and \
         --tls-key"
    )]
    PlaintextOffLoopback(SocketAddr),
    #[error(transparent)]
    Tls(#[from] teamboard_protocol::tls::TlsError),
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
}

/// A network client, relayed: boardd's end of its socket pair, and the token
/// to cancel once boardd is done with it.
pub struct Relayed {
    pub stream: UnixStream,
    pub done: CancellationToken,
    pub peer: SocketAddr,
}

/// A bound TCP listener: where, and the connections it has finished.
pub struct Listening {
    /// Where it is bound (its port chosen by the system when the spec said 0).
    pub addr: SocketAddr,
    /// Connections whose handshake is done, relayed.
    pub incoming: mpsc::Receiver<Relayed>,
    /// The accept loop, which owns the listening socket.
    pub accepting: Accepting,
}

/// The accept loop of a [`Listening`].
pub struct Accepting(JoinHandle<()>);

impl Accepting {
    /// Stops accepting and returns once the listening socket is closed, so
    /// that the port can be bound again at once: a boardd on a shared database
    /// hands its port between its follower's forwarding and its core. Dropping
    /// the receiver also ends the loop, but only at its next poll.
    pub async fn close(self) {
        self.0.abort();
        let _ = self.0.await;
    }
}

/// Binds `spec` and starts accepting on it: finished connections arrive on
/// `incoming`. Checked before anything is bound: plain TCP off loopback, and
/// a certificate that does not load.
pub async fn listen(spec: &TcpListen) -> Result<Listening, TcpError> {
    let acceptor = match &spec.tls {
        Some(files) => Some(TlsAcceptor::from(teamboard_protocol::tls::server_config(
            &files.cert,
            &files.key,
        )?)),
        None if spec.addr.ip().is_loopback() => None,
        None => return Err(TcpError::PlaintextOffLoopback(spec.addr)),
    };
    let bind = |source| TcpError::Bind {
        addr: spec.addr,
        source,
    };
    let listener = TcpListener::bind(spec.addr).await.map_err(bind)?;
    let addr = listener.local_addr().map_err(bind)?;
    let (tx, incoming) = mpsc::channel(64);
    let accepting = Accepting(tokio::spawn(accept(listener, acceptor, tx)));
    Ok(Listening {
        addr,
        incoming,
        accepting,
    })
}

/// Accepts forever (until the receiver is gone), one task per handshake.
async fn accept(
    listener: TcpListener,
    acceptor: Option<TlsAcceptor>,
    ready: mpsc::Sender<Relayed>,
) {
    loop {
        let (tcp, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of descriptors and the like: pause rather than spin.
                    tracing::warn!(error = %e, "TCP accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = ready.closed() => return,
        };
        // Frames are small and each waits for an answer: Nagle would hold
        // them for the peer's delayed ACK.
        let _ = tcp.set_nodelay(true);
        let (acceptor, ready) = (acceptor.clone(), ready.clone());
        tokio::spawn(async move {
            match acceptor {
                None => start_relay(tcp, peer, &ready).await,
                Some(acceptor) => {
                    match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await {
                        Ok(Ok(tls)) => start_relay(tls, peer, &ready).await,
                        Ok(Err(e)) => tracing::info!(%peer, error = %e, "TLS handshake failed"),
                        Err(_) => tracing::info!(%peer, "TLS handshake timed out"),
                    }
                }
            }
        });
    }
}

/// Pairs `io` with a Unix socket, hands boardd its end, and copies both ways
/// until either side ends, or for at most [`LINGER`] once boardd is done.
async fn start_relay<S>(mut io: S, peer: SocketAddr, ready: &mpsc::Sender<Relayed>)
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let (ours, mut theirs) = match UnixStream::pair() {
        Ok(pair) => pair,
        Err(e) => {
            tracing::warn!(%peer, error = %e, "cannot relay a network client");
            return;
        }
    };
    let done = CancellationToken::new();
    let relayed = Relayed {
        stream: ours,
        done: done.clone(),
        peer,
    };
    if ready.send(relayed).await.is_err() {
        return;
    }
    let lingered = async {
        done.cancelled().await;
        tokio::time::sleep(LINGER).await;
    };
    tokio::select! {
        copied = tokio::io::copy_bidirectional(&mut io, &mut theirs) => {
            if let Err(e) = copied {
                tracing::debug!(%peer, error = %e, "network connection ended");
            }
        }
        _ = lingered => tracing::debug!(%peer, "network client read nothing after its session closed; dropping it"),
    }
}
