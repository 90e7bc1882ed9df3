//! A provider's limits, enforced by the mock so that a client's scheduling can
//! be tested offline: a request rate ([`MockLlm::enforce_rate`]) and a usage
//! limit with a reset time ([`MockLlm::usage_limit_until`]). Both apply to the
//! model calls only, not to the model list or Gemini's `:countTokens`.
//!
//! - **Rate.** The calls of all callers count in one window, as one account's
//!   limit counts them. A call over the limit is answered `429` before the
//!   script is asked: the queue keeps its reply for the next call that gets
//!   through, and neither the responder nor the prompt cache sees the call.
//!   The 429 is the asking API's: Anthropic's
//!   `{"type":"error","error":{"type":"rate_limit_error",..}}`, OpenAI's
//!   (Chat Completions and Responses)
//!   `{"error":{"type":"requests"|"tokens","code":"rate_limit_exceeded",..}}`,
//!   Gemini's `RESOURCE_EXHAUSTED`. It carries `retry-after` in whole seconds
//!   up to the window's end, rounded up, as the real APIs send it. Only the
//!   calls let through count in a window, so that its count is the throughput.
//! - **Headers.** While a rate is enforced, every answer to a model call
//!   (success or 429) carries the limit headers of the API that asked:
//!   OpenAI's `x-ratelimit-{limit,remaining,reset}-{requests,tokens}`, the reset
//!   as a Go duration (`20ms`, `1.5s`, `6m0s`), and Anthropic's
//!   `anthropic-ratelimit-{requests,tokens}-{limit,remaining,reset}`, the reset
//!   an RFC 3339 time in whole seconds, rounded up. Gemini sends none.
//! - **Tokens** ([`Rate::with_tokens`]) count the usage each answer reports,
//!   prompt (cache included) and output; a window refuses calls once its
//!   tokens are spent. The real APIs also count a call's own prompt and output
//!   limit before answering it, which needs a tokenizer the mock has not.
//! - **Usage limit.** Until its reset, every model call gets the 429 that the
//!   ChatGPT backend sends Codex, in every API's path alike (a mock account
//!   is exhausted whatever it is asked in):
//!   `{"error":{"type":"usage_limit_reached","message":..,"plan_type":..,
//!   "resets_at":<unix seconds>,"resets_in_seconds":N}}`. codex-rs reads
//!   `error.type`, `plan_type` and `resets_at` from a 429's body
//!   (`UsageErrorResponse` in `codex-rs/core/src/api_bridge.rs`), and its
//!   older client read `resets_in_seconds`; captured bodies carry both, plus
//!   `"eligible_promo": null`. No `retry-after`: the reset is in the body.
//! - **Evidence.** Each throttled call is recorded with its [`Throttle`], and
//!   [`early_calls`] finds the calls that came before a moment a 429 had told
//!   them to wait for; [`MockLlm::rate_windows`] says what each window let
//!   through, to hold throughput against the rate.
//!
//! Decisions and traps:
//! - A fixed window, not the token bucket the real APIs refill continuously:
//!   what a test measures is then exactly `requests` per window, where a
//!   bucket's figure would depend on when the calls come. The first window
//!   opens at the first model call; the next ones follow back to back.
//! - No `retry-after-ms`: OpenAI's SDK and teammated prefer it, and a client
//!   honouring it would come back before the whole seconds that [`early_calls`]
//!   holds it to.
//! - The mock judges a call when it takes the state's lock (`Instant::now()`
//!   there), not at `received_at`: windows then only move forward. A call is
//!   early only against 429s answered before it arrived ([`Throttle::at`]): a
//!   call sent while another one's 429 was being written could not know of it.
//! - Hand-written date and duration formats (in `answers.rs`): two small
//!   functions, where a date crate with its formatting feature would cost this
//!   test-only crate more build time than the lines it saves.

mod answers;

use crate::cache::{Api, PromptUsage};
use crate::{MockLlm, MockReply, RecordedRequest};
use answers::Left;
use serde_json::Value;
use std::time::{Duration, Instant, SystemTime};

