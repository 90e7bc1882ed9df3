//! The result of a request, before it is serialised into a response frame.

use serde::Serialize;
use teamboard_protocol::{
    Acked, Claim, Event, Member, Message, ServerStatus, Task, TaskDetail, Work,
};

/// Each variant serialises as its content alone (`untagged`): the op decides the
/// shape, as `docs/protocol.md` lists per op.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum Reply {
    Task(Task),
    Tasks(Vec<Task>),
    Detail(TaskDetail),
    Claim(Claim),
    MaybeClaim(Option<Claim>),
    Member(Member),
    Members(Vec<Member>),
    Message(Message),
    Messages(Vec<Message>),
    Work(Work),
    Events(Vec<Event>),
    Status(Box<ServerStatus>),
    Acked(Acked),
    /// `{}`: done, nothing to report.
    Done(Empty),
}

#[derive(Debug, Clone, Serialize)]
pub struct Empty {}
