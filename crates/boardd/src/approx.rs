//! How many bytes a reply or event takes once encoded, estimated cheaply for the
//! memory budget of the connections (see `outbox::budget`).
//!
//! An estimate is the sum of an object's string lengths plus a constant for its
//! field names, numbers and punctuation. It walks what it measures once, like the
//! handler that built it, and never encodes. It may miss by the escapes JSON adds
//! to unusual strings; the budget it feeds is a bound on the order of megabytes,
//! not a byte count.

use crate::reply::Reply;
use teamboard_protocol::token::TokenEntry;
use teamboard_protocol::{
    CheckRun, Claim, ErrorBody, Event, Member, Message, OpenedWorktree, Repo, ServerStatus, Task,
    TaskDetail, TeamRequest, Work, Worktree, WorktreeEntry,
};

/// What each frame adds around its content (`{"type":"response","id":...}`).
const FRAME: usize = 48;

/// An object's encoded size, estimated.
pub trait ApproxLen {
    fn approx_len(&self) -> usize;
}

impl ApproxLen for Task {
    fn approx_len(&self) -> usize {
        // Field names, status, numbers and the four token counts.
        const FIXED: usize = 360;
        FIXED
            + self.subject.len()
            + self.description.len()
            + opt(&self.owner)
            + opt(&self.role)
            + opt(&self.result)
            + opt(&self.last_error)
            + opt(&self.handoff)
            + 21 * self.blocked_by.len()
            + self.worktree.as_ref().map_or(0, |w| w.approx_len())
            + strs(&self.checks)
            + self
                .check_runs
                .iter()
                .map(ApproxLen::approx_len)
                .sum::<usize>()
            + self.landing.as_ref().map_or(0, |l| 160 + l.result.len())
    }
}

impl ApproxLen for Worktree {
    fn approx_len(&self) -> usize {
        // Field names and up to three 40-hex commit ids.
        const FIXED: usize = 220;
        FIXED + self.path.len() + self.branch.len()
    }
}

impl ApproxLen for CheckRun {
    fn approx_len(&self) -> usize {
        const FIXED: usize = 180;
        FIXED + self.command.len() + self.tail.len() + self.commit.len()
    }
}

impl ApproxLen for Repo {
    fn approx_len(&self) -> usize {
        const FIXED: usize = 200;
        FIXED
            + self.path.len()
            + self.branch.len()
            + self.worktrees.len()
            + self.git_version.len()
            + strs(&self.checks)
    }
}

impl ApproxLen for OpenedWorktree {
    fn approx_len(&self) -> usize {
        const FIXED: usize = 160;
        FIXED
            + self.worktree.approx_len()
            + self.repo.len()
            + self.target.len()
            + strs(&self.found.changed)
    }
}

impl ApproxLen for WorktreeEntry {
    fn approx_len(&self) -> usize {
        const FIXED: usize = 200;
        FIXED + self.subject.len() + opt(&self.owner) + self.worktree.approx_len()
    }
}

impl ApproxLen for Event {
    fn approx_len(&self) -> usize {
        const FIXED: usize = 160;
        FIXED + self.team.len() + self.actor.len() + opt(&self.member) + self.detail.len()
    }
}

impl ApproxLen for Member {
    fn approx_len(&self) -> usize {
        // Field names, status, numbers, the four token counts and the sandbox.
        const FIXED: usize = 300;
        FIXED + self.name.len() + self.role.len() + opt(&self.runtime) + opt(&self.model)
    }
}

impl ApproxLen for Message {
    fn approx_len(&self) -> usize {
        const FIXED: usize = 120;
        FIXED + self.from.len() + self.to.len() + self.content.len() + opt(&self.request_id)
    }
}

impl ApproxLen for Claim {
    fn approx_len(&self) -> usize {
        32 + self.task.approx_len()
    }
}

