//! The HTTP client shared by the real providers.
//!
//! Both providers do the same thing on the wire: POST a JSON body with a few headers
//! and read a JSON answer. This module owns that, together with the retry loop, so
//! that timeouts, backoff, error bodies and the care taken with API keys are the same
//! for every provider.
use super::chat::{CompletionRequest, OnRetry};
use super::error::LlmError;
use super::ratelimit;
use super::retry::{Retrying, is_rate_limit, is_retryable};
use crate::backoff::RetryPolicy;
use crate::config::ProviderConfig;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use reqwest::{Method, StatusCode};
use std::time::Duration;
use teamboard_protocol::spend::RateSnapshot;
use teamboard_protocol::text::byte_prefix;

/// Error bodies are kept for the message, but a proxy's HTML error page can be huge.
const MAX_ERROR_BODY: usize = 2048;

/// A JSON answer, and what its headers said about the account's rate limits.
#[derive(Debug)]
pub struct Answer {
    pub body: serde_json::Value,
    pub rate: Option<RateSnapshot>,
}

/// What one call asks of the retry loop.
#[derive(Clone, Copy)]
pub struct Retries<'a> {
    /// Told before each retry.
    pub on_retry: Option<OnRetry<'a>>,
    /// Whether a 429 is retried here (see [`CompletionRequest::retry_rate_limits`]).
    pub rate_limits: bool,
}

impl<'a> Retries<'a> {
    /// What `req` asks for.
    pub fn of(req: &CompletionRequest<'a>) -> Retries<'a> {
        Retries {
            on_retry: req.on_retry,
            rate_limits: req.retry_rate_limits,
        }
    }
}

/// A `reqwest::Client` with a timeout and a retry policy.
#[derive(Debug, Clone)]
pub struct HttpClient {
    client: reqwest::Client,
    retry: RetryPolicy,
}

impl HttpClient {
    /// A client with `cfg.request_timeout` per request and `cfg.retry` between them.
    pub fn new(provider: &'static str, cfg: &ProviderConfig) -> Result<HttpClient, LlmError> {
        let timeout = cfg.request_timeout;
        // reqwest is built without a TLS crypto backend (the default, aws-lc, takes
        // minutes to compile), and building a client without a process-wide provider
        // panics. Installing fails harmlessly when one is already installed.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder()
            .timeout(timeout)
            // A dead host should be noticed well before a long completion would be.
            .connect_timeout(timeout.min(Duration::from_secs(15)))
            .user_agent(concat!("teammated/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| LlmError::Transport {
                provider,
                message: format!("cannot build the HTTP client: {}", error_chain(&e)),
                timeout: false,
            })?;
        Ok(HttpClient {
            client,
            retry: cfg.retry,
        })
    }

    /// POSTs `body` to `url` and returns the JSON answer, retrying transient failures.
    ///
    /// Non-2xx answers become [`LlmError::Http`]; those that cannot succeed on a second
    /// try (400, 401, ...) come back at once, transient ones are retried with backoff
    /// and come back as [`LlmError::GaveUp`] once the attempts run out; a 429 comes
    /// back at once when `retries` says rate limits are not retried here. Header
    /// values are never logged nor put in errors, and they are scrubbed from error
    /// bodies, because the API key travels in them. `retries.on_retry` hears of each
    /// retry before its wait.
    pub async fn post_json(
        &self,
        provider: &'static str,
        url: &str,
        headers: &[(&str, String)],
        body: &serde_json::Value,
        retries: Retries<'_>,
    ) -> Result<Answer, LlmError> {
        let payload = serde_json::to_vec(body).map_err(|e| LlmError::Decode {
            provider,
            message: format!("cannot encode the request: {e}"),
        })?;
        self.send(
            provider,
            Method::POST,
            url,
            headers,
            Some(&payload),
            retries,
        )
        .await
    }