/// The longest wait the mock tells (a window, a usage limit's reset): longer
/// than any test, and short enough that no instant arithmetic overflows.
pub const CENTURY: Duration = Duration::from_secs(100 * 365 * 86_400);

/// A rate per fixed window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rate {
    pub requests: u32,
    /// Prompt and output tokens per window; `None` counts none.
    pub tokens: Option<u64>,
    /// Taken as 1 ms when shorter, and as [`CENTURY`] when longer.
    pub window: Duration,
    /// Whether answers carry the limit headers; without them, a client only
    /// learns of the limit from a 429's `retry-after`, as with a provider
    /// (or a proxy) that sends none.
    pub headers: bool,
}

impl Rate {
    /// `requests` model calls per `window`.
    pub fn requests(requests: u32, window: Duration) -> Rate {
        Rate {
            requests,
            tokens: None,
            window,
            headers: true,
        }
    }

    /// This rate, with no limit headers on any answer: only the 429 and its
    /// `retry-after` say anything.
    pub fn without_headers(self) -> Rate {
        Rate {
            headers: false,
            ..self
        }
    }

    /// This rate, with `tokens` tokens per window too.
    pub fn with_tokens(self, tokens: u64) -> Rate {
        Rate {
            tokens: Some(tokens),
            ..self
        }
    }
}

/// How a limit answered a call `429` instead of the script.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Throttle {
    /// When the mock answered it.
    pub at: Instant,
    /// The moment before which the answer told the client not to call again:
    /// `at` plus `retry-after`, or the usage limit's reset.
    pub until: Instant,
}

/// What one window let through.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WindowUse {
    pub calls: u32,
    pub tokens: u64,
}

/// The limits of one mock, kept in its state.
#[derive(Debug, Default)]
pub(crate) struct Limits {
    rate: Option<Windows>,
    usage_until: Option<SystemTime>,
}

#[derive(Debug)]
struct Windows {
    rate: Rate,
    /// When window 0 opened.
    start: Option<Instant>,
    /// Window 0 to the current one.
    used: Vec<WindowUse>,
}

impl MockLlm {
    /// From now on, enforces `rate` on the model calls, in windows counted
    /// afresh (see [`limits`](crate::limits)).
    pub fn enforce_rate(&self, rate: Rate) {
        let window = rate.window.clamp(Duration::from_millis(1), CENTURY);
        self.lock().limits.rate = Some(Windows {
            rate: Rate { window, ..rate },
            start: None,
            used: Vec::new(),
        });
    }

    /// Until `reset`, answers every model call with Codex's
    /// `usage_limit_reached`; after it, as usual.
    pub fn usage_limit_until(&self, reset: SystemTime) {
        self.lock().limits.usage_until = Some(reset);
    }

    /// The model calls that arrived before a moment a 429 told them to wait
    /// for ([`early_calls`]).
    pub fn early_calls(&self) -> Vec<RecordedRequest> {
        early_calls(&self.lock().requests)
    }

    /// What each window of the enforced rate let through, from the first.
    pub fn rate_windows(&self) -> Vec<WindowUse> {
        let s = self.lock();
        s.limits
            .rate
            .as_ref()
            .map_or(Vec::new(), |w| w.used.clone())
    }
}

/// The calls of `requests` that arrived after a 429 was answered and before
/// the moment it set ([`Throttle::until`]).
pub fn early_calls(requests: &[RecordedRequest]) -> Vec<RecordedRequest> {
    let throttles: Vec<Throttle> = requests.iter().filter_map(|r| r.throttled).collect();
    requests
        .iter()
        .filter(|r| {
            let at = r.received_at;
            throttles.iter().any(|t| t.at < at && at < t.until)
        })
        .cloned()
        .collect()
}

