//! Tokens: credentials the lead issues by name, for clients that have no access
//! to `lead.key` (a teammate on another host, connecting over TLS).
//!
//! A token for `NAME` in team `T` vouches for the session named `NAME` in `T`,
//! as that member's own credential does; one for `lead` vouches for the lead.
//! boardd keeps only its digest: the secret is in the `create_token` reply and
//! nowhere else.

use crate::frame::Credential;
use serde::{Deserialize, Serialize};

/// `create_token`: a fresh token for `name`, replacing any it had.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CreateTokenArgs {
    pub name: String,
    /// The team it works in; the session's own when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub team: Option<String>,
}

/// `revoke_token`: the token of `name` in `team` (the session's own when absent).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenRef {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub team: Option<String>,
}

/// `list_tokens`: the tokens of `team` (the session's own when absent).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListTokensArgs {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub team: Option<String>,
}

/// A token as `list_tokens` shows it: never the secret.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenEntry {
    pub team: String,
    pub name: String,
    /// When it was made, in milliseconds since the Unix epoch.
    pub created_ms: i64,
}

/// The `create_token` answer: the only time the secret is shown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IssuedToken {
    #[serde(flatten)]
    pub entry: TokenEntry,
    pub token: Credential,
}
