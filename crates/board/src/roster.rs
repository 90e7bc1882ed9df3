//! The roster: registering teammates, their status, disconnects and token use.

use crate::About;
use crate::claims::{Abandon, by_boardd};
use crate::error::{BoardError, Result};
use crate::liveness::Live;
use crate::team::MemberState;
use crate::transition::Change;
use crate::{Board, Ctx, Now, SessionId};
use teamboard_protocol::names::{NATIVE_RUNTIME, validate_name, validate_runtime};
use teamboard_protocol::request::RegisterArgs;
use teamboard_protocol::{ErrorCode, EventKind, LEAD, Member, MemberStatus, TaskId, TokenUsage};

impl Board {
    /// Puts the session's name on the team's roster and binds it to the session,
    /// which makes the session a claimant. A name can be bound to one live session at
    /// a time. Claims the name still holds (after a boardd restart, within the grace
    /// period) are adopted by the new session.
    pub fn register(&mut self, ctx: Ctx, role: &str, pid: Option<u32>) -> Result<Member> {
        self.register_with(
            ctx,
            &RegisterArgs {
                role: role.to_string(),
                pid,
                ..RegisterArgs::default()
            },
        )
    }

    /// [`Board::register`] with every argument: a teammate whose every task needs
    /// an approved plan (`require_plan`), and the runtime that does its work. A
    /// registration replaces what the last one said: a teammate restarted with
    /// another runtime shows the new one.
    pub fn register_with(&mut self, ctx: Ctx, args: &RegisterArgs) -> Result<Member> {
        let role = args.role.as_str();
        let pid = args.pid;
        let require_plan = args.require_plan;
        validate_name(ctx.actor).map_err(BoardError::invalid)?;
        validate_name(role).map_err(|e| BoardError::invalid(format!("role: {e}")))?;
        let runtime = runtime_of(args.runtime.as_deref())?;
        let model = model_of(args.model.as_deref())?;
        if ctx.actor == LEAD {
            return Err(BoardError::invalid(
                "'lead' is reserved for the person at teamctl; pick another teammate name",
            ));
        }
        let ttl = self.config.lease_ttl;
        let team = self.team_mut(ctx.team);
        let mut adopted = None;
        let is_new = !team.members.contains_key(ctx.actor);
        if let Some(existing) = team.members.get(ctx.actor)
            && let Some(other) = existing.session
            && other != ctx.session
        {
            return Err(BoardError::new(
                ErrorCode::AlreadyConnected,
                format!(
                    "'{}' is already connected to team '{}' (session {other}); stop that teammate or pick another name",
                    ctx.actor, ctx.team
                ),
            ));
        }
        for (id, lease) in team.leases.iter_mut() {
            let owned = team
                .tasks
                .get(id)
                .is_some_and(|t| t.owner.as_deref() == Some(ctx.actor));
            if owned && lease.session.is_none() {
                lease.session = Some(ctx.session);
                lease.deadline = ctx.now.mono + ttl;
                adopted = Some(*id);
            }
        }
        // A registration replaces all but what the member has done so far.
        let old = team.members.get(ctx.actor).map(|s| &s.member);
        let task = adopted.or(old.and_then(|m| m.task));
        let mut detail = match (is_new, adopted) {
            (true, _) => format!("{} joined as {role}", ctx.actor),
            (false, Some(id)) => format!("{} reconnected and kept #{id}", ctx.actor),
            (false, None) => format!("{} reconnected as {role}", ctx.actor),
        };
        if let Some(r) = &runtime {
            detail.push_str(&format!(" (runtime {r})"));
        }
        let member = Member {
            name: ctx.actor.to_string(),
            role: role.to_string(),
            status: if task.is_some() {
                MemberStatus::Working
            } else {
                MemberStatus::Idle
            },
            last_seen: ctx.now.wall_ms,
            pid,
            task,
            tokens: old.map(|m| m.tokens).unwrap_or_default(),
            cost: old.map(|m| m.cost).unwrap_or_default(),
            waiting: None,
            connected: true,
            joined_at: old.map_or(ctx.now.wall_ms, |m| m.joined_at),
            require_plan,
            runtime,
            model,
            tokens_estimated: old.is_some_and(|m| m.tokens_estimated),
            liveness: old.and_then(|m| m.liveness.clone()),
            sandbox: args.sandbox,
        };
        let state = MemberState {
            member,
            session: Some(ctx.session),
            live: Live::registered(ctx.session, args.beat_ms, ctx.now),
        };
        team.members.insert(ctx.actor.to_string(), state);
        self.mark_member(ctx.team, ctx.actor);
        self.emit_as(
            &ctx,
            EventKind::MemberRegistered,
            About::member(ctx.actor),
            detail,
        );
        self.calls_registered(&ctx, pid);
        // Derived now, not at the end of the batch, so that the reply shows it.
        self.settle_member(ctx.team, ctx.actor, ctx.now, true);
        self.member_of_session(&ctx)
    }

    /// Sets the registered member's status (`shutdown` before a clean exit).
    pub fn set_status(&mut self, ctx: Ctx, status: MemberStatus) -> Result<Member> {
        let member = self.member_of_session(&ctx)?;
        if member.status == status {
            return Ok(member);
        }
        Ok(self
            .change_status(ctx.team, ctx.actor, ctx.actor, status, ctx.now)
            .unwrap_or(member))
    }

