//! The board tools an agent calls through the member socket, carried out with
//! the teammate's session and claim. Each answers with the JSON its `teamctl`
//! twin prints with `--json` (docs/runtimes.md lists the twins).

use crate::teammate::Teammate;
use teamboard_protocol::member::{MemberCall, MemberReply};

impl Teammate {
    /// Carries out one call.
    pub(crate) async fn member_call(&mut self, call: MemberCall) -> MemberReply {
        MemberReply::error(format!("the board tool '{}' is not built yet", call.tool))
    }
}
