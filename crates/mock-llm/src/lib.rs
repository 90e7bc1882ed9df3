//! A scripted LLM HTTP server for tests.
//!
//! It serves HTTP/1.1 on 127.0.0.1 (hyper does the HTTP, see `http.rs`),
//! records every request, and answers with the replies it was given, in order.
//! Nothing leaves 127.0.0.1, so provider tests run offline and see exactly what
//! a real API would have received. What is the mock's own is the simulation:
//! the script, the APIs' formats and streams, and the prompt cache.
//!
//! `GET .../models` (the model list both APIs serve, which a teammate asks for at
//! start to check its base URL) is answered apart from the queue, in the format of
//! the API that asked (Anthropic's when the request has an `anthropic-version`
//! header, OpenAI's otherwise), or with [`MockLlm::set_models`]' reply. Those
//! requests are kept apart too ([`MockLlm::model_list_requests`]), so they do not
//! count as model calls.
//!
//! With [`MockLlm::simulate_prompt_cache`], the `usage` of every successful model
//! answer is replaced by one worked out from the request: its size in estimated
//! tokens, and what a real API's prompt cache would have served of it (see
//! [`cache`]). Without it, answers carry the usage they were scripted with. A
//! reply scripted with [`MockReply::with_usage`] reports the usage it was given
//! either way (see `usage.rs`).
//!
//! Every request carries the instant it had been read in full
//! ([`RecordedRequest::received_at`]), and [`MockLlm::wait_for_calls`] wakes the
//! moment a model call is recorded, so a benchmark can time the model calls of a
//! process it drives without polling.
//!
//! Anthropic answers can also be streamed as Server-Sent Events, the way Claude
//! Code reads them (see [`stream`]): [`MockReply::anthropic_stream_text`],
//! [`MockReply::anthropic_stream_tool_use`], or [`MockReply::streamed`] for any
//! scripted message. A request to `.../messages` whose body has `"stream": true`
//! gets the streamed form of a scripted JSON message on its own, so one script
//! serves a streaming and a non-streaming client alike; a request without it is
//! answered exactly as scripted. Error replies stay JSON either way, as the real
//! API answers them before any event. The prompt-cache usage is written into the
//! `message_start` event of a streamed answer as into the JSON one.
//!
//! The Gemini API (Gemini CLI's) is served too, see [`gemini`]:
//! [`MockReply::gemini_text`], [`MockReply::gemini_function_call`]; a scripted
//! answer to `:streamGenerateContent` is streamed as its `data:` chunks, and
//! `:countTokens` is answered apart from the script, like the model list.
//!
//! A Messages API request is read for a responder with [`messages`].
//! [`endless_tool_calls`] is a responder whose turn never ends.
//!
//! A provider's limits can be enforced, see [`limits`]: a rate
//! ([`MockLlm::enforce_rate`]) answered with each API's 429, `retry-after` and
//! rate-limit headers, and Codex's usage limit with its reset
//! ([`MockLlm::usage_limit_until`]). A call a limit refuses leaves the script
//! alone, and is recorded with its [`Throttle`].
//!
//! The OpenAI Responses API that Codex speaks (`POST /v1/responses`) is always
//! streamed; its replies are scripted in [`responses`].
//!
//! Tests use it as `use teamboard_testkit::mock_llm::{MockLlm, MockReply};`.

pub mod cache;
pub mod endless;
pub mod gemini;
mod http;
pub mod limits;
pub mod messages;
pub mod responses;
pub mod stream;
mod usage;

use cache::{Api, PromptCache};
pub use endless::endless_tool_calls;
use limits::Limits;
pub use limits::{Rate, Throttle, WindowUse};
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime};
use tokio::net::TcpListener;
use tokio::sync::Notify;
use tokio::task::JoinHandle;

/// Usage numbers the `anthropic_*`/`openai_*` text replies report: (input, output).
pub const TEXT_USAGE: (u64, u64) = (25, 12);
/// Usage numbers the tool-use replies report: (input, output).
pub const TOOL_USAGE: (u64, u64) = (40, 20);

/// One scripted answer.
#[derive(Debug, Clone)]
pub struct MockReply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
    /// Waits this long before answering (to provoke client timeouts).
    pub delay: Option<Duration>,
    /// Set by [`MockReply::with_usage`]: the prompt cache leaves the usage alone.
    fixed_usage: bool,
}

