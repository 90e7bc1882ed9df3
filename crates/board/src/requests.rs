//! Protocol requests: shutdowns the lead asks of a teammate, plans a teammate asks
//! the lead to approve. `docs/design/team-requests.md` is the contract.
//!
//! A request only ever leaves `pending` once, through [`Board::settle`]. The
//! messages that go with a request are delivered here, as its side effects; `send`
//! refuses their kinds, so no client can forge one.

use crate::About;
use crate::claims::Abandon;
use crate::error::{BoardError, Result};
use crate::{Board, Ctx, Now, SessionId};
use std::time::Duration;
use teamboard_protocol::request::ShutdownArgs;
use teamboard_protocol::{
    ErrorCode, EventKind, LEAD, MemberStatus, MessageKind, RequestId, RequestKind, RequestState,
    TaskId, TaskStatus, TeamRequest,
};

/// How long a teammate has to answer a shutdown request when the lead names no
/// timeout: long enough for a model round and a release, short enough that a hung
/// teammate does not linger.
pub const DEFAULT_SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(120);

/// The deadlines a lead may give a shutdown request, in ms: at least a second,
/// for a teammate to answer at all (stopping it at once is what `force` is
/// for), and at most a day, past which a deadline protects nothing.
pub const SHUTDOWN_TIMEOUT_MS: std::ops::RangeInclusive<u64> = 1_000..=86_400_000;

/// boardd is to stop a teammate's processes: its session's peer, with its
/// process group. The daemon does it once the batch that decided it is durable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stop {
    pub team: String,
    pub name: String,
    pub session: SessionId,
    pub request: RequestId,
}

/// The fields of a new request; the rest start empty.
struct Opening<'a> {
    kind: RequestKind,
    to: &'a str,
    task: Option<(TaskId, u64)>,
    plan: Option<String>,
    reason: Option<String>,
    deadline: Option<(std::time::Instant, i64)>,
}

impl Board {
    /// Asks a connected teammate to shut down. Only the lead may. A target with a
    /// pending request gets no second one: that one is the answer. `force` stops
    /// the teammate's processes now.
    pub fn request_shutdown(&mut self, ctx: Ctx, args: ShutdownArgs) -> Result<TeamRequest> {
        only_lead(&ctx, "ask a teammate to shut down")?;
        let to = args.to.as_str();
        if !self.is_member(ctx.team, to) {
            return Err(self.unknown_recipient(ctx.team, to));
        }
        let Some(session) = self.session_of(ctx.team, to) else {
            return Err(BoardError::new(
                ErrorCode::NotConnected,
                format!(
                    "'{to}' is not connected, so there is nothing to shut down; a shutdown request is only for a running teammate"
                ),
            ));
        };
        if let Some(reason) = &args.reason {
            self.check_len("the reason", reason)?;
        }
        if let Some(ms) = args.timeout_ms
            && !SHUTDOWN_TIMEOUT_MS.contains(&ms)
        {
            return Err(BoardError::invalid(format!(
                "timeout_ms must be from 1,000 to 86,400,000 (1 s to 24 h), not {ms}; \
                 to stop {to} at once, use force"
            )));
        }
        let pending = self
            .team(ctx.team)
            .and_then(|t| t.pending_shutdowns.get(to))
            .copied();
        let id = match pending {
            Some(id) if !args.force => return self.request(ctx.team, id),
            Some(id) => id,
            None => {
                let timeout = args
                    .timeout_ms
                    .map(Duration::from_millis)
                    .unwrap_or(DEFAULT_SHUTDOWN_TIMEOUT);
                let wall = i64::try_from(timeout.as_millis()).unwrap_or(i64::MAX);
                let opened = self.open(
                    &ctx,
                    Opening {
                        kind: RequestKind::Shutdown,
                        to,
                        task: None,
                        plan: None,
                        reason: args.reason.clone(),
                        deadline: (!args.force).then(|| {
                            (ctx.now.mono + timeout, ctx.now.wall_ms.saturating_add(wall))
                        }),
                    },
                );
                if !args.force {
                    let content = args
                        .reason
                        .clone()
                        .unwrap_or_else(|| "the lead asks you to shut down".to_string());
                    self.deliver(
                        ctx,
                        to,
                        MessageKind::ShutdownRequest,
                        content,
                        Some(opened.id.to_string()),
                    );
                    return Ok(opened);
                }
                opened.id
            }
        };
        let feedback = format!("forced by {}: boardd stopped {to}'s processes", ctx.actor);
        self.force_stop(
            ctx.team,
            to,
            session,
            id,
            RequestState::Approved,
            feedback,
            ctx.now,
        )
    }