    /// GETs `url` and returns the JSON answer, retrying as [`Self::post_json`]
    /// does, all of it within `timeout`: for a check that must not outlast its
    /// caller's patience. Errors are those of [`Self::post_json`], and a
    /// [`LlmError::Transport`] timeout when `timeout` runs out first.
    pub async fn get_json(
        &self,
        provider: &'static str,
        url: &str,
        headers: &[(&str, String)],
        timeout: Duration,
    ) -> Result<serde_json::Value, LlmError> {
        let retries = Retries {
            on_retry: None,
            rate_limits: true,
        };
        let send = self.send(provider, Method::GET, url, headers, None, retries);
        tokio::time::timeout(timeout, send)
            .await
            .map(|answer| answer.map(|answer| answer.body))
            .unwrap_or_else(|_| {
                Err(LlmError::Transport {
                    provider,
                    message: format!(
                        "no answer within {} s (GET {})",
                        timeout.as_secs(),
                        shown_url(url)
                    ),
                    timeout: true,
                })
            })
    }

    /// Sends a request until it is answered, it fails in a way a second try
    /// cannot mend, or the attempts run out.
    async fn send(
        &self,
        provider: &'static str,
        method: Method,
        url: &str,
        headers: &[(&str, String)],
        payload: Option<&[u8]>,
        retries: Retries<'_>,
    ) -> Result<Answer, LlmError> {
        let header_map = build_headers(provider, headers)?;
        let secrets = secrets_of(headers);
        let attempts = self.retry.attempts();
        let mut attempt = 1;
        loop {
            let sent = self.send_once(provider, &method, url, &header_map, payload, &secrets);
            let err = match sent.await {
                Ok(answer) => return Ok(answer),
                Err(err) => err,
            };
            if !is_retryable(&err) || (!retries.rate_limits && is_rate_limit(&err)) {
                return Err(err);
            }
            if attempt >= attempts {
                return Err(LlmError::GaveUp {
                    attempts: attempt,
                    last: Box::new(err),
                });
            }
            let (status, retry_after) = match &err {
                LlmError::Http {
                    status,
                    retry_after,
                    ..
                } => (Some(*status), *retry_after),
                _ => (None, None),
            };
            let wait = self.retry.backoff(attempt, retry_after);
            tracing::warn!(
                provider,
                %method,
                status,
                attempt,
                max_attempts = attempts,
                wait_ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
                error = %byte_prefix(&err.to_string(), 300),
                "model API request failed; retrying"
            );
            if let Some(tell) = retries.on_retry {
                tell(&Retrying {
                    error: &err,
                    next_attempt: attempt + 1,
                    attempts,
                    wait,
                });
            }
            tokio::time::sleep(wait).await;
            attempt += 1;
        }
    }

