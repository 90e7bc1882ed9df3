//! One client connection: handshake, then requests in and frames out.
//!
//! Bad input never reaches the actor. A frame that is not JSON of a known shape, or
//! is too long, gets an `error` frame and closes this connection only; an unknown op
//! gets an error response and the connection stays open.

use crate::actor::Cmd;
use crate::outbox::{MAX_IN_FLIGHT, Outbox};
use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use serde::Serialize;
use std::sync::Arc;
use std::time::Duration;
use teamboard_board::SessionId;
use teamboard_protocol::codec::{codec, is_frame_too_large, response_codec};
use teamboard_protocol::frame::RawClientFrame;
use teamboard_protocol::names::validate_name;
use teamboard_protocol::{ErrorBody, ErrorCode, PROTOCOL_VERSION, Request, ServerFrame, Welcome};
use tokio::net::UnixStream;
use tokio::sync::mpsc;
use tokio_util::codec::{FramedRead, FramedWrite, LengthDelimitedCodec};
use tokio_util::sync::CancellationToken;

/// How long a client may take to say hello.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

type Reader = FramedRead<tokio::net::unix::OwnedReadHalf, LengthDelimitedCodec>;
type Writer = FramedWrite<tokio::net::unix::OwnedWriteHalf, LengthDelimitedCodec>;

/// Serves one connection until it closes.
pub async fn serve(
    stream: UnixStream,
    session: SessionId,
    actor: mpsc::Sender<Cmd>,
    lease_ttl: Duration,
    stopped: CancellationToken,
) {
    let (read, write) = stream.into_split();
    let mut reader = FramedRead::new(read, codec());
    let mut writer = FramedWrite::new(write, response_codec());
    let hello = match handshake(&mut reader, &mut writer, session, lease_ttl).await {
        Some(h) => h,
        None => return,
    };
    tracing::debug!(session, name = %hello.name, team = %hello.team, client = %hello.client, "session open");
    let (out, frames) = Outbox::new(writer.into_inner());
    let kill = out.kill_token();
    let write_task = tokio::spawn(frames.write());
    let team: Arc<str> = hello.team.into();
    let name: Arc<str> = hello.name.into();
    loop {
        let frame = tokio::select! {
            f = reader.next() => f,
            _ = kill.cancelled() => break,
            _ = stopped.cancelled() => break,
        };
        let decoded = match frame {
            None => break,
            Some(Ok(bytes)) => decode(&bytes),
            Some(Err(e)) => Decoded::Fatal(read_error(&e)),
        };
        // Every request gets exactly one response, and the outbox counts them back
        // down as they are written, so it knows how many are not yet answered.
        let (id, request) = match decoded {
            Decoded::Fatal(error) => {
                tracing::warn!(session, %error, "closing connection");
                out.close(error);
                break;
            }
            Decoded::Refused { id, error } => {
                // Counted like any request, so that a flood of bad ones is
                // refused with `busy` too.
                out.admit();
                out.respond(id, Err(error));
                continue;
            }
            Decoded::Request { id, request } => (id, request),
        };
        if !out.admit() {
            let error = ErrorBody::new(
                ErrorCode::Busy,
                format!("more than {MAX_IN_FLIGHT} requests in flight; read the responses"),
            );
            out.respond(id, Err(error));
            continue;
        }
        let cmd = Cmd::Request {
            session,
            team: team.clone(),
            name: name.clone(),
            id,
            request,
            out: out.clone(),
        };
        if actor.send(cmd).await.is_err() {
            out.respond(
                id,
                Err(ErrorBody::new(
                    ErrorCode::ShuttingDown,
                    "boardd is shutting down",
                )),
            );
            break;
        }
    }
    // After boardd stopped, a closing connection is not a teammate going away: its
    // claim waits for the restart grace period instead of being released.
    if !stopped.is_cancelled() {
        let _ = actor.send(Cmd::Disconnect { session }).await;
    }
    drop(out);
    // The writer ends once every queued frame is out: the actor and the writer
    // thread drop their clones of the outbox when they are done with them.
    let _ = tokio::time::timeout(Duration::from_secs(5), write_task).await;
    tracing::debug!(session, "session closed");
}

