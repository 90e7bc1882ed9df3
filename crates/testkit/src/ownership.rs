//! Who held each task, judged from a team's history alone: [`check`] replays the
//! events that give or take a claim and refuses a history in which a task had two
//! owners at once, a claim's epoch did not rise, or a teammate held two tasks.
//!
//! The events that move a claim, as the `board` crate writes them:
//! - `task_claimed` gives one; its member is the claimant and its detail ends in
//!   `(attempt N, epoch E)`. The epoch is read from that text because `Event`
//!   carries no epoch field; a claim event without it is refused, so a change of
//!   wording fails here loudly rather than passing unchecked.
//! - `task_completed`, `task_released` (a release, a failure that leaves attempts,
//!   a lease that expired, a closed connection, a stopped owner, a refused landing,
//!   a send-back to a gone owner), `task_failed` and `task_cancelled` take it.
//!   Their member, when they name one, must be the holder.
//! - Nothing else does: an edit, a retry (of a failed or cancelled task), a merge
//!   queued, a review or a send-back to a connected owner leave the holder as it is.
//!
//! A completion or a cancellation may come with nobody holding the task (a
//! cancelled pending task; the merge queue landing an earlier claim's work while
//! the task waited); a release or a failure may not.
//!
//! The alternative was to compare snapshots of `list_tasks`, as the race tests'
//! observers do. A snapshot misses what happens between two polls; the history
//! has every change with its order, so replaying it sees every overlap.

use std::collections::BTreeMap;
use teamboard_protocol::request::EventsArgs;
use teamboard_protocol::{Client, ClientError, Event, EventKind, TaskId};

/// Events per `events` request when reading a whole history.
const PAGE: u64 = 2_000;

/// What a history that passed held.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Replayed {
    /// Claims given.
    pub claims: usize,
    /// Claims taken (completed, released, failed, cancelled).
    pub ends: usize,
    /// Tasks claimed at least once.
    pub tasks: usize,
    /// Claims still held at the end of the history.
    pub held: usize,
}

/// Why a history was refused. Each names the task, the members and the `seq`s.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Violation {
    #[error(
        "#{task} had two owners at once: {first} claimed it at seq {first_seq}, {second} at seq {second_seq}"
    )]
    TwoOwners {
        task: TaskId,
        first: String,
        first_seq: u64,
        second: String,
        second_seq: u64,
    },
    #[error(
        "#{task}'s epoch did not rise: epoch {previous} at seq {previous_seq}, then {by} claimed it with epoch {epoch} at seq {seq}"
    )]
    EpochNotRaised {
        task: TaskId,
        previous: u64,
        previous_seq: u64,
        by: String,
        epoch: u64,
        seq: u64,
    },
    #[error(
        "{member} held two tasks at once: #{first} from seq {first_seq}, #{second} claimed at seq {second_seq}"
    )]
    MemberHoldsTwo {
        member: String,
        first: TaskId,
        first_seq: u64,
        second: TaskId,
        second_seq: u64,
    },
    #[error(
        "#{task}: {kind} at seq {seq} names {named}, but {holder} held it since seq {claim_seq}"
    )]
    NotTheHolder {
        task: TaskId,
        kind: EventKind,
        named: String,
        seq: u64,
        holder: String,
        claim_seq: u64,
    },
    #[error("#{task}: {kind} at seq {seq}, but nobody held it")]
    NotHeld {
        task: TaskId,
        kind: EventKind,
        seq: u64,
    },
    #[error("{kind} at seq {seq} is not readable as a claim: {why} (detail: {detail:?})")]
    Unreadable {
        kind: EventKind,
        seq: u64,
        why: &'static str,
        detail: String,
    },
    #[error("the history is out of order: seq {seq} after seq {previous}")]
    OutOfOrder { previous: u64, seq: u64 },
}

/// A claim being held.
#[derive(Debug, Clone)]
struct Held {
    member: String,
    seq: u64,
}

