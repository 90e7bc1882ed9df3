//! The check at start that the base URL leads to the API and the key is taken.
//!
//! A wrong base URL (`/v1` missing, or doubled) or a refused key used to surface
//! only at the first task, as an error on that task. Both APIs list their models
//! with a cheap `GET` that spends no tokens, so the teammate (and the lead) asks
//! for that list before it registers.
//!
//! Only a refused key (401) stops it: `teamctl spawn`, which waits for the
//! teammate to connect, then fails with the reason instead of reporting success.
//! Every other answer is advice for the transcript, because the list is no part
//! of what a teammate needs:
//! - a 404, a 405 or an answer that is no model list: many compatible servers
//!   and gateways serve the chat endpoint alone. The advice says what to try,
//!   should the model calls fail too; a base URL that really leads nowhere then
//!   stops the teammate at its first model call (a 404 there is a configuration
//!   error, see [`LlmError::is_configuration`]), with that URL in the message;
//! - a 403: a key restricted to some endpoints may be refused the list yet be
//!   allowed to chat;
//! - a 5xx, a 429 or no answer: a model server started after the teammate
//!   (ollama, a systemd unit ordered later) is no configuration error, and the
//!   teammate spends nothing while it waits for work. These are retried first,
//!   with the model calls' policy, within [`PROBE_TIMEOUT`].
//!
//! Stopping on a 404 lost: it kept every server without the list from being used,
//! with no way around it, to report earlier what the first model call reports
//! anyway.

use super::error::LlmError;
use super::http::{HttpClient, shown_url};
use std::time::Duration;
use teamboard_protocol::text::byte_prefix_with_ellipsis;

/// How long the check waits for an answer, retries included; it must not eat
/// `teamctl spawn`'s patience (30 s by default).
const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

/// How much of an error body the message quotes: enough for the server's reason,
/// not a whole HTML error page.
const BODY_MAX: usize = 200;

/// What the check at start found, when that is no reason to stop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Probe {
    /// The server listed its models at `url`.
    Listed { url: String },
    /// No list, or no answer: the text says why and what to try, for the
    /// transcript.
    Unsure(String),
    /// Nothing to check (the scripted model).
    Skipped,
}

/// One model list request and what its answer means.
pub(crate) struct ModelList<'a> {
    pub provider: &'static str,
    pub url: String,
    pub headers: &'a [(&'a str, String)],
    /// Where the key comes from, for the message when it is refused.
    pub key_var: &'static str,
    /// Whether a key was sent (a local server may take none).
    pub has_key: bool,
    /// What to try should the URL lead nowhere.
    pub hint: String,
}

impl ModelList<'_> {
    pub(crate) async fn check(&self, http: &HttpClient) -> Result<Probe, LlmError> {
        let shown = shown_url(&self.url);
        match http
            .get_json(self.provider, &self.url, self.headers, PROBE_TIMEOUT)
            .await
        {
            Ok(answer) if answer["data"].is_array() => Ok(Probe::Listed { url: shown }),
            Err(LlmError::Http {
                status: 401, body, ..
            }) => Err(LlmError::Unusable {
                provider: self.provider,
                message: format!(
                    "{shown} is reachable, but it {} (HTTP 401: {}); {} {} in the environment \
                     or in {}",
                    if self.has_key {
                        "refused the API key"
                    } else {
                        "wants an API key"
                    },
                    one_line(&body),
                    if self.has_key { "check" } else { "set" },
                    self.key_var,
                    crate::config::keys_file().display()
                ),
            }),
            Ok(_) | Err(LlmError::Decode { .. }) => Ok(Probe::Unsure(format!(
                "GET {shown} answered, but not with a list of models; going on, but if the \
                 model calls fail too, the base URL does not lead to the API: {}",
                self.hint
            ))),
            Err(LlmError::Http {
                status: status @ (404 | 405),
                body,
                ..
            }) => Ok(Probe::Unsure(format!(
                "GET {shown} answered HTTP {status} ({}): this server lists no models; going \
                 on, but if the model calls fail too, the base URL does not lead to the API: {}",
                one_line(&body),
                self.hint
            ))),
            Err(e) => Ok(Probe::Unsure(format!(
                "cannot check the base URL {} now ({e}); going on: model calls retry, and the \
                 first one will tell",
                base_of(&shown)
            ))),
        }
    }
}

/// A server's error body on one line, cut to [`BODY_MAX`] bytes.
fn one_line(body: &str) -> String {
    let words: Vec<&str> = body.split_whitespace().collect();
    byte_prefix_with_ellipsis(&words.join(" "), BODY_MAX)
}

/// The base URL a model list URL was built from (`.../v1/models` → `.../v1`).
fn base_of(url: &str) -> &str {
    url.strip_suffix("/models").unwrap_or(url)
}
