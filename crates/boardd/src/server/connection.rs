//! One client connection: handshake, then requests in and frames out.
//!
//! Bad input never reaches the actor. A frame that is not JSON of a known shape, or
//! is too long, gets an `error` frame and closes this connection only; an unknown op
//! or bad args get an error reply and the connection stays open. A connection the
//! peer breaks (a reset, a frame cut short by its close) just ends.

use crate::actor::Cmd;
use crate::auth::Authority;
use crate::outbox::{Budget, MAX_IN_FLIGHT, Outbox};
use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use serde::Serialize;
use std::sync::Arc;
use std::time::Duration;
use teamboard_board::SessionId;
use teamboard_protocol::codec::{codec, is_frame_too_large, response_codec};
use teamboard_protocol::frame::RawClientFrame;
use teamboard_protocol::names::validate_name;
use teamboard_protocol::request::RequestError;
use teamboard_protocol::{
    ErrorBody, ErrorCode, Hello, MAX_FRAME_LEN, PROTOCOL_VERSION, Request, ServerFrame, Welcome,
};
use tokio::net::UnixStream;
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio::sync::mpsc;
use tokio_util::codec::{FramedRead, FramedWrite, LengthDelimitedCodec};
use tokio_util::sync::CancellationToken;
use tracing::{Instrument, field};

/// How long a client may take to say hello.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

type Reader = FramedRead<OwnedReadHalf, LengthDelimitedCodec>;
type Writer = FramedWrite<OwnedWriteHalf, LengthDelimitedCodec>;

/// Everything one connection's task needs.
pub struct Connection {
    pub session: SessionId,
    /// The peer's pid, from the kernel (`SO_PEERCRED`), not from the client.
    pub peer_pid: Option<u32>,
    /// A client over TCP (`tcp`): refused at the hello unless its credential
    /// vouches for its name.
    pub network: bool,
    /// Where requests go.
    pub actor: mpsc::Sender<Cmd>,
    /// Announced in `welcome`.
    pub lease_ttl: Duration,
    /// Cancelled once the actor has stopped: the connection closes.
    pub closed: CancellationToken,
    /// The bytes waiting for all connections.
    pub budget: Arc<Budget>,
}

impl Connection {
    /// Serves one connection until it closes, inside a span that names the session
    /// and, once it said hello, who it is.
    pub async fn serve(self, stream: UnixStream) {
        let span = tracing::info_span!(
            "session",
            id = self.session,
            name = field::Empty,
            team = field::Empty
        );
        self.serve_in_span(stream).instrument(span).await
    }

    async fn serve_in_span(self, stream: UnixStream) {
        let (read, write) = stream.into_split();
        let mut reader = FramedRead::new(read, codec());
        let mut writer = FramedWrite::new(write, response_codec());
        let Some((hello, authority)) = handshake(
            &mut reader,
            &mut writer,
            &self.actor,
            self.session,
            self.lease_ttl,
            self.network,
        )
        .await
        else {
            return;
        };
        let span = tracing::Span::current();
        span.record("name", hello.name.as_str());
        span.record("team", hello.team.as_str());
        tracing::debug!(client = %hello.client, "session open");
        let (out, frames) = Outbox::new(writer.into_inner(), self.session, self.budget.clone());
        let closing = out.closing_token();
        let write_task = tokio::spawn(frames.write().in_current_span());
        let open = Cmd::Open {
            session: self.session,
            pid: self.peer_pid,
            team: Arc::from(hello.team),
            name: Arc::from(hello.name),
            authority,
            out: out.clone(),
        };
        if self.actor.send(open).await.is_ok() {
            self.read_requests(&mut reader, &out, &closing).await;
        }
        // What is queued still goes out, to a client that takes it within LINGER.
        out.finish();
        // After boardd stopped, a closing connection is not a teammate going away:
        // its claim waits for the restart grace period instead of being released.
        if !self.closed.is_cancelled() {
            let _ = self
                .actor
                .send(Cmd::Close {
                    session: self.session,
                })
                .await;
        }
        drop(out);
        // The write task ends once every queued frame is out (the actor and the
        // writer thread drop their clones of the outbox when they are done), or
        // once the client has read nothing for LINGER.
        let _ = write_task.await;
        tracing::debug!("session closed");
    }

