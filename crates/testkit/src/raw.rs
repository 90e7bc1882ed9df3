//! Frames by hand on a plain `UnixStream`: a 4-byte big-endian length, then JSON.
//!
//! The free functions write whatever bytes a test wants (malformed input included)
//! and read frames as JSON. [`Session`] is a connection that has said `hello` and
//! sends typed requests under ids it picks, so a test can send now and read the
//! answer later, in any order, and knows its session id.

use serde_json::Value;
use std::collections::VecDeque;
use std::path::Path;
use std::time::Duration;
use teamboard_protocol::{ClientFrame, ErrorCode, Request, ServerFrame, Welcome};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::UnixStream;

/// How long a raw read waits before the test fails.
const READ_TIMEOUT: Duration = Duration::from_secs(5);

pub async fn connect(socket: &Path) -> UnixStream {
    UnixStream::connect(socket).await.expect("raw connect")
}

/// Writes one frame: a 4-byte big-endian length, then `payload`.
pub async fn send(stream: &mut UnixStream, payload: &[u8]) {
    let len = u32::try_from(payload.len()).expect("frame fits u32");
    stream
        .write_all(&len.to_be_bytes())
        .await
        .expect("write length");
    stream.write_all(payload).await.expect("write payload");
}

pub async fn send_json(stream: &mut UnixStream, value: &Value) {
    let payload = serde_json::to_vec(value).expect("a JSON value serialises");
    send(stream, &payload).await;
}

/// A hello as `name`, without a credential.
pub fn hello(name: &str, protocol: u32) -> Value {
    serde_json::json!({
        "type": "hello",
        "protocol": protocol,
        "client": "raw-test",
        "name": name,
        "team": crate::TEAM,
    })
}

pub fn request(id: u64, op: &str, args: Value) -> Value {
    serde_json::json!({ "type": "request", "id": id, "op": op, "args": args })
}

/// Connects and completes the handshake as `name`, with the lead's credential.
pub async fn connect_hello(socket: &Path, name: &str) -> UnixStream {
    Session::open(socket, name).await.into_stream()
}

/// Reads one frame as JSON; `None` on a clean end of stream. Panics after five
/// seconds without a frame, or on a torn frame.
pub async fn read(stream: &mut UnixStream) -> Option<Value> {
    tokio::time::timeout(READ_TIMEOUT, async {
        let mut len = [0u8; 4];
        match stream.read_exact(&mut len).await {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return None,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return None,
            Err(e) => panic!("read frame length: {e}"),
        }
        let mut body = vec![0u8; u32::from_be_bytes(len) as usize];
        stream.read_exact(&mut body).await.expect("read frame body");
        Some(serde_json::from_slice(&body).expect("server frames are JSON"))
    })
    .await
    .expect("no frame from boardd within 5 s")
}

/// Asserts the server closes the connection (after any frames it still sends).
pub async fn expect_closed(stream: &mut UnixStream) {
    if let Some(frame) = read(stream).await {
        panic!("expected the connection to close, got {frame}");
    }
}

/// Reads the next frame and checks it is a connection-level `error` with `code`.
pub async fn expect_error_frame(stream: &mut UnixStream, code: &str) -> Value {
    let frame = read(stream).await.expect("an error frame before the close");
    assert_eq!(frame["type"], "error", "{frame}");
    assert_eq!(frame["error"]["code"], code, "{frame}");
    frame
}

/// A connection after its handshake, sending typed requests under ids it numbers
/// itself (1, 2, ...).
pub struct Session {
    stream: UnixStream,
    /// What the server said to `hello`: the session id, the lease TTL.
    pub welcome: Welcome,
    next_id: u64,
    /// Frames read while looking for another answer, oldest first.
    unread: VecDeque<Value>,
}

impl Session {
    /// Connects and says `hello` as `name`, with the lead's credential.
    pub async fn open(socket: &Path, name: &str) -> Session {
        let key = crate::lead_key(socket);
        Session::open_with(socket, name, Some(key.as_str())).await
    }

    /// Connects and says `hello` as `name`, presenting `credential` (or none).
    pub async fn open_with(socket: &Path, name: &str, credential: Option<&str>) -> Session {
        let mut stream = connect(socket).await;
        let mut hello = hello(name, teamboard_protocol::PROTOCOL_VERSION);
        if let Some(credential) = credential {
            hello["credential"] = Value::from(credential);
        }
        send_json(&mut stream, &hello).await;
        let frame = read(&mut stream).await.expect("a welcome frame");
        let welcome = match serde_json::from_value::<ServerFrame>(frame.clone()) {
            Ok(ServerFrame::Welcome(welcome)) => welcome,
            _ => panic!("expected a welcome, got {frame}"),
        };
        Session {
            stream,
            welcome,
            next_id: 1,
            unread: VecDeque::new(),
        }
    }

    /// The session id boardd gave this connection.
    pub fn id(&self) -> u64 {
        self.welcome.session
    }

    /// Sends `request` without waiting for its answer; returns its id.
    pub async fn send(&mut self, request: Request) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        let frame = ClientFrame::Request { id, request };
        let payload = serde_json::to_vec(&frame).expect("a request serialises");
        send(&mut self.stream, &payload).await;
        id
    }

    /// Waits for the answer to request `id`: its result as JSON, or its error code.
    /// Other frames that arrive first are kept for [`Session::next_frame`].
    pub async fn answer(&mut self, id: u64) -> Result<Value, ErrorCode> {
        if let Some(i) = self.unread.iter().position(|f| answers(f, id)) {
            let frame = self.unread.remove(i).expect("index is in range");
            return decode_answer(frame);
        }
        loop {
            let frame = read(&mut self.stream)
                .await
                .unwrap_or_else(|| panic!("connection closed before the answer to {id}"));
            if answers(&frame, id) {
                return decode_answer(frame);
            }
            self.unread.push_back(frame);
        }
    }

    /// Sends `request` and waits for its answer.
    pub async fn call(&mut self, request: Request) -> Result<Value, ErrorCode> {
        let id = self.send(request).await;
        self.answer(id).await
    }

    /// The next frame not yet taken by [`Session::answer`] (events, answers nobody
    /// asked for); `None` once the server has closed the connection.
    pub async fn next_frame(&mut self) -> Option<Value> {
        match self.unread.pop_front() {
            Some(frame) => Some(frame),
            None => read(&mut self.stream).await,
        }
    }

    /// The bare stream, for bytes no typed request can express.
    pub fn into_stream(self) -> UnixStream {
        self.stream
    }
}

fn answers(frame: &Value, id: u64) -> bool {
    frame["type"] == "response" && frame["id"] == id
}

fn decode_answer(frame: Value) -> Result<Value, ErrorCode> {
    match serde_json::from_value::<ServerFrame>(frame.clone()) {
        Ok(ServerFrame::Response {
            error: Some(error), ..
        }) => Err(error.code),
        Ok(ServerFrame::Response { result, .. }) => Ok(result.unwrap_or(Value::Null)),
        _ => panic!("not a response frame: {frame}"),
    }
}