/// Replays `history` (one team's events, in `seq` order) and returns what it
/// held, or the first violation.
pub fn check(history: &[Event]) -> Result<Replayed, Violation> {
    let mut holders: BTreeMap<TaskId, Held> = BTreeMap::new();
    // The last epoch claimed of each task, with the claim's seq.
    let mut epochs: BTreeMap<TaskId, (u64, u64)> = BTreeMap::new();
    // What each member holds: the task and the claim's seq.
    let mut holding: BTreeMap<String, (TaskId, u64)> = BTreeMap::new();
    let mut replayed = Replayed::default();
    let mut previous: Option<u64> = None;
    for event in history {
        let seq = event.seq;
        if let Some(previous) = previous.filter(|p| *p >= seq) {
            return Err(Violation::OutOfOrder { previous, seq });
        }
        previous = Some(seq);
        let Some(task) = event.task else { continue };
        match event.kind {
            EventKind::TaskClaimed => {
                let (member, epoch) = claim_of(event)?;
                if let Some(first) = holders.get(&task) {
                    return Err(Violation::TwoOwners {
                        task,
                        first: first.member.clone(),
                        first_seq: first.seq,
                        second: member,
                        second_seq: seq,
                    });
                }
                if let Some(&(previous, previous_seq)) = epochs.get(&task)
                    && epoch <= previous
                {
                    return Err(Violation::EpochNotRaised {
                        task,
                        previous,
                        previous_seq,
                        by: member,
                        epoch,
                        seq,
                    });
                }
                if let Some(&(first, first_seq)) = holding.get(&member) {
                    return Err(Violation::MemberHoldsTwo {
                        member,
                        first,
                        first_seq,
                        second: task,
                        second_seq: seq,
                    });
                }
                epochs.insert(task, (epoch, seq));
                holding.insert(member.clone(), (task, seq));
                holders.insert(task, Held { member, seq });
                replayed.claims += 1;
            }
            EventKind::TaskCompleted
            | EventKind::TaskReleased
            | EventKind::TaskFailed
            | EventKind::TaskCancelled => {
                let Some(held) = holders.remove(&task) else {
                    if matches!(event.kind, EventKind::TaskReleased | EventKind::TaskFailed) {
                        return Err(Violation::NotHeld {
                            task,
                            kind: event.kind,
                            seq,
                        });
                    }
                    continue;
                };
                if let Some(named) = event.member.as_ref().filter(|m| **m != held.member) {
                    return Err(Violation::NotTheHolder {
                        task,
                        kind: event.kind,
                        named: named.clone(),
                        seq,
                        holder: held.member,
                        claim_seq: held.seq,
                    });
                }
                holding.remove(&held.member);
                replayed.ends += 1;
            }
            _ => {}
        }
    }
    replayed.tasks = epochs.len();
    replayed.held = holders.len();
    Ok(replayed)
}

/// The claimant and the epoch of a `task_claimed` event.
pub fn claim_of(event: &Event) -> Result<(String, u64), Violation> {
    let unreadable = |why| Violation::Unreadable {
        kind: event.kind,
        seq: event.seq,
        why,
        detail: event.detail.clone(),
    };
    let member = event
        .member
        .clone()
        .ok_or_else(|| unreadable("it names no member"))?;
    let epoch = event
        .detail
        .rsplit_once("epoch ")
        .and_then(|(_, tail)| tail.strip_suffix(')'))
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| unreadable("its detail does not end in `epoch N)`"))?;
    Ok((member, epoch))
}

/// The whole history of `client`'s team, oldest first, read in pages with
/// `since`.
pub async fn read_history(client: &Client) -> Result<Vec<Event>, ClientError> {
    let mut history: Vec<Event> = Vec::new();
    loop {
        let since = history.last().map_or(0, |e| e.seq);
        let page = client
            .events(EventsArgs {
                since: Some(since),
                task: None,
                limit: Some(PAGE),
            })
            .await?;
        let full = page.len() as u64 == PAGE;
        history.extend(page);
        if !full {
            return Ok(history);
        }
    }
}