    /// Answers the shutdown request addressed to the session's name. Approving
    /// needs the task given back first, with a note for the next owner.
    pub fn respond_shutdown(
        &mut self,
        ctx: Ctx,
        id: RequestId,
        approve: bool,
        reason: Option<String>,
    ) -> Result<TeamRequest> {
        let req = self.answerable(&ctx, id, RequestKind::Shutdown)?;
        if req.to != ctx.actor {
            return Err(BoardError::new(
                ErrorCode::PermissionDenied,
                format!(
                    "shutdown request r{id} is addressed to {}; only {} may answer it",
                    req.to, req.to
                ),
            ));
        }
        // The answer must come from the session whose process a deadline would
        // stop: another connection under the same name could otherwise approve,
        // settling the request while the teammate itself runs on, unstoppable.
        if self.session_of(ctx.team, &req.to) != Some(ctx.session) {
            return Err(BoardError::new(
                ErrorCode::PermissionDenied,
                format!(
                    "shutdown request r{id} must be answered by {}'s registered session, \
                     and this connection is not it",
                    req.to
                ),
            ));
        }
        let (state, reason) = self.decision(
            approve,
            reason,
            "the reason",
            "rejecting a shutdown needs a reason, for the lead to read",
        )?;
        // A task that waits for review is not the teammate's to give back: it
        // waits for a person, with or without its owner.
        if approve
            && let Some(held) = self
                .team(ctx.team)
                .and_then(|t| Some((t, t.members.get(ctx.actor)?.member.task?)))
                .filter(|(t, held)| !t.owner_done(*held))
                .map(|(_, held)| held)
        {
            return Err(BoardError::state(format!(
                "{} still holds #{held}; release it with a note saying what you got done (release_task with note), then approve",
                ctx.actor
            )));
        }
        let req = self.settle(ctx.team, id, state, ctx.actor, reason.clone(), ctx.now)?;
        let content = match (&reason, approve) {
            (Some(r), true) => format!("approved: {r}"),
            (None, true) => "approved".to_string(),
            (Some(r), false) => format!("rejected: {r}"),
            (None, false) => "rejected".to_string(),
        };
        self.deliver(
            ctx,
            LEAD,
            MessageKind::ShutdownResponse,
            content,
            Some(id.to_string()),
        );
        Ok(req)
    }

    /// Opens a plan for the claim the session holds, replacing a pending one of
    /// the same claim.
    pub fn submit_plan(
        &mut self,
        ctx: Ctx,
        task: TaskId,
        epoch: u64,
        plan: String,
    ) -> Result<TeamRequest> {
        self.check_fence(&ctx, task, epoch)?;
        if plan.trim().is_empty() {
            return Err(BoardError::invalid(
                "the plan is empty; say what you will do",
            ));
        }
        self.check_len("the plan", &plan)?;
        if let Some(old) = self.pending_plan(ctx.team, task) {
            let why = "replaced by a newer plan".to_string();
            self.cancel(ctx.team, old, ctx.actor, why, ctx.now)?;
        }
        let subject = self.task(ctx.team, task)?.subject.clone();
        let req = self.open(
            &ctx,
            Opening {
                kind: RequestKind::Plan,
                to: LEAD,
                task: Some((task, epoch)),
                plan: Some(plan.clone()),
                reason: None,
                deadline: None,
            },
        );
        // The lead reads the plan from the message itself; the request bounds it.
        let content = format!("plan for #{task} {subject}:\n{plan}");
        let content =
            teamboard_protocol::text::fit_bytes_with_mark(&content, self.config.max_message_len);
        self.deliver(
            ctx,
            LEAD,
            MessageKind::PlanApprovalRequest,
            content,
            Some(req.id.to_string()),
        );
        Ok(req)
    }

