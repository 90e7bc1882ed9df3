//! Prompt caching as the mock server simulates it, close enough to the real APIs
//! that what a client saves by caching can be measured offline.
//!
//! Token counts are estimates: a quarter of the bytes of each piece of the request
//! as compact JSON, rounded up. That is the order of magnitude a real tokenizer
//! gives for English and code, and the same estimate for every run, so runs can be
//! compared with each other; it is not what a real API would bill.
//!
//! - **Anthropic** (`/v1/messages`): the prompt is a sequence of pieces in the
//!   order the API caches them: each tool, each system block, each content block of
//!   each message. A piece with `cache_control` is a breakpoint. A request reads
//!   from the cache the longest prefix it has seen written before, ending at a
//!   breakpoint or at any of the 20 piece boundaries before one (the API's
//!   lookback); it writes the prefix up to its last breakpoint, less what it read.
//!   Prefixes under 1,024 tokens are never cached (the least the API caches for
//!   Sonnet). `input_tokens` is the rest. Entries never expire (the API keeps them
//!   five minutes from their last use, longer than any test).
//! - **OpenAI** (`/chat/completions`): caching is automatic. The prompt (the tools,
//!   then the messages) is one byte string; the cached part is the longest prefix
//!   seen in an earlier request, counted in whole blocks: the first 1,024 tokens,
//!   then steps of 128, as OpenAI reports `prompt_tokens_details.cached_tokens`.
//!   `prompt_tokens` counts the whole prompt, cached part included.
//! - **Gemini** (`:generateContent`, `:streamGenerateContent`): implicit caching,
//!   counted as OpenAI's over the system instruction, the tools and the contents;
//!   `promptTokenCount` counts the whole prompt, `cachedContentTokenCount` the
//!   cached part.
//! - **OpenAI Responses** (`/responses`): the same automatic cache over the
//!   tools, the instructions and the input items.

use serde_json::Value;
use std::collections::HashSet;
use std::hash::{DefaultHasher, Hash, Hasher};

/// The shortest prefix either API caches, in tokens.
pub const MIN_CACHED_TOKENS: u64 = 1024;
/// OpenAI's cache hits grow in steps of this many tokens past the first 1,024.
pub const OPENAI_CACHE_STEP: u64 = 128;
/// How many piece boundaries before a breakpoint Anthropic looks for a hit.
const LOOKBACK: usize = 20;
/// Bytes per estimated token.
const BYTES_PER_TOKEN: u64 = 4;

/// Which API a request speaks, by its path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    Anthropic,
    OpenAi,
    Gemini,
    /// The Responses API (Codex).
    Responses,
}

impl Api {
    pub fn of_path(path: &str) -> Option<Api> {
        let path = path.split('?').next().unwrap_or_default();
        if path.ends_with("/messages") {
            Some(Api::Anthropic)
        } else if path.ends_with("/chat/completions") {
            Some(Api::OpenAi)
        } else if crate::gemini::is_gemini(path) && !crate::gemini::is_count_tokens(path) {
            Some(Api::Gemini)
        } else if path.ends_with("/responses") {
            Some(Api::Responses)
        } else {
            None
        }
    }
}

/// What one request's prompt cost, in estimated tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PromptUsage {
    /// The whole prompt.
    pub prompt: u64,
    /// Read from the cache.
    pub cache_read: u64,
    /// Written to the cache (Anthropic only).
    pub cache_write: u64,
}

impl PromptUsage {
    /// The part neither read from nor written to the cache.
    pub fn fresh(&self) -> u64 {
        self.prompt - self.cache_read - self.cache_write
    }

