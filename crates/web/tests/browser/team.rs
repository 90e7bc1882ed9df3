//! The team: states with ages that tick, messages, shutdown, transcripts.

use crate::Scenario;
use teamboard_protocol::MessageKind;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_team_shows_each_state_with_an_age_that_ticks() {
    let Some(mut s) = Scenario::start("team_states_tick").await else {
        return;
    };
    let _alice = s.board.spawn("alice", "dev", &[]);
    s.board.wait_idle("alice").await;
    let text = s.wait_for("#member-alice", "alice").await;
    assert!(text.contains("(dev)"), "{text}");
    let first = s
        .js("return document.querySelector('#member-alice .age').textContent")
        .await;
    // Nothing happens on the board; only the page's clock moves the age.
    s.wait_js(
        "the age moved",
        &format!("document.querySelector('#member-alice .age').textContent !== {first}"),
    )
    .await;
    let state = s
        .js("return document.querySelector('#member-alice').dataset.state")
        .await;
    assert!(state == "idle" || state == "working", "{state}");
    s.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_written_on_the_page_reaches_the_teammate() {
    let Some(s) = Scenario::start("message_teammate").await else {
        return;
    };
    let bob = teamboard_testkit::teammate(&s.board.daemon.socket, "bob", "dev").await;
    s.click("#member-bob").await;
    s.fill("[name=message-content]", "Use axum, please").await;
    s.click("form.action-message button").await;
    s.wait_for("#notice", "Send message: done").await;
    let inbox = bob.inbox().await.expect("inbox");
    assert!(
        inbox.iter().any(|m| m.kind == MessageKind::Message
            && m.content == "Use axum, please"
            && m.from == "lead"),
        "{inbox:#?}"
    );
    s.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn asking_a_teammate_to_shut_down_from_the_page() {
    let Some(s) = Scenario::start("ask_to_shut_down").await else {
        return;
    };
    let bob = teamboard_testkit::teammate(&s.board.daemon.socket, "bob", "dev").await;
    s.click("#member-bob").await;
    s.fill("[name=shutdown-reason]", "the work is done").await;
    s.click("form.action-shutdown button").await;
    // The request waits for bob's answer, on the page too.
    s.wait_for(
        "#requests .shutdown",
        "Shutdown r1 of bob: the work is done",
    )
    .await;
    let inbox = bob.inbox().await.expect("inbox");
    assert!(
        inbox.iter().any(|m| m.kind == MessageKind::ShutdownRequest),
        "{inbox:#?}"
    );
    s.screenshot_as("ask_to_shut_down").await;
    // Withdrawn from the page, it leaves the list.
    s.click("#requests .shutdown form.action-withdraw button")
        .await;
    s.wait_for("#requests", "Nothing waits for you").await;
    s.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn asking_an_offline_teammate_to_shut_down_is_refused_in_words() {
    let Some(s) = Scenario::start("shutdown_refused_offline").await else {
        return;
    };
    let bob = teamboard_testkit::teammate(&s.board.daemon.socket, "bob", "dev").await;
    s.wait_for("#member-bob", "bob").await;
    bob.close().await;
    drop(bob);
    s.wait_js(
        "bob offline",
        "document.querySelector('#member-bob').dataset.state === 'offline'",
    )
    .await;
    s.click("#member-bob").await;
    s.click("form.action-shutdown button").await;
    let said = s.wait_for("form.action-shutdown .refusal", "bob").await;
    assert!(!said.is_empty());
    s.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_teammates_transcript_tail_is_shown() {
    let Some(mut s) = Scenario::start("transcript_tail").await else {
        return;
    };
    let _alice = s.board.spawn("alice", "dev", &[]);
    s.board.wait_idle("alice").await;
    let t = s
        .board
        .add(
            "Say hello",
            "Greet.\n```sh\necho hello-from-alice\n```\n",
            &[],
        )
        .await;
    s.board.wait_done(&[t.id]).await;
    s.click("#member-alice").await;
    s.wait_for("#detail .transcript", "hello-from-alice").await;
    s.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_teammate_turns_dead_on_screen() {
    let Some(mut s) = Scenario::start("killed_teammate_dead").await else {
        return;
    };
    let mut alice = s.board.spawn("alice", "dev", &[]);
    s.board.wait_idle("alice").await;
    s.wait_for("#member-alice", "idle").await;
    alice.child.start_kill().expect("kill -9");
    let _ = alice.child.wait().await;
    s.wait_js(
        "alice dead",
        "document.querySelector('#member-alice').dataset.state === 'dead'",
    )
    .await;
    s.wait_for("#member-alice", "dead").await;
    s.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_teammate_reads_stalled_on_screen_and_comes_back_when_continued() {
    // A short lease: the teammate beats every third of it, and a silence of
    // two beats is a stall.
    let Some(mut s) = Scenario::start_with("stopped_teammate_stalled", |c| {
        c.board.lease_ttl = std::time::Duration::from_secs(3);
    })
    .await
    else {
        return;
    };
    let alice = s.board.spawn("alice", "dev", &[]);
    s.board.wait_idle("alice").await;
    s.wait_for("#member-alice", "idle").await;
    signal(alice.pid(), libc::SIGSTOP);
    s.wait_js(
        "alice stalled",
        "document.querySelector('#member-alice').dataset.state === 'stalled'",
    )
    .await;
    let shown = s.wait_for("#member-alice", "Connected but silent").await;
    assert!(shown.contains("last heartbeat"), "{shown}");
    s.screenshot_as("stopped_teammate_stalled").await;
    signal(alice.pid(), libc::SIGCONT);
    s.wait_js(
        "alice idle again",
        "document.querySelector('#member-alice').dataset.state === 'idle'",
    )
    .await;
    s.name = "stopped_teammate_continued";
    s.finish().await;
}

fn signal(pid: u32, sig: libc::c_int) {
    // SAFETY: kill(2) has no memory-safety preconditions; the pid is this
    // test's own unreaped child's, so it cannot have been reused.
    let rc = unsafe { libc::kill(pid as libc::pid_t, sig) };
    assert_eq!(rc, 0, "signal {sig} to {pid}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_teammate_joining_and_working_shows_up_live() {
    let Some(s) = Scenario::start("teammate_joins_live").await else {
        return;
    };
    s.wait_for("#team", "").await;
    let carol = teamboard_testkit::teammate(&s.board.daemon.socket, "carol", "qa").await;
    s.wait_for("#member-carol", "carol (qa)").await;
    let t = s.board.add("Check it", "", &[]).await;
    carol.claim_task(t.id).await.expect("claim");
    s.wait_for("#member-carol", &format!("#{}", t.id)).await;
    s.wait_for(
        &format!(r#".column[data-status="in_progress"] #task-{}"#, t.id),
        "carol",
    )
    .await;
    s.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shutdown_asked_with_teamctl_waits_on_the_page_until_answered() {
    let Some(s) = Scenario::start("shutdown_from_teamctl_shown").await else {
        return;
    };
    let dave = teamboard_testkit::teammate(&s.board.daemon.socket, "dave", "dev").await;
    s.teamctl(&[
        "shutdown",
        "dave",
        "--no-wait",
        "--reason",
        "end of the day",
    ]);
    s.wait_for("#requests .shutdown", "of dave: end of the day")
        .await;
    s.screenshot_as("shutdown_from_teamctl_waiting").await;
    let request = dave
        .inbox()
        .await
        .expect("inbox")
        .into_iter()
        .find_map(|m| m.request_id)
        .expect("a request id");
    dave.respond_shutdown(request.parse().expect("an id"), false, Some("busy"))
        .await
        .expect("answer");
    s.wait_for("#requests", "Nothing waits for you").await;
    s.finish().await;
}
