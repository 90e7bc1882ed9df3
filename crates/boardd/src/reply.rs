//! The result of a request, before it is serialised into a response frame.

use serde::Serialize;
use teamboard_protocol::spend::{Budget, BudgetReport, Reservation, Settled};
use teamboard_protocol::token::{IssuedToken, TokenEntry};
use teamboard_protocol::{
    Acked, Claim, Event, Member, Message, OpenedWorktree, Pruned, Registered, Repo, ServerStatus,
    Task, TaskDetail, TeamRequest, Work, WorktreeEntry,
};

/// Large results are boxed so that a queued reply stays small whatever its kind.
/// Each variant serialises as its content alone (`untagged`): the op decides the
/// shape, as `docs/protocol.md` lists per op.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum Reply {
    Task(Box<Task>),
    Tasks(Vec<Task>),
    Detail(Box<TaskDetail>),
    Claim(Box<Claim>),
    MaybeClaim(Option<Box<Claim>>),
    Member(Box<Member>),
    /// `register` with the lead's credential: the member and its new credential.
    Registered(Box<Registered>),
    Members(Vec<Member>),
    Message(Box<Message>),
    Messages(Vec<Message>),
    Work(Box<Work>),
    Events(Vec<Event>),
    Status(Box<ServerStatus>),
    Acked(Acked),
    Request(Box<TeamRequest>),
    Requests(Vec<TeamRequest>),
    /// `{}`: done, nothing to report.
    Done(Empty),
    Repo(Box<Repo>),
    MaybeRepo(Option<Box<Repo>>),
    Opened(Box<OpenedWorktree>),
    Worktrees(Vec<WorktreeEntry>),
    Pruned(Box<Pruned>),
    Reservation(Box<Reservation>),
    Settled(Box<Settled>),
    Budget(Box<Budget>),
    Budgets(Box<BudgetReport>),
    Token(Box<IssuedToken>),
    TokenEntry(Box<TokenEntry>),
    Tokens(Vec<TokenEntry>),
}

#[derive(Debug, Clone, Serialize)]
pub struct Empty {}

/// A boxed variant from what it holds, so that a handler can `.map(Reply::from)`.
macro_rules! from_boxed {
    ($($variant:ident($ty:ty)),*) => {$(
        impl From<$ty> for Reply {
            fn from(v: $ty) -> Reply { Reply::$variant(Box::new(v)) }
        }
    )*};
}

from_boxed! { Task(Task), Claim(Claim), Member(Member), Message(Message), Request(TeamRequest),
Repo(Repo), Opened(OpenedWorktree), Pruned(Pruned), Reservation(Reservation), Settled(Settled),
Budget(Budget), Budgets(BudgetReport), Token(IssuedToken), TokenEntry(TokenEntry) }

impl Reply {
    /// A list long enough that encoding it takes a while (a whole board, a long
    /// inbox or history).
    pub fn is_long(&self) -> bool {
        const LONG: usize = 64;
        match self {
            Reply::Tasks(v) => v.len() > LONG,
            Reply::Members(v) => v.len() > LONG,
            Reply::Messages(v) => v.len() > LONG,
            Reply::Events(v) => v.len() > LONG,
            Reply::Requests(v) => v.len() > LONG,
            Reply::Worktrees(v) => v.len() > LONG,
            _ => false,
        }
    }
}
