//! The frames boardd writes after the handshake, encoded: a 4-byte big-endian
//! length, then one JSON document (see `docs/protocol.md`).
//!
//! Frames are encoded into a caller's buffer so that the write task can put a
//! whole batch on the socket with one system call.

use crate::reply::Reply;
use bytes::{BufMut, BytesMut};
use serde::Serialize;
use teamboard_protocol::{ErrorBody, ErrorCode, Event, MAX_RESPONSE_LEN, ServerFrame};

/// Appends a reply (a `response` frame, in the protocol's words). A reply too
/// large for one frame is replaced by an error, so that the client always hears
/// back.
pub fn reply(buf: &mut BytesMut, id: u64, result: &Result<Reply, ErrorBody>) {
    let frame = ReplyFrame {
        kind: "response",
        id,
        result: result.as_ref().ok(),
        error: result.as_ref().err(),
    };
    let error = match put(buf, &frame) {
        Ok(len) if len <= MAX_RESPONSE_LEN => return,
        Ok(len) => {
            tracing::warn!(id, len, "reply too large for a frame");
            ErrorBody::new(
                ErrorCode::FrameTooLarge,
                format!(
                    "the reply is {len} bytes, over the {MAX_RESPONSE_LEN}-byte frame limit; ask for less (a status filter or a smaller limit)"
                ),
            )
        }
        Err(e) => ErrorBody::new(ErrorCode::Internal, format!("cannot encode the reply: {e}")),
    };
    let frame = ReplyFrame {
        kind: "response",
        id,
        result: None,
        error: Some(&error),
    };
    // Cannot fail: an error body is strings and an enum.
    let _ = put(buf, &frame);
}

/// Appends an event frame.
pub fn event(buf: &mut BytesMut, event: &Event) {
    let frame = EventFrame {
        kind: "event",
        event,
    };
    match put(buf, &frame) {
        Ok(len) if len > MAX_RESPONSE_LEN => {
            tracing::error!(
                len,
                seq = event.seq,
                "event too large for a frame; not sent"
            );
        }
        Ok(_) => {}
        Err(e) => tracing::error!(error = %e, seq = event.seq, "cannot encode event"),
    }
}

/// Appends a connection-level error frame.
pub fn error(buf: &mut BytesMut, error: &ErrorBody) {
    let _ = put(
        buf,
        &ServerFrame::Error {
            error: error.clone(),
        },
    );
}

/// Appends one frame and returns its payload length. On failure the buffer is
/// left as it was.
fn put<T: Serialize>(buf: &mut BytesMut, frame: &T) -> Result<usize, serde_json::Error> {
    let start = buf.len();
    buf.put_u32(0);
    if let Err(e) = serde_json::to_writer(buf.writer(), frame) {
        buf.truncate(start);
        return Err(e);
    }
    let len = buf.len() - start - 4;
    match u32::try_from(len) {
        Ok(n) if len <= MAX_RESPONSE_LEN => buf[start..start + 4].copy_from_slice(&n.to_be_bytes()),
        // Over the limit: the caller replaces it with an error.
        _ => buf.truncate(start),
    }
    Ok(len)
}

/// A reply frame, serialised straight from the reply without an intermediate
/// `serde_json::Value`.
#[derive(Serialize)]
struct ReplyFrame<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    id: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<&'a Reply>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a ErrorBody>,
}

#[derive(Serialize)]
struct EventFrame<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    event: &'a Event,
}
