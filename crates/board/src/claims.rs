//! Claims: who works on what, fenced by epochs and kept alive by leases.

use crate::About;
use crate::error::{BoardError, Result};
use crate::tasks::change;
use crate::team::Lease;
use crate::transition::{Change, Note};
use crate::{Board, Ctx, Now, SessionId, Waiting};
use teamboard_protocol::request::ReleaseArgs;
use teamboard_protocol::{Claim, ErrorCode, EventKind, MemberStatus, Task, TaskId, TaskStatus};

/// Why an attempt ended without completing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Abandon {
    /// The claimant reported failure.
    Failed,
    /// The claimant gave the task back with an error.
    ReleasedWithError,
    /// The claimant gave the task back without an error: the attempt does not count.
    Released,
    /// As `Released`, with a note that says why the claimant let go (its own
    /// setup failed), not how far the task got: it is no handoff.
    ReleasedAside,
    LeaseExpired,
    Disconnected,
    /// The owner did not come back within the grace period after a restart.
    NotReclaimed,
    /// boardd stops the owner for a forced or expired shutdown: not the task's
    /// fault, so the attempt does not count.
    Stopped,
    /// The merge queue could not land the work and its owner was gone: the
    /// attempt does not count, and the reason becomes the handoff note.
    LandRefused,
    /// A person sent the work back from review and its owner was gone: the
    /// attempt does not count, and the feedback becomes the handoff note.
    SentBack,
}

impl Board {
    /// The role of the registered member behind this session, which must hold
    /// no task.
    fn claimant(&self, ctx: &Ctx) -> Result<String> {
        let team = self.team(ctx.team);
        let member = team.and_then(|t| t.members.get(ctx.actor));
        match member {
            Some(m)
                if m.session == Some(ctx.session) && m.member.status == MemberStatus::Shutdown =>
            {
                Err(BoardError::state(format!(
                    "'{}' is shutting down and takes no new tasks",
                    ctx.actor
                )))
            }
            Some(m) if m.session == Some(ctx.session) => match m.member.task {
                Some(held) => Err(BoardError::new(
                    ErrorCode::AlreadyHoldsTask,
                    format!(
                        "{} already holds #{held}; complete, fail or release it first",
                        ctx.actor
                    ),
                )),
                None => Ok(m.member.role.clone()),
            },
            _ => Err(BoardError::new(
                ErrorCode::NotRegistered,
                format!(
                    "'{}' has not registered in team '{}' on this connection; send `register` first",
                    ctx.actor, ctx.team
                ),
            )),
        }
    }

    /// Claims one specific task, which must be ready and match the claimant's role.
    pub fn claim_task(&mut self, ctx: Ctx, id: TaskId) -> Result<Claim> {
        let role = self.claimant(&ctx)?;
        let (team, task) = self.team_task(ctx.team, id)?;
        if let Some(r) = &task.role
            && *r != role
        {
            return Err(BoardError::new(
                ErrorCode::RoleMismatch,
                format!(
                    "task #{id} is for role '{r}', and '{}' is '{role}'",
                    ctx.actor
                ),
            ));
        }
        if !team.is_ready(task) {
            let why = match task.status {
                TaskStatus::InProgress => format!(
                    "task #{id} is already claimed by {}",
                    task.owner.as_deref().unwrap_or("someone")
                ),
                TaskStatus::Pending => format!(
                    "task #{id} is blocked by {}",
                    crate::tasks::fmt_ids(&team.open_blockers_of(task))
                ),
                s => format!("task #{id} is {s}"),
            };
            return Err(BoardError::new(ErrorCode::Conflict, why));
        }
        self.grant(ctx.team, id, ctx.actor, ctx.session, ctx.now)
    }

    /// Claims the highest-priority ready task (lowest id on ties) that the
    /// claimant's role allows, or answers `None` when there is none.
    pub fn claim_next(&mut self, ctx: Ctx) -> Result<Option<Claim>> {
        let role = self.claimant(&ctx)?;
        let Some(id) = self.next_claimable(ctx.team, ctx.actor, &role, ctx.now) else {
            return Ok(None);
        };
        self.grant(ctx.team, id, ctx.actor, ctx.session, ctx.now)
            .map(Some)
    }