    /// The lead's decision on a pending plan. A rejection needs feedback.
    pub fn review_plan(
        &mut self,
        ctx: Ctx,
        id: RequestId,
        approve: bool,
        feedback: Option<String>,
    ) -> Result<TeamRequest> {
        only_lead(&ctx, "decide a plan")?;
        let req = self.answerable(&ctx, id, RequestKind::Plan)?;
        let (state, feedback) = self.decision(
            approve,
            feedback,
            "the feedback",
            "rejecting a plan needs feedback that says what to change",
        )?;
        let settled = self.settle(ctx.team, id, state, ctx.actor, feedback.clone(), ctx.now)?;
        let task = req.task.map(|t| format!(" for #{t}")).unwrap_or_default();
        let head = if approve { "approved" } else { "rejected" };
        let content = match &feedback {
            Some(f) => format!("plan{task} {head}: {f}"),
            None => format!("plan{task} {head}"),
        };
        // The author is a member, so this cannot fail on the roster; it wakes the
        // author if it parked while waiting for the decision.
        self.deliver(
            ctx,
            &req.from,
            MessageKind::PlanApprovalResponse,
            content,
            Some(id.to_string()),
        );
        Ok(settled)
    }

    /// Withdraws a pending request. Only the lead may.
    pub fn cancel_request(&mut self, ctx: Ctx, id: RequestId) -> Result<TeamRequest> {
        only_lead(&ctx, "cancel a request")?;
        let kind = self.request(ctx.team, id)?.kind;
        self.answerable(&ctx, id, kind)?;
        let why = format!("withdrawn by {}", ctx.actor);
        self.cancel(ctx.team, id, ctx.actor, why, ctx.now)
    }

    /// One request of the team.
    pub fn request(&self, team: &str, id: RequestId) -> Result<TeamRequest> {
        self.team(team)
            .and_then(|t| t.requests.get(&id))
            .cloned()
            .ok_or_else(|| {
                BoardError::new(
                    ErrorCode::NotFound,
                    format!("no request r{id} in team '{team}'"),
                )
            })
    }

    /// The team's requests, oldest first, filtered.
    pub fn requests(
        &self,
        team: &str,
        state: Option<RequestState>,
        kind: Option<RequestKind>,
        task: Option<TaskId>,
    ) -> Vec<TeamRequest> {
        let Some(t) = self.team(team) else {
            return Vec::new();
        };
        t.requests
            .values()
            .filter(|r| state.is_none_or(|s| r.state == s))
            .filter(|r| kind.is_none_or(|k| r.kind == k))
            .filter(|r| task.is_none_or(|id| r.task == Some(id)))
            .cloned()
            .collect()
    }

    /// The plan requests of task `id`, oldest first.
    pub fn plans_of(&self, team: &str, id: TaskId) -> Vec<TeamRequest> {
        self.requests(team, None, Some(RequestKind::Plan), Some(id))
    }

    /// The stops decided since the last call, for the daemon to carry out.
    pub fn take_stops(&mut self) -> Vec<Stop> {
        std::mem::take(&mut self.stops)
    }