    /// Reads requests and hands them to the actor until the connection ends or
    /// is closing.
    async fn read_requests(&self, reader: &mut Reader, out: &Outbox, closing: &CancellationToken) {
        loop {
            let frame = tokio::select! {
                f = reader.next() => f,
                _ = closing.cancelled() => return,
                _ = self.closed.cancelled() => return,
            };
            let bytes = match frame {
                None => return,
                Some(Ok(bytes)) => bytes,
                Some(Err(e)) if is_frame_too_large(&e) => {
                    let error = too_large();
                    tracing::warn!(%error, "closing connection");
                    out.close(error);
                    return;
                }
                Some(Err(e)) => {
                    tracing::debug!(error = %e, "connection broken by the client");
                    return;
                }
            };
            // Every request gets exactly one reply, and the outbox counts them back
            // down as they are written, so it knows how many are not yet answered.
            let (id, request) = match decode(&bytes) {
                Decoded::Fatal(error) => {
                    tracing::warn!(%error, "closing connection");
                    out.close(error);
                    return;
                }
                Decoded::Refused { id, error } => {
                    tracing::debug!(id, %error, "request refused");
                    // Counted like any request, so that a flood of bad ones is
                    // refused with `busy` too.
                    out.admit();
                    out.reply_error(id, error);
                    continue;
                }
                Decoded::Request { id, request } => (id, request),
            };
            tracing::debug!(id, op = request.op(), "request");
            if !out.admit() {
                let error = ErrorBody::new(
                    ErrorCode::Busy,
                    format!("more than {MAX_IN_FLIGHT} requests in flight; read the replies"),
                );
                out.reply_error(id, error);
                continue;
            }
            let cmd = Cmd::Request {
                session: self.session,
                id,
                request,
            };
            if self.actor.send(cmd).await.is_err() {
                let error = ErrorBody::new(ErrorCode::ShuttingDown, "boardd is shutting down");
                out.reply_error(id, error);
                return;
            }
        }
    }
}

/// What one frame from an established session asks for.
#[doc(hidden)]
pub enum Decoded {
    Request {
        id: u64,
        request: Request,
    },
    /// A well-formed frame boardd cannot serve (unknown op, bad args): answered
    /// with an error, and the connection stays open.
    Refused {
        id: u64,
        error: ErrorBody,
    },
    /// Not a frame of this protocol: the connection is closed after the error.
    Fatal(ErrorBody),
}

#[doc(hidden)]
pub fn decode(bytes: &[u8]) -> Decoded {
    let (id, op, args) = match serde_json::from_slice::<RawClientFrame>(bytes) {
        Ok(RawClientFrame::Request { id, op, args }) => (id, op, args),
        Ok(RawClientFrame::Hello(_)) => {
            return Decoded::Fatal(ErrorBody::new(ErrorCode::BadFrame, "hello sent twice"));
        }
        Err(e) => {
            return Decoded::Fatal(ErrorBody::new(
                ErrorCode::BadFrame,
                format!(
                    "malformed frame: {e}; expected {{\"type\":\"request\",\"id\":N,\"op\":...,\"args\":{{...}}}}"
                ),
            ));
        }
    };
    match Request::parse(&op, args) {
        Ok(request) => Decoded::Request { id, request },
        Err(e @ RequestError::UnknownOp(_)) => Decoded::Refused {
            id,
            error: ErrorBody::new(
                ErrorCode::UnknownRequest,
                format!("{e}; see docs/protocol.md for the list"),
            ),
        },
        Err(e @ RequestError::InvalidArgs { .. }) => Decoded::Refused {
            id,
            error: ErrorBody::new(ErrorCode::InvalidArgs, e.to_string()),
        },
    }
}

fn too_large() -> ErrorBody {
    ErrorBody::new(
        ErrorCode::FrameTooLarge,
        format!("frame longer than {MAX_FRAME_LEN} bytes"),
    )
}