    /// What the `usage` of an answer in `api`'s format says of its prompt
    /// ([`crate::RecordedRequest::answered_usage`] with the cache simulated):
    /// the reading back of what the mock wrote. Missing fields count 0.
    pub fn of_answer(api: Api, usage: &Value) -> PromptUsage {
        let n = |v: &Value| v.as_u64().unwrap_or(0);
        match api {
            // input_tokens leaves out what was read from and written to the cache.
            Api::Anthropic => {
                let (read, write) = (
                    n(&usage["cache_read_input_tokens"]),
                    n(&usage["cache_creation_input_tokens"]),
                );
                PromptUsage {
                    prompt: n(&usage["input_tokens"]) + read + write,
                    cache_read: read,
                    cache_write: write,
                }
            }
            // The others count the whole prompt, cached part included.
            Api::OpenAi => PromptUsage {
                prompt: n(&usage["prompt_tokens"]),
                cache_read: n(&usage["prompt_tokens_details"]["cached_tokens"]),
                cache_write: 0,
            },
            Api::Responses => PromptUsage {
                prompt: n(&usage["input_tokens"]),
                cache_read: n(&usage["input_tokens_details"]["cached_tokens"]),
                cache_write: 0,
            },
            Api::Gemini => PromptUsage {
                prompt: n(&usage["promptTokenCount"]),
                cache_read: n(&usage["cachedContentTokenCount"]),
                cache_write: 0,
            },
        }
    }
}

/// The prefixes seen so far, by the hash of their content.
#[derive(Debug, Default)]
pub struct PromptCache {
    anthropic: HashSet<u64>,
    openai: HashSet<u64>,
    gemini: HashSet<u64>,
}

impl PromptCache {
    /// What `body` costs, and remembers what it writes to the cache.
    pub fn usage(&mut self, api: Api, body: &Value) -> PromptUsage {
        match api {
            Api::Anthropic => self.anthropic(body),
            Api::OpenAi => automatic(&mut self.openai, &prompt(body, &["tools"], "messages")),
            Api::Gemini => {
                let keys = ["systemInstruction", "tools"];
                automatic(&mut self.gemini, &prompt(body, &keys, "contents"))
            }
            Api::Responses => {
                let keys = ["tools", "instructions"];
                automatic(&mut self.openai, &prompt(body, &keys, "input"))
            }
        }
    }

    fn anthropic(&mut self, body: &Value) -> PromptUsage {
        let pieces = anthropic_pieces(body);
        // For each piece: the hash of the prefix that ends with it, and its size.
        let mut hashes = Vec::with_capacity(pieces.len());
        let mut tokens = Vec::with_capacity(pieces.len());
        let (mut hash, mut total) = (0u64, 0u64);
        for piece in &pieces {
            hash = chain(hash, piece.bytes.as_bytes());
            total += estimate(piece.bytes.len());
            hashes.push(hash);
            tokens.push(total);
        }
        let breakpoints: Vec<usize> = (0..pieces.len())
            .filter(|&i| pieces[i].breakpoint)
            .collect();
        let hit = breakpoints
            .iter()
            .flat_map(|&b| b.saturating_sub(LOOKBACK - 1)..=b)
            .filter(|&i| tokens[i] >= MIN_CACHED_TOKENS && self.anthropic.contains(&hashes[i]))
            .max();
        let cache_read = hit.map_or(0, |i| tokens[i]);
        let cache_write = match breakpoints.last() {
            Some(&last) if tokens[last] >= MIN_CACHED_TOKENS && Some(last) > hit => {
                tokens[last] - cache_read
            }
            _ => 0,
        };
        for &b in &breakpoints {
            if tokens[b] >= MIN_CACHED_TOKENS {
                self.anthropic.insert(hashes[b]);
            }
        }
        PromptUsage {
            prompt: total,
            cache_read,
            cache_write,
        }
    }
}

/// The prompt of a request whose cache is automatic, as one string in the order
/// the API caches it: the values of `keys` that are there, then each item of the
/// list `items`, each as compact JSON.
fn prompt(body: &Value, keys: &[&str], items: &str) -> String {
    let heads = keys.iter().filter_map(|k| body.get(*k));
    let tail = body[items].as_array().into_iter().flatten();
    heads.chain(tail).map(Value::to_string).collect()
}

/// Automatic caching (OpenAI's, Gemini's implicit one): the longest prefix of
/// `prompt` seen before, in whole blocks; every prefix is remembered in `seen`.
fn automatic(seen: &mut HashSet<u64>, prompt: &str) -> PromptUsage {
    let bytes = prompt.as_bytes();
    let first = (MIN_CACHED_TOKENS * BYTES_PER_TOKEN) as usize;
    let step = (OPENAI_CACHE_STEP * BYTES_PER_TOKEN) as usize;
    let mut hash = 0u64;
    let (mut from, mut to) = (0, first);
    let (mut cache_read, mut matching) = (0, true);
    while to <= bytes.len() {
        hash = chain(hash, &bytes[from..to]);
        // A prefix that was never seen has no longer one that was; every one
        // is remembered for the requests to come.
        matching = matching && seen.contains(&hash);
        if matching {
            cache_read = to as u64 / BYTES_PER_TOKEN;
        }
        seen.insert(hash);
        (from, to) = (to, to + step);
    }
    PromptUsage {
        prompt: estimate(bytes.len()),
        cache_read,
        cache_write: 0,
    }
}