impl MockReply {
    /// `status` with `value` as a JSON body.
    pub fn json(status: u16, value: Value) -> MockReply {
        MockReply {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            body: value.to_string(),
            delay: None,
            fixed_usage: false,
        }
    }

    /// `status` with a small JSON error body in the style of both APIs.
    pub fn status(status: u16) -> MockReply {
        MockReply::error(status, "mock_error", &format!("mock status {status}"))
    }

    fn error(status: u16, kind: &str, message: &str) -> MockReply {
        let error = json!({"type": "error", "error": {"type": kind, "message": message}});
        MockReply::json(status, error)
    }

    /// `status` with `body` as is (not necessarily JSON).
    pub fn raw(status: u16, body: impl Into<String>) -> MockReply {
        MockReply {
            status,
            headers: vec![("content-type".into(), "text/plain".into())],
            body: body.into(),
            delay: None,
            fixed_usage: false,
        }
    }

    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> MockReply {
        self.headers.push((name.into(), value.into()));
        self
    }

    pub fn with_delay(mut self, delay: Duration) -> MockReply {
        self.delay = Some(delay);
        self
    }

    /// A Messages API answer with one text block, `stop_reason: end_turn`.
    pub fn anthropic_text(text: &str) -> MockReply {
        MockReply::anthropic_said(text, "end_turn")
    }

    /// A Messages API answer cut off at the output limit: one text block,
    /// `stop_reason: max_tokens`.
    pub fn anthropic_cut(text: &str) -> MockReply {
        MockReply::anthropic_said(text, "max_tokens")
    }

    fn anthropic_said(text: &str, stop_reason: &str) -> MockReply {
        let content = json!([{"type": "text", "text": text}]);
        MockReply::json(200, anthropic_message(content, stop_reason, TEXT_USAGE))
    }

    /// A Messages API answer asking for one tool, `stop_reason: tool_use`.
    pub fn anthropic_tool_use(id: &str, name: &str, input: Value) -> MockReply {
        MockReply::json(
            200,
            anthropic_message(
                json!([
                    {"type": "text", "text": format!("I'll use {name}.")},
                    {"type": "tool_use", "id": id, "name": name, "input": input}
                ]),
                "tool_use",
                TOOL_USAGE,
            ),
        )
    }

    /// [`MockReply::anthropic_text`] streamed as Server-Sent Events.
    pub fn anthropic_stream_text(text: &str) -> MockReply {
        MockReply::anthropic_text(text).streamed()
    }

    /// [`MockReply::anthropic_tool_use`] streamed as Server-Sent Events: the
    /// tool's input arrives as `input_json_delta` pieces.
    pub fn anthropic_stream_tool_use(id: &str, name: &str, input: Value) -> MockReply {
        MockReply::anthropic_tool_use(id, name, input).streamed()
    }

    /// This reply as the event stream of the Messages API, when it is a
    /// successful JSON message (`"type": "message"`); any other reply (an error,
    /// a raw body, a Chat Completions answer, a stream already) is returned as it
    /// is. Other headers and the delay are kept.
    pub fn streamed(mut self) -> MockReply {
        if self.status != 200 || !self.has_content_type("application/json") {
            return self;
        }
        let Ok(message) = serde_json::from_str::<Value>(&self.body) else {
            return self;
        };
        if message["type"] != "message" {
            return self;
        }
        self.body = stream::to_sse(&stream::anthropic_events(&message));
        self.with_event_stream()
    }

    /// This reply with its `content-type` replaced by `text/event-stream`.
    fn with_event_stream(mut self) -> MockReply {
        self.headers
            .retain(|(k, _)| !k.eq_ignore_ascii_case("content-type"));
        self.with_header("content-type", "text/event-stream")
    }

    /// Whether the reply's `content-type` starts with `mime`.
    fn has_content_type(&self, mime: &str) -> bool {
        self.headers
            .iter()
            .any(|(k, v)| k.eq_ignore_ascii_case("content-type") && v.starts_with(mime))
    }

    /// A Chat Completions answer cut off at the output limit, `finish_reason: length`.
    pub fn openai_cut(text: &str) -> MockReply {
        MockReply::openai_said(text, "length")
    }