    /// Hands a ready task to a claimant. The caller has checked readiness and role;
    /// the only error left is a task that does not exist.
    pub(crate) fn grant(
        &mut self,
        team_name: &str,
        id: TaskId,
        name: &str,
        session: SessionId,
        now: Now,
    ) -> Result<Claim> {
        let at = Change {
            team: team_name,
            id,
            actor: name,
            session: Some(session),
            now,
        };
        let reserve = self.worktree_for(team_name, id);
        self.team_mut(team_name).stopped.remove(&id);
        let task = self.transition(at, |task| {
            task.status = TaskStatus::InProgress;
            task.owner = Some(name.to_string());
            task.attempts += 1;
            task.epoch += 1;
            if task.worktree.as_ref().is_none_or(|w| w.pruned) {
                // Reserved in the claim's own commit; created when the holder
                // opens it. A re-claim keeps the worktree the task has.
                task.worktree = reserve;
            }
            Note::new(
                EventKind::TaskClaimed,
                format!(
                    "{name} claimed #{id} (attempt {}, epoch {})",
                    task.attempts, task.epoch
                ),
            )
            .about(name)
        })?;
        let ttl = self.config.lease_ttl;
        let team = self.team_mut(team_name);
        team.leases.insert(
            id,
            Lease {
                session: Some(session),
                deadline: now.mono + ttl,
            },
        );
        let mut status_changed = false;
        if let Some(m) = team.members.get_mut(name) {
            m.member.task = Some(id);
            m.live.started = true;
            status_changed = m.member.status != MemberStatus::Working;
            m.member.status = MemberStatus::Working;
            m.member.last_seen = now.wall_ms;
        }
        // The member's `task` and `working` status are not written: a restart
        // recomputes the first from the tasks and resets the second, and leaving
        // the row out makes every claim's commit a page smaller.
        if status_changed {
            self.emit(
                team_name,
                name,
                now.wall_ms,
                EventKind::MemberStatus,
                About::member(name),
                format!("{name} is working"),
            );
        }
        Ok(Claim {
            epoch: task.epoch,
            task,
        })
    }

    /// Refuses anything but the current holder with the current epoch.
    pub(crate) fn check_fence(&self, ctx: &Ctx, id: TaskId, epoch: u64) -> Result<()> {
        let task = self.task(ctx.team, id)?;
        let lease = self.team(ctx.team).and_then(|t| t.leases.get(&id));
        let current = task.status == TaskStatus::InProgress
            && task.owner.as_deref() == Some(ctx.actor)
            && task.epoch == epoch
            && lease.is_some_and(|l| l.session == Some(ctx.session));
        if current {
            return Ok(());
        }
        let now_state = match (&task.owner, task.status) {
            (Some(o), TaskStatus::InProgress) => {
                format!("it is held by {o} with epoch {}", task.epoch)
            }
            (_, s) => format!("it is {s} now"),
        };
        Err(BoardError::new(
            ErrorCode::StaleEpoch,
            format!("the claim on #{id} with epoch {epoch} is no longer current: {now_state}"),
        ))
    }

    /// Finishes a claimed task and makes its dependents ready.
    pub fn complete_task(
        &mut self,
        ctx: Ctx,
        id: TaskId,
        epoch: u64,
        result: String,
    ) -> Result<Task> {
        self.check_fence(&ctx, id, epoch)?;
        self.check_plan(ctx.team, id, epoch)?;
        self.check_not_landing(ctx.team, id)?;
        if result.len() > self.config.max_message_len {
            return Err(BoardError::invalid(format!(
                "the result is {} bytes; the limit is {}",
                result.len(),
                self.config.max_message_len
            )));
        }
        self.transition(change(&ctx, id), |task| {
            task.status = TaskStatus::Completed;
            task.result = Some(result);
            task.handoff = None;
            Note::new(
                EventKind::TaskCompleted,
                format!("{} completed #{id}", ctx.actor),
            )
            .about(ctx.actor)
        })
    }

