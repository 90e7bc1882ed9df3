//! Protocol requests: who may open and answer them, their states, the plan gate,
//! deadlines, and what survives a disconnect or a restart.

use super::*;
use crate::Stop;
use teamboard_protocol::request::{RegisterArgs, ShutdownArgs};
use teamboard_protocol::{
    EventKind, MemberStatus, MessageKind, RequestKind, RequestState, TaskStatus, TeamRequest,
};

fn ask_shutdown(h: &mut H, to: &str) -> Result<TeamRequest> {
    let ctx = h.lead();
    h.board.request_shutdown(
        ctx,
        ShutdownArgs {
            to: to.to_string(),
            reason: Some("the work is done".into()),
            ..Default::default()
        },
    )
}

fn force_shutdown(h: &mut H, to: &str) -> Result<TeamRequest> {
    let ctx = h.lead();
    h.board.request_shutdown(
        ctx,
        ShutdownArgs {
            to: to.to_string(),
            force: true,
            ..Default::default()
        },
    )
}

fn plan(h: &mut H, m: Mate, c: &Claim, text: &str) -> Result<TeamRequest> {
    let ctx = h.ctx(m);
    h.board
        .submit_plan(ctx, c.task.id, c.epoch, text.to_string())
}

fn review(h: &mut H, id: u64, approve: bool, feedback: Option<&str>) -> Result<TeamRequest> {
    let ctx = h.lead();
    h.board
        .review_plan(ctx, id, approve, feedback.map(str::to_string))
}

fn complete(h: &mut H, m: Mate, c: &Claim) -> Result<Task> {
    let ctx = h.ctx(m);
    h.board
        .complete_task(ctx, c.task.id, c.epoch, "done".into())
}

fn planned_task(h: &mut H, subject: &str) -> TaskId {
    h.add_task(NewTask {
        subject: subject.into(),
        require_plan: true,
        ..Default::default()
    })
    .id
}

#[test]
fn only_the_lead_asks_for_a_shutdown_and_only_of_a_connected_member() {
    let mut h = H::new();
    let ann = h.join("ann", "dev");
    let bob = h.join("bob", "dev");
    h.board.take_changes();
    let ctx = h.ctx(ann);
    let e = h
        .board
        .request_shutdown(
            ctx,
            ShutdownArgs {
                to: "bob".into(),
                ..Default::default()
            },
        )
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::PermissionDenied);
    assert!(e.message.contains("only the lead"), "{}", e.message);
    assert_eq!(
        code(ask_shutdown(&mut h, "nobody")),
        ErrorCode::UnknownRecipient
    );
    let now = h.now();
    h.board.disconnect(bob.session, now);
    h.board.take_changes();
    assert_eq!(code(ask_shutdown(&mut h, "bob")), ErrorCode::NotConnected);
    assert!(!h.board.has_changes(), "a refusal records nothing");
    assert!(h.board.inbox(TEAM, "bob").is_empty());
}

#[test]
fn a_shutdown_request_is_tracked_and_its_message_names_it() {
    let mut h = H::new();
    h.join("ann", "dev");
    let req = ask_shutdown(&mut h, "ann").unwrap();
    assert_eq!(req.kind, RequestKind::Shutdown);
    assert_eq!(req.state, RequestState::Pending);
    assert_eq!((req.from.as_str(), req.to.as_str()), (LEAD, "ann"));
    assert_eq!(
        req.deadline,
        Some(WALL0 + crate::DEFAULT_SHUTDOWN_TIMEOUT.as_millis() as i64)
    );
    let inbox = h.board.inbox(TEAM, "ann");
    assert_eq!(inbox.len(), 1);
    assert_eq!(inbox[0].kind, MessageKind::ShutdownRequest);
    assert_eq!(inbox[0].request_id, Some(req.id.to_string()));
    assert_eq!(inbox[0].content, "the work is done");
    // Asking again is answered with the pending request, and sends nothing.
    let again = ask_shutdown(&mut h, "ann").unwrap();
    assert_eq!(again.id, req.id);
    assert_eq!(h.board.inbox(TEAM, "ann").len(), 1);
    let changes = h.board.take_changes();
    assert_eq!(changes.requests.len(), 1);
    let kinds: Vec<EventKind> = changes.events.iter().map(|e| e.kind).collect();
    assert!(kinds.contains(&EventKind::RequestOpened), "{kinds:?}");
    let opened = changes
        .events
        .iter()
        .find(|e| e.kind == EventKind::RequestOpened)
        .unwrap();
    assert_eq!(opened.request, Some(req.id));
}