    /// A Chat Completions answer with text, `finish_reason: stop`.
    pub fn openai_text(text: &str) -> MockReply {
        MockReply::openai_said(text, "stop")
    }

    fn openai_said(text: &str, finish_reason: &str) -> MockReply {
        let message = json!({"role": "assistant", "content": text, "refusal": null});
        MockReply::json(200, openai_completion(message, finish_reason, TEXT_USAGE))
    }

    /// A Chat Completions answer with one tool call, `finish_reason: tool_calls`.
    /// `arguments_json` is sent as the string it is, as OpenAI does.
    pub fn openai_tool_call(id: &str, name: &str, arguments_json: &str) -> MockReply {
        MockReply::json(
            200,
            openai_completion(
                json!({
                    "role": "assistant",
                    "content": null,
                    "refusal": null,
                    "tool_calls": [{
                        "id": id,
                        "type": "function",
                        "function": {"name": name, "arguments": arguments_json},
                    }],
                }),
                "tool_calls",
                TOOL_USAGE,
            ),
        )
    }

    /// A Models API list (`GET /v1/models`) in Anthropic's format.
    pub fn anthropic_models(ids: &[&str]) -> MockReply {
        let data: Vec<Value> = ids
            .iter()
            .map(|id| {
                json!({
                    "type": "model",
                    "id": id,
                    "display_name": id,
                    "created_at": "2025-09-29T00:00:00Z",
                })
            })
            .collect();
        MockReply::json(
            200,
            json!({
                "data": data,
                "has_more": false,
                "first_id": ids.first(),
                "last_id": ids.last(),
            }),
        )
    }

    /// A model list (`GET /v1/models`) in OpenAI's format.
    pub fn openai_models(ids: &[&str]) -> MockReply {
        let data: Vec<Value> = ids
            .iter()
            .map(|id| json!({"id": id, "object": "model", "created": 1_721_172_741, "owned_by": "system"}))
            .collect();
        MockReply::json(200, json!({"object": "list", "data": data}))
    }
}

/// A whole Messages API answer around `content`. Each gets an id of its own, as
/// the real API's do: Claude Code merges the assistant messages of one id into one.
pub fn anthropic_message(content: Value, stop_reason: &str, usage: (u64, u64)) -> Value {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    json!({
        "id": format!("msg_01Mock{n:018}"),
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": null,
        "usage": {
            "input_tokens": usage.0,
            "output_tokens": usage.1,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
        },
    })
}

/// A whole Chat Completions answer around one choice's `message`.
pub fn openai_completion(message: Value, finish_reason: &str, usage: (u64, u64)) -> Value {
    json!({
        "id": "chatcmpl-mock",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": "gpt-4o-mini",
        "choices": [{
            "index": 0,
            "message": message,
            "logprobs": null,
            "finish_reason": finish_reason,
        }],
        "usage": {
            "prompt_tokens": usage.0,
            "completion_tokens": usage.1,
            "total_tokens": usage.0 + usage.1,
        },
    })
}

/// A request as the server received it.
#[derive(Debug, Clone)]
pub struct RecordedRequest {
    pub method: String,
    pub path: String,
    /// Names lowercased, in the order they came.
    pub headers: Vec<(String, String)>,
    /// The body as JSON; `Null` when empty, a JSON string when not JSON.
    pub body: Value,
    /// The `usage` object of the answer the mock sent; `Null` when it had none.
    pub answered_usage: Value,
    /// When the request had been read in full (its last body byte), on the
    /// monotonic clock: before the reply was chosen, let alone sent.
    pub received_at: Instant,
    /// How a limit answered it instead of the script, when one did (see
    /// [`limits`]).
    pub throttled: Option<Throttle>,
}

impl RecordedRequest {
    /// The first value of header `name` (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.as_str())
    }
}

struct State {
    queue: VecDeque<MockReply>,
    fallback: MockReply,
    requests: Vec<RecordedRequest>,
    fallback_served: usize,
    /// The answer to `GET .../models`; `None` lists a model in the asker's format.
    models: Option<MockReply>,
    model_list_requests: Vec<RecordedRequest>,
    /// Set by [`MockLlm::simulate_prompt_cache`].
    prompt_cache: Option<PromptCache>,
    /// Set by [`MockLlm::set_responder`]: chooses the reply from the request
    /// when the queue is empty, before the fallback.
    responder: Option<Responder>,
    /// Set by [`MockLlm::enforce_rate`] and [`MockLlm::usage_limit_until`].
    limits: Limits,
}

