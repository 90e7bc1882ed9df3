//! Acknowledged changes lost: each answered change in the log must have its
//! event in boardd's history (read after the last `kill -9`), and a
//! completion or cancel must still be the task's state at the end.

use super::claims::Replay;
use super::{Evidence, Figure};
use crate::soak_board::acks::What;
use std::collections::{HashMap, HashSet};
use teamboard_protocol::{EventKind, TaskId, TaskStatus};

/// The events, indexed by what an ack names.
struct Index {
    /// (kind, task, actor) → the events' seqs.
    by_task: HashMap<(EventKind, TaskId, String), Vec<u64>>,
    created: HashSet<TaskId>,
    cancelled: HashSet<TaskId>,
    sent: HashSet<u64>,
    acked: HashSet<u64>,
    opened: HashSet<u64>,
    settled: HashSet<u64>,
}

impl Index {
    fn of(e: &Evidence) -> Index {
        let mut i = Index {
            by_task: HashMap::new(),
            created: HashSet::new(),
            cancelled: HashSet::new(),
            sent: HashSet::new(),
            acked: HashSet::new(),
            opened: HashSet::new(),
            settled: HashSet::new(),
        };
        for ev in e.events {
            match (ev.kind, ev.task, ev.message, ev.request) {
                (EventKind::TaskCreated, Some(t), _, _) => {
                    i.created.insert(t);
                }
                (EventKind::TaskCancelled, Some(t), _, _) => {
                    i.cancelled.insert(t);
                }
                (EventKind::MessageSent, _, Some(m), _) => {
                    i.sent.insert(m);
                }
                (EventKind::MessageAcked, _, Some(m), _) => {
                    i.acked.insert(m);
                }
                (EventKind::RequestOpened, _, _, Some(r)) => {
                    i.opened.insert(r);
                }
                (EventKind::RequestSettled, _, _, Some(r)) => {
                    i.settled.insert(r);
                }
                _ => {}
            }
            if let Some(t) = ev.task {
                let key = (ev.kind, t, ev.actor.clone());
                i.by_task.entry(key).or_default().push(ev.seq);
            }
        }
        i
    }

    /// Whether `who` has an event of `kind` on `id` after `after`.
    fn has(&self, kind: EventKind, id: TaskId, who: &str, after: u64) -> bool {
        self.by_task
            .get(&(kind, id, who.to_string()))
            .is_some_and(|seqs| seqs.iter().any(|&s| s > after))
    }
}

pub fn check(e: &Evidence, claims: &Replay, lost: &mut Figure) {
    let i = Index::of(e);
    let status: HashMap<TaskId, TaskStatus> = e.tasks.iter().map(|t| (t.id, t.status)).collect();
    for l in e.log {
        let who = l.client.as_str();
        let claim_seq = |id, epoch| claims.claims.get(&(id, epoch)).map_or(0, |c| c.seq);
        let problem = match &l.what {
            What::AddTask { id, .. } => (!i.created.contains(id) || !status.contains_key(id))
                .then(|| format!("#{id}, added by {who}, is not on the board")),
            What::CancelTask { id } => (!i.cancelled.contains(id)
                || status.get(id) != Some(&TaskStatus::Cancelled))
            .then(|| format!("#{id}, cancelled by {who}, is not cancelled")),
            What::Claim { id, epoch } => claims
                .claims
                .get(&(*id, *epoch))
                .is_none_or(|c| c.owner != who)
                .then(|| format!("#{id}: {who}'s claim with epoch {epoch} has no event")),
            What::Complete { id, epoch, .. } => (!i.has(EventKind::TaskCompleted, *id, who, 0)
                || status.get(id) != Some(&TaskStatus::Completed))
            .then(|| format!("#{id}: {who}'s completion (epoch {epoch}) is not on the board")),
            What::Fail { id, epoch, .. } | What::Release { id, epoch, .. } => {
                let after = claim_seq(*id, *epoch);
                let ended = i.has(EventKind::TaskReleased, *id, who, after)
                    || i.has(EventKind::TaskFailed, *id, who, after);
                (!ended).then(|| format!("#{id}: {who}'s release of epoch {epoch} has no event"))
            }
            What::Send { message, to } => (!i.sent.contains(message))
                .then(|| format!("message {message} from {who} to {to} has no event")),
            What::Ack { messages, acked } => {
                let found = messages.iter().filter(|m| i.acked.contains(m)).count();
                (found < *acked as usize).then(|| {
                    format!("{who} acked {acked} of {messages:?}; only {found} have an event")
                })
            }
            What::RequestShutdown { request, .. } | What::SubmitPlan { request, .. } => {
                (!i.opened.contains(request))
                    .then(|| format!("request r{request} from {who} has no event"))
            }
            What::RespondShutdown { request } | What::ReviewPlan { request, .. } => {
                (!i.settled.contains(request))
                    .then(|| format!("{who}'s answer to r{request} has no event"))
            }
            What::Heartbeat { .. } | What::StaleTry { .. } | What::Delivered { .. } => None,
        };
        if let Some(p) = problem {
            lost.add(p);
        }
    }
    super::messages::undelivered(e.log, lost);
}
