//! Editing and deleting a task no one holds.

use super::*;
use teamboard_protocol::request::EditTaskArgs;
use teamboard_protocol::{EventKind, TaskStatus};

fn edit(id: TaskId) -> EditTaskArgs {
    EditTaskArgs {
        id,
        ..Default::default()
    }
}

/// The message of a refusal, with its code.
fn refusal<T: Debug>(r: Result<T>) -> (ErrorCode, String) {
    let e = r.expect_err("refused");
    (e.code, e.message)
}

#[test]
fn a_pending_task_is_edited_and_its_new_priority_and_role_decide_the_claim() {
    let mut h = H::new();
    let a = h.add("a");
    let b = h.add_role("b", "reviewer");
    h.board.take_changes();
    let ctx = h.lead();
    let t = h
        .board
        .edit_task(
            ctx,
            EditTaskArgs {
                subject: Some("  b, reworded ".into()),
                description: Some("all of it".into()),
                priority: Some(5),
                role: Some(String::new()),
                ..edit(b)
            },
        )
        .unwrap();
    assert_eq!(
        (
            t.subject.as_str(),
            t.description.as_str(),
            t.priority,
            t.role
        ),
        ("b, reworded", "all of it", 5, None)
    );
    let events = h.events();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].kind, EventKind::TaskEdited);
    assert_eq!(
        events[0].detail,
        "edited #2: subject, description, priority 0 -> 5, role reviewer -> any"
    );
    // Anyone may claim it now, and it comes before #1.
    let ann = h.join("ann", "dev");
    assert_eq!(h.claim_next(ann).map(|c| c.task.id), Some(b));
    // Giving it a role takes it from those without.
    let ctx = h.lead();
    h.board
        .edit_task(
            ctx,
            EditTaskArgs {
                role: Some("reviewer".into()),
                ..edit(a)
            },
        )
        .unwrap();
    let bo = h.join("bo", "dev");
    assert_eq!(h.claim_next(bo), None);
}

#[test]
fn an_edit_that_changes_nothing_records_nothing_and_an_empty_one_is_refused() {
    let mut h = H::new();
    let a = h.add("a");
    h.board.take_changes();
    let ctx = h.lead();
    let same = EditTaskArgs {
        subject: Some("a".into()),
        priority: Some(0),
        ..edit(a)
    };
    h.board.edit_task(ctx, same).unwrap();
    assert!(h.events().is_empty());
    let ctx = h.lead();
    let (code, msg) = refusal(h.board.edit_task(ctx, edit(a)));
    assert_eq!(code, ErrorCode::InvalidArgs);
    assert!(msg.contains("name something to change"), "{msg}");
}

#[test]
fn an_edit_is_validated_like_a_new_task() {
    let mut h = H::new();
    let a = h.add("a");
    let bad = [
        EditTaskArgs {
            subject: Some(" ".into()),
            ..edit(a)
        },
        EditTaskArgs {
            subject: Some("two\nlines".into()),
            ..edit(a)
        },
        EditTaskArgs {
            description: Some("x".repeat(h.board.config().max_message_len + 1)),
            ..edit(a)
        },
        EditTaskArgs {
            role: Some("no spaces please".into()),
            ..edit(a)
        },
    ];
    for args in bad {
        let ctx = h.lead();
        assert_eq!(
            code(h.board.edit_task(ctx, args.clone())),
            ErrorCode::InvalidArgs,
            "{args:?}"
        );
    }
    assert_eq!(h.task(a).subject, "a");
    let ctx = h.lead();
    assert_eq!(code(h.board.edit_task(ctx, edit(9))), ErrorCode::NotFound);
}

