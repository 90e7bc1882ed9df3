//! Rebuilding the board from what the store loaded after a restart.

use crate::team::{Lease, MemberState, Team};
use crate::{Board, BoardConfig, Now};
use teamboard_protocol::TaskId;
use teamboard_protocol::{
    Member, MemberStatus, Message, Repo, RequestKind, RequestState, Task, TaskStatus, TeamRequest,
};

/// Everything the store holds, as loaded at startup.
#[derive(Debug, Default, Clone)]
pub struct Snapshot {
    pub tasks: Vec<(String, Task)>,
    pub members: Vec<(String, Member)>,
    /// Unacknowledged messages.
    pub messages: Vec<(String, Message)>,
    pub next_message_id: u64,
    pub next_event_seq: u64,
    /// Every protocol request, whatever its state.
    /// Requests are never deleted, so the largest id gives the next one.
    pub requests: Vec<(String, TeamRequest)>,
    /// Each team's repository.
    pub repos: Vec<(String, Repo)>,
    /// The teams created explicitly, by name.
    pub teams: Vec<String>,
    /// The highest task id each team's history names. A deleted task has no row
    /// but keeps its events, so its id is not given again.
    pub last_task_ids: Vec<(String, TaskId)>,
    /// Budgets, by team, with what they came to.
    pub budgets: Vec<(
        String,
        teamboard_protocol::spend::Budget,
        crate::spend::BudgetMarks,
    )>,
    /// Every settled call, oldest first.
    pub usage: Vec<(String, teamboard_protocol::spend::UsageRecord)>,
    /// Calls that were in flight.
    pub held: Vec<(String, teamboard_protocol::spend::HeldCall)>,
    pub account_blocks: Vec<teamboard_protocol::spend::AccountBlock>,
}

impl Board {
    /// Rebuilds the derived state (dependents, open blocker counts, ready queues)
    /// from stored rows. Claims that were in progress stay with their owner for the
    /// restart grace period; nobody is connected yet.
    pub fn restore(config: BoardConfig, snap: Snapshot, now: Now) -> Board {
        let mut board = Board::new(config);
        board.next_message_id = snap.next_message_id.max(1);
        board.next_event_seq = snap.next_event_seq.max(1);
        for team in snap.teams {
            board.team_mut(&team).created = true;
        }
        for (team, task) in snap.tasks {
            let t = board.team_mut(&team);
            t.next_task_id = t.next_task_id.max(task.id + 1);
            t.tasks.insert(task.id, task);
        }
        for (team, last) in snap.last_task_ids {
            let t = board.team_mut(&team);
            t.next_task_id = t.next_task_id.max(last + 1);
        }
        for (team, member) in snap.members {
            let t = board.team_mut(&team);
            let mut member = member;
            member.connected = false;
            member.task = None;
            member.waiting = None;
            if member.status != MemberStatus::Shutdown {
                member.status = MemberStatus::Offline;
            }
            let (live, liveness) = crate::liveness::restored(&member, now);
            member.liveness = Some(liveness);
            t.members.insert(
                member.name.clone(),
                MemberState {
                    member,
                    session: None,
                    live,
                },
            );
        }
        for (team, msg) in snap.messages {
            board.next_message_id = board.next_message_id.max(msg.id + 1);
            board
                .team_mut(&team)
                .inboxes
                .entry(msg.to.clone())
                .or_default()
                .insert(msg.id, msg);
        }
        for (team, req) in snap.requests {
            board.next_request_id = board.next_request_id.max(req.id + 1);
            let t = board.team_mut(&team);
            if let (RequestKind::Plan, Some(task)) = (req.kind, req.task) {
                let newest = t.latest_plan.entry(task).or_insert(req.id);
                *newest = (*newest).max(req.id);
            }
            if req.kind == RequestKind::Shutdown && req.state == RequestState::Pending {
                t.pending_shutdowns.insert(req.to.clone(), req.id);
            }
            t.requests.insert(req.id, req);
        }
        for (team, repo) in snap.repos {
            board.team_mut(&team).repo = Some(repo);
        }
        board.restore_spend(
            snap.budgets,
            snap.usage,
            snap.held,
            snap.account_blocks,
            now,
        );
        let grace = now.mono + config.restart_grace;
        for team in board.teams.values_mut() {
            rebuild(team, grace);
        }
        // Every session ended with the old daemon, and so did the shutdown
        // requests meant for them; the first commit deletes them.
        let members: Vec<(String, String)> = board
            .teams
            .iter()
            .flat_map(|(t, team)| team.members.keys().map(move |m| (t.clone(), m.clone())))
            .collect();
        for (team, name) in members {
            board.target_left(
                &team,
                &name,
                "boardd restarted, and the session it was for ended",
                now,
            );
            board.drop_stale_shutdowns(&team, &name, now);
        }
        // A plan still pending is kept only while its claim is: one whose task
        // moved on while the daemon was down cannot be decided any more.
        let stale: Vec<(String, TaskId, TaskStatus)> = board
            .teams
            .iter()
            .flat_map(|(name, t)| {
                t.latest_plan.iter().filter_map(move |(task, id)| {
                    let req = t.requests.get(id)?;
                    let current = t.tasks.get(task)?;
                    let live = current.status == TaskStatus::InProgress
                        && Some(current.epoch) == req.epoch;
                    (req.is_pending() && !live).then(|| (name.clone(), *task, current.status))
                })
            })
            .collect();
        for (team, task, status) in stale {
            board.claim_ended(&team, task, status, now);
        }
        board.restore_landings(now);
        board
    }
}

fn rebuild(team: &mut Team, grace: std::time::Instant) {
    let ids: Vec<u64> = team.tasks.keys().copied().collect();
    for id in &ids {
        let Some(task) = team.tasks.get(id) else {
            continue;
        };
        let blockers = task.blocked_by.clone();
        let open = team.open_blockers_of(task).len();
        let claimed = (task.status == TaskStatus::InProgress).then(|| task.owner.clone());
        for b in blockers {
            team.dependents.entry(b).or_default().push(*id);
        }
        team.open_blockers.insert(*id, open);
        if let Some(owner) = claimed {
            team.leases.insert(
                *id,
                Lease {
                    session: None,
                    deadline: grace,
                },
            );
            if let Some(owner) = owner
                && let Some(m) = team.members.get_mut(&owner)
            {
                m.member.task = Some(*id);
            }
        }
    }
    for id in ids {
        team.refresh_ready(id);
    }
}