/// One cacheable piece of an Anthropic request: its content without the marker,
/// and whether it carried one.
struct Piece {
    bytes: String,
    breakpoint: bool,
}

fn piece(value: &Value, prefix: &str) -> Piece {
    let mut value = value.clone();
    let breakpoint = value
        .as_object_mut()
        .and_then(|o| o.remove("cache_control"))
        .is_some();
    Piece {
        bytes: format!("{prefix}{value}"),
        breakpoint,
    }
}

/// The pieces of a Messages API request in the order the API caches them: tools,
/// system, messages.
fn anthropic_pieces(body: &Value) -> Vec<Piece> {
    let mut pieces = Vec::new();
    for tool in body["tools"].as_array().into_iter().flatten() {
        pieces.push(piece(tool, "tool:"));
    }
    match &body["system"] {
        Value::Array(blocks) => pieces.extend(blocks.iter().map(|b| piece(b, "system:"))),
        Value::Null => {}
        other => pieces.push(piece(other, "system:")),
    }
    for message in body["messages"].as_array().into_iter().flatten() {
        let role = message["role"].as_str().unwrap_or_default();
        match &message["content"] {
            Value::Array(blocks) => {
                for (i, block) in blocks.iter().enumerate() {
                    // The first block also opens the turn.
                    let prefix = if i == 0 {
                        format!("{role}:")
                    } else {
                        String::new()
                    };
                    pieces.push(piece(block, &prefix));
                }
            }
            other => pieces.push(piece(other, &format!("{role}:"))),
        }
    }
    pieces
}

fn estimate(bytes: usize) -> u64 {
    (bytes as u64).div_ceil(BYTES_PER_TOKEN)
}