    /// Sets `name`'s status on behalf of `actor` (the member itself, or `boardd` when
    /// the daemon notices, e.g. a closed connection).
    pub(crate) fn change_status(
        &mut self,
        team_name: &str,
        actor: &str,
        name: &str,
        status: MemberStatus,
        now: Now,
    ) -> Option<Member> {
        let team = self.team_mut(team_name);
        let state = team.members.get_mut(name)?;
        state.member.status = status;
        state.member.last_seen = now.wall_ms;
        let member = state.member.clone();
        // Only `offline` and `shutdown` outlive a restart (which marks everyone
        // else offline), so only those are worth a row write; the event records
        // every change either way.
        if matches!(status, MemberStatus::Offline | MemberStatus::Shutdown) {
            self.mark_member(team_name, name);
        }
        self.emit(
            team_name,
            actor,
            now.wall_ms,
            EventKind::MemberStatus,
            About::member(name),
            format!("{name} is {status}"),
        );
        Some(member)
    }

    pub(crate) fn member_of_session(&self, ctx: &Ctx) -> Result<Member> {
        self.team(ctx.team)
            .and_then(|t| t.members.get(ctx.actor))
            .filter(|m| m.session == Some(ctx.session))
            .map(|m| m.member.clone())
            .ok_or_else(|| {
                BoardError::new(
                    ErrorCode::NotRegistered,
                    format!(
                        "'{}' has not registered in team '{}' on this connection",
                        ctx.actor, ctx.team
                    ),
                )
            })
    }

    /// A session closed: its claims go back to pending at once, its waiters are
    /// dropped, and its member goes offline (unless it said `shutdown`).
    pub fn disconnect(&mut self, session: SessionId, now: Now) {
        let mut claims: Vec<(String, TaskId)> = Vec::new();
        let mut members: Vec<(String, String)> = Vec::new();
        self.unpark(session);
        self.calls_closed(session, now);
        for (team_name, team) in self.teams.iter_mut() {
            let held: Vec<TaskId> = team
                .leases
                .iter()
                .filter(|(_, lease)| lease.session == Some(session))
                .map(|(id, _)| *id)
                .collect();
            for id in held {
                if team.lease_waived(id) {
                    // Queued work has passed its checks and lands without its
                    // owner, work in review waits for a person, and work sent
                    // back waits for its owner's next wait; the owner may come
                    // back for it.
                    if let Some(lease) = team.leases.get_mut(&id) {
                        lease.session = None;
                    }
                } else {
                    claims.push((team_name.clone(), id));
                }
            }
            for (name, m) in team.members.iter_mut() {
                if m.session == Some(session) {
                    m.session = None;
                    m.member.connected = false;
                    members.push((team_name.clone(), name.clone()));
                }
            }
        }
        for (team, id) in claims {
            // Made on behalf of the closed session itself, so that no notice is
            // raised for a connection that is gone.
            let at = Change {
                session: Some(session),
                ..by_boardd(&team, id, now)
            };
            let _ = self.abandon(at, Abandon::Disconnected, None);
        }
        for (team, name) in members {
            self.recheck_liveness(&team);
            self.target_left(&team, &name, "its session ended before it answered", now);
            self.drop_stale_shutdowns(&team, &name, now);
            // Marked offline without an event of its own: the liveness event
            // (`alice is now offline`, or `dead`) says it.
            if let Some(m) = self.team_mut(&team).members.get_mut(&name)
                && m.member.status != MemberStatus::Shutdown
            {
                m.member.status = MemberStatus::Offline;
                m.member.last_seen = now.wall_ms;
            }
            self.mark_member(&team, &name);
        }
    }

    /// Adds LLM token use to the member and, if given, the task: a
    /// settlement without a reservation, answered with the member.
    pub fn record_usage(
        &mut self,
        ctx: Ctx,
        task: Option<TaskId>,
        tokens: TokenUsage,
        estimated: bool,
    ) -> Result<Member> {
        self.member_of_session(&ctx)?;
        let args = teamboard_protocol::request::UsageArgs {
            task,
            tokens,
            estimated,
            ..Default::default()
        };
        self.settle_usage(ctx, args)?;
        self.member_of_session(&ctx)
    }

    /// The team's roster, by name.
    pub fn members(&self, team: &str) -> Vec<Member> {
        self.team(team)
            .map(|t| t.members.values().map(|m| m.member.clone()).collect())
            .unwrap_or_default()
    }

    /// Whether `name` is on the team's roster with a live session.
    pub fn is_connected(&self, team: &str, name: &str) -> bool {
        self.team(team)
            .and_then(|t| t.members.get(name))
            .is_some_and(|m| m.session.is_some())
    }

    /// Whether `name` is on the team's roster.
    pub fn is_member(&self, team: &str, name: &str) -> bool {
        self.team(team)
            .is_some_and(|t| t.members.contains_key(name))
    }
}

/// The runtime as the roster keeps it: checked, and `None` for the native one,
/// whether it was named or not, so that the roster has one spelling for it.
/// The longest model name a member may register with.
const MAX_MODEL_LEN: usize = 200;

/// The native loop's model, checked: any text a provider may name a model by
/// (`anthropic/claude-sonnet-4-5`, `openai/llama3.1:8b`), but one line and short.
fn model_of(model: Option<&str>) -> Result<Option<String>> {
    match model {
        None => Ok(None),
        Some(m)
            if m.trim().is_empty()
                || m.len() > MAX_MODEL_LEN
                || m.chars().any(char::is_control) =>
        {
            Err(BoardError::invalid(format!(
                "model: one line of 1 to {MAX_MODEL_LEN} bytes, not {m:?}"
            )))
        }
        Some(m) => Ok(Some(m.to_string())),
    }
}

fn runtime_of(runtime: Option<&str>) -> Result<Option<String>> {
    match runtime {
        None | Some(NATIVE_RUNTIME) => Ok(None),
        Some(r) => {
            validate_runtime(r).map_err(|e| BoardError::invalid(format!("runtime: {e}")))?;
            Ok(Some(r.to_string()))
        }
    }
}
