//! The stream: down, up again, and nothing missed.

use crate::{Scenario, WebProcess};

/// Restarts `teamctl web` on the same port with the same token, as a person
/// restarting it would with `--listen` and `--token`.
fn restart(s: &mut Scenario) {
    let port = s.web.port().to_string();
    let token = s.web.token.clone();
    s.web.kill();
    s.web = WebProcess::start(
        &s.board,
        &["--listen", &format!("127.0.0.1:{port}"), "--token", &token],
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_stream_says_disconnected_until_it_is_back() {
    let Some(mut s) = Scenario::start("disconnected_banner").await else {
        return;
    };
    s.wait_js("connected", "window.teamboard.connected").await;
    s.wait_js("banner hidden", "document.getElementById('banner').hidden")
        .await;
    s.web.kill();
    s.wait_js("banner shown", "!document.getElementById('banner').hidden")
        .await;
    let said = s.wait_for("#banner", "Disconnected").await;
    assert!(said.contains("Reconnecting"), "{said}");
    s.screenshot_as("disconnected_banner").await;
    restart(&mut s);
    s.wait_js("banner cleared", "document.getElementById('banner').hidden")
        .await;
    s.wait_js("connected again", "window.teamboard.connected")
        .await;
    s.name = "disconnected_banner_cleared";
    s.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reconnect_catches_up_from_the_event_log_and_misses_nothing() {
    let Some(mut s) = Scenario::start("reconnect_misses_nothing").await else {
        return;
    };
    let before = s.board.add("Before", "", &[]).await;
    s.wait_for(&format!("#task-{}", before.id), "Before").await;
    s.web.kill();
    // While the page is cut off: new tasks, an edit and a cancellation.
    let mut added = Vec::new();
    for i in 0..5 {
        added.push(s.board.add(&format!("While away {i}"), "", &[]).await);
    }
    s.board.lead.cancel_task(before.id).await.expect("cancel");
    restart(&mut s);
    for t in &added {
        s.wait_for(&format!("#task-{}", t.id), &t.subject).await;
    }
    s.wait_for(
        &format!(r#".column[data-status="cancelled"] #task-{}"#, before.id),
        "Before",
    )
    .await;
    // Every event of the log was applied once, in order, none twice.
    let log = s
        .board
        .lead
        .events(teamboard_protocol::request::EventsArgs {
            since: Some(0),
            task: None,
            limit: None,
        })
        .await
        .expect("events");
    let last = log.last().map(|e| e.seq).unwrap_or(0);
    s.wait_js("caught up", &format!("window.teamboard.seq >= {last}"))
        .await;
    let shown = s
        .js("return [...document.querySelectorAll('#activity li')].map(li => Number(li.dataset.seq));")
        .await;
    let mut shown: Vec<u64> = serde_json::from_value(shown).expect("seqs");
    shown.reverse();
    // The page opened on an empty board: its snapshot was at seq 0.
    let all: Vec<u64> = log.iter().map(|e| e.seq).collect();
    assert_eq!(shown, all, "the activity is the whole log, each event once");
    s.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_boardd_restart_drops_the_stream_and_the_page_catches_up() {
    let Some(mut s) = Scenario::start("boardd_restart_caught_up").await else {
        return;
    };
    let t = s.board.add("Before the restart", "", &[]).await;
    s.wait_for(&format!("#task-{}", t.id), "Before the restart")
        .await;
    s.wait_js("connected", "window.teamboard.connected").await;
    s.board.daemon.shutdown().await;
    s.wait_js("banner shown", "!document.getElementById('banner').hidden")
        .await;
    // The browser's own reconnect meets a server without boardd (502), which
    // ends an EventSource for good: the page must start a new one itself.
    s.wait_js("a reconnect refused", "window.teamboard.closed > 0")
        .await;
    s.board.daemon.restart().await;
    // The test's own lead session died with the old boardd: teamctl adds this one.
    let id = s.teamctl(&["task", "add", "After the restart"]);
    s.wait_for(&format!("#task-{id}"), "After the restart")
        .await;
    s.wait_js("banner cleared", "document.getElementById('banner').hidden")
        .await;
    s.finish().await;
}
