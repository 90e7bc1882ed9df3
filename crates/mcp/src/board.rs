//! Where the board tools are carried out: the seam between the MCP server and
//! the board.

use teamboard_protocol::member::{MemberCall, MemberReply};

/// Who the server acts for, which decides the tools' descriptions: only a
/// person's own session claims tasks itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Inside a teammate's agent: the teammate claims, the agent works.
    Member,
    /// A person's own session, registered on the board by the server.
    Own,
}

/// The answer to one tool call.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    /// The value the `teamctl` twin prints with `--json`, or the refusal.
    pub reply: MemberReply,
    /// Text to show after the value: messages that arrived for the member.
    pub notes: Vec<String>,
}

impl From<MemberReply> for Answer {
    fn from(reply: MemberReply) -> Answer {
        Answer {
            reply,
            notes: Vec::new(),
        }
    }
}

/// Carries out board tool calls.
pub trait Board {
    fn mode(&self) -> Mode;

    /// Carries out one call of one of the seven tools. Never fails: a call that
    /// cannot be carried out is answered with a [`MemberReply::Error`] that says
    /// what to do.
    fn call(&mut self, call: MemberCall) -> impl std::future::Future<Output = Answer>;
}

/// A board lent to [`crate::serve`], for a caller that needs it back even when
/// serving is cut short (a signal).
impl<B: Board> Board for &mut B {
    fn mode(&self) -> Mode {
        (**self).mode()
    }

    fn call(&mut self, call: MemberCall) -> impl std::future::Future<Output = Answer> {
        (**self).call(call)
    }
}