#[test]
fn only_the_lead_edits_or_deletes_and_only_a_task_no_one_holds() {
    let mut h = H::cfg(|c| c.max_attempts = 1);
    let a = h.add("a");
    let ann = h.join("ann", "dev");
    let ctx = h.ctx(ann);
    let subject = |s: &str| EditTaskArgs {
        subject: Some(s.into()),
        ..edit(a)
    };
    assert_eq!(
        code(h.board.edit_task(ctx, subject("mine"))),
        ErrorCode::PermissionDenied
    );
    let ctx = h.ctx(ann);
    assert_eq!(
        code(h.board.delete_task(ctx, a)),
        ErrorCode::PermissionDenied
    );

    let c = h.claim(ann, a);
    let ctx = h.lead();
    let (code_, msg) = refusal(h.board.edit_task(ctx, subject("changed")));
    assert_eq!(code_, ErrorCode::InvalidState);
    assert_eq!(
        msg,
        "task #1 is held by ann; only a task no one holds can be edited"
    );
    let ctx = h.lead();
    let (_, msg) = refusal(h.board.delete_task(ctx, a));
    assert_eq!(
        msg,
        "task #1 is held by ann; only a task no one holds can be deleted"
    );

    // An ended task keeps its result.
    h.complete(ann, a, c.epoch);
    let ctx = h.lead();
    let (_, msg) = refusal(h.board.edit_task(ctx, subject("rewritten")));
    assert_eq!(
        msg,
        "task #1 is completed; only a pending task can be edited"
    );
    let b = h.add("b");
    let c = h.claim(ann, b);
    h.fail(ann, b, c.epoch, "no");
    let ctx = h.lead();
    let (_, msg) = refusal(h.board.delete_task(ctx, b));
    assert!(
        msg.starts_with("task #2 is failed; an ended task stays"),
        "{msg}"
    );
    assert_eq!(h.task(a).subject, "a");
    assert_eq!(h.task(b).status, TaskStatus::Failed);
}

#[test]
fn a_task_others_wait_for_is_not_deleted_and_they_are_named() {
    let mut h = H::new();
    let a = h.add("a");
    let b = h.blocked("b", &[a]);
    let c = h.blocked("c", &[a]);
    let ctx = h.lead();
    let (code_, msg) = refusal(h.board.delete_task(ctx, a));
    assert_eq!(code_, ErrorCode::InvalidState);
    assert_eq!(
        msg,
        "#2, #3 wait for #1; delete or cancel them first, or cancel #1 instead"
    );
    // Deleting the dependents first frees it; the edges go with them.
    for d in [c, b] {
        let ctx = h.lead();
        h.board.delete_task(ctx, d).unwrap();
    }
    h.board.take_changes();
    let ctx = h.lead();
    let gone = h.board.delete_task(ctx, a).unwrap();
    assert_eq!(gone.subject, "a");
    assert_eq!(code(h.board.task(TEAM, a)), ErrorCode::NotFound);
    assert_eq!(h.board.summary(TEAM).pending, 0);
    assert_eq!(h.board.summary(TEAM).ready, 0);
    let changes = h.board.take_changes();
    assert_eq!(changes.tasks_deleted, vec![(TEAM.to_string(), a)]);
    assert_eq!(changes.events[0].kind, EventKind::TaskDeleted);
    assert_eq!(changes.events[0].detail, "deleted #1 \"a\"");
    // The deleted task is not ready for anyone.
    let ann = h.join("ann", "dev");
    assert_eq!(h.claim_next(ann), None);
}

#[test]
fn a_task_that_was_worked_on_is_cancelled_rather_than_deleted() {
    let mut h = H::new();
    let a = h.add("a");
    let ann = h.join("ann", "dev");
    let c = h.claim(ann, a);
    h.release(ann, a, c.epoch, Some("later"));
    assert_eq!(h.task(a).status, TaskStatus::Pending);
    let ctx = h.lead();
    let (_, msg) = refusal(h.board.delete_task(ctx, a));
    assert!(
        msg.contains("was worked on (1 attempt(s)); cancel it instead"),
        "{msg}"
    );
    // It can still be edited for the next claimant.
    let ctx = h.lead();
    let args = EditTaskArgs {
        description: Some("more detail".into()),
        ..edit(a)
    };
    assert_eq!(
        h.board.edit_task(ctx, args).unwrap().description,
        "more detail"
    );
}

#[test]
fn a_deleted_id_is_not_given_again_after_a_restart() {
    let mut h = H::new();
    let mut store = Store::default();
    h.add("a");
    let b = h.add("b");
    let ctx = h.lead();
    h.board.delete_task(ctx, b).unwrap();
    store.apply(h.board.take_changes());
    assert_eq!(store.tasks.len(), 1);
    let mut h2 = H::new();
    let now = h2.now();
    h2.board = Board::restore(BoardConfig::default(), store.snapshot(), now);
    assert_eq!(h2.add("c"), 3);
}