impl Limits {
    /// Lets a model call in `api` through at `now` (`wall` on the system
    /// clock), or says the 429 a limit answers it with.
    pub(crate) fn admit(
        &mut self,
        api: Option<Api>,
        now: Instant,
        wall: SystemTime,
    ) -> Result<(), (MockReply, Throttle)> {
        if let Some(windows) = self.rate.as_mut() {
            windows.advance(now);
        }
        if let Some(reset) = self.usage_until
            && let Ok(left) = reset.duration_since(wall)
            && !left.is_zero()
        {
            let left = left.min(CENTURY);
            let throttle = Throttle {
                at: now,
                until: now + left,
            };
            return Err((answers::usage_limit_reached(reset, left), throttle));
        }
        let Some(windows) = self.rate.as_mut() else {
            return Ok(());
        };
        let Some(spent) = windows.left().into_iter().find(|l| l.remaining == 0) else {
            windows.current().calls += 1;
            return Ok(());
        };
        let wait = whole_seconds(windows.reset_in(now)).max(Duration::from_secs(1));
        let reply = answers::rate_limited(api, &spent, windows.rate.window, wait);
        let throttle = Throttle {
            at: now,
            until: now + wait,
        };
        Err((reply, throttle))
    }

    /// Counts the `usage` a let-through answer reported in the current window.
    pub(crate) fn spend(&mut self, api: Option<Api>, usage: &Value) {
        let (Some(windows), Some(api)) = (self.rate.as_mut(), api) else {
            return;
        };
        let output = ["output_tokens", "completion_tokens", "candidatesTokenCount"]
            .iter()
            .find_map(|k| usage[*k].as_u64())
            .unwrap_or(0);
        windows.current().tokens += PromptUsage::of_answer(api, usage).prompt + output;
    }

    /// The limit headers of `api` for an answer at `now`.
    pub(crate) fn headers(
        &self,
        api: Option<Api>,
        now: Instant,
        wall: SystemTime,
    ) -> Vec<(String, String)> {
        match &self.rate {
            Some(windows) if windows.rate.headers => {
                answers::headers(api, &windows.left(), windows.reset_in(now), wall)
            }
            _ => Vec::new(),
        }
    }
}

impl Windows {
    /// Opens the windows up to the one `now` falls in.
    fn advance(&mut self, now: Instant) {
        let start = *self.start.get_or_insert(now);
        let index = now.saturating_duration_since(start).as_nanos() / self.rate.window.as_nanos();
        let len = usize::try_from(index).map_or(usize::MAX, |i| i.saturating_add(1));
        if self.used.len() < len {
            self.used.resize(len, WindowUse::default());
        }
    }

    fn current(&mut self) -> &mut WindowUse {
        if self.used.is_empty() {
            self.used.push(WindowUse::default());
        }
        let last = self.used.len() - 1;
        &mut self.used[last]
    }

    /// What is left of each limit in the current window.
    fn left(&self) -> Vec<Left> {
        let used = self.used.last().copied().unwrap_or_default();
        let requests = self.rate.requests;
        let mut left = vec![Left {
            kind: "requests",
            limit: u64::from(requests),
            remaining: u64::from(requests.saturating_sub(used.calls)),
        }];
        if let Some(tokens) = self.rate.tokens {
            left.push(Left {
                kind: "tokens",
                limit: tokens,
                remaining: tokens.saturating_sub(used.tokens),
            });
        }
        left
    }

    /// How long until the current window ends.
    fn reset_in(&self, now: Instant) -> Duration {
        let windows = u32::try_from(self.used.len().max(1)).unwrap_or(u32::MAX);
        let end = self.start.unwrap_or(now) + self.rate.window.saturating_mul(windows);
        end.saturating_duration_since(now)
    }
}

