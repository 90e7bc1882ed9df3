//! The mock's HTTP side: hyper serves HTTP/1.1 on each connection, a request
//! read whole becomes a [`RecordedRequest`] for the answer function, and the
//! [`MockReply`] it chooses goes back. All that the mock simulates is behind
//! that function; this module carries bytes and keeps time.
//!
//! - hyper, not a server written by hand: request lines, chunked bodies,
//!   `Expect: 100-continue`, pipelining and keep-alive come in every mix, and
//!   a mock that gets one wrong fails the client under test for its own reason.
//! - Not axum: there is nothing to route (one function picks the reply from the
//!   path, a header and the body), and `axum::serve` spawns connections on
//!   their own, so dropping the mock would leave kept-alive ones answering.
//!   Here they live in the accepting task's [`JoinSet`]: aborting it closes
//!   them all, answers in flight included.
//! - `TCP_NODELAY`: with Nagle's algorithm a body waits for the ACK of its
//!   head, which a client on a kept-alive connection delays by 40 ms.
//! - `content-length` is set also on a body sent in two parts (a Responses
//!   stream that opens before its delay): clients read answers by it, and
//!   hyper would send a body of unknown length chunked.

use crate::{MockReply, RecordedRequest, responses};
use bytes::Bytes;
use futures_util::StreamExt as _;
use futures_util::stream::{self, BoxStream};
use http_body_util::{BodyExt as _, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::header::CONTENT_LENGTH;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;

/// Chooses the reply to a request, and records it.
pub(crate) type Answer = Arc<dyn Fn(RecordedRequest) -> MockReply + Send + Sync>;

/// A reply's body: all at once, or its opening, then after a pause the rest.
type Body = StreamBody<BoxStream<'static, Result<Frame<Bytes>, Infallible>>>;

/// Accepts connections and serves them until the task running it is aborted.
pub(crate) async fn serve(listener: TcpListener, answer: Answer) {
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else { continue };
                connections.spawn(connection(stream, answer.clone()));
            }
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
}

/// Serves requests on one connection until the client closes it.
async fn connection(stream: TcpStream, answer: Answer) {
    let _ = stream.set_nodelay(true);
    let service = service_fn(move |request| {
        let answer = answer.clone();
        async move { Ok::<_, Infallible>(respond(request, &answer).await) }
    });
    // An error here is the client's going away, or a request hyper refused
    // with a 400 of its own: either way the connection is over.
    let _ = http1::Builder::new()
        .serve_connection(TokioIo::new(stream), service)
        .await;
}

async fn respond(request: Request<Incoming>, answer: &Answer) -> Response<Body> {
    let (head, body) = request.into_parts();
    // A body cut short is not a request: it is not recorded, as it was never
    // read in full, and the answer goes nowhere.
    let Ok(body) = body.collect().await.map(|b| b.to_bytes()) else {
        return send(MockReply::status(400)).await;
    };
    let headers = head
        .headers
        .iter()
        .map(|(name, value)| {
            let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
            (name.as_str().to_string(), value)
        })
        .collect();
    let path = head
        .uri
        .path_and_query()
        .map_or_else(|| head.uri.to_string(), |p| p.as_str().to_string());
    let request = RecordedRequest {
        method: head.method.to_string(),
        path,
        headers,
        body: crate::body_value(&body),
        answered_usage: serde_json::Value::Null,
        received_at: Instant::now(),
        throttled: None,
    };
    send(answer(request)).await
}

/// `reply` as a response, after its delay. A delayed Responses stream opens
/// before its pause instead (see `responses`).
async fn send(reply: MockReply) -> Response<Body> {
    let opening = reply.delay.and(responses::opening(&reply));
    let MockReply {
        status,
        headers,
        body,
        delay,
        ..
    } = reply;
    let length = body.len();
    let mut body = Bytes::from(body);
    let body = match (delay, opening) {
        (Some(delay), Some(n)) if n <= body.len() => {
            let rest = body.split_off(n);
            paused(body, delay, rest)
        }
        (Some(delay), _) => {
            tokio::time::sleep(delay).await;
            whole(body)
        }
        (None, _) => whole(body),
    };
    let mut response = Response::builder().status(status);
    for (name, value) in &headers {
        response = response.header(name, value);
    }
    let response = response.header(CONTENT_LENGTH, length).body(body);
    // A status or a header that is not HTTP is a test's mistake: said where
    // the test reads it.
    response.unwrap_or_else(|e| {
        let mut refused = Response::new(whole(Bytes::from(format!("mock LLM: {e}"))));
        *refused.status_mut() = hyper::StatusCode::INTERNAL_SERVER_ERROR;
        refused
    })
}

fn whole(body: Bytes) -> Body {
    StreamBody::new(stream::iter([Ok(Frame::data(body))]).boxed())
}

fn paused(opening: Bytes, delay: Duration, rest: Bytes) -> Body {
    let rest = stream::once(async move {
        tokio::time::sleep(delay).await;
        Ok(Frame::data(rest))
    });
    StreamBody::new(stream::iter([Ok(Frame::data(opening))]).chain(rest).boxed())
}