/// Chooses a reply from the request: `None` leaves it to the fallback. For
/// clients whose number and order of calls a test cannot script in advance (a
/// real agent CLI), so the answer follows from what was asked, not from when.
pub type Responder = Arc<dyn Fn(&RecordedRequest) -> Option<MockReply> + Send + Sync>;

/// The server. It stops (and drops its connections) when dropped.
pub struct MockLlm {
    addr: SocketAddr,
    state: Arc<Mutex<State>>,
    /// Woken each time a model call is recorded.
    recorded: Arc<Notify>,
    task: JoinHandle<()>,
}

/// A port on 127.0.0.1, bound synchronously so that `start` needs no `.await` and
/// the port is listening before the first request can be sent.
fn listen() -> std::io::Result<(TcpListener, SocketAddr)> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    listener.set_nonblocking(true)?;
    let addr = listener.local_addr()?;
    Ok((TcpListener::from_std(listener)?, addr))
}

impl MockLlm {
    /// Starts serving `responses` in order; once they run out every request gets a
    /// 500 saying so. Must be called inside a Tokio runtime.
    pub fn start(responses: Vec<MockReply>) -> MockLlm {
        let message = "mock LLM: no scripted reply left for this request";
        let fallback = MockReply::error(500, "mock_exhausted", message);
        MockLlm::start_with_fallback(responses, fallback)
    }

