//! The model flags both of teammated's modes take (a teammate, and `teammated lead`),
//! and how they become a [`ProviderConfig`] with the key from the environment or
//! the keys file.

use crate::backoff::RetryPolicy;
use crate::config::{MaxTokensField, ProviderConfig, ProviderKind, keys_file, lookup_secret};
use std::time::Duration;

/// Environment variables that hold API keys. A binary removes them from its
/// environment once they are in the config, so that nothing it starts inherits them.
pub const SECRET_VARS: [&str; 2] = ["ANTHROPIC_API_KEY", "OPENAI_API_KEY"];

#[derive(Debug, Clone, clap::Args)]
pub struct ProviderArgs {
    /// The model provider. `scripted` is an offline stand-in that needs no key (see
    /// the README: it is not a model).
    #[arg(
        long,
        env = "TEAMMATE_PROVIDER",
        value_enum,
        default_value = "scripted"
    )]
    pub provider: ProviderKind,
    /// The model [default: claude-sonnet-4-5 for anthropic, gpt-4o-mini for openai]
    #[arg(long, env = "TEAMMATE_MODEL")]
    pub model: Option<String>,
    /// The API's base URL, e.g. http://localhost:11434/v1 for ollama
    /// [env: ANTHROPIC_BASE_URL / OPENAI_BASE_URL]
    #[arg(long, env = "TEAMMATE_BASE_URL")]
    pub base_url: Option<String>,
    /// Output tokens per model call.
    #[arg(long, env = "TEAMMATE_MAX_TOKENS", default_value_t = 4096)]
    pub max_tokens: u32,
    /// openai only: the request field that carries --max-tokens. OpenAI's own API
    /// wants max_completion_tokens (its reasoning models refuse max_tokens); ollama,
    /// llama.cpp, vLLM and LM Studio know max_tokens, and ignore a field they do not
    /// know, which would leave the output unlimited. A model that refuses the
    /// field is asked again with the other one
    /// [default: max_completion_tokens on api.openai.com, max_tokens elsewhere]
    #[arg(
        long,
        env = "TEAMMATE_MAX_TOKENS_FIELD",
        value_enum,
        value_name = "FIELD"
    )]
    pub max_tokens_field: Option<MaxTokensField>,
    /// Timeout of one HTTP request to the model, in seconds.
    #[arg(long, env = "TEAMMATE_REQUEST_TIMEOUT", default_value_t = 300)]
    pub request_timeout: u64,
    /// Attempts per model call on 429, 5xx, 529 and timeouts.
    #[arg(long, env = "TEAMMATE_LLM_ATTEMPTS", default_value_t = 6)]
    pub llm_attempts: u32,
    /// The first retry's backoff in milliseconds; it doubles, with jitter.
    #[arg(long, env = "TEAMMATE_RETRY_BASE_MS", default_value_t = 500)]
    pub retry_base_ms: u64,
    /// The provider account's name. boardd holds the account's rate limits
    /// and usage caps for every teammate that names it
    /// [default: <provider>@<host>, e.g. anthropic@api.anthropic.com]
    #[arg(long, env = "TEAMMATE_ACCOUNT", value_name = "NAME")]
    pub account: Option<String>,
    /// The account's limit of calls in flight at once, over all its teammates.
    #[arg(long, env = "TEAMMATE_CONCURRENT", value_name = "N",
        value_parser = clap::value_parser!(u32).range(1..))]
    pub concurrent: Option<u32>,
    /// The account's limit of requests per minute, over all its teammates.
    #[arg(long, env = "TEAMMATE_RPM", value_name = "N",
        value_parser = clap::value_parser!(u32).range(1..))]
    pub rpm: Option<u32>,
    /// The account's limit of tokens per minute, over all its teammates.
    #[arg(long, env = "TEAMMATE_TPM", value_name = "N",
        value_parser = clap::value_parser!(u64).range(1..))]
    pub tpm: Option<u64>,
    /// An account of the providers file to call while this one is blocked
    /// (a usage limit, a 429 with a reset time); repeat it for a longer chain.
    /// The teammate returns to the first account once its reset passes.
    #[arg(
        long,
        env = "TEAMMATE_FALLBACK",
        value_name = "ACCOUNT",
        value_delimiter = ','
    )]
    pub fallback: Vec<String>,
    /// The providers file that defines the fallback accounts
    /// [default: ~/.config/teamboard/providers.toml]
    #[arg(long, env = "TEAMMATE_PROVIDERS", value_name = "FILE")]
    pub providers: Option<std::path::PathBuf>,
}

impl ProviderArgs {
    /// The provider's settings, with the key looked up for the provider named.
    pub fn into_config(self) -> Result<ProviderConfig, crate::accounts::AccountsError> {
        let keys = keys_file();
        let (key_var, url_var) = match self.provider {
            ProviderKind::Anthropic => (Some("ANTHROPIC_API_KEY"), Some("ANTHROPIC_BASE_URL")),
            ProviderKind::Openai => (Some("OPENAI_API_KEY"), Some("OPENAI_BASE_URL")),
            ProviderKind::Scripted => (None, None),
        };
        let api_key = key_var.and_then(|v| lookup_secret(v, &keys));
        let base_url = self
            .base_url
            .or_else(|| url_var.and_then(|v| std::env::var(v).ok()))
            .filter(|u| !u.is_empty());
        let mut cfg = ProviderConfig {
            kind: self.provider,
            model: self.model,
            base_url,
            api_key,
            max_tokens: self.max_tokens,
            max_tokens_field: self.max_tokens_field,
            request_timeout: Duration::from_secs(self.request_timeout.max(1)),
            retry: RetryPolicy {
                max_attempts: self.llm_attempts.max(1),
                base: Duration::from_millis(self.retry_base_ms),
                ..RetryPolicy::default()
            },
            account: Default::default(),
        };
        cfg.account = crate::accounts::AccountConfig {
            name: self.account,
            limits: teamboard_protocol::spend::RateLimits {
                concurrent: self.concurrent,
                requests_per_minute: self.rpm,
                tokens_per_minute: self.tpm,
            },
            fallbacks: Vec::new(),
            key_vars: Vec::new(),
        };
        let file = self
            .providers
            .unwrap_or_else(crate::accounts::providers_file);
        cfg.account.fallbacks = crate::accounts::fallbacks(&self.fallback, &file, &cfg)?;
        Ok(cfg)
    }
}
