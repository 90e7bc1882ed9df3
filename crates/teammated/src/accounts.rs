//! Provider accounts: the name boardd schedules a teammate's calls under, the
//! limits the person gave it, and the accounts to fall back to.
//!
//! An account is a provider, a model, a base URL and a key. Its rate limits
//! and usage caps are the provider's, shared by every teammate that uses it,
//! so boardd holds them (see `meter`); teammated only names the account and
//! says what the person configured. The fallbacks are named accounts of the
//! providers file (`~/.config/teamboard/providers.toml`):
//!
//! ```toml
//! [accounts.backup]
//! provider = "openai"
//! model = "gpt-4o-mini"
//! base_url = "https://api.openai.com/v1"
//! key_env = "BACKUP_OPENAI_KEY"   # looked up in the environment, then keys.env
//! requests_per_minute = 500
//! tokens_per_minute = 200000
//! concurrent = 8
//! ```
//!
//! Alternatives that lost: fallbacks as command-line flags (a provider, model,
//! URL and key per fallback is a command line nobody can read, and the key
//! would be in it); the whole primary provider in the file too (every
//! existing way of starting a teammate names its provider with flags, and
//! the file only needs to hold what the flags cannot).

use crate::config::{ProviderConfig, ProviderKind, keys_file, lookup_secret};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use teamboard_protocol::spend::{AccountRef, RateLimits};

/// Which account a provider's calls go to, and what follows it.
#[derive(Debug, Clone, Default)]
pub struct AccountConfig {
    /// The account's name; `None`: `<provider>@<host>`.
    pub name: Option<String>,
    pub limits: RateLimits,
    /// Accounts to fail over to, in order.
    pub fallbacks: Vec<ProviderConfig>,
    /// The environment variables this account's key was read from: taken out
    /// of the environment once read, as the primary provider's are, so that
    /// nothing the model runs inherits them.
    pub key_vars: Vec<String>,
}

impl AccountConfig {
    /// Every key variable of the chain: the fallbacks'.
    pub fn chain_key_vars(&self) -> impl Iterator<Item = &str> {
        self.key_vars
            .iter()
            .chain(
                self.fallbacks
                    .iter()
                    .flat_map(|f| f.account.key_vars.iter()),
            )
            .map(String::as_str)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum AccountsError {
    #[error("cannot read the providers file {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the providers file {path} is not valid: {message}")]
    Parse { path: PathBuf, message: String },
    #[error(
        "--fallback {name}: the providers file {path} has no [accounts.{name}] (it has: {known})"
    )]
    Unknown {
        name: String,
        path: PathBuf,
        known: String,
    },
}

/// One account of the providers file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileAccount {
    provider: String,
    model: Option<String>,
    base_url: Option<String>,
    /// The variable (in the environment, or keys.env) that holds its key.
    key_env: Option<String>,
    max_tokens: Option<u32>,
    concurrent: Option<u32>,
    requests_per_minute: Option<u32>,
    tokens_per_minute: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ProvidersFile {
    #[serde(default)]
    accounts: BTreeMap<String, FileAccount>,
}

/// The providers file's default place.
pub fn providers_file() -> PathBuf {
    teamboard_protocol::paths::config_dir()
        .unwrap_or_else(|| PathBuf::from("teamboard"))
        .join("providers.toml")
}

