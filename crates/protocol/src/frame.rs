//! The frames of a connection, in both directions.

use crate::error::ErrorBody;
use crate::request::Request;
use crate::types::Event;
use serde::{Deserialize, Serialize};

/// The first frame a client sends.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hello {
    /// The client's [`crate::PROTOCOL_VERSION`].
    pub protocol: u32,
    /// What the client is (`teamctl`, `teammated`, `bench`, ...). For logs only.
    pub client: String,
    /// Who is speaking: a teammate's name, or `lead` for a person at `teamctl`.
    pub name: String,
    /// The team this session works in. Defaults to `default`.
    #[serde(default = "default_team")]
    pub team: String,
    /// What to do if no team has that name (`default` always exists): `false`,
    /// refuse the hello, naming the teams there are; `true`, create the team.
    /// Absent (a client older than the field): the team is created, as it always
    /// was. teamctl, teammated and `teamctl mcp` always send it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new_team: Option<bool>,
    /// Who vouches for `name`: the lead's credential (from boardd's `lead.key`),
    /// which lets the session speak as any name, or the credential `register`
    /// gave the member `name`. Absent: the session may do nothing but say
    /// hello (every request is answered `permission_denied`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credential: Option<Credential>,
}

/// A secret that vouches for a session: the lead's, or one member's. Its
/// `Debug` hides it, so that a logged hello does not leak it.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Credential(String);

impl Credential {
    pub fn new(secret: impl Into<String>) -> Credential {
        Credential(secret.into())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Credential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Credential(..)")
    }
}

fn default_team() -> String {
    crate::DEFAULT_TEAM.to_string()
}

/// The server's answer to a good `hello`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Welcome {
    pub protocol: u32,
    /// `boardd <version>`.
    pub server: String,
    /// This connection's session id, unique while the daemon runs.
    pub session: u64,
    /// How long a claim lives without a heartbeat, in milliseconds. Claimants
    /// heartbeat well within it (a third of it is a good interval).
    #[serde(default)]
    pub lease_ttl_ms: u64,
}

/// A frame from the client.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ClientFrame {
    Hello(Hello),
    Request {
        id: u64,
        #[serde(flatten)]
        request: Request,
    },
}

/// A frame from the client, decoded only as far as its envelope. The server uses this
/// to tell a malformed frame (close) from an unknown op (answer with an error).
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum RawClientFrame {
    Hello(Hello),
    Request {
        id: u64,
        op: String,
        #[serde(default)]
        args: Option<serde_json::Value>,
    },
}

/// A frame from the server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ServerFrame {
    Welcome(Welcome),
    Reject {
        reason: String,
    },
    /// The answer to request `id`: exactly one of `result` and `error` is present.
    Response {
        id: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        result: Option<serde_json::Value>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<ErrorBody>,
    },
    /// A pushed event, for sessions that subscribed.
    Event {
        event: Event,
    },
    /// A connection-level error. The server closes the connection after sending it.
    Error {
        error: ErrorBody,
    },
}
