//! The one way a task changes state.
//!
//! Creating, claiming, completing, failing, releasing, cancelling, retrying and
//! re-wiring a task all end the same way: the task's `updated_at` moves, its
//! readiness (and, on completion, its dependents') is brought up to date, parked
//! waiters are woken if someone may now have work, the row is marked for the
//! store, and the change is recorded as an event. [`Board::transition`] does that
//! tail for every one of them, so no operation can forget a step.
//!
//! It also ends a claim whenever a task leaves `in_progress`: the lease goes, the
//! owner holds nothing any more, and, when someone other than the holder ended
//! it, the holder's session gets a [`Notice`] so that it stops at once instead of
//! at its next heartbeat.

use crate::error::{BoardError, Result};
use crate::{About, Board, Notice, Now, SessionId};
use teamboard_protocol::{EventKind, Landing, LandingStage, Task, TaskId, TaskStatus};

/// Where a change happens and who makes it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Change<'a> {
    pub team: &'a str,
    pub id: TaskId,
    /// Who the history names: a member, `lead` or `boardd`.
    pub actor: &'a str,
    /// The session that asked; `None` when boardd acts on its own (a lease ran
    /// out, a connection closed, a restart grace ended).
    pub session: Option<SessionId>,
    pub now: Now,
}

/// The event an edit records.
pub(crate) struct Note {
    pub kind: EventKind,
    /// The member the event is about, besides the task.
    pub member: Option<String>,
    pub detail: String,
}

impl Note {
    pub fn new(kind: EventKind, detail: String) -> Note {
        Note {
            kind,
            member: None,
            detail,
        }
    }

    pub fn about(self, member: impl Into<String>) -> Note {
        let member: String = member.into();
        Note {
            member: (!member.is_empty()).then_some(member),
            ..self
        }
    }
}

impl Board {
    /// Applies `edit` to the task and then everything that follows a change of
    /// its state. `edit` sees the task as it was and returns the event to record.
    /// Index changes the edit depends on (dependents, open blocker counts) are
    /// made by the caller before this runs.
    pub(crate) fn transition(
        &mut self,
        at: Change,
        edit: impl FnOnce(&mut Task) -> Note,
    ) -> Result<Task> {
        let team = self
            .teams
            .get_mut(at.team)
            .ok_or_else(|| BoardError::no_task(at.id, at.team))?;
        let task = team.task_mut(at.id, at.team)?;
        let was = task.status;
        let owner = task.owner.clone();
        let note = edit(task);
        task.updated_at = at.now.wall_ms;
        let status = task.status;
        // A landing belongs to its claim: if the claim ends any other way than by
        // landing (which takes it first), the landing goes with it.
        // A conflict that goes back to pending waits there for a person
        // (`landing::conflict_outlives`); no request or check is bound to it.
        let dropped = if was == TaskStatus::InProgress && status != TaskStatus::InProgress {
            let waits = |l: &mut Landing| {
                l.stage == LandingStage::Conflict && status == TaskStatus::Pending
            };
            task.landing.take_if(|l| !waits(l)).map(|_| task.epoch)
        } else {
            // A pending task's landing is a conflict waiting for a person: a
            // claim takes it on, anything else ends it.
            if was == TaskStatus::Pending
                && !matches!(status, TaskStatus::Pending | TaskStatus::InProgress)
            {
                task.landing = None;
            }
            None
        };
        let mut wake = false;
        let mut holder = None;
        if was == TaskStatus::InProgress && status != TaskStatus::InProgress {
            // The claim ends with the state it belonged to. The owner is free to
            // take other work, which is news for a wait it may have parked.
            holder = team.leases.remove(&at.id).and_then(|l| l.session);
            team.returned.remove(&at.id);
            if let Some(owner) = &owner
                && let Some(m) = team.members.get_mut(owner)
                && m.member.task == Some(at.id)
            {
                m.member.task = None;
                m.member.last_seen = at.now.wall_ms;
                // Only a wait the owner parked while it worked can take more
                // now; waking the team for nothing would make every claim's end
                // a dispatch.
                wake = team.waiters.values().any(|w| w.name == *owner);
            }
        }
        if status == TaskStatus::Completed && was != TaskStatus::Completed {
            // O(dependents): only the tasks that wait for this one are touched.
            let dependents = team.dependents.get(&at.id).cloned().unwrap_or_default();
            for d in dependents {
                if let Some(open) = team.open_blockers.get_mut(&d) {
                    *open = open.saturating_sub(1);
                }
                wake |= team.refresh_ready(d);
            }
        }
        wake |= team.refresh_ready(at.id);
        let task = team.task(at.id, at.team)?.clone();
        if wake {
            self.wake.insert(at.team.to_string());
        }
        self.mark_task(at.team, at.id);
        let about = About::task(at.id, note.member.as_deref());
        self.emit(
            at.team,
            at.actor,
            at.now.wall_ms,
            note.kind,
            about,
            note.detail,
        );
        if let Some(session) = holder.filter(|h| at.session != Some(*h))
            && let Some(event) = self.dirty.events.last()
        {
            self.notices.push(Notice {
                session,
                event: event.clone(),
            });
        }
        // After the notice, which is the task's own event.
        if was == TaskStatus::InProgress && status != TaskStatus::InProgress {
            self.claim_ended(at.team, at.id, status, at.now);
        }
        if let Some(epoch) = dropped {
            let why = format!(
                "the claim ended while #{} was landing (it is {} now)",
                at.id, status
            );
            self.drop_landing(at.team, at.id, epoch, why);
        }
        Ok(task)
    }
}