#[test]
fn only_the_target_answers_and_only_once() {
    let mut h = H::new();
    let ann = h.join("ann", "dev");
    let bob = h.join("bob", "dev");
    let req = ask_shutdown(&mut h, "ann").unwrap();
    // A forged answer from someone else.
    let ctx = h.ctx(bob);
    let e = h
        .board
        .respond_shutdown(ctx, req.id, true, None)
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::PermissionDenied);
    assert!(e.message.contains("only ann"), "{}", e.message);
    let ctx = h.lead();
    assert_eq!(
        code(h.board.respond_shutdown(ctx, req.id, true, None)),
        ErrorCode::PermissionDenied
    );
    // A rejection needs a reason.
    let ctx = h.ctx(ann);
    assert_eq!(
        code(
            h.board
                .respond_shutdown(ctx, req.id, false, Some(" ".into()))
        ),
        ErrorCode::InvalidArgs
    );
    let ctx = h.ctx(ann);
    let done = h
        .board
        .respond_shutdown(ctx, req.id, false, Some("halfway through #1".into()))
        .unwrap();
    assert_eq!(done.state, RequestState::Rejected);
    assert_eq!(done.answered_by.as_deref(), Some("ann"));
    assert_eq!(done.feedback.as_deref(), Some("halfway through #1"));
    let to_lead = h.board.inbox(TEAM, LEAD);
    assert_eq!(to_lead.len(), 1);
    assert_eq!(to_lead[0].kind, MessageKind::ShutdownResponse);
    assert_eq!(to_lead[0].from, "ann");
    assert_eq!(to_lead[0].request_id, Some(req.id.to_string()));
    assert!(to_lead[0].content.contains("halfway"), "{:?}", to_lead[0]);
    // A stale answer: the request is settled.
    let ctx = h.ctx(ann);
    let e = h
        .board
        .respond_shutdown(ctx, req.id, true, None)
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidState);
    assert!(e.message.contains("already rejected"), "{}", e.message);
    // A plan op on a shutdown request says which op to use.
    let e = review(&mut h, req.id, true, None).unwrap_err();
    assert!(e.message.contains("respond_shutdown"), "{}", e.message);
}

/// Another session under the target's name (not the one registered, so not the
/// process that would be stopped) cannot answer for it: an approval there would
/// settle the request while the teammate runs on, and no deadline would stop it.
#[test]
fn only_the_targets_registered_session_answers() {
    let mut h = H::new();
    let _ann = h.join("ann", "dev");
    let req = ask_shutdown(&mut h, "ann").unwrap();
    let impostor = h.stranger(TEAM, "ann");
    let ctx = h.ctx(impostor);
    let e = h
        .board
        .respond_shutdown(ctx, req.id, true, None)
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::PermissionDenied);
    assert!(e.message.contains("registered session"), "{}", e.message);
    assert!(h.board.request(TEAM, req.id).unwrap().is_pending());
    assert!(h.board.inbox(TEAM, LEAD).is_empty());
}

#[test]
fn approving_a_shutdown_needs_the_task_given_back_with_a_note() {
    let mut h = H::new();
    let ann = h.join("ann", "dev");
    let id = h.add("refactor auth");
    let c = h.claim(ann, id);
    let req = ask_shutdown(&mut h, "ann").unwrap();
    let ctx = h.ctx(ann);
    let e = h
        .board
        .respond_shutdown(ctx, req.id, true, None)
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidState);
    assert!(
        e.message.contains("release it with a note"),
        "{}",
        e.message
    );
    let ctx = h.ctx(ann);
    let note = "moved the token check; tests not started";
    let t = h
        .board
        .release_task(ctx, id, c.epoch, None, Some(note.into()))
        .unwrap();
    assert_eq!(t.handoff.as_deref(), Some(note));
    assert_eq!(t.attempts, 0, "leaving is not the task's fault");
    let ctx = h.ctx(ann);
    let done = h.board.respond_shutdown(ctx, req.id, true, None).unwrap();
    assert_eq!(done.state, RequestState::Approved);
    // The next owner sees the note; completing clears it.
    let bob = h.join("bob", "dev");
    let c = h.claim(bob, id);
    assert_eq!(c.task.handoff.as_deref(), Some(note));
    assert_eq!(h.complete(bob, id, c.epoch).handoff, None);
}