/// `d` rounded up to whole seconds.
fn whole_seconds(d: Duration) -> Duration {
    Duration::from_secs(d.as_secs() + u64::from(d.subsec_nanos() > 0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::time::UNIX_EPOCH;

    #[test]
    fn waits_are_rounded_up_to_whole_seconds() {
        assert_eq!(whole_seconds(Duration::from_millis(1001)).as_secs(), 2);
        assert_eq!(whole_seconds(Duration::from_secs(3)).as_secs(), 3);
    }

    fn limits(rate: Rate) -> Limits {
        Limits {
            rate: Some(Windows {
                rate,
                start: None,
                used: Vec::new(),
            }),
            usage_until: None,
        }
    }

    #[test]
    fn a_window_lets_its_requests_through_then_refuses_until_it_ends() {
        let t0 = Instant::now();
        let wall = SystemTime::now();
        let ms = Duration::from_millis;
        let mut l = limits(Rate::requests(2, ms(1500)));
        let api = Some(Api::OpenAi);
        assert!(l.admit(api, t0, wall).is_ok());
        assert!(l.admit(api, t0 + ms(100), wall).is_ok());
        let (reply, throttle) = l.admit(api, t0 + ms(200), wall).expect_err("over the rate");
        assert_eq!(reply.status, 429);
        // 1.3 s are left in the window: two whole seconds.
        assert!(reply.headers.contains(&("retry-after".into(), "2".into())));
        assert_eq!(throttle.until, t0 + ms(2200));
        let headers = l.headers(api, t0 + ms(200), wall);
        assert!(headers.contains(&("x-ratelimit-remaining-requests".into(), "0".into())));
        assert!(headers.contains(&("x-ratelimit-reset-requests".into(), "1.3s".into())));
        // The next window opens at 1.5 s, back to back with the first.
        assert!(l.admit(api, t0 + ms(1600), wall).is_ok());
        assert!(l.admit(api, t0 + ms(3100), wall).is_ok());
        let calls: Vec<u32> = l
            .rate
            .as_ref()
            .unwrap()
            .used
            .iter()
            .map(|w| w.calls)
            .collect();
        assert_eq!(calls, [2, 1, 1]);
    }

    #[test]
    fn a_window_refuses_once_its_tokens_are_spent() {
        let t0 = Instant::now();
        let wall = UNIX_EPOCH + Duration::from_secs(1_788_543_035);
        let mut l = limits(Rate::requests(10, Duration::from_secs(60)).with_tokens(100));
        let api = Some(Api::Anthropic);
        assert!(l.admit(api, t0, wall).is_ok());
        l.spend(
            api,
            &json!({"input_tokens": 60, "cache_read_input_tokens": 20, "output_tokens": 20}),
        );
        let headers = l.headers(api, t0, wall);
        assert!(headers.contains(&("anthropic-ratelimit-tokens-remaining".into(), "0".into())));
        assert!(headers.contains(&("anthropic-ratelimit-requests-remaining".into(), "9".into())));
        assert!(headers.contains(&(
            "anthropic-ratelimit-requests-reset".into(),
            "2026-09-04T17:31:35Z".into()
        )));
        let (reply, _) = l.admit(api, t0, wall).expect_err("no tokens left");
        let body: Value = serde_json::from_str(&reply.body).unwrap();
        assert_eq!(body["error"]["type"], "rate_limit_error");
    }

    #[test]
    fn a_call_is_early_only_after_a_429_was_answered_and_before_its_moment() {
        let t0 = Instant::now();
        let s = Duration::from_secs;
        let call = |at: Instant, throttled: Option<Throttle>| RecordedRequest {
            method: "POST".into(),
            path: "/v1/messages".into(),
            headers: Vec::new(),
            body: Value::Null,
            answered_usage: Value::Null,
            received_at: at,
            throttled,
        };
        let requests = [
            call(t0 + s(1), None),
            // Sent before the 429 below was answered: it could not know.
            call(t0 + s(2), None),
            call(
                t0 + s(2),
                Some(Throttle {
                    at: t0 + s(3),
                    until: t0 + s(5),
                }),
            ),
            call(t0 + s(4), None),
            call(t0 + s(5), None),
        ];
        let early = early_calls(&requests);
        assert_eq!(early.len(), 1);
        assert_eq!(early[0].received_at, t0 + s(4));
    }
}