/// The fallbacks named, as provider configs built like `base`'s (its
/// timeouts and retries), from the providers file at `path`.
pub fn fallbacks(
    names: &[String],
    path: &Path,
    base: &ProviderConfig,
) -> Result<Vec<ProviderConfig>, AccountsError> {
    if names.is_empty() {
        return Ok(Vec::new());
    }
    let text = std::fs::read_to_string(path).map_err(|source| AccountsError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let file: ProvidersFile = toml::from_str(&text).map_err(|e| AccountsError::Parse {
        path: path.to_path_buf(),
        message: e.to_string(),
    })?;
    let keys = keys_file();
    let mut out = Vec::new();
    for name in names {
        let Some(a) = file.accounts.get(name) else {
            let known: Vec<&str> = file.accounts.keys().map(String::as_str).collect();
            return Err(AccountsError::Unknown {
                name: name.clone(),
                path: path.to_path_buf(),
                known: if known.is_empty() {
                    "no accounts".to_string()
                } else {
                    known.join(", ")
                },
            });
        };
        let kind = match a.provider.as_str() {
            "anthropic" => ProviderKind::Anthropic,
            "openai" => ProviderKind::Openai,
            "scripted" => ProviderKind::Scripted,
            other => {
                return Err(AccountsError::Parse {
                    path: path.to_path_buf(),
                    message: format!(
                        "[accounts.{name}] provider = \"{other}\": use anthropic, openai or scripted"
                    ),
                });
            }
        };
        let zero = [
            a.concurrent.map(u64::from),
            a.requests_per_minute.map(u64::from),
            a.tokens_per_minute,
        ]
        .contains(&Some(0));
        if zero {
            return Err(AccountsError::Parse {
                path: path.to_path_buf(),
                message: format!(
                    "[accounts.{name}]: a rate limit of 0 would hold every call forever; leave it out for none"
                ),
            });
        }
        out.push(ProviderConfig {
            kind,
            model: a.model.clone(),
            base_url: a.base_url.clone(),
            api_key: a.key_env.as_deref().and_then(|v| lookup_secret(v, &keys)),
            max_tokens: a.max_tokens.unwrap_or(base.max_tokens),
            max_tokens_field: None,
            request_timeout: base.request_timeout,
            retry: base.retry,
            account: AccountConfig {
                name: Some(name.clone()),
                limits: RateLimits {
                    concurrent: a.concurrent,
                    requests_per_minute: a.requests_per_minute,
                    tokens_per_minute: a.tokens_per_minute,
                },
                fallbacks: Vec::new(),
                key_vars: a.key_env.iter().cloned().collect(),
            },
        });
    }
    Ok(out)
}

/// The account a provider config calls, as boardd schedules it.
pub fn account_ref(cfg: &ProviderConfig) -> AccountRef {
    let name = cfg
        .account
        .name
        .clone()
        .unwrap_or_else(|| default_name(cfg));
    AccountRef {
        name,
        model: crate::llm::model_label(cfg),
        limits: cfg.account.limits,
        subscription: false,
    }
}

/// `anthropic@api.anthropic.com`, `openai@localhost:11434`, `scripted`.
fn default_name(cfg: &ProviderConfig) -> String {
    let host = |url: &str| {
        let rest = url.split_once("://").map_or(url, |(_, r)| r);
        rest.split('/').next().unwrap_or(rest).to_string()
    };
    match cfg.kind {
        ProviderKind::Scripted => "scripted".to_string(),
        ProviderKind::Anthropic => format!(
            "anthropic@{}",
            host(cfg.base_url.as_deref().unwrap_or("api.anthropic.com"))
        ),
        ProviderKind::Openai => format!(
            "openai@{}",
            host(cfg.base_url.as_deref().unwrap_or("api.openai.com"))
        ),
    }
}

/// The providers of a chain (the provider, then its fallbacks) and the
/// accounts boardd knows them by, in the same order.
pub fn build_chain(
    cfg: &ProviderConfig,
) -> Result<(Vec<crate::llm::Provider>, Vec<AccountRef>), crate::llm::LlmError> {
    let configs = std::iter::once(cfg).chain(cfg.account.fallbacks.iter());
    let mut providers = Vec::new();
    let mut refs = Vec::new();
    for c in configs {
        providers.push(crate::llm::build(c)?);
        refs.push(account_ref(c));
    }
    Ok((providers, refs))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backoff::RetryPolicy;
    use std::time::Duration;

    fn base() -> ProviderConfig {
        ProviderConfig {
            kind: ProviderKind::Anthropic,
            model: None,
            base_url: Some("http://127.0.0.1:4000/v1".into()),
            api_key: None,
            max_tokens: 1000,
            max_tokens_field: None,
            request_timeout: Duration::from_secs(5),
            retry: RetryPolicy::default(),
            account: AccountConfig::default(),
        }
    }

    #[test]
    fn an_account_is_named_for_its_provider_and_host() {
        assert_eq!(account_ref(&base()).name, "anthropic@127.0.0.1:4000");
        let mut named = base();
        named.account.name = Some("work".into());
        assert_eq!(account_ref(&named).name, "work");
    }

    #[test]
    fn fallbacks_come_from_the_providers_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("providers.toml");
        std::fs::write(
            &path,
            "[accounts.backup]\nprovider = \"openai\"\nmodel = \"gpt-4o-mini\"\n\
             base_url = \"http://127.0.0.1:5000/v1\"\nconcurrent = 2\n",
        )
        .unwrap();
        let got = fallbacks(&["backup".into()], &path, &base()).unwrap();
        assert_eq!(got.len(), 1);
        let r = account_ref(&got[0]);
        assert_eq!(r.name, "backup");
        assert!(
            got[0].account.key_vars.is_empty(),
            "no key_env, no variable"
        );
        assert_eq!(r.model, "openai/gpt-4o-mini");
        assert_eq!(r.limits.concurrent, Some(2));
        let e = fallbacks(&["nope".into()], &path, &base()).unwrap_err();
        assert!(e.to_string().contains("it has: backup"), "{e}");
        std::fs::write(&path, "[accounts.x]\nprovider = \"gemini\"\n").unwrap();
        let e = fallbacks(&["x".into()], &path, &base()).unwrap_err();
        assert!(e.to_string().contains("use anthropic, openai"), "{e}");
        std::fs::write(&path, "[accounts.x]\nprovder = \"openai\"\n").unwrap();
        let e = fallbacks(&["x".into()], &path, &base()).unwrap_err();
        assert!(e.to_string().contains("not valid"), "{e}");
    }
}
