//! Claims, judged from the events alone: each `task_claimed` opens a claim
//! (owner, epoch), and the task's next completion, release, failure or cancel
//! closes it. A claim opened while another is open is a second owner; a
//! completion, failure or release by a member that does not hold the open
//! claim is a stale epoch that boardd accepted (its fence let through an
//! owner whose claim had ended). The log adds what the events cannot say:
//! an epoch handed to two clients, and an op answered with another epoch.

use super::{Figure, Figures};
use crate::soak_board::acks::{Line, Seen, What};
use std::collections::HashMap;
use teamboard_protocol::{Event, EventKind, TaskId, TaskStatus};

/// A claim as its event tells it.
#[derive(Debug, Clone)]
pub struct Opened {
    pub owner: String,
    pub seq: u64,
}

pub struct Replay {
    /// Every claim by (task, epoch).
    pub claims: HashMap<(TaskId, u64), Opened>,
    double: Vec<String>,
    stale: Vec<String>,
}

/// `… (attempt 2, epoch 7)` → 7.
pub fn epoch_in(detail: &str) -> Option<u64> {
    let at = detail.rfind("epoch ")? + "epoch ".len();
    let digits: String = detail[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

impl Replay {
    pub fn of(events: &[Event]) -> Replay {
        let mut r = Replay {
            claims: HashMap::new(),
            double: Vec::new(),
            stale: Vec::new(),
        };
        let mut open: HashMap<TaskId, (String, u64)> = HashMap::new();
        for e in events {
            let Some(id) = e.task else { continue };
            match e.kind {
                EventKind::TaskClaimed => {
                    let owner = e.member.clone().unwrap_or_else(|| e.actor.clone());
                    let epoch = epoch_in(&e.detail).unwrap_or(0);
                    if let Some((other, was)) = open.get(&id) {
                        r.double.push(format!(
                            "#{id}: {owner} claimed it (epoch {epoch}, event {}) while {other} \
                             held epoch {was}",
                            e.seq
                        ));
                    }
                    open.insert(id, (owner.clone(), epoch));
                    let seq = e.seq;
                    if r.claims
                        .insert((id, epoch), Opened { owner, seq })
                        .is_some()
                    {
                        r.double.push(format!(
                            "#{id}: epoch {epoch} handed out twice (event {seq})"
                        ));
                    }
                }
                EventKind::TaskCompleted
                | EventKind::TaskReleased
                | EventKind::TaskFailed
                | EventKind::TaskCancelled => {
                    let closed = open.remove(&id);
                    let by_owner = !matches!(e.actor.as_str(), "boardd" | "lead");
                    if !by_owner || e.kind == EventKind::TaskCancelled {
                        continue;
                    }
                    match closed {
                        Some((owner, _)) if owner == e.actor => {}
                        Some((owner, epoch)) => r.stale.push(format!(
                            "#{id}: {} by {} while {owner} held epoch {epoch} (event {})",
                            e.kind, e.actor, e.seq
                        )),
                        None => r.stale.push(format!(
                            "#{id}: {} by {} with no claim open (event {})",
                            e.kind, e.actor, e.seq
                        )),
                    }
                }
                _ => {}
            }
        }
        r
    }

    pub fn judge(&self, f: &mut Figures) {
        for d in &self.double {
            f.tasks_with_two_owners.add(d.clone());
        }
        for s in &self.stale {
            f.stale_epochs_accepted.add(s.clone());
        }
    }
}

/// What the log says: an epoch handed to two clients, an epoch op whose
/// answer shows another epoch or the wrong state, and an acknowledged try
/// with an epoch its client knew to be old.
pub fn from_log(log: &[Line], f: &mut Figures) {
    let mut handed: HashMap<(TaskId, u64), &str> = HashMap::new();
    for l in log {
        let who = l.client.as_str();
        let answered = |f: &mut Figure, op: &str, id, epoch, seen: &Seen, want: &[TaskStatus]| {
            if seen.epoch != epoch || !want.contains(&seen.status) {
                f.add(format!(
                    "#{id}: {who}'s {op} with epoch {epoch} was answered with epoch {} ({})",
                    seen.epoch, seen.status
                ));
            }
        };
        let f_stale = &mut f.stale_epochs_accepted;
        match &l.what {
            What::Claim { id, epoch } => {
                if let Some(other) = handed.insert((*id, *epoch), who)
                    && other != who
                {
                    f.tasks_with_two_owners.add(format!(
                        "#{id}: epoch {epoch} was handed to {other} and to {who}"
                    ));
                }
            }
            What::Complete { id, epoch, seen } => answered(
                f_stale,
                "completion",
                id,
                *epoch,
                seen,
                &[TaskStatus::Completed],
            ),
            What::Heartbeat { id, epoch, seen } => answered(
                f_stale,
                "heartbeat",
                id,
                *epoch,
                seen,
                &[TaskStatus::InProgress],
            ),
            What::Fail { id, epoch, seen } | What::Release { id, epoch, seen } => {
                let back = [TaskStatus::Pending, TaskStatus::Failed];
                answered(f_stale, "failure or release", id, *epoch, seen, &back)
            }
            What::StaleTry {
                id,
                epoch,
                acked: true,
            } => f_stale.add(format!(
                "#{id}: {who}'s completion with the old epoch {epoch} was acknowledged"
            )),
            _ => {}
        }
    }
}
