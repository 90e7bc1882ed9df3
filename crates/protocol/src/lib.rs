//! The boardd wire protocol: the types every program shares, the frame codec and an
//! async client.
//!
//! Only the wire types are always built. The rest sits behind cargo features, so
//! that a crate pulls only what it uses: `codec` (the frame codec), `client` (the
//! async client, with `codec` and `paths`), `paths` (default socket, state and
//! configuration directories), `cli` (clap on the launch settings) and `man`
//! (`--generate-man`, the programs' man pages).
//!
//! A connection is a stream of length-delimited frames (4-byte big-endian length,
//! then that many bytes of UTF-8 JSON). The client speaks first with a [`Hello`]; the
//! server answers [`ServerFrame::Welcome`] or [`ServerFrame::Reject`]. After that the
//! client sends requests that carry an id, the server answers each with a response
//! that echoes the id, and pushes events as frames of their own. `docs/protocol.md`
//! at the repository root is the normative description.

pub mod board_call;
#[cfg(feature = "client")]
pub mod client;
#[cfg(feature = "codec")]
pub mod codec;
#[cfg(feature = "client")]
pub mod endpoint;
pub mod error;
pub mod frame;
pub mod ids;
pub mod launch;
#[cfg(feature = "cli")]
pub mod lead_args;
#[cfg(feature = "paths")]
pub mod lead_key;
pub mod liveness;
#[cfg(feature = "man")]
pub mod man;
pub mod member;
pub mod names;
#[cfg(feature = "paths")]
pub mod paths;
pub mod refusal;
pub mod request;
pub mod spend;
pub mod task_status;
pub mod team_request;
pub mod text;
#[cfg(feature = "tls")]
pub mod tls;
pub mod token;
pub mod transcript;
pub mod types;
pub mod worktree;

#[cfg(feature = "client")]
pub use client::{Client, ClientError};
#[cfg(feature = "client")]
pub use endpoint::{Endpoint, Remote};
pub use error::{ErrorBody, ErrorCode};
pub use frame::{ClientFrame, Credential, Hello, ServerFrame, Welcome};
pub use ids::{RequestId, TaskId, request_tag};
pub use launch::{AgentPolicy, MaxTokensField, ProviderKind, RuntimeKind, Sandbox, SandboxMode};
pub use liveness::{LiveState, Liveness};
pub use request::Request;
pub use task_status::TaskStatus;
pub use team_request::{RequestKind, RequestState, TeamRequest};
pub use types::*;
pub use worktree::*;

/// The protocol's major version. A client whose major version differs is rejected.
pub const PROTOCOL_VERSION: u32 = 1;

/// The largest frame boardd accepts from a client, in bytes of JSON payload.
pub const MAX_FRAME_LEN: usize = 1024 * 1024;

/// The largest frame boardd sends. Clients trust their own daemon more than the
/// daemon trusts its clients, and `list_tasks` on a big board needs the room.
pub const MAX_RESPONSE_LEN: usize = 64 * 1024 * 1024;

/// The team a client works in when it names none.
pub const DEFAULT_TEAM: &str = "default";

/// Now, in milliseconds since the Unix epoch: the unit of every timestamp on the
/// wire and in transcripts. A clock before 1970 reads as 0.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// The name of the person (or program) at `teamctl`. Always a valid recipient.
pub const LEAD: &str = "lead";

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Serialize;
    use std::fmt::{Debug, Display};
    use strum::VariantArray;

    /// strum's name (screens, logs, SQL) is serde's (the wire) for every variant.
    fn names_agree<T: VariantArray + Serialize + Display + Debug>() {
        for v in T::VARIANTS {
            let wire = serde_json::to_value(v).expect("serializes");
            assert_eq!(wire, serde_json::Value::String(v.to_string()), "{v:?}");
        }
    }

    #[test]
    fn strum_and_serde_name_each_variant_alike() {
        names_agree::<TaskStatus>();
        names_agree::<MemberStatus>();
        names_agree::<LiveState>();
        names_agree::<MessageKind>();
        names_agree::<EventKind>();
        names_agree::<ErrorCode>();
        names_agree::<RequestKind>();
        names_agree::<RequestState>();
        names_agree::<MergeStyle>();
        names_agree::<CheckOutcome>();
        names_agree::<LandingStage>();
        names_agree::<WorktreeState>();
        names_agree::<transcript::EntryKind>();
    }

    #[test]
    fn a_task_status_reads_with_a_dash_and_writes_with_an_underscore() {
        assert_eq!("in-progress".parse(), Ok(TaskStatus::InProgress));
        assert_eq!("in_progress".parse(), Ok(TaskStatus::InProgress));
        assert_eq!(TaskStatus::InProgress.to_string(), "in_progress");
        assert!("done".parse::<TaskStatus>().is_err());
    }
}