impl ApproxLen for Work {
    fn approx_len(&self) -> usize {
        match self {
            Work::Messages { messages } => 32 + list(messages),
            Work::Task { claim } => 32 + claim.approx_len(),
            Work::Timeout => 32,
        }
    }
}

impl ApproxLen for TaskDetail {
    fn approx_len(&self) -> usize {
        16 + self.task.approx_len() + list(&self.history) + list(&self.plans)
    }
}

impl ApproxLen for TeamRequest {
    fn approx_len(&self) -> usize {
        const FIXED: usize = 300;
        FIXED
            + self.from.len()
            + self.to.len()
            + opt(&self.plan)
            + opt(&self.reason)
            + opt(&self.answered_by)
            + opt(&self.feedback)
    }
}

impl ApproxLen for ServerStatus {
    fn approx_len(&self) -> usize {
        const FIXED: usize = 320;
        const TEAM: usize = 260;
        FIXED + self.socket.len() + self.state_dir.len() + TEAM * self.teams.len()
    }
}

impl ApproxLen for ErrorBody {
    fn approx_len(&self) -> usize {
        40 + self.message.len()
    }
}

impl ApproxLen for TokenEntry {
    fn approx_len(&self) -> usize {
        64 + self.team.len() + self.name.len()
    }
}

impl ApproxLen for Reply {
    fn approx_len(&self) -> usize {
        match self {
            Reply::Task(t) => t.approx_len(),
            Reply::Tasks(v) => list(v),
            Reply::Detail(d) => d.approx_len(),
            Reply::Claim(c) => c.approx_len(),
            Reply::MaybeClaim(c) => c.as_ref().map_or(4, |c| c.approx_len()),
            Reply::Member(m) => m.approx_len(),
            Reply::Registered(r) => r.member.approx_len() + 96,
            Reply::Members(v) => list(v),
            Reply::Message(m) => m.approx_len(),
            Reply::Messages(v) => list(v),
            Reply::Work(w) => w.approx_len(),
            Reply::Events(v) => list(v),
            Reply::Status(s) => s.approx_len(),
            Reply::Acked(_) => 24,
            Reply::Request(r) => r.approx_len(),
            Reply::Requests(v) => list(v),
            Reply::Done(_) => 2,
            Reply::Repo(r) => r.approx_len(),
            Reply::MaybeRepo(r) => r.as_ref().map_or(4, |r| r.approx_len()),
            Reply::Opened(o) => o.approx_len(),
            Reply::Worktrees(v) => list(v),
            Reply::Pruned(p) => 32 + list(&p.removed) + list(&p.kept),
            // Rare and small: a fixed frame plus their free text.
            Reply::Reservation(r) => 160 + r.account_name.len(),
            Reply::Settled(s) => 160 + opt(&s.exhausted),
            Reply::Budget(b) => 320 + b.set_by.len(),
            Reply::Budgets(r) => 200 + 480 * (r.budgets.len() + r.accounts.len()),
            Reply::Token(t) => 96 + t.entry.approx_len(),
            Reply::TokenEntry(t) => t.approx_len(),
            Reply::Tokens(v) => list(v),
        }
    }
}

/// A whole response frame: the reply or the error, and the frame around it.
impl ApproxLen for Result<Reply, ErrorBody> {
    fn approx_len(&self) -> usize {
        FRAME
            + match self {
                Ok(reply) => reply.approx_len(),
                Err(error) => error.approx_len(),
            }
    }
}

fn opt(s: &Option<String>) -> usize {
    s.as_ref().map_or(4, String::len)
}

/// A list of strings, each with its quotes and comma.
fn strs(items: &[String]) -> usize {
    items.iter().map(|c| 4 + c.len()).sum()
}

fn list<T: ApproxLen>(items: &[T]) -> usize {
    2 + items.iter().map(|x| 1 + x.approx_len()).sum::<usize>()
}

/// An event frame.
pub fn event_frame(event: &Event) -> usize {
    FRAME + event.approx_len()
}

#[cfg(test)]
mod tests;
