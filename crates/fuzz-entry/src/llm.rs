//! A model API's answer as the providers read it: the status, headers and body
//! through `llm::http::read_answer` (rate-limit headers, `retry-after`, error
//! bodies, the JSON), then the provider's `parse_response`.
//!
//! The input is laid out like an HTTP/1.1 answer without its status line's
//! text: the status code on the first line, one `name: value` header per line,
//! an empty line, then the body. Headers that HTTP cannot carry are left out,
//! as the HTTP client would have refused them before teammated saw them.

use reqwest::StatusCode;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use teammated::llm::{anthropic, http, openai};

/// The moment the answer is read at, fixed so that a crash replays.
const NOW_MS: i64 = 1_765_000_000_000;

/// An answer from the Anthropic Messages API.
pub fn llm_anthropic(data: &[u8]) {
    if let Some(answer) = read(data, "anthropic") {
        let _ = anthropic::parse_response(&answer.body);
    }
}

/// An answer from an OpenAI-compatible Chat Completions API.
pub fn llm_openai(data: &[u8]) {
    if let Some(answer) = read(data, "openai") {
        let _ = openai::parse_response(&answer.body);
    }
}

fn read(data: &[u8], provider: &'static str) -> Option<http::Answer> {
    let mut lines = data.split_inclusive(|b| *b == b'\n');
    let status = std::str::from_utf8(lines.next()?).ok()?.trim();
    let status = StatusCode::from_u16(status.parse().ok()?).ok()?;
    let mut at = data.len() - lines.clone().map(<[u8]>::len).sum::<usize>();
    let mut headers = HeaderMap::new();
    for line in lines {
        at += line.len();
        let line = line.strip_suffix(b"\n").unwrap_or(line);
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            break;
        }
        let Some(colon) = line.iter().position(|b| *b == b':') else {
            continue;
        };
        let (name, value) = line.split_at(colon);
        let name = HeaderName::from_bytes(name);
        let value = HeaderValue::from_bytes(value[1..].trim_ascii());
        if let (Ok(name), Ok(value)) = (name, value) {
            headers.append(name, value);
        }
    }
    let body = &data[at.min(data.len())..];
    let secrets = ["sk-fuzz-secret"];
    http::read_answer(
        provider,
        "https://api.example.com/v1/x",
        status,
        &headers,
        body,
        NOW_MS,
        &secrets,
    )
    .ok()
}
