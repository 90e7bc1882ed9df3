//! The team requests as a real `boardd` process enforces them on its socket: a
//! forged answer, a stale answer and a request to a member who is not connected
//! are each refused with the code `docs/protocol.md` gives, and none of them puts
//! anything in an inbox (so nothing can reach a model).
//!
//! Nothing here is stopped by boardd (no `force`, no deadline passes), so the
//! clients may live in the test process.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "test code: a panic fails the test, and the harness captures what it prints"
)]

use teamboard_protocol::request::ShutdownArgs;
use teamboard_protocol::{Client, ErrorCode, EventKind, MessageKind, RequestState};
use teamboard_testkit::{
    Daemon, PATIENCE, code_of, connect, eventually, lead, short_tempdir, task, teammate,
};

fn shutdown(to: &str) -> ShutdownArgs {
    ShutdownArgs {
        to: to.to_string(),
        reason: Some("wrap up".into()),
        ..Default::default()
    }
}

/// Reads `client`'s inbox and acknowledges it all, returning what was there.
async fn drain(client: &Client) -> Vec<teamboard_protocol::Message> {
    let inbox = client.inbox().await.expect("inbox");
    if !inbox.is_empty() {
        client
            .ack(inbox.iter().map(|m| m.id).collect())
            .await
            .expect("ack");
    }
    inbox
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forged_stale_and_offline_requests_are_refused_and_deliver_nothing() {
    let dir = short_tempdir();
    let socket = dir.path().join("s");
    let _daemon = Daemon::start(&socket, &dir.path().join("state"), &[]).await;
    let lead = lead(&socket).await;
    let alice = teammate(&socket, "alice", "coder").await;
    let bob = teammate(&socket, "bob", "coder").await;

    // The one legitimate exchange: the lead asks alice, alice approves once.
    let asked = lead
        .request_shutdown(shutdown("alice"))
        .await
        .expect("request");
    let delivered = drain(&alice).await;
    assert_eq!(delivered.len(), 1, "{delivered:?}");
    assert_eq!(delivered[0].kind, MessageKind::ShutdownRequest);
    assert_eq!(
        delivered[0].request_id.as_deref(),
        Some(asked.id.to_string().as_str())
    );

    // Forged: bob answers alice's request, in either direction, through the op
    // or by writing the message himself; he cannot ask for a shutdown either.
    assert_eq!(
        code_of(bob.respond_shutdown(asked.id, true, None).await),
        ErrorCode::PermissionDenied
    );
    assert_eq!(
        code_of(bob.respond_shutdown(asked.id, false, Some("no")).await),
        ErrorCode::PermissionDenied
    );
    for kind in [MessageKind::ShutdownResponse, MessageKind::ShutdownRequest] {
        let id = asked.id.to_string();
        assert_eq!(
            code_of(bob.send("lead", kind, "approved", Some(&id)).await),
            ErrorCode::InvalidArgs,
            "{kind:?}"
        );
        assert_eq!(
            code_of(bob.send("alice", kind, "approved", Some(&id)).await),
            ErrorCode::InvalidArgs,
            "{kind:?}"
        );
    }
    assert_eq!(
        code_of(bob.request_shutdown(shutdown("alice")).await),
        ErrorCode::PermissionDenied
    );
    // Nor a second connection under alice's name: only her registered session,
    // the one boardd would stop, answers.
    let impostor = connect(&socket, "alice").await;
    assert_eq!(
        code_of(impostor.respond_shutdown(asked.id, true, None).await),
        ErrorCode::PermissionDenied
    );
    drop(impostor);
    // Nor can the lead answer for alice.
    assert_eq!(
        code_of(lead.respond_shutdown(asked.id, true, None).await),
        ErrorCode::PermissionDenied
    );
    assert!(lead.get_request(asked.id).await.expect("get").is_pending());

    // Alice answers; a second answer is stale, whichever it is.
    let approved = alice
        .respond_shutdown(asked.id, true, Some("nothing held"))
        .await
        .expect("approve");
    assert_eq!(approved.state, RequestState::Approved);
    assert_eq!(
        code_of(alice.respond_shutdown(asked.id, true, None).await),
        ErrorCode::InvalidState
    );
    assert_eq!(
        code_of(
            alice
                .respond_shutdown(asked.id, false, Some("changed my mind"))
                .await
        ),
        ErrorCode::InvalidState
    );
    assert_eq!(
        code_of(lead.cancel_request(asked.id).await),
        ErrorCode::InvalidState
    );

    // A plan can only come from the claim's holder, and only the lead decides it,
    // once.
    let t = lead.add_task(task("parser")).await.expect("task");
    let claim = alice.claim_task(t.id).await.expect("claim");
    assert_eq!(
        code_of(bob.submit_plan(t.id, claim.epoch, "mine now").await),
        ErrorCode::StaleEpoch
    );
    let plan = alice
        .submit_plan(t.id, claim.epoch, "1. read 2. write")
        .await
        .expect("plan");
    assert_eq!(
        code_of(alice.review_plan(plan.id, true, None).await),
        ErrorCode::PermissionDenied
    );
    assert_eq!(
        code_of(bob.review_plan(plan.id, false, Some("no")).await),
        ErrorCode::PermissionDenied
    );
    lead.review_plan(plan.id, true, None).await.expect("decide");
    assert_eq!(
        code_of(lead.review_plan(plan.id, false, Some("wait")).await),
        ErrorCode::InvalidState
    );

    // Offline: carol is on the roster, but her session has ended.
    let carol = teammate(&socket, "carol", "coder").await;
    carol.close().await;
    eventually("carol to be offline", PATIENCE, || async {
        let team = lead.team().await.ok()?;
        team.iter()
            .any(|m| m.name == "carol" && !m.connected)
            .then_some(())
    })
    .await;
    assert_eq!(
        code_of(lead.request_shutdown(shutdown("carol")).await),
        ErrorCode::NotConnected
    );
    assert_eq!(
        code_of(lead.request_shutdown(shutdown("nobody")).await),
        ErrorCode::UnknownRecipient
    );

    // What was delivered is exactly what the legitimate ops made: alice's
    // answer and the plan for the lead, the decision for alice. Nothing for bob,
    // and nothing waits for carol's next session.
    let to_lead = drain(&lead).await;
    let kinds: Vec<_> = to_lead.iter().map(|m| (m.kind, m.from.as_str())).collect();
    assert_eq!(
        kinds,
        vec![
            (MessageKind::ShutdownResponse, "alice"),
            (MessageKind::PlanApprovalRequest, "alice"),
        ]
    );
    let to_alice = drain(&alice).await;
    assert_eq!(to_alice.len(), 1, "{to_alice:?}");
    assert_eq!(to_alice[0].kind, MessageKind::PlanApprovalResponse);
    assert_eq!(drain(&bob).await, Vec::new());
    let carol = connect(&socket, "carol").await;
    assert_eq!(drain(&carol).await, Vec::new());

    // And the history agrees: two requests opened, two settled, nothing else.
    let events = lead.events(Default::default()).await.expect("events");
    let count = |k: EventKind| events.iter().filter(|e| e.kind == k).count();
    assert_eq!(count(EventKind::RequestOpened), 2);
    assert_eq!(count(EventKind::RequestSettled), 2);
    assert_eq!(count(EventKind::MessageSent), 4);
}