/// What one frame from an established session asks for.
enum Decoded {
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

fn decode(bytes: &[u8]) -> Decoded {
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
    match RawClientFrame::typed_request(&op, args) {
        Ok(request) => Decoded::Request { id, request },
        Err(_) if !Request::is_known_op(&op) => Decoded::Refused {
            id,
            error: ErrorBody::new(
                ErrorCode::UnknownRequest,
                format!("unknown op '{op}'; see docs/protocol.md for the list"),
            ),
        },
        Err(e) => Decoded::Refused {
            id,
            error: ErrorBody::new(
                ErrorCode::InvalidArgs,
                format!("invalid args for '{op}': {e}"),
            ),
        },
    }
}

/// The error to close with when a frame cannot even be read.
fn read_error(e: &std::io::Error) -> ErrorBody {
    if is_frame_too_large(e) {
        ErrorBody::new(
            ErrorCode::FrameTooLarge,
            format!(
                "frame longer than {} bytes",
                teamboard_protocol::MAX_FRAME_LEN
            ),
        )
    } else {
        ErrorBody::new(ErrorCode::BadFrame, format!("cannot read frame: {e}"))
    }
}

async fn handshake(
    reader: &mut Reader,
    writer: &mut Writer,
    session: SessionId,
    lease_ttl: Duration,
) -> Option<teamboard_protocol::Hello> {
    let first = match tokio::time::timeout(HANDSHAKE_TIMEOUT, reader.next()).await {
        Ok(Some(Ok(bytes))) => bytes,
        Ok(Some(Err(e))) => {
            send_error(writer, read_error(&e)).await;
            return None;
        }
        Ok(None) => return None,
        Err(_) => {
            send_error(
                writer,
                ErrorBody::new(ErrorCode::HandshakeRequired, "no hello within 10 s"),
            )
            .await;
            return None;
        }
    };
    let hello = match serde_json::from_slice::<RawClientFrame>(&first) {
        Ok(RawClientFrame::Hello(h)) => h,
        Ok(RawClientFrame::Request { .. }) => {
            send_error(
                writer,
                ErrorBody::new(
                    ErrorCode::HandshakeRequired,
                    "the first frame must be a hello",
                ),
            )
            .await;
            return None;
        }
        Err(e) => {
            send_error(
                writer,
                ErrorBody::new(ErrorCode::BadFrame, format!("malformed hello: {e}")),
            )
            .await;
            return None;
        }
    };
    let refusal = if hello.protocol != PROTOCOL_VERSION {
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
    };
    if let Some(reason) = refusal {
        tracing::info!(session, %reason, "rejecting client");
        let _ = send(writer, &ServerFrame::Reject { reason }).await;
        return None;
    }
    let welcome = ServerFrame::Welcome(Welcome {
        protocol: PROTOCOL_VERSION,
        server: format!("boardd {}", env!("CARGO_PKG_VERSION")),
        session,
        lease_ttl_ms: lease_ttl.as_millis() as u64,
    });
    send(writer, &welcome).await.ok()?;
    Some(hello)
}

async fn send_error(writer: &mut Writer, error: ErrorBody) {
    let _ = send(writer, &ServerFrame::Error { error }).await;
}

async fn send<T: Serialize>(writer: &mut Writer, frame: &T) -> std::io::Result<()> {
    let bytes = serde_json::to_vec(frame).map_err(std::io::Error::other)?;
    writer.send(Bytes::from(bytes)).await
}

/// Answers a peer that may not connect, then closes.
pub async fn reject(stream: UnixStream, reason: String) {
    let (_, write) = stream.into_split();
    let mut writer = FramedWrite::new(write, response_codec());
    let _ = send(&mut writer, &ServerFrame::Reject { reason }).await;
}