/// The holder's release, with its note, on its way when a deadline or `force`
/// stopped it: the stop gave the task back already, and the note is still the
/// next owner's. A later claim ends that: a note for an older claim is refused.
#[test]
fn a_release_note_outlives_a_stop_that_landed_first() {
    for by_deadline in [true, false] {
        let mut h = H::new();
        let ann = h.join("ann", "dev");
        let id = h.add("refactor auth");
        let c = h.claim(ann, id);
        let ctx = h.lead();
        let asked = ShutdownArgs {
            to: "ann".into(),
            timeout_ms: Some(5_000),
            ..Default::default()
        };
        h.board.request_shutdown(ctx, asked).unwrap();
        if by_deadline {
            h.advance(secs(5));
            h.expire();
        } else {
            force_shutdown(&mut h, "ann").unwrap();
        }
        assert_eq!(h.board.take_stops().len(), 1);
        assert_eq!(h.task(id).status, TaskStatus::Pending);
        let note = "moved the token check; tests not started";
        let ctx = h.ctx(ann);
        let t = h
            .board
            .release_task(ctx, id, c.epoch, None, Some(note.into()))
            .unwrap_or_else(|e| panic!("deadline {by_deadline}: {e:?}"));
        assert_eq!(t.handoff.as_deref(), Some(note));
        assert_eq!((t.status, t.attempts), (TaskStatus::Pending, 0));
        let bob = h.join("bob", "dev");
        let next = h.claim(bob, id);
        assert_eq!(next.task.handoff.as_deref(), Some(note));
        // Once claimed again, a note for the old claim is stale.
        let ctx = h.ctx(ann);
        assert_eq!(
            code(
                h.board
                    .release_task(ctx, id, c.epoch, None, Some("late".into()))
            ),
            ErrorCode::StaleEpoch
        );
    }
}

