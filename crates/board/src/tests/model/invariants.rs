//! The invariants checked on the board alone after every step, from what it
//! showed before and after the op; none of them asks the model.

use super::ops::Op;
use super::reference::MAX_ATTEMPTS;
use super::view::{TaskView, View};
use super::{Answer, Sent};
use std::collections::BTreeMap;
use teamboard_protocol::{LandingStage, RequestState, TaskStatus};

/// `highest`: the highest task id the board showed before this step.
pub(super) fn check(
    before: &View,
    after: &View,
    op: &Op,
    got: &Answer,
    sent: Option<Sent>,
    highest: u64,
) {
    let ctx = |what: &str| format!("{what}, after {op:?} answered {got:?}");

    // No task is lost: only an accepted delete takes one away (the one it
    // named), and only an accepted add makes one, with an id never given.
    let old: BTreeMap<u64, &TaskView> = before.tasks.iter().map(|t| (t.id, t)).collect();
    let new: BTreeMap<u64, &TaskView> = after.tasks.iter().map(|t| (t.id, t)).collect();
    let deleted = match (op, got) {
        (Op::Delete { .. }, Ok(Some((id, _)))) => Some(*id),
        _ => None,
    };
    for id in old.keys() {
        assert!(
            new.contains_key(id) || deleted == Some(*id),
            "{}",
            ctx(&format!("#{id} lost"))
        );
    }
    let added: Vec<u64> = new
        .keys()
        .filter(|id| !old.contains_key(id))
        .copied()
        .collect();
    let add = matches!(op, Op::Add { .. }) && got.is_ok();
    assert_eq!(added.len(), usize::from(add), "{}", ctx("tasks made"));
    for id in &added {
        assert!(*id > highest, "{}", ctx(&format!("#{id} given again")));
        assert_eq!(*got, Ok(Some((*id, 0))), "{}", ctx("the new task's id"));
    }

    let status: BTreeMap<u64, TaskStatus> = after.tasks.iter().map(|t| (t.id, t.status)).collect();
    let mut holds: BTreeMap<&str, Vec<u64>> = BTreeMap::new();
    for t in &after.tasks {
        let what = |w: &str| ctx(&format!("#{}: {w} ({t:?})", t.id));
        match t.status {
            TaskStatus::InProgress => {
                let owner = t
                    .owner
                    .as_deref()
                    .unwrap_or_else(|| panic!("{}", what("owner")));
                holds.entry(owner).or_default().push(t.id);
                assert!(t.epoch >= 1 && t.attempts >= 1, "{}", what("claimed"));
            }
            TaskStatus::Pending | TaskStatus::Failed | TaskStatus::Cancelled => {
                assert_eq!(t.owner, None, "{}", what("no owner"));
            }
            TaskStatus::Completed => {}
        }
        assert!(t.attempts <= MAX_ATTEMPTS, "{}", what("attempts"));
        // Never claimable while a blocker is unfinished.
        if t.ready {
            assert_eq!(t.status, TaskStatus::Pending, "{}", what("ready"));
            assert_eq!(t.landing, None, "{}", what("ready"));
            for b in &t.blocked_by {
                assert_eq!(status[b], TaskStatus::Completed, "{}", what("ready"));
            }
        }
    }
    // At most one owner per task (above: `owner` is one name), and one task
    // per owner, which its member row names.
    for m in &after.members {
        let held = holds.remove(m.name.as_str()).unwrap_or_default();
        assert!(
            held.len() <= 1,
            "{}",
            ctx(&format!("{} holds {held:?}", m.name))
        );
        assert_eq!(m.task, held.first().copied(), "{}", ctx(&m.name));
    }
    assert!(holds.is_empty(), "{}", ctx("tasks held by no member"));

    for (old, new) in before
        .tasks
        .iter()
        .filter_map(|t| Some((t, *new.get(&t.id)?)))
    {
        let what = |w: &str| ctx(&format!("#{}: {w}: {old:?} -> {new:?}", old.id));
        // Epochs only grow, by one, and only when a claim is granted.
        assert!(new.epoch >= old.epoch, "{}", what("epoch went back"));
        if new.epoch != old.epoch {
            let claim = matches!(
                op,
                Op::Claim { .. } | Op::ClaimNext { .. } | Op::Wait { .. }
            );
            assert!(claim && new.epoch == old.epoch + 1, "{}", what("epoch"));
            assert_eq!(*got, Ok(Some((new.id, new.epoch))), "{}", what("epoch"));
        }
        // Completed is final.
        if old.status == TaskStatus::Completed {
            assert_eq!(old, new, "{}", what("completed changed"));
        }
        // Failed and cancelled move only by the lead (a retry; a failed task
        // may be cancelled), or by a landing that the queue had already made.
        if matches!(old.status, TaskStatus::Failed | TaskStatus::Cancelled)
            && new.status != old.status
        {
            let by = matches!(op, Op::Retry { by: None, .. })
                || (matches!(op, Op::Cancel { by: None, .. })
                    && new.status == TaskStatus::Cancelled)
                || (matches!(op, Op::Landed { .. }) && new.status == TaskStatus::Completed);
            assert!(by, "{}", what("an ended task moved"));
        }
    }

    // A settled request stays settled, and none goes away.
    assert!(after.requests.len() >= before.requests.len());
    for (old, new) in before.requests.iter().zip(&after.requests) {
        assert_eq!(old.0, new.0, "{}", ctx("request ids"));
        if old.1 != RequestState::Pending {
            assert_eq!(old, new, "{}", ctx("a settled request changed"));
        }
    }

    // A stale epoch, another's claim or a dead session is never accepted;
    // nor a gate report on a claim that ended or is not at its gate.
    if let Some(s) = sent
        && got.is_ok()
    {
        let t = before.tasks.iter().find(|t| t.id == s.task);
        let current = t.is_some_and(|t| {
            t.status == TaskStatus::InProgress
                && t.epoch == s.epoch
                && match s.who {
                    Some(who) => t.owner.as_deref() == Some(super::MEMBERS[who].0),
                    None => t.landing == Some(LandingStage::Checking),
                }
        });
        assert!(current && s.live, "{}", ctx(&format!("accepted {s:?}")));
    }
}