    /// Reports a failed attempt. The task goes back to pending for another attempt,
    /// or becomes `failed` once its attempts are used up.
    pub fn fail_task(&mut self, ctx: Ctx, id: TaskId, epoch: u64, error: String) -> Result<Task> {
        self.check_fence(&ctx, id, epoch)?;
        self.abandon(change(&ctx, id), Abandon::Failed, Some(error))
    }

    /// Gives a claimed task back. With an error the attempt counts as failed;
    /// without, it does not, and `note` (if any) says why in the event.
    pub fn release_task(
        &mut self,
        ctx: Ctx,
        id: TaskId,
        epoch: u64,
        error: Option<String>,
        note: Option<String>,
    ) -> Result<Task> {
        let args = ReleaseArgs {
            id,
            epoch,
            error,
            note,
            not_handoff: false,
        };
        self.release(ctx, args)
    }

    /// `release_task`: [`Board::release_task`], and a note that is no handoff.
    ///
    /// A shutdown's deadline or `force` may stop the holder while its release
    /// is on the way (a teammate approving gives the task back first, with a
    /// note of how far it got). The stop gave the task back already; the note
    /// is still the next owner's, so it is kept, unless the task was claimed
    /// again meanwhile.
    pub fn release(&mut self, ctx: Ctx, args: ReleaseArgs) -> Result<Task> {
        let ReleaseArgs { id, epoch, .. } = args;
        if let Err(stale) = self.check_fence(&ctx, id, epoch) {
            return match args
                .note
                .filter(|_| args.error.is_none() && !args.not_handoff)
            {
                Some(note) if self.stopped_holder(&ctx, id, epoch) => {
                    self.late_handoff(&ctx, id, note)
                }
                _ => Err(stale),
            };
        }
        let why = match (&args.error, args.not_handoff) {
            (Some(_), _) => Abandon::ReleasedWithError,
            (None, false) => Abandon::Released,
            (None, true) => Abandon::ReleasedAside,
        };
        self.abandon(change(&ctx, id), why, args.error.or(args.note))
    }

    /// Whether boardd stopped the caller for a shutdown while it held claim
    /// `epoch` of `id`, and nobody has claimed the task since.
    fn stopped_holder(&self, ctx: &Ctx, id: TaskId, epoch: u64) -> bool {
        let Some(team) = self.team(ctx.team) else {
            return false;
        };
        let stopped = team.stopped.get(&id);
        let unclaimed = team
            .tasks
            .get(&id)
            .is_some_and(|t| t.epoch == epoch && t.status == TaskStatus::Pending);
        unclaimed && stopped.is_some_and(|(who, e)| who == ctx.actor && *e == epoch)
    }

    /// Keeps the note of a release that came after boardd stopped its holder.
    fn late_handoff(&mut self, ctx: &Ctx, id: TaskId, note: String) -> Result<Task> {
        let note =
            teamboard_protocol::text::fit_bytes_with_mark(&note, self.config.max_message_len);
        self.team_mut(ctx.team).stopped.remove(&id);
        let owner = ctx.actor.to_string();
        self.transition(change(ctx, id), |task| {
            task.handoff = Some(note.clone());
            Note::new(
                EventKind::TaskEdited,
                format!("#{id}: {owner}'s release note, after boardd stopped it: {note}"),
            )
            .about(owner)
        })
    }

    /// Extends the claim's lease by the configured TTL.
    pub fn heartbeat(&mut self, ctx: Ctx, id: TaskId, epoch: u64) -> Result<Task> {
        self.check_fence(&ctx, id, epoch)?;
        let ttl = self.config.lease_ttl;
        let team = self.team_mut(ctx.team);
        if let Some(lease) = team.leases.get_mut(&id) {
            lease.deadline = ctx.now.mono + ttl;
        }
        if let Some(m) = team.members.get_mut(ctx.actor) {
            m.member.last_seen = ctx.now.wall_ms;
        }
        Ok(self.task(ctx.team, id)?.clone())
    }