    /// Refuses to complete a claim that needs an approved plan and has none, and
    /// any claim whose newest plan is pending or rejected.
    pub(crate) fn check_plan(&self, team: &str, id: TaskId, epoch: u64) -> Result<()> {
        let Some(t) = self.team(team) else {
            return Ok(());
        };
        let Some(task) = t.tasks.get(&id) else {
            return Ok(());
        };
        let needed = task.require_plan
            || task
                .owner
                .as_ref()
                .and_then(|o| t.members.get(o))
                .is_some_and(|m| m.member.require_plan);
        let decision = t
            .latest_plan
            .get(&id)
            .and_then(|r| t.requests.get(r))
            .filter(|r| r.epoch == Some(epoch));
        let why = match decision {
            Some(r) if r.state == RequestState::Approved => return Ok(()),
            Some(r) if r.state == RequestState::Pending => format!(
                "the plan for #{id} (request r{}) is still pending; wait for the lead's decision",
                r.id
            ),
            Some(r) if r.state == RequestState::Rejected => format!(
                "the plan for #{id} (request r{}) was rejected ({}); submit a new plan",
                r.id,
                r.feedback.as_deref().unwrap_or("no feedback")
            ),
            _ if needed => format!(
                "task #{id} needs an approved plan before it can complete: call submit_plan and wait for the lead's decision"
            ),
            _ => return Ok(()),
        };
        Err(BoardError::new(ErrorCode::PlanRequired, why))
    }

    /// Cancels the pending plan of task `id`, whose claim just ended.
    pub(crate) fn claim_ended(&mut self, team: &str, id: TaskId, status: TaskStatus, now: Now) {
        if let Some(plan) = self.pending_plan(team, id) {
            let why = format!("the claim ended (the task is {status})");
            let _ = self.cancel(team, plan, "boardd", why, now);
        }
    }

    /// Cancels the pending shutdown request to `name`, whose session ended.
    pub(crate) fn target_left(&mut self, team: &str, name: &str, why: &str, now: Now) {
        let pending = self
            .team(team)
            .and_then(|t| t.pending_shutdowns.get(name))
            .copied();
        if let Some(id) = pending {
            let _ = self.cancel(team, id, "boardd", why.to_string(), now);
        }
    }

    /// Settles the shutdown requests whose deadline passed and stops their
    /// targets.
    pub(crate) fn expire_requests(&mut self, now: Now) {
        let mut due: Vec<(String, RequestId)> = Vec::new();
        for (name, team) in &self.teams {
            for (id, deadline) in &team.request_deadlines {
                if *deadline <= now.mono {
                    due.push((name.clone(), *id));
                }
            }
        }
        due.sort();
        for (team, id) in due {
            let Ok(req) = self.request(&team, id) else {
                continue;
            };
            let to = req.to.clone();
            let feedback = "no answer before the deadline: boardd stopped the teammate's processes"
                .to_string();
            let stopped = match self.session_of(&team, &to) {
                Some(session) => {
                    let _ = self.force_stop(
                        &team,
                        &to,
                        session,
                        id,
                        RequestState::Expired,
                        feedback,
                        now,
                    );
                    "boardd stopped it"
                }
                None => {
                    let why = "no answer before the deadline, and the teammate is gone";
                    let _ = self.settle(
                        &team,
                        id,
                        RequestState::Expired,
                        "boardd",
                        Some(why.to_string()),
                        now,
                    );
                    "the teammate was already gone"
                }
            };
            let ctx = Ctx {
                team: &team,
                actor: "boardd",
                session: 0,
                now,
            };
            let content = format!("shutdown request r{id} to {to} expired: {stopped}");
            self.deliver(
                ctx,
                LEAD,
                MessageKind::ShutdownResponse,
                content,
                Some(id.to_string()),
            );
        }
    }

    /// The earliest request deadline.
    pub(crate) fn next_request_deadline(&self) -> Option<std::time::Instant> {
        self.teams
            .values()
            .flat_map(|t| t.request_deadlines.values().copied())
            .min()
    }