/// The hash of a prefix, from the hash of the prefix before it and what follows.
fn chain(before: u64, bytes: &[u8]) -> u64 {
    let mut h = DefaultHasher::new();
    before.hash(&mut h);
    bytes.hash(&mut h);
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_answers_usage_reads_back_as_the_prompt_it_counted() {
        let of = PromptUsage::of_answer;
        let anthropic = json!({"input_tokens": 3, "cache_read_input_tokens": 5, "cache_creation_input_tokens": 7});
        assert_eq!(
            of(Api::Anthropic, &anthropic),
            PromptUsage {
                prompt: 15,
                cache_read: 5,
                cache_write: 7
            }
        );
        let openai = json!({"prompt_tokens": 9, "prompt_tokens_details": {"cached_tokens": 4}});
        assert_eq!(of(Api::OpenAi, &openai).fresh(), 5);
        let responses = json!({"input_tokens": 9, "input_tokens_details": {"cached_tokens": 2}});
        assert_eq!(of(Api::Responses, &responses).cache_read, 2);
        let gemini = json!({"promptTokenCount": 11, "cachedContentTokenCount": 1});
        assert_eq!(of(Api::Gemini, &gemini).prompt, 11);
        assert_eq!(of(Api::Gemini, &Value::Null), PromptUsage::default());
    }

    fn tools(marked: bool) -> Value {
        let mut tools: Vec<Value> = (0..8)
            .map(|i| json!({"name": format!("tool{i}"), "description": "d".repeat(600)}))
            .collect();
        if marked {
            tools[7]["cache_control"] = json!({"type": "ephemeral"});
        }
        Value::Array(tools)
    }

    fn anthropic_request(turns: &[&str], marked: bool) -> Value {
        let mut messages: Vec<Value> = turns
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let role = if i % 2 == 0 { "user" } else { "assistant" };
                json!({"role": role, "content": [{"type": "text", "text": t}]})
            })
            .collect();
        if marked {
            let last = messages.len() - 1;
            messages[last]["content"][0]["cache_control"] = json!({"type": "ephemeral"});
        }
        let system = if marked {
            json!([{"type": "text", "text": "sys", "cache_control": {"type": "ephemeral"}}])
        } else {
            json!("sys")
        };
        json!({"model": "m", "system": system, "tools": tools(marked), "messages": messages})
    }

    #[test]
    fn anthropic_reads_what_an_earlier_breakpoint_wrote_and_writes_the_rest() {
        let mut cache = PromptCache::default();
        let task = "x".repeat(400);
        let first = cache.usage(Api::Anthropic, &anthropic_request(&[&task], true));
        assert_eq!(first.cache_read, 0);
        assert!(first.cache_write > MIN_CACHED_TOKENS, "{first:?}");
        assert_eq!(
            first.fresh(),
            0,
            "everything up to the tail breakpoint is written"
        );
        // The conversation grew by two turns: the old tail is found by the lookback.
        let second = cache.usage(
            Api::Anthropic,
            &anthropic_request(&[&task, "ok", "result"], true),
        );
        assert_eq!(second.cache_read, first.prompt);
        assert_eq!(second.cache_write, second.prompt - first.prompt);
        // Another task with the same tools and system prompt reads those.
        let other = cache.usage(Api::Anthropic, &anthropic_request(&["y"], true));
        assert!(other.cache_read > MIN_CACHED_TOKENS && other.cache_read < first.prompt);
        assert_eq!(other.cache_write, other.prompt - other.cache_read);
    }

    #[test]
    fn anthropic_without_markers_caches_nothing() {
        let mut cache = PromptCache::default();
        for _ in 0..2 {
            let u = cache.usage(Api::Anthropic, &anthropic_request(&["a", "b", "c"], false));
            assert_eq!((u.cache_read, u.cache_write), (0, 0));
            assert_eq!(u.fresh(), u.prompt);
        }
    }

    #[test]
    fn anthropic_does_not_cache_a_short_prefix() {
        let mut cache = PromptCache::default();
        let body = json!({"system": [{"type": "text", "text": "short", "cache_control": {"type": "ephemeral"}}],
                          "messages": [{"role": "user", "content": "hi"}]});
        for _ in 0..2 {
            let u = cache.usage(Api::Anthropic, &body);
            assert_eq!((u.cache_read, u.cache_write), (0, 0));
        }
    }

    #[test]
    fn openai_caches_the_longest_seen_prefix_in_whole_blocks() {
        let mut cache = PromptCache::default();
        let request = |turns: &[&str]| {
            let messages: Vec<Value> = turns
                .iter()
                .map(|t| json!({"role": "user", "content": t}))
                .collect();
            json!({"tools": tools(false), "messages": messages})
        };
        let long = "z".repeat(3000);
        let first = cache.usage(Api::OpenAi, &request(&[&long]));
        assert_eq!(first.cache_read, 0);
        assert_eq!(first.cache_write, 0, "OpenAI reports no writes");
        let second = cache.usage(Api::OpenAi, &request(&[&long, "more"]));
        assert!(second.cache_read >= MIN_CACHED_TOKENS, "{second:?}");
        assert_eq!(
            (second.cache_read - MIN_CACHED_TOKENS) % OPENAI_CACHE_STEP,
            0
        );
        assert!(second.cache_read <= first.prompt);
        assert!(first.prompt - second.cache_read < OPENAI_CACHE_STEP + 10);
        // A prompt that differs from the start shares nothing.
        let other = json!({"messages": [{"role": "user", "content": "q".repeat(9000)}]});
        assert_eq!(cache.usage(Api::OpenAi, &other).cache_read, 0);
    }

    #[test]
    fn requests_are_told_apart_by_path() {
        assert_eq!(Api::of_path("/v1/messages"), Some(Api::Anthropic));
        assert_eq!(Api::of_path("/v1/chat/completions"), Some(Api::OpenAi));
        assert_eq!(Api::of_path("/v1/responses"), Some(Api::Responses));
        assert_eq!(Api::of_path("/v1/models"), None);
        assert_eq!(
            Api::of_path("/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"),
            Some(Api::Gemini)
        );
        assert_eq!(Api::of_path("/v1beta/models/m:countTokens"), None);
    }
}