    /// Ends an attempt that did not complete: back to pending, or `failed` when the
    /// attempts are used up. `error` goes into the event and, unless the attempt
    /// does not count (`Released`, where it is only a note), into `last_error`.
    pub(crate) fn abandon(
        &mut self,
        at: Change,
        why: Abandon,
        error: Option<String>,
    ) -> Result<Task> {
        let max = self.config.max_attempts;
        // An error is kept as the task's last error, so it is bounded like any other
        // text; refusing it instead would leave the claim stuck in progress.
        let error = error.map(|e| {
            teamboard_protocol::text::fit_bytes_with_mark(&e, self.config.max_message_len)
        });
        let id = at.id;
        self.transition(at, |task| {
            let owner = task.owner.take().unwrap_or_default();
            let reason = match why {
                Abandon::Failed => "failed",
                Abandon::ReleasedWithError | Abandon::Released | Abandon::ReleasedAside => {
                    "released"
                }
                Abandon::LeaseExpired => "lease expired",
                Abandon::Disconnected => "connection closed",
                Abandon::NotReclaimed => "not reclaimed after restart",
                Abandon::Stopped => "owner stopped",
                Abandon::LandRefused => "could not land",
                Abandon::SentBack => "sent back by review",
            };
            let error = error.or_else(|| match why {
                Abandon::LeaseExpired => {
                    Some(format!("{owner} stopped heartbeating; its lease expired"))
                }
                Abandon::Disconnected => Some(format!("{owner}'s connection closed")),
                Abandon::NotReclaimed => {
                    Some(format!("{owner} did not reconnect after boardd restarted"))
                }
                _ => None,
            });
            let in_conflict = crate::landing::conflict_outlives(task, why);
            let counts = !in_conflict
                && !matches!(
                    why,
                    Abandon::Released
                        | Abandon::ReleasedAside
                        | Abandon::Stopped
                        | Abandon::LandRefused
                        | Abandon::SentBack
                );
            if !counts {
                task.attempts = task.attempts.saturating_sub(1);
            }
            // What the owner got done, for whoever takes the task next (a
            // conflict's note, set above, says more).
            if matches!(
                why,
                Abandon::Released | Abandon::LandRefused | Abandon::SentBack
            ) && !in_conflict
                && let Some(note) = &error
            {
                task.handoff = Some(note.clone());
            }
            if let Some(e) = error.as_ref().filter(|_| counts) {
                task.last_error = Some(e.clone());
            }
            let failed = counts && task.attempts >= max;
            task.status = if failed {
                TaskStatus::Failed
            } else {
                TaskStatus::Pending
            };
            let note = if failed {
                Note::new(
                    EventKind::TaskFailed,
                    format!(
                        "#{id} failed after {} attempt(s) ({reason}): {}",
                        task.attempts,
                        error.as_deref().unwrap_or("no error given")
                    ),
                )
            } else {
                let tail = error.map(|e| format!(": {e}")).unwrap_or_default();
                Note::new(
                    EventKind::TaskReleased,
                    format!("#{id} back to pending ({reason}, {owner}){tail}"),
                )
            };
            note.about(owner)
        })
    }

    /// Ends claims whose lease (or post-restart grace) has run out, and answers
    /// waiters whose timeout passed. Returns the timed-out waiters.
    pub fn expire(&mut self, now: Now) -> Vec<Waiting> {
        let mut lapsed = Vec::new();
        for (name, team) in &self.teams {
            for (id, lease) in &team.leases {
                if lease.deadline <= now.mono && !team.lease_waived(*id) {
                    let why = if lease.session.is_some() {
                        Abandon::LeaseExpired
                    } else {
                        Abandon::NotReclaimed
                    };
                    lapsed.push((name.clone(), *id, why, lease.session));
                }
            }
        }
        // Hash order would make the events of a simultaneous expiry vary by run.
        lapsed.sort_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
        for (team, id, why, session) in lapsed {
            let _ = self.abandon(by_boardd(&team, id, now), why, None);
            // A connected holder that let its lease run out is stalled.
            if let Some(session) = session {
                self.lease_lapsed(&team, session);
            }
        }
        self.expire_stalls(now);
        self.expire_requests(now);
        self.charge_due_orphans(now);
        self.expire_waiters(now)
    }
}

/// A change boardd makes on its own: an expiry, a closed connection.
pub(crate) fn by_boardd(team: &str, id: TaskId, now: Now) -> Change<'_> {
    Change {
        team,
        id,
        actor: "boardd",
        session: None,
        now,
    }
}