    async fn send_once(
        &self,
        provider: &'static str,
        method: &Method,
        url: &str,
        headers: &HeaderMap,
        payload: Option<&[u8]>,
        secrets: &[&str],
    ) -> Result<Answer, LlmError> {
        let mut request = self
            .client
            .request(method.clone(), url)
            .headers(headers.clone());
        if let Some(payload) = payload {
            request = request.body(payload.to_vec());
        }
        let failed = |e: &reqwest::Error| transport(provider, method, url, e);
        let response = request.send().await.map_err(|e| failed(&e))?;
        let status = response.status();
        let answered = response.headers().clone();
        // The body is read in full before the status is judged so that the error
        // message can say what the server said.
        let bytes = response.bytes().await.map_err(|e| failed(&e))?;
        let now = teamboard_protocol::now_ms();
        read_answer(provider, url, status, &answered, &bytes, now, secrets)
    }
}

/// What an answer that came whole says: its JSON body and rate limits, or the
/// error its status or its body makes of it. Public for the fuzz targets
/// (`crates/fuzz-entry`) only.
#[doc(hidden)]
pub fn read_answer(
    provider: &'static str,
    url: &str,
    status: StatusCode,
    headers: &HeaderMap,
    bytes: &[u8],
    now: i64,
    secrets: &[&str],
) -> Result<Answer, LlmError> {
    let rate = ratelimit::read(status.as_u16(), headers, bytes, now);
    if !status.is_success() {
        let text = String::from_utf8_lossy(bytes);
        return Err(LlmError::Http {
            provider,
            status: status.as_u16(),
            url: shown_url(url),
            body: body_excerpt(&redact(&text, secrets), MAX_ERROR_BODY),
            retry_after: ratelimit::retry_after(headers, now),
            rate: rate.map(Box::new),
        });
    }
    let body = serde_json::from_slice(bytes).map_err(|e| {
        let text = String::from_utf8_lossy(bytes);
        LlmError::Decode {
            provider,
            message: format!(
                "the answer is not JSON ({e}): {}",
                body_excerpt(&redact(&text, secrets), 512)
            ),
        }
    })?;
    Ok(Answer { body, rate })
}

/// The request headers: JSON both ways, then the caller's.
fn build_headers(
    provider: &'static str,
    headers: &[(&str, String)],
) -> Result<HeaderMap, LlmError> {
    let mut map = HeaderMap::new();
    map.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    map.insert(ACCEPT, HeaderValue::from_static("application/json"));
    for (name, value) in headers {
        // The error names the header but never shows its value: it may be the key.
        let bad = |what: &str| LlmError::Transport {
            provider,
            message: format!("header `{name}` has an invalid {what}"),
            timeout: false,
        };
        let name = HeaderName::from_bytes(name.as_bytes()).map_err(|_| bad("name"))?;
        let mut value =
            HeaderValue::from_str(value).map_err(|_| bad("value (control characters?)"))?;
        // Keeps keys out of HTTP/2 header compression tables and out of `Debug`.
        value.set_sensitive(true);
        map.insert(name, value);
    }
    Ok(map)
}

/// Strings that must not show up in an error body: every header value, and the token
/// of an `Authorization: Bearer ...` value on its own. Short values are skipped: they
/// are not secrets, and scrubbing them would mangle ordinary text.
fn secrets_of<'a>(headers: &'a [(&str, String)]) -> Vec<&'a str> {
    let mut out = Vec::new();
    for (_, value) in headers {
        let value = value.trim();
        out.push(value);
        if let Some((_, token)) = value.rsplit_once(' ') {
            out.push(token);
        }
    }
    out.retain(|s| s.len() >= 8);
    // Longest first, so a whole value is replaced before a part of it.
    out.sort_by_key(|s| std::cmp::Reverse(s.len()));
    out
}

/// `err` with `secrets` scrubbed from the text it carries from the server. Providers
/// use it on what they decode from a 2xx answer, which `post_json` cannot see into.
pub(crate) fn redact_error(err: LlmError, secrets: &[&str]) -> LlmError {
    let secrets: Vec<&str> = secrets.iter().copied().filter(|s| s.len() >= 8).collect();
    match err {
        LlmError::Decode { provider, message } => LlmError::Decode {
            provider,
            message: redact(&message, &secrets),
        },
        LlmError::Unusable { provider, message } => LlmError::Unusable {
            provider,
            message: redact(&message, &secrets),
        },
        other => other,
    }
}

/// Some APIs echo the key they were given in a 401; it must not reach logs from there.
fn redact(text: &str, secrets: &[&str]) -> String {
    let mut out = text.to_string();
    for secret in secrets {
        if out.contains(secret) {
            out = out.replace(secret, "<redacted>");
        }
    }
    out
}

/// A server's answer for an error message: trimmed, then its first `max` bytes (on a
/// character boundary) and how many there were in all.
fn body_excerpt(text: &str, max: usize) -> String {
    let text = text.trim();
    if text.len() <= max {
        return text.to_string();
    }
    format!(
        "{}... ({} bytes in all)",
        byte_prefix(text, max),
        text.len()
    )
}

fn transport(provider: &'static str, method: &Method, url: &str, err: &reqwest::Error) -> LlmError {
    LlmError::Transport {
        provider,
        message: format!("{} ({method} {})", error_chain(err), shown_url(url)),
        timeout: err.is_timeout(),
    }
}