/// Reads and answers the hello; `None` when the connection is not to go on.
/// A hello that nobody vouches for is welcomed all the same (see `auth`).
async fn handshake(
    reader: &mut Reader,
    writer: &mut Writer,
    actor: &mpsc::Sender<Cmd>,
    session: SessionId,
    lease_ttl: Duration,
    network: bool,
) -> Option<(Hello, Authority)> {
    let first = match tokio::time::timeout(HANDSHAKE_TIMEOUT, reader.next()).await {
        Ok(Some(Ok(bytes))) => bytes,
        Ok(Some(Err(e))) if is_frame_too_large(&e) => {
            send_error(writer, too_large()).await;
            return None;
        }
        Ok(Some(Err(e))) => {
            tracing::debug!(error = %e, "connection broken before hello");
            return None;
        }
        Ok(None) => return None,
        Err(_) => {
            let secs = HANDSHAKE_TIMEOUT.as_secs();
            let error = ErrorBody::new(
                ErrorCode::HandshakeRequired,
                format!("no hello within {secs} s"),
            );
            send_error(writer, error).await;
            return None;
        }
    };
    let hello = match serde_json::from_slice::<RawClientFrame>(&first) {
        Ok(RawClientFrame::Hello(h)) => h,
        Ok(RawClientFrame::Request { .. }) => {
            let error = ErrorBody::new(
                ErrorCode::HandshakeRequired,
                "the first frame must be a hello",
            );
            send_error(writer, error).await;
            return None;
        }
        Err(e) => {
            let error = ErrorBody::new(ErrorCode::BadFrame, format!("malformed hello: {e}"));
            send_error(writer, error).await;
            return None;
        }
    };
    let admitted = match refusal(&hello) {
        Some(reason) => Err(reason),
        None => admit(actor, &hello, network).await,
    };
    let authority = match admitted {
        Ok(authority) => authority,
        Err(reason) => {
            tracing::info!(%reason, "rejecting client");
            let _ = send(writer, &ServerFrame::Reject { reason }).await;
            return None;
        }
    };
    let welcome = ServerFrame::Welcome(Welcome {
        protocol: PROTOCOL_VERSION,
        server: format!("boardd {}", env!("CARGO_PKG_VERSION")),
        session,
        lease_ttl_ms: u64::try_from(lease_ttl.as_millis()).unwrap_or(u64::MAX),
    });
    send(writer, &welcome).await.ok()?;
    Some((hello, authority))
}

/// Why a hello is refused, if it is.
#[doc(hidden)]
pub fn refusal(hello: &Hello) -> Option<String> {
    if hello.protocol != PROTOCOL_VERSION {
        Some(format!(
            "protocol version {} is not supported; this boardd speaks version {PROTOCOL_VERSION}. \
             Install matching teamboard versions (`cargo xtask install`) and restart boardd",
            hello.protocol
        ))
    } else if let Err(e) = validate_name(&hello.name) {
        Some(format!("bad name in hello: {e}"))
    } else if let Err(e) = validate_name(&hello.team) {
        Some(format!("bad team in hello: {e}"))
    } else {
        None
    }
}

/// Asks the actor who vouches for the hello's name, and whether its team may
/// be worked in (creating it when the hello says to): the session's authority,
/// or the refusal.
async fn admit(
    actor: &mpsc::Sender<Cmd>,
    hello: &Hello,
    network: bool,
) -> Result<Authority, String> {
    let (reply, answer) = tokio::sync::oneshot::channel();
    let cmd = Cmd::Admit {
        team: Arc::from(hello.team.as_str()),
        name: Arc::from(hello.name.as_str()),
        credential: hello.credential.clone(),
        new_team: hello.new_team,
        network,
        reply,
    };
    let stopping = || Err("boardd is shutting down".to_string());
    if actor.send(cmd).await.is_err() {
        return stopping();
    }
    answer.await.unwrap_or_else(|_| stopping())
}

async fn send_error(writer: &mut Writer, error: ErrorBody) {
    let _ = send(writer, &ServerFrame::Error { error }).await;
}

async fn send<T: Serialize>(writer: &mut Writer, frame: &T) -> std::io::Result<()> {
    let bytes = serde_json::to_vec(frame).map_err(std::io::Error::other)?;
    writer.send(Bytes::from(bytes)).await
}

/// Refuses a peer at once, before reading anything from it: writes the `reject`
/// frame without waiting (a new connection's buffer always has room for it).
/// Dropping `stream` then closes the connection and gives its descriptor back.
pub fn reject(stream: &UnixStream, reason: String) {
    let frame = ServerFrame::Reject { reason };
    let Ok(payload) = serde_json::to_vec(&frame) else {
        return;
    };
    let Ok(len) = u32::try_from(payload.len()) else {
        return;
    };
    let mut bytes = Vec::with_capacity(4 + payload.len());
    bytes.extend_from_slice(&len.to_be_bytes());
    bytes.extend_from_slice(&payload);
    match stream.try_write(&bytes) {
        Ok(n) if n == bytes.len() => {}
        Ok(n) => tracing::debug!(n, "reject cut short"),
        Err(error) => tracing::debug!(%error, "cannot send reject"),
    }
}
