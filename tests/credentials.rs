//! Identities that cannot be borrowed, through the real binaries: a session is
//! whom its credential vouches for (the lead's in `lead.key`, a member's from
//! `register`), whatever name its hello gives.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code: a panic fails the test"
)]

use serde_json::Value;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Duration;
use teamboard_protocol::request::*;
use teamboard_protocol::{Client, ErrorCode, MemberStatus, MessageKind, Request, TaskStatus};
use teamboard_testkit::raw::Session;
use teamboard_testkit::{
    Daemon, PATIENCE, Teammated, eventually, lead, lead_key, lead_key_path, short_tempdir, task,
    workspace_bin,
};

/// The answer's error: its code and its words.
fn refusal(answer: Result<Value, ErrorCode>) -> ErrorCode {
    match answer {
        Ok(v) => panic!("expected a refusal, got {v}"),
        Err(code) => code,
    }
}

/// What the board holds, as the lead reads it: to check nothing changed.
async fn board_of(socket: &Path) -> (Vec<String>, Vec<String>, Vec<String>) {
    let boss = lead(socket).await;
    let tasks = boss.list_tasks(None).await.unwrap();
    let team = boss.team().await.unwrap();
    let inbox = boss.inbox().await.unwrap();
    let status = |s: TaskStatus| s.to_string();
    (
        tasks
            .iter()
            .map(|t| format!("{} {} {:?}", t.id, status(t.status), t.owner))
            .collect(),
        team.iter().map(|m| m.name.clone()).collect(),
        inbox.iter().map(|m| m.content.clone()).collect(),
    )
}

