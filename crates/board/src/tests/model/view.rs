//! What both sides are compared on, as each shows it.

use super::*;

/// The observable state both sides are compared on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct View {
    pub tasks: Vec<TaskView>,
    pub members: Vec<MemberView>,
    pub requests: Vec<(u64, RequestState)>,
    /// When boardd must next wake, in ms of the test's clock.
    pub deadline: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct TaskView {
    pub id: TaskId,
    pub status: TaskStatus,
    pub owner: Option<String>,
    pub epoch: u64,
    pub attempts: u32,
    pub blocked_by: Vec<TaskId>,
    pub landing: Option<LandingStage>,
    /// The landing's owner is done (its lease is not enforced).
    pub owner_done: bool,
    /// Reserved, and whether opened.
    pub worktree: Option<bool>,
    pub ready: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct MemberView {
    pub name: String,
    pub task: Option<TaskId>,
    pub connected: bool,
    pub shut: bool,
}

impl Run {
    pub(super) fn board_view(&self) -> View {
        let b = &self.h.board;
        let tasks = b
            .tasks(TEAM, None)
            .into_iter()
            .map(|t| TaskView {
                id: t.id,
                status: t.status,
                owner: t.owner.clone(),
                epoch: t.epoch,
                attempts: t.attempts,
                blocked_by: t.blocked_by.clone(),
                landing: t.landing.as_ref().map(|l| l.stage),
                owner_done: t.landing.as_ref().is_some_and(|l| l.owner_done()),
                worktree: t.worktree.as_ref().map(|w| w.base.is_some()),
                ready: b.is_ready(TEAM, t.id),
            })
            .collect();
        let members = b
            .members(TEAM)
            .into_iter()
            .map(|m| MemberView {
                task: m.task,
                connected: m.connected,
                shut: m.status == MemberStatus::Shutdown,
                name: m.name,
            })
            .collect();
        let requests = b
            .requests(TEAM, None, None, None)
            .into_iter()
            .map(|r| (r.id, r.state))
            .collect();
        let deadline = b
            .next_deadline()
            .map(|d| d.duration_since(self.h.base).as_millis() as u64);
        View {
            tasks,
            members,
            requests,
            deadline,
        }
    }

    pub(super) fn model_view(&self) -> View {
        let m = &self.model;
        let name = |i: usize| MEMBERS[i].0.to_string();
        let tasks = m
            .tasks
            .iter()
            .map(|(id, t)| TaskView {
                id: *id,
                status: t.status,
                owner: t.owner.map(name),
                epoch: t.epoch,
                attempts: t.attempts,
                blocked_by: t.blocked_by.clone(),
                landing: stage(t),
                owner_done: Model::owner_done(t),
                worktree: t.worktree,
                ready: m.ready(t),
            })
            .collect();
        let members = (0..MEMBERS.len())
            .map(|i| MemberView {
                name: name(i),
                task: m.held(i),
                connected: m.members[i].session.is_some(),
                shut: m.members[i].shut,
            })
            .collect();
        let requests = m.requests.iter().map(|(id, r)| (*id, r.state)).collect();
        View {
            tasks,
            members,
            requests,
            deadline: m.next_deadline(),
        }
    }
}