    /// Like [`MockLlm::start`], answering `fallback` once the replies run out.
    pub fn start_with_fallback(responses: Vec<MockReply>, fallback: MockReply) -> MockLlm {
        #[allow(
            clippy::expect_used,
            reason = "a test fixture: a host that cannot listen on 127.0.0.1 cannot run its tests"
        )]
        let (listener, addr) = listen().expect("the mock LLM listens on 127.0.0.1");
        let state = Arc::new(Mutex::new(State {
            queue: responses.into(),
            fallback,
            requests: Vec::new(),
            fallback_served: 0,
            models: None,
            model_list_requests: Vec::new(),
            prompt_cache: None,
            responder: None,
            limits: Limits::default(),
        }));
        let recorded = Arc::new(Notify::new());
        let answer: http::Answer = {
            let (state, recorded) = (state.clone(), recorded.clone());
            Arc::new(move |request| answer(&state, &recorded, request))
        };
        let task = tokio::spawn(http::serve(listener, answer));
        MockLlm {
            addr,
            state,
            recorded,
            task,
        }
    }

    /// `http://127.0.0.1:PORT`, without a trailing slash.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.lock().requests.clone()
    }

    /// Request `n` (from 0) of those [`MockLlm::requests`] lists, without
    /// copying the others: a benchmark that shares the mock's runtime must not
    /// hold it up copying every request so far.
    pub fn request(&self, n: usize) -> Option<RecordedRequest> {
        self.lock().requests.get(n).cloned()
    }

    /// How many requests arrived, fallback answers included.
    pub fn calls(&self) -> usize {
        self.lock().requests.len()
    }

    /// Returns once at least `n` model calls have arrived (fallback answers
    /// included, model-list requests not). It waits forever otherwise: wrap it in
    /// a timeout.
    pub async fn wait_for_calls(&self, n: usize) {
        loop {
            // Registered before the count is read, so that a call recorded in
            // between still wakes this waiter.
            let recorded = self.recorded.notified();
            tokio::pin!(recorded);
            recorded.as_mut().enable();
            if self.calls() >= n {
                return;
            }
            recorded.await;
        }
    }

    /// How many requests got the fallback because the replies had run out.
    pub fn fallback_calls(&self) -> usize {
        self.lock().fallback_served
    }

    /// Scripted replies not served yet.
    pub fn remaining(&self) -> usize {
        self.lock().queue.len()
    }

    /// Appends a reply to the queue.
    pub fn push(&self, reply: MockReply) {
        self.lock().queue.push_back(reply);
    }

    /// Lets `responder` choose the reply to every model call that finds the
    /// queue empty (a reply it declines goes to the fallback). It runs with the
    /// server's state locked: it must not call back into this server. A delay
    /// it wants goes into its reply ([`MockReply::with_delay`]).
    pub fn set_responder(
        &self,
        responder: impl Fn(&RecordedRequest) -> Option<MockReply> + Send + Sync + 'static,
    ) {
        self.lock().responder = Some(Arc::new(responder));
    }

    /// Answers with `reply` once the scripted replies run out.
    pub fn set_fallback(&self, reply: MockReply) {
        self.lock().fallback = reply;
    }

    /// Answers every `GET .../models` with `reply` from now on (a 404 for a wrong
    /// base URL, a 401 for a refused key).
    pub fn set_models(&self, reply: MockReply) {
        self.lock().models = Some(reply);
    }

    /// From now on, answers report the usage a real API would: the request's
    /// estimated size, and what its prompt cache served (see [`cache`]).
    pub fn simulate_prompt_cache(&self) {
        let mut s = self.lock();
        if s.prompt_cache.is_none() {
            s.prompt_cache = Some(PromptCache::default());
        }
    }

    /// The `GET .../models` requests received so far, in order.
    pub fn model_list_requests(&self) -> Vec<RecordedRequest> {
        self.lock().model_list_requests.clone()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic in a test thread must not hide the requests from the next assert.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Drop for MockLlm {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Chooses the reply to `request` and records it: the one place the
/// server's state changes.
fn answer(state: &Mutex<State>, recorded: &Notify, request: RecordedRequest) -> MockReply {
    let model_call = !is_model_list(&request) && !gemini::is_count_tokens(&request.path);
    let reply = {
        let mut s = state.lock().unwrap_or_else(|e| e.into_inner());
        if !model_call {
            let reply = s.models.clone().unwrap_or_else(|| {
                if gemini::is_count_tokens(&request.path) {
                    gemini::count_tokens(&request.body)
                } else if request.path.starts_with("/v1beta/") {
                    gemini::models()
                } else if request.header("anthropic-version").is_some() {
                    MockReply::anthropic_models(&["claude-sonnet-4-5"])
                } else {
                    MockReply::openai_models(&["gpt-4o-mini"])
                }
            });
            s.model_list_requests.push(request);
            reply
        } else {
            let api = Api::of_path(&request.path);
            // Judged under the lock, so that the limits' windows only move
            // forward (see `limits`).
            let (now, wall) = (Instant::now(), SystemTime::now());
            let mut request = request;
            let mut reply = match s.limits.admit(api, now, wall) {
                Ok(()) => scripted(&mut s, &request, api),
                Err((reply, throttle)) => {
                    request.throttled = Some(throttle);
                    reply
                }
            };
            request.answered_usage = answered_usage(&reply);
            if request.throttled.is_none() {
                s.limits.spend(api, &request.answered_usage);
            }
            reply.headers.extend(s.limits.headers(api, now, wall));
            s.requests.push(request);
            reply
        }
    };
    if model_call {
        recorded.notify_waiters();
    }
    reply
}

/// The script's reply to a model call in `api`: the responder's when the
/// queue is empty, else the queue's, else the fallback; in the form the call
/// asked for, with the usage the prompt cache works out unless it was fixed.
fn scripted(s: &mut State, request: &RecordedRequest, api: Option<Api>) -> MockReply {
    let responded = match (s.queue.is_empty(), &s.responder) {
        (true, Some(responder)) => responder(request),
        _ => None,
    };
    let mut reply = match responded.or_else(|| s.queue.pop_front()) {
        Some(reply) => reply,
        None => {
            s.fallback_served += 1;
            s.fallback.clone()
        }
    };
    if api == Some(Api::Anthropic) && request.body["stream"] == true {
        reply = reply.streamed();
    }
    if let (Some(cache), Some(api), false) = (s.prompt_cache.as_mut(), api, reply.fixed_usage) {
        reply = with_simulated_usage(reply, api, cache, &request.body);
    }
    // After the usage: it is worked out on the JSON answer.
    if api == Some(Api::Gemini) && gemini::is_stream(&request.path) {
        reply = gemini::to_stream(reply);
    }
    reply
}

/// The `usage` `reply` reports: a JSON answer's `usage`, or the final usage of
/// an event stream (Anthropic's or the Responses API's); `Null` when it has none.
fn answered_usage(reply: &MockReply) -> Value {
    if reply.has_content_type("text/event-stream") {
        return stream::parse_sse(&reply.body)
            .map(|events| match stream::usage(&events) {
                Value::Null => responses::usage(&events),
                usage => usage,
            })
            .or_else(|| gemini::stream_usage(&reply.body))
            .unwrap_or(Value::Null);
    }
    serde_json::from_str::<Value>(&reply.body)
        .map(|b| match &b["usageMetadata"] {
            Value::Null => b["usage"].clone(),
            gemini => gemini.clone(),
        })
        .unwrap_or(Value::Null)
}

/// `reply` with the usage `cache` works out for `body`, in `api`'s format. Only
/// successful answers that report a usage are changed: a JSON answer's `usage`,
/// or the usage in an event stream's `message_start` (the input side; the
/// output tokens stay those of `message_delta`) or `response.completed`.
fn with_simulated_usage(
    mut reply: MockReply,
    api: Api,
    cache: &mut PromptCache,
    body: &Value,
) -> MockReply {
    if reply.status != 200 {
        return reply;
    }
    if reply.has_content_type("text/event-stream") {
        let Some(mut events) = stream::parse_sse(&reply.body) else {
            return reply;
        };
        let Some(usage) = events
            .iter_mut()
            .find_map(|(name, data)| match name.as_str() {
                "message_start" => Some(&mut data["message"]["usage"]),
                "response.completed" => Some(&mut data["response"]["usage"]),
                _ => None,
            })
            .filter(|usage| usage.is_object())
        else {
            return reply;
        };
        set_usage(usage, api, cache, body);
        reply.body = stream::to_sse(&events);
        return reply;
    }
    let Ok(mut answer) = serde_json::from_str::<Value>(&reply.body) else {
        return reply;
    };
    let key = match api {
        Api::Gemini => "usageMetadata",
        Api::Anthropic | Api::OpenAi | Api::Responses => "usage",
    };
    if !answer[key].is_object() {
        return reply;
    }
    set_usage(&mut answer[key], api, cache, body);
    reply.body = answer.to_string();
    reply
}

/// Writes the usage `cache` works out for `body` into `usage`, in `api`'s format.
fn set_usage(usage: &mut Value, api: Api, cache: &mut PromptCache, body: &Value) {
    let u = cache.usage(api, body);
    match api {
        Api::Anthropic => {
            usage["input_tokens"] = json!(u.fresh());
            usage["cache_read_input_tokens"] = json!(u.cache_read);
            usage["cache_creation_input_tokens"] = json!(u.cache_write);
        }
        Api::OpenAi => {
            let output = usage["completion_tokens"].as_u64().unwrap_or(0);
            usage["prompt_tokens"] = json!(u.prompt);
            usage["prompt_tokens_details"] = json!({"cached_tokens": u.cache_read});
            usage["total_tokens"] = json!(u.prompt + output);
        }
        Api::Gemini => {
            let output = usage["candidatesTokenCount"].as_u64().unwrap_or(0);
            usage["promptTokenCount"] = json!(u.prompt);
            usage["cachedContentTokenCount"] = json!(u.cache_read);
            usage["totalTokenCount"] = json!(u.prompt + output);
        }
        Api::Responses => {
            let output = usage["output_tokens"].as_u64().unwrap_or(0);
            usage["input_tokens"] = json!(u.prompt);
            usage["input_tokens_details"] = json!({"cached_tokens": u.cache_read});
            usage["total_tokens"] = json!(u.prompt + output);
        }
    }
}

/// A request body as [`RecordedRequest::body`] keeps it.
fn body_value(body: &[u8]) -> Value {
    if body.is_empty() {
        return Value::Null;
    }
    serde_json::from_slice(body)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(body).into_owned()))
}

/// Whether `request` asks for the model list (`GET /v1/models`, `GET /models`).
fn is_model_list(request: &RecordedRequest) -> bool {
    let path = request.path.split('?').next().unwrap_or_default();
    request.method == "GET" && path.ends_with("/models")
}