#[test]
fn a_shutdown_past_its_deadline_expires_and_stops_the_teammate() {
    let mut h = H::new();
    let ann = h.join("ann", "dev");
    let ctx = h.lead();
    let req = h
        .board
        .request_shutdown(
            ctx,
            ShutdownArgs {
                to: "ann".into(),
                timeout_ms: Some(5_000),
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(h.board.next_deadline(), Some(h.base + secs(5)));
    h.board.take_changes();
    h.advance(ms(4_999));
    h.expire();
    assert!(h.board.take_stops().is_empty());
    h.advance(ms(1));
    h.expire();
    assert_eq!(
        h.board.take_stops(),
        vec![Stop {
            team: TEAM.into(),
            name: "ann".into(),
            session: ann.session,
            request: req.id,
        }]
    );
    let r = h.board.request(TEAM, req.id).unwrap();
    assert_eq!(r.state, RequestState::Expired);
    assert!(r.forced);
    assert_eq!(r.answered_by.as_deref(), Some("boardd"));
    assert_eq!(h.member(ann).status, MemberStatus::Shutdown);
    let to_lead = h.board.inbox(TEAM, LEAD);
    assert_eq!(to_lead.len(), 1);
    assert!(to_lead[0].content.contains("expired"), "{:?}", to_lead[0]);
    // Too late to answer.
    let ctx = h.ctx(ann);
    assert_eq!(
        code(h.board.respond_shutdown(ctx, req.id, true, None)),
        ErrorCode::InvalidState
    );
    assert_eq!(h.board.next_deadline(), None);
}

#[test]
fn a_forced_shutdown_stops_at_once_and_says_so() {
    let mut h = H::new();
    let ann = h.join("ann", "dev");
    let pending = ask_shutdown(&mut h, "ann").unwrap();
    // Forcing settles the pending request instead of opening another.
    let req = force_shutdown(&mut h, "ann").unwrap();
    assert_eq!(req.id, pending.id);
    assert_eq!(req.state, RequestState::Approved);
    assert!(req.forced);
    assert!(
        req.feedback.as_deref().unwrap().contains("forced"),
        "{req:?}"
    );
    assert_eq!(h.board.take_stops().len(), 1);
    assert_eq!(h.member(ann).status, MemberStatus::Shutdown);
    // Forced with nothing pending: a request of its own, no message to the target.
    let bob = h.join("bob", "dev");
    let req = force_shutdown(&mut h, "bob").unwrap();
    assert!(req.forced && req.state == RequestState::Approved);
    assert!(h.board.inbox(TEAM, "bob").is_empty());
    let stops = h.board.take_stops();
    assert_eq!(stops.len(), 1);
    assert_eq!(stops[0].session, bob.session);
}

#[test]
fn a_pending_shutdown_ends_with_its_session() {
    let mut h = H::new();
    let ann = h.join("ann", "dev");
    let req = ask_shutdown(&mut h, "ann").unwrap();
    let kept = h.send(h.lead(), "ann", "still relevant");
    h.board.take_changes();
    let now = h.now();
    h.board.disconnect(ann.session, now);
    let r = h.board.request(TEAM, req.id).unwrap();
    assert_eq!(r.state, RequestState::Cancelled);
    assert!(r.feedback.as_deref().unwrap().contains("session ended"));
    let changes = h.board.take_changes();
    assert_eq!(changes.requests.len(), 1);
    assert_eq!(h.board.next_deadline(), None, "its deadline went with it");
    // The next session of that name gets the ordinary message, not the shutdown.
    let again = h.stranger(TEAM, "ann");
    h.register(again, "dev");
    let inbox: Vec<u64> = h.board.inbox(TEAM, "ann").iter().map(|m| m.id).collect();
    assert_eq!(inbox, vec![kept.id]);
    // And a new request to it is a new request.
    assert_ne!(ask_shutdown(&mut h, "ann").unwrap().id, req.id);
}

#[test]
fn protocol_kinds_cannot_be_sent_by_hand() {
    let mut h = H::new();
    let ann = h.join("ann", "dev");
    h.board.take_changes();
    for (kind, op) in [
        (MessageKind::ShutdownRequest, "request_shutdown"),
        (MessageKind::ShutdownResponse, "respond_shutdown"),
        (MessageKind::PlanApprovalRequest, "submit_plan"),
        (MessageKind::PlanApprovalResponse, "review_plan"),
    ] {
        for (ctx, to) in [(h.lead(), "ann"), (h.ctx(ann), LEAD)] {
            let e = h
                .board
                .send(ctx, to, kind, "forged".into(), Some("1".into()))
                .unwrap_err();
            assert_eq!(e.code, ErrorCode::InvalidArgs);
            assert!(e.message.contains(op), "{}", e.message);
        }
    }
    assert!(!h.board.has_changes());
    assert!(h.board.inbox(TEAM, "ann").is_empty());
    assert!(h.board.inbox(TEAM, LEAD).is_empty());
}

#[test]
fn a_plan_comes_from_the_claims_holder_and_goes_to_the_lead() {
    let mut h = H::new();
    let ann = h.join("ann", "dev");
    let bob = h.join("bob", "dev");
    let id = planned_task(&mut h, "auth");
    let c = h.claim(ann, id);
    // Not the holder.
    assert_eq!(code(plan(&mut h, bob, &c, "x")), ErrorCode::StaleEpoch);
    // Not the current epoch.
    let old = Claim {
        epoch: c.epoch + 1,
        ..c.clone()
    };
    assert_eq!(code(plan(&mut h, ann, &old, "x")), ErrorCode::StaleEpoch);
    assert_eq!(code(plan(&mut h, ann, &c, "  ")), ErrorCode::InvalidArgs);
    let req = plan(&mut h, ann, &c, "1. move the check\n2. test").unwrap();
    assert_eq!(req.kind, RequestKind::Plan);
    assert_eq!((req.from.as_str(), req.to.as_str()), ("ann", LEAD));
    assert_eq!((req.task, req.epoch), (Some(id), Some(c.epoch)));
    assert_eq!(req.plan.as_deref(), Some("1. move the check\n2. test"));
    let to_lead = h.board.inbox(TEAM, LEAD);
    assert_eq!(to_lead.len(), 1);
    assert_eq!(to_lead[0].kind, MessageKind::PlanApprovalRequest);
    assert!(to_lead[0].content.contains("move the check"));
    // Only the lead decides.
    let ctx = h.ctx(bob);
    assert_eq!(
        code(h.board.review_plan(ctx, req.id, true, None)),
        ErrorCode::PermissionDenied
    );
    let ctx = h.ctx(ann);
    assert_eq!(
        code(h.board.review_plan(ctx, req.id, true, None)),
        ErrorCode::PermissionDenied
    );
    assert_eq!(
        code(review(&mut h, req.id, false, None)),
        ErrorCode::InvalidArgs
    );
}

#[test]
fn a_task_that_needs_a_plan_completes_only_after_approval() {
    let mut h = H::new();
    let ann = h.join("ann", "dev");
    let id = planned_task(&mut h, "auth");
    let c = h.claim(ann, id);
    let e = complete(&mut h, ann, &c).unwrap_err();
    assert_eq!(e.code, ErrorCode::PlanRequired);
    assert!(e.message.contains("submit_plan"), "{}", e.message);
    let first = plan(&mut h, ann, &c, "first").unwrap();
    let e = complete(&mut h, ann, &c).unwrap_err();
    assert_eq!(e.code, ErrorCode::PlanRequired);
    assert!(e.message.contains("pending"), "{}", e.message);
    let r = review(&mut h, first.id, false, Some("keep the interface")).unwrap();
    assert_eq!(r.state, RequestState::Rejected);
    // The decision reaches the author as a message naming the request.
    let inbox = h.board.inbox(TEAM, "ann");
    let m = inbox.last().unwrap();
    assert_eq!(m.kind, MessageKind::PlanApprovalResponse);
    assert_eq!(m.request_id, Some(first.id.to_string()));
    assert!(m.content.contains("keep the interface"), "{m:?}");
    let e = complete(&mut h, ann, &c).unwrap_err();
    assert_eq!(e.code, ErrorCode::PlanRequired);
    assert!(e.message.contains("rejected"), "{}", e.message);
    // A rejected plan needs a new submission; deciding the old one again fails.
    assert_eq!(
        code(review(&mut h, first.id, true, None)),
        ErrorCode::InvalidState
    );
    let second = plan(&mut h, ann, &c, "second, keeping the interface").unwrap();
    review(&mut h, second.id, true, Some("go")).unwrap();
    assert_eq!(
        complete(&mut h, ann, &c).unwrap().status,
        TaskStatus::Completed
    );
    assert_eq!(
        h.board
            .plans_of(TEAM, id)
            .iter()
            .map(|r| r.state)
            .collect::<Vec<_>>(),
        vec![RequestState::Rejected, RequestState::Approved]
    );
}

#[test]
fn an_approval_does_not_carry_over_to_the_next_claim() {
    let mut h = H::new();
    let ann = h.join("ann", "dev");
    let bob = h.join("bob", "dev");
    let id = planned_task(&mut h, "auth");
    let c = h.claim(ann, id);
    let req = plan(&mut h, ann, &c, "plan").unwrap();
    review(&mut h, req.id, true, None).unwrap();
    h.release(ann, id, c.epoch, None);
    let c2 = h.claim(bob, id);
    assert_eq!(
        code(complete(&mut h, bob, &c2)),
        ErrorCode::PlanRequired,
        "bob's claim has no approval of its own"
    );
    // Nor to another task.
    let other = planned_task(&mut h, "tests");
    h.release(bob, id, c2.epoch, None);
    let c3 = h.claim(ann, other);
    assert_eq!(code(complete(&mut h, ann, &c3)), ErrorCode::PlanRequired);
}

#[test]
fn a_teammate_registered_to_plan_needs_a_plan_for_every_task() {
    let mut h = H::new();
    let m = h.stranger(TEAM, "ann");
    let ctx = h.ctx(m);
    let args = RegisterArgs {
        role: "dev".into(),
        require_plan: true,
        ..RegisterArgs::default()
    };
    let member = h.board.register_with(ctx, &args).unwrap();
    assert!(member.require_plan);
    let id = h.add("plain task");
    let c = h.claim(m, id);
    assert_eq!(code(complete(&mut h, m, &c)), ErrorCode::PlanRequired);
    let req = plan(&mut h, m, &c, "plan").unwrap();
    review(&mut h, req.id, true, None).unwrap();
    assert!(complete(&mut h, m, &c).is_ok());
    // A teammate without it may still submit a plan, and then must wait for it.
    let bob = h.join("bob", "dev");
    let id = h.add("another");
    let c = h.claim(bob, id);
    let req = plan(&mut h, bob, &c, "plan").unwrap();
    assert_eq!(code(complete(&mut h, bob, &c)), ErrorCode::PlanRequired);
    review(&mut h, req.id, true, None).unwrap();
    assert!(complete(&mut h, bob, &c).is_ok());
}

#[test]
fn a_new_plan_replaces_the_pending_one_and_a_claims_end_cancels_it() {
    let mut h = H::new();
    let ann = h.join("ann", "dev");
    let id = planned_task(&mut h, "auth");
    let c = h.claim(ann, id);
    let first = plan(&mut h, ann, &c, "first").unwrap();
    let second = plan(&mut h, ann, &c, "second").unwrap();
    let r = h.board.request(TEAM, first.id).unwrap();
    assert_eq!(r.state, RequestState::Cancelled);
    assert!(r.feedback.as_deref().unwrap().contains("replaced"));
    h.cancel(id);
    let r = h.board.request(TEAM, second.id).unwrap();
    assert_eq!(r.state, RequestState::Cancelled);
    assert_eq!(r.answered_by.as_deref(), Some("boardd"));
    assert!(r.feedback.as_deref().unwrap().contains("claim ended"));
    assert_eq!(
        code(review(&mut h, second.id, true, None)),
        ErrorCode::InvalidState
    );
}

#[test]
fn the_lead_may_withdraw_a_pending_request() {
    let mut h = H::new();
    let ann = h.join("ann", "dev");
    let req = ask_shutdown(&mut h, "ann").unwrap();
    let ctx = h.ctx(ann);
    assert_eq!(
        code(h.board.cancel_request(ctx, req.id)),
        ErrorCode::PermissionDenied
    );
    let ctx = h.lead();
    let r = h.board.cancel_request(ctx, req.id).unwrap();
    assert_eq!(r.state, RequestState::Cancelled);
    let ctx = h.lead();
    assert_eq!(
        code(h.board.cancel_request(ctx, req.id)),
        ErrorCode::InvalidState
    );
    let ctx = h.lead();
    assert_eq!(code(h.board.cancel_request(ctx, 999)), ErrorCode::NotFound);
    // Listing filters by state and kind.
    assert!(
        h.board
            .requests(TEAM, Some(RequestState::Pending), None, None)
            .is_empty()
    );
    assert_eq!(
        h.board
            .requests(TEAM, None, Some(RequestKind::Shutdown), None)
            .len(),
        1
    );
}

#[test]
fn requests_survive_a_restart_but_pending_shutdowns_do_not() {
    let mut h = H::new();
    let mut store = Store::default();
    let ann = h.join("ann", "dev");
    let bob = h.join("bob", "dev");
    let id = planned_task(&mut h, "auth");
    let c = h.claim(ann, id);
    let p = plan(&mut h, ann, &c, "plan").unwrap();
    let s = ask_shutdown(&mut h, "bob").unwrap();
    let _ = bob;
    store.apply(h.board.take_changes());
    let now = h.now();
    let mut board = Board::restore(BoardConfig::default(), store.snapshot(), now);
    let r = board.request(TEAM, s.id).unwrap();
    assert_eq!(r.state, RequestState::Cancelled);
    assert!(board.inbox(TEAM, "bob").is_empty());
    // The plan waits with its claim, within the restart grace.
    let r = board.request(TEAM, p.id).unwrap();
    assert_eq!(r.state, RequestState::Pending);
    store.apply(board.take_changes());
    assert_eq!(store.requests[&s.id].1.state, RequestState::Cancelled);
    // Ids go on from the largest.
    h.board = board;
    let again = h.stranger(TEAM, "bob");
    h.register(again, "dev");
    assert!(ask_shutdown(&mut h, "bob").unwrap().id > p.id.max(s.id));
    // The lead decides it after the restart; the owner reconnects and completes.
    review(&mut h, p.id, true, None).unwrap();
    let ann2 = h.stranger(TEAM, "ann");
    h.register(ann2, "dev");
    assert!(complete(&mut h, ann2, &c).is_ok());
    let _ = ann;
}

#[test]
fn a_restart_cancels_a_plan_whose_claim_lapsed() {
    let mut h = H::new();
    let mut store = Store::default();
    let ann = h.join("ann", "dev");
    let id = planned_task(&mut h, "auth");
    let c = h.claim(ann, id);
    let p = plan(&mut h, ann, &c, "plan").unwrap();
    store.apply(h.board.take_changes());
    let mut snap = store.snapshot();
    // As if the claim had ended and only the request row were stale.
    for (_, t) in snap.tasks.iter_mut() {
        t.status = TaskStatus::Pending;
        t.owner = None;
    }
    let board = Board::restore(BoardConfig::default(), snap, h.now());
    assert_eq!(
        board.request(TEAM, p.id).unwrap().state,
        RequestState::Cancelled
    );
}

#[test]
fn a_forced_shutdown_gives_the_task_back_without_using_an_attempt() {
    let mut h = H::new();
    let ann = h.join("ann", "dev");
    let id = h.add("auth");
    h.claim(ann, id);
    h.board.take_notices();
    let req = force_shutdown(&mut h, "ann").unwrap();
    let t = h.task(id);
    assert_eq!(t.status, TaskStatus::Pending);
    assert_eq!(t.owner, None);
    assert_eq!(t.attempts, 0, "not the task's fault: {t:?}");
    assert_eq!(h.member(ann).task, None);
    // The holder hears at once that its claim is gone.
    let notices = h.board.take_notices();
    assert_eq!(notices.len(), 1);
    assert_eq!(notices[0].session, ann.session);
    assert!(
        notices[0]
            .event
            .detail
            .contains(&format!("request r{}", req.id)),
        "{:?}",
        notices[0].event
    );
    // Another teammate may take it.
    let bob = h.join("bob", "dev");
    assert_eq!(h.claim_next(bob).map(|c| c.task.id), Some(id));
}

#[test]
fn a_shutdown_deadline_out_of_its_bounds_is_refused_with_the_range() {
    let mut h = H::new();
    h.join("ann", "dev");
    let ask = |h: &mut H, ms: u64| {
        let ctx = h.lead();
        h.board.request_shutdown(
            ctx,
            ShutdownArgs {
                to: "ann".into(),
                timeout_ms: Some(ms),
                ..Default::default()
            },
        )
    };
    h.board.take_changes();
    for ms in [0, 1, 999, 86_400_001, u64::MAX] {
        let e = ask(&mut h, ms).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidArgs, "{ms}");
        assert!(
            e.message.contains("from 1,000 to 86,400,000"),
            "{ms}: {}",
            e.message
        );
    }
    assert!(
        h.board.take_changes().events.is_empty(),
        "nothing was opened"
    );
    let req = ask(&mut h, 1_000).unwrap();
    assert_eq!(req.state, RequestState::Pending);
    assert_eq!(h.board.next_deadline(), Some(h.base + secs(1)));
    let e = ask(&mut h, 86_400_001).unwrap_err();
    assert_eq!(
        e.code,
        ErrorCode::InvalidArgs,
        "a pending one does not skip the check"
    );
}