    /// Settles a shutdown by stopping its target: the request says so, the
    /// member is marked `shutdown` (it takes no new work), and a [`Stop`] is
    /// raised for the daemon.
    #[allow(
        clippy::too_many_arguments,
        reason = "the request being settled and its target, as the callers hold them"
    )]
    fn force_stop(
        &mut self,
        team: &str,
        name: &str,
        session: SessionId,
        id: RequestId,
        state: RequestState,
        feedback: String,
        now: Now,
    ) -> Result<TeamRequest> {
        self.settle(team, id, state, "boardd", Some(feedback), now)?;
        if let Some(r) = self
            .teams
            .get_mut(team)
            .and_then(|t| t.requests.get_mut(&id))
        {
            r.forced = true;
        }
        self.mark_request(team, id);
        // The task goes back now, uncounted, rather than when the process is
        // gone: the request and the board say the same thing at once, and a
        // teammate killed before it could give the task back costs no attempt.
        // Not a task that waits for review: stopping its owner takes nothing
        // from it (`review.rs`).
        let held = self
            .team(team)
            .and_then(|t| Some((t, t.members.get(name)?.member.task?)))
            .filter(|(t, held)| !t.owner_done(*held))
            .map(|(_, held)| held);
        if let Some(task) = held {
            let epoch = self.task(team, task)?.epoch;
            self.team_mut(team)
                .stopped
                .insert(task, (name.to_string(), epoch));
            let note = format!("{name} was stopped by shutdown request r{id}");
            let _ = self.abandon(
                crate::claims::by_boardd(team, task, now),
                Abandon::Stopped,
                Some(note),
            );
        }
        self.change_status(team, "boardd", name, MemberStatus::Shutdown, now);
        self.stops.push(Stop {
            team: team.to_string(),
            name: name.to_string(),
            session,
            request: id,
        });
        self.request(team, id)
    }

    /// A pending request of `kind` that exists: the checks every answer shares.
    fn answerable(&self, ctx: &Ctx, id: RequestId, kind: RequestKind) -> Result<TeamRequest> {
        let req = self.request(ctx.team, id)?;
        if req.kind != kind {
            let op = match req.kind {
                RequestKind::Shutdown => "respond_shutdown",
                RequestKind::Plan => "review_plan",
            };
            return Err(BoardError::invalid(format!(
                "request r{id} is a {} request; answer it with {op}",
                req.kind
            )));
        }
        if !req.is_pending() {
            let by = req
                .answered_by
                .as_deref()
                .map(|b| format!(" by {b}"))
                .unwrap_or_default();
            return Err(BoardError::state(format!(
                "request r{id} is already {}{by}; only a pending request can be answered",
                req.state
            )));
        }
        Ok(req)
    }

    fn open(&mut self, ctx: &Ctx, o: Opening) -> TeamRequest {
        let id = self.next_request_id;
        self.next_request_id += 1;
        let req = TeamRequest {
            id,
            kind: o.kind,
            from: ctx.actor.to_string(),
            to: o.to.to_string(),
            task: o.task.map(|(t, _)| t),
            epoch: o.task.map(|(_, e)| e),
            state: RequestState::Pending,
            plan: o.plan,
            reason: o.reason,
            deadline: o.deadline.map(|(_, wall)| wall),
            answered_by: None,
            answered_at: None,
            feedback: None,
            forced: false,
            created_at: ctx.now.wall_ms,
        };
        let team = self.team_mut(ctx.team);
        match (o.kind, o.task) {
            (RequestKind::Plan, Some((task, _))) => {
                team.latest_plan.insert(task, id);
            }
            (RequestKind::Shutdown, _) => {
                team.pending_shutdowns.insert(o.to.to_string(), id);
            }
            _ => {}
        }
        if let Some((mono, _)) = o.deadline {
            team.request_deadlines.insert(id, mono);
        }
        team.requests.insert(id, req.clone());
        self.mark_request(ctx.team, id);
        let plan = o.kind == RequestKind::Plan;
        let detail = match o.kind {
            RequestKind::Shutdown => {
                format!(
                    "{} asked {} to shut down (request r{id})",
                    ctx.actor, req.to
                )
            }
            RequestKind::Plan => format!(
                "{} submitted a plan for #{} (request r{id})",
                ctx.actor,
                req.task.unwrap_or_default()
            ),
        };
        self.emit_as(
            ctx,
            EventKind::RequestOpened,
            About {
                request: Some(id),
                ..About::task(req.task, Some(if plan { ctx.actor } else { o.to }))
            },
            detail,
        );
        req
    }

    /// The one way a request leaves `pending`.
    fn settle(
        &mut self,
        team_name: &str,
        id: RequestId,
        state: RequestState,
        by: &str,
        feedback: Option<String>,
        now: Now,
    ) -> Result<TeamRequest> {
        let team = self
            .teams
            .get_mut(team_name)
            .ok_or_else(|| BoardError::new(ErrorCode::NotFound, format!("no request r{id}")))?;
        let req = team
            .requests
            .get_mut(&id)
            .ok_or_else(|| BoardError::new(ErrorCode::NotFound, format!("no request r{id}")))?;
        if !req.is_pending() {
            return Err(BoardError::state(format!(
                "request r{id} is already {}",
                req.state
            )));
        }
        req.state = state;
        req.answered_by = Some(by.to_string());
        req.answered_at = Some(now.wall_ms);
        req.feedback = feedback;
        let req = req.clone();
        team.request_deadlines.remove(&id);
        if req.kind == RequestKind::Shutdown && team.pending_shutdowns.get(&req.to) == Some(&id) {
            team.pending_shutdowns.remove(&req.to);
        }
        self.mark_request(team_name, id);
        let plan = req.kind == RequestKind::Plan;
        let what = match req.kind {
            RequestKind::Shutdown => format!("shutdown request r{id} to {}", req.to),
            RequestKind::Plan => format!(
                "{}'s plan for #{} (request r{id})",
                req.from,
                req.task.unwrap_or_default()
            ),
        };
        let tail = req
            .feedback
            .as_deref()
            .map(|f| {
                format!(
                    ": {}",
                    teamboard_protocol::text::fit_chars_with_ellipsis(f, 120)
                )
            })
            .unwrap_or_default();
        self.emit(
            team_name,
            by,
            now.wall_ms,
            EventKind::RequestSettled,
            About {
                request: Some(id),
                ..About::task(req.task, Some(if plan { &req.from } else { &req.to }))
            },
            format!("{what} {} by {by}{tail}", req.state),
        );
        Ok(req)
    }

    fn cancel(
        &mut self,
        team: &str,
        id: RequestId,
        by: &str,
        why: String,
        now: Now,
    ) -> Result<TeamRequest> {
        self.settle(team, id, RequestState::Cancelled, by, Some(why), now)
    }

    /// An answer's note (a blank one is none) within the length limit, and the
    /// state it settles the request in; a rejection must say why.
    fn decision(
        &self,
        approve: bool,
        note: Option<String>,
        what: &str,
        missing: &str,
    ) -> Result<(RequestState, Option<String>)> {
        let note = note.filter(|n| !n.trim().is_empty());
        if let Some(n) = &note {
            self.check_len(what, n)?;
        }
        if !approve && note.is_none() {
            return Err(BoardError::invalid(missing));
        }
        let state = if approve {
            RequestState::Approved
        } else {
            RequestState::Rejected
        };
        Ok((state, note))
    }

    fn pending_plan(&self, team: &str, task: TaskId) -> Option<RequestId> {
        let t = self.team(team)?;
        let id = *t.latest_plan.get(&task)?;
        t.requests.get(&id).filter(|r| r.is_pending()).map(|r| r.id)
    }

    fn session_of(&self, team: &str, name: &str) -> Option<SessionId> {
        self.team(team)
            .and_then(|t| t.members.get(name))
            .and_then(|m| m.session)
    }

    fn mark_request(&mut self, team: &str, id: RequestId) {
        self.dirty.requests.insert((team.to_string(), id));
    }

    fn check_len(&self, what: &str, text: &str) -> Result<()> {
        if text.len() > self.config.max_message_len {
            return Err(BoardError::invalid(format!(
                "{what} is {} bytes; the limit is {} bytes",
                text.len(),
                self.config.max_message_len
            )));
        }
        Ok(())
    }
}

fn only_lead(ctx: &Ctx, what: &str) -> Result<()> {
    if ctx.actor == LEAD {
        return Ok(());
    }
    Err(BoardError::new(
        ErrorCode::PermissionDenied,
        format!(
            "only the lead may {what}, and this session is '{}'",
            ctx.actor
        ),
    ))
}