/// `url` as errors and logs may show it: without a user name or password, a query
/// (some gateways take keys there) or a fragment. A URL that does not parse is cut
/// at its query and loses what comes before an `@`.
pub(crate) fn shown_url(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(mut u) => {
            // Both fail only for URLs that cannot have them, which have none.
            let _ = u.set_username("");
            let _ = u.set_password(None);
            u.set_query(None);
            u.set_fragment(None);
            u.to_string()
        }
        Err(_) => {
            let url = url.split(['?', '#']).next().unwrap_or_default();
            match url.split_once("://") {
                Some((scheme, rest)) => {
                    let rest = rest.rsplit_once('@').map_or(rest, |(_, r)| r);
                    format!("{scheme}://{rest}")
                }
                None => url.rsplit_once('@').map_or(url, |(_, r)| r).to_string(),
            }
        }
    }
}

/// An error and its causes on one line. reqwest's own message is often only "error
/// sending request"; the reason ("connection refused", "operation timed out") is
/// further down the chain. reqwest's URL is left out (see [`WithoutUrl`]): callers
/// add the URL as [`shown_url`] shows it.
fn error_chain(err: &reqwest::Error) -> String {
    let mut out = WithoutUrl(err).to_string();
    let mut source = std::error::Error::source(err);
    while let Some(cause) = source {
        let text = cause.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = cause.source();
    }
    out
}

/// reqwest's `Display` appends " for url (...)"; `without_url` needs ownership, so
/// the kind of error is described here instead.
struct WithoutUrl<'a>(&'a reqwest::Error);

impl std::fmt::Display for WithoutUrl<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let e = self.0;
        let kind = if e.is_timeout() {
            "timed out"
        } else if e.is_connect() {
            "cannot connect"
        } else if e.is_body() || e.is_decode() {
            "reading the answer failed"
        } else if e.is_builder() {
            "cannot build the request"
        } else if e.is_redirect() {
            "too many redirects"
        } else {
            "sending the request failed"
        };
        f.write_str(kind)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncation_respects_char_boundaries_and_reports_length() {
        assert_eq!(body_excerpt("  short  ", 10), "short");
        let long = "é".repeat(2000); // 4000 bytes
        let t = body_excerpt(&long, MAX_ERROR_BODY);
        assert!(t.starts_with(&"é".repeat(1024)));
        assert!(t.ends_with("... (4000 bytes in all)"), "{t}");
        // 2049 bytes: the cut falls inside a character, which is left out whole.
        let odd = format!("a{long}");
        let t = body_excerpt(&odd, MAX_ERROR_BODY);
        assert_eq!(t, format!("a{}... (4001 bytes in all)", "é".repeat(1023)));
    }

    #[test]
    fn secrets_are_scrubbed_from_bodies() {
        let headers = [
            ("authorization", "Bearer sk-test-1234567890".to_string()),
            ("x-api-key", "sk-ant-abcdefghij".to_string()),
            ("anthropic-version", "2023".to_string()),
        ];
        let secrets = secrets_of(&headers);
        let body = "Incorrect API key provided: sk-test-1234567890; also sk-ant-abcdefghij; 2023";
        let out = redact(body, &secrets);
        assert!(!out.contains("sk-test"), "{out}");
        assert!(!out.contains("sk-ant"), "{out}");
        assert!(out.contains("2023"), "short values are left alone: {out}");
    }

    #[test]
    fn shown_urls_lose_passwords_and_queries() {
        assert_eq!(
            shown_url("https://me:secret@api.example.com/v1/models?key=k#x"),
            "https://api.example.com/v1/models"
        );
        assert_eq!(
            shown_url("http://localhost:11434/v1/chat/completions"),
            "http://localhost:11434/v1/chat/completions"
        );
        assert_eq!(shown_url("http://me:pw@[bad/x?key=k"), "http://[bad/x");
    }

    #[test]
    fn bad_header_values_are_refused_without_showing_them() {
        let headers = [("x-api-key", "sk-secret\nvalue".to_string())];
        let err = build_headers("anthropic", &headers).unwrap_err();
        let shown = format!("{err} {err:?}");
        assert!(shown.contains("x-api-key"), "{shown}");
        assert!(!shown.contains("sk-secret"), "{shown}");
    }
}