/// Every op a lead-only session would use, each refused `permission_denied`.
async fn lead_ops_are_refused(s: &mut Session) {
    let ops = [
        Request::AddTask(task("smuggled")),
        Request::CancelTask(CancelArgs {
            id: 1,
            discard: false,
        }),
        Request::Send(SendArgs {
            to: "alice".into(),
            kind: MessageKind::Message,
            content: "stop working".into(),
            request_id: None,
        }),
        Request::ListTasks(ListTasksArgs::default()),
        Request::TakeLead(Default::default()),
    ];
    for op in ops {
        let name = op.op();
        assert_eq!(
            refusal(s.call(op).await),
            ErrorCode::PermissionDenied,
            "{name}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hello_as_lead_without_the_leads_credential_changes_nothing() {
    let dir = short_tempdir();
    let (socket, state) = (dir.path().join("s"), dir.path().join("state"));
    let _daemon = Daemon::start(&socket, &state, &[]).await;
    // The key file: 0600 in a 0700 directory, 64 hex digits.
    let key_file = lead_key_path(&socket);
    assert_eq!(key_file, state.join("lead.key"));
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&key_file), 0o600);
    assert_eq!(mode(&state), 0o700);
    assert_eq!(lead_key(&socket).as_str().len(), 64);

    let boss = lead(&socket).await;
    boss.add_task(task("the lead's own")).await.unwrap();
    let before = board_of(&socket).await;

    let mut bare = Session::open_with(&socket, "lead", None).await;
    let words = bare
        .call(Request::Status(Default::default()))
        .await
        .expect_err("refused");
    assert_eq!(words, ErrorCode::PermissionDenied);
    lead_ops_are_refused(&mut bare).await;
    let mut wrong = Session::open_with(&socket, "lead", Some(&"0".repeat(64))).await;
    lead_ops_are_refused(&mut wrong).await;
    assert_eq!(board_of(&socket).await, before);

    // The reason says what to present and where a person finds it.
    let c = Client::connect(&socket, "test", "lead", "default", None)
        .await
        .unwrap();
    let text = c.status().await.expect_err("refused").to_string();
    assert!(text.contains("did not present"), "{text}");
    assert!(text.contains(&key_file.display().to_string()), "{text}");
    assert!(text.contains("credential"), "{text}");

    // A hello without a credential creates no team either.
    let c = Client::join(&socket, "test", "lead", "smuggled", true, None)
        .await
        .unwrap();
    assert!(c.status().await.is_err());
    let teams = boss.status().await.unwrap().teams;
    assert!(teams.iter().all(|t| t.name != "smuggled"), "{teams:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_members_name_needs_the_members_credential_and_it_gives_no_lead_ops() {
    let dir = short_tempdir();
    let (socket, state) = (dir.path().join("s"), dir.path().join("state"));
    let _daemon = Daemon::start(&socket, &state, &[]).await;
    let boss = lead(&socket).await;
    let t = boss.add_task(task("alice's")).await.unwrap();

    // alice registers with the lead's credential, as teammated does, and gets
    // her own.
    let key = lead_key(&socket);
    let alice = Client::connect(&socket, "test", "alice", "default", Some(&key))
        .await
        .unwrap();
    let registered = alice
        .register_with(RegisterArgs {
            role: "dev".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    let own = registered.credential.expect("a credential for alice");
    assert_ne!(own, key);
    let claim = alice.claim_task(t.id).await.unwrap();
    let before = board_of(&socket).await;

    // Without alice's credential, a session named alice does nothing as her.
    for credential in [None, Some("f".repeat(64))] {
        let mut fake = Session::open_with(&socket, "alice", credential.as_deref()).await;
        let ops = [
            Request::ClaimNext(Default::default()),
            Request::ClaimTask(TaskRef { id: t.id }),
            Request::CompleteTask(CompleteArgs {
                id: t.id,
                epoch: claim.epoch,
                result: "forged".into(),
            }),
            Request::FailTask(FailArgs {
                id: t.id,
                epoch: claim.epoch,
                error: "forged".into(),
            }),
            Request::Heartbeat(ClaimRef {
                id: t.id,
                epoch: claim.epoch,
            }),
            Request::Send(SendArgs {
                to: "lead".into(),
                kind: MessageKind::Message,
                content: "forged".into(),
                request_id: None,
            }),
            Request::Register(RegisterArgs {
                role: "dev".into(),
                ..Default::default()
            }),
            Request::SetStatus(SetStatusArgs {
                status: MemberStatus::Idle,
            }),
        ];
        for op in ops {
            let name = op.op();
            assert_eq!(
                refusal(fake.call(op).await),
                ErrorCode::PermissionDenied,
                "{name} with {credential:?}"
            );
        }
    }
    assert_eq!(board_of(&socket).await, before);

    // alice's credential vouches for alice only: not for bob, not for the lead.
    for name in ["bob", "lead"] {
        let mut other = Session::open_with(&socket, name, Some(own.as_str())).await;
        assert_eq!(
            refusal(other.call(Request::Inbox(Default::default())).await),
            ErrorCode::PermissionDenied,
            "{name}"
        );
        if name == "lead" {
            lead_ops_are_refused(&mut other).await;
        }
    }
    // As alice it works, and the board's own rules keep the lead's ops the
    // lead's.
    let mut her = Session::open_with(&socket, "alice", Some(own.as_str())).await;
    her.call(Request::Inbox(NoArgs {}))
        .await
        .expect("alice reads her own inbox");
    let cancel = Request::CancelTask(CancelArgs {
        id: t.id,
        discard: false,
    });
    assert_eq!(refusal(her.call(cancel).await), ErrorCode::PermissionDenied);
    assert_eq!(board_of(&socket).await, before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_registration_by_the_lead_revokes_the_members_credential_before() {
    let dir = short_tempdir();
    let (socket, state) = (dir.path().join("s"), dir.path().join("state"));
    let _daemon = Daemon::start(&socket, &state, &[]).await;
    let key = lead_key(&socket);
    let first = Client::connect(&socket, "test", "ann", "default", Some(&key))
        .await
        .unwrap();
    let args = RegisterArgs {
        role: "dev".into(),
        ..Default::default()
    };
    let old = first.register_with(args).await.unwrap().credential;
    let old = old.expect("issued");
    drop(first);
    // ann again, on her own credential: she keeps it (nothing is issued).
    let own = Client::connect(&socket, "test", "ann", "default", Some(&old))
        .await
        .unwrap();
    let kept = eventually("ann's old session to close", PATIENCE, || async {
        let args = RegisterArgs {
            role: "dev".into(),
            ..Default::default()
        };
        own.register_with(args).await.ok().map(|r| r.credential)
    })
    .await;
    assert_eq!(kept, None, "a member's own registration issues nothing");
    drop(own);
    // ann once more, by the lead's: a new credential, and the old one is gone,
    // on a session opened with it before, too.
    let held = Client::connect(&socket, "test", "ann", "default", Some(&old))
        .await
        .unwrap();
    held.inbox().await.expect("good until replaced");
    held.subscribe().await.expect("subscribe");
    let again = Client::connect(&socket, "test", "ann", "default", Some(&key))
        .await
        .unwrap();
    let new = eventually("the registration by the lead", PATIENCE, || async {
        let args = RegisterArgs {
            role: "dev".into(),
            ..Default::default()
        };
        again.register_with(args).await.ok()?.credential
    })
    .await;
    assert_ne!(new, old);
    let code = held.inbox().await.expect_err("revoked").code();
    assert_eq!(code, Some(ErrorCode::PermissionDenied));
    // Its subscription ended with it: the team's events stop. An answer
    // follows whatever was queued on the connection before it.
    while let Ok(Some(_)) = tokio::time::timeout(Duration::ZERO, held.next_event()).await {}
    lead(&socket).await.add_task(task("unheard")).await.unwrap();
    assert!(held.inbox().await.is_err());
    let heard = tokio::time::timeout(Duration::ZERO, held.next_event()).await;
    assert!(
        heard.is_err(),
        "a replaced credential's session heard {heard:?}"
    );
    let late = Client::connect(&socket, "test", "ann", "default", Some(&old))
        .await
        .unwrap();
    assert_eq!(
        late.inbox().await.expect_err("revoked").code(),
        Some(ErrorCode::PermissionDenied)
    );
    let fresh = Client::connect(&socket, "test", "ann", "default", Some(&new))
        .await
        .unwrap();
    fresh.inbox().await.expect("the new one works");
}

/// Whether alice is on the roster and connected.
async fn connected(boss: &Client) -> Option<()> {
    let team = boss.team().await.ok()?;
    team.iter()
        .any(|m| m.name == "alice" && m.connected)
        .then_some(())
}

/// A teammated registers with the lead's credential and reconnects with its
/// own: after boardd restarts with a new lead key (the old file removed), the
/// teammate is back and works, which only its own credential allows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_teammate_reconnects_after_a_restart_with_its_own_credential() {
    let dir = short_tempdir();
    let (socket, state) = (dir.path().join("s"), dir.path().join("state"));
    let work = dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let mut daemon = Daemon::start(&socket, &state, &[]).await;
    let old_key = lead_key(&socket);
    let mut alice = Teammated::new(workspace_bin("teammated"), &socket, &state).spawn(
        "alice",
        "dev",
        &work,
        &dir.path().join("alice.log"),
        &[],
        &[],
    );
    let boss = lead(&socket).await;
    // Killed only once alice holds her own credential: her idle notification
    // follows the registration's answer. Killed between boardd's commit and
    // that answer, she would come back with the lead's key alone, which the
    // new key below voids.
    eventually("alice to register and go idle", PATIENCE, || async {
        let events = teamboard_testkit::read_history(&boss).await.ok()?;
        events
            .iter()
            .any(|e| {
                e.kind == teamboard_protocol::EventKind::MessageSent
                    && e.detail.contains("alice → lead: idle_notification")
            })
            .then_some(())
    })
    .await;
    drop(boss);
    daemon.kill9();
    teamboard_testkit::pg::forget_lead_key(&state);
    let _daemon = Daemon::start(&socket, &state, &[]).await;
    let new_key = lead_key(&socket);
    assert_ne!(new_key, old_key, "a new lead key");
    let boss = lead(&socket).await;
    eventually("alice to reconnect", PATIENCE, || connected(&boss)).await;
    let t = boss
        .add_task(NewTask {
            subject: "after the restart".into(),
            description: "```sh\necho back\n```".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    let done = eventually("alice to complete the task", PATIENCE, || async {
        let task = boss.get_task(t.id).await.ok()?.task;
        (task.status == TaskStatus::Completed).then_some(task)
    })
    .await;
    assert_eq!(done.owner.as_deref(), Some("alice"));
    // The old lead key vouches for nobody any more.
    let stale = Client::connect(&socket, "test", "lead", "default", Some(&old_key))
        .await
        .unwrap();
    assert!(stale.status().await.is_err());
    alice.child.start_kill().ok();
    let _ = alice.child.wait().await;
}
