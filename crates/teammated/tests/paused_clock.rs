//! A teammate under tokio's paused clock: its idle timeout, its give-up when boardd
//! is gone, and its idle notifications. boardd and the teammate both run in this
//! test's runtime, so a minute of virtual time passes in milliseconds and nothing
//! depends on a sleep.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "test code: a panic fails the test, and the harness captures what it prints"
)]

use std::time::Duration;
use teamboard_protocol::request::EventsArgs;
use teamboard_protocol::{Client, Event, EventKind, MessageKind};
use teamboard_testkit::{InProc, lead, task};
use teammated::config::{Config, ProviderConfig, ProviderKind};
use teammated::llm::retry::RetryPolicy;
use teammated::{Exit, run};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// A daemon for the paused clock, with a thirty-second lease.
async fn boardd() -> InProc {
    InProc::start_paused(|config| config.board.lease_ttl = Duration::from_secs(30)).await
}

/// alice's configuration against `daemon`, working in its directory.
fn config(daemon: &InProc, provider: ProviderConfig) -> Config {
    Config {
        name: "alice".into(),
        role: "dev".into(),
        team: "default".into(),
        socket: daemon.socket.clone(),
        connect: None,
        token_file: None,
        state_dir: daemon.state_dir.clone(),
        lead_key: Some(teamboard_testkit::lead_key(&daemon.socket)),
        workdir: daemon.dir().to_path_buf(),
        provider,
        idle_timeout: Some(Duration::from_secs(60)),
        poll_interval: Duration::from_secs(30),
        max_rounds: 50,
        context_budget: 100_000,
        carry_context: false,
        shell_timeout: Duration::from_secs(120),
        reconnect_timeout: Duration::from_secs(300),
        require_plan: false,
        sandbox: Default::default(),
        runtime: Default::default(),
    }
}

fn scripted() -> ProviderConfig {
    ProviderConfig {
        kind: ProviderKind::Scripted,
        model: None,
        base_url: None,
        api_key: None,
        max_tokens: 1000,
        max_tokens_field: None,
        request_timeout: Duration::from_secs(300),
        retry: RetryPolicy::default(),
        account: Default::default(),
    }
}

#[tokio::test(start_paused = true)]
async fn an_idle_teammate_leaves_after_the_sixty_second_default() {
    let daemon = boardd().await;
    let started = Instant::now();
    let exit = run(config(&daemon, scripted()), CancellationToken::new())
        .await
        .expect("runs");
    let waited = started.elapsed();
    assert_eq!(exit, Exit::IdleTimeout);
    assert!(
        waited >= Duration::from_secs(60) && waited < Duration::from_secs(61),
        "{waited:?}"
    );
    let lead = lead(&daemon.socket).await;
    let team = lead.team().await.unwrap();
    assert_eq!(team[0].status.to_string(), "shutdown");
    // One idle notification for the one transition, however many waits it took.
    let notices = lead.inbox().await.unwrap();
    assert_eq!(notices.len(), 1, "{notices:#?}");
    daemon.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_teammate_whose_boardd_is_gone_gives_up_after_the_reconnect_timeout() {
    let mut daemon = boardd().await;
    let mut cfg = config(&daemon, scripted());
    cfg.idle_timeout = None;
    cfg.reconnect_timeout = Duration::from_secs(120);
    let teammate = tokio::spawn(run(cfg, CancellationToken::new()));
    // Let it register and park, then take the board away for good.
    tokio::time::sleep(Duration::from_secs(5)).await;
    daemon.shutdown().await;
    let gone = Instant::now();
    let result = teammate.await.expect("no panic");
    let waited = gone.elapsed();
    let err = result.expect_err("it gives up");
    assert!(err.to_string().contains("not running"), "{err}");
    assert!(
        waited >= Duration::from_secs(120) && waited < Duration::from_secs(130),
        "{waited:?}"
    );
}

/// The events after `since`, oldest first.
async fn events_after(lead: &Client, since: u64) -> Vec<Event> {
    lead.events(EventsArgs {
        since: Some(since),
        ..Default::default()
    })
    .await
    .expect("events")
}

/// The first event after `since` that matches `pred`, waiting for it in virtual
/// time (ten virtual minutes at most).
async fn wait_event(lead: &Client, since: u64, what: &str, pred: impl Fn(&Event) -> bool) -> Event {
    for _ in 0..6000 {
        if let Some(e) = events_after(lead, since).await.into_iter().find(&pred) {
            return e;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!(
        "no event for {what}; after {since}: {:#?}",
        events_after(lead, since).await
    );
}

fn by_alice(e: &Event) -> bool {
    e.actor == "alice"
}

/// The kinds of the messages alice sent the lead, oldest first.
async fn from_alice(lead: &Client) -> Vec<MessageKind> {
    let inbox = lead.inbox().await.expect("inbox");
    inbox
        .iter()
        .filter(|m| m.from == "alice")
        .map(|m| m.kind)
        .collect()
}

/// The lead messages alice and waits until she has answered (one model call) and
/// is waiting again; answers the seq of her `idle` status.
async fn wake_with_a_message(lead: &Client, since: u64, text: &str) -> u64 {
    lead.send("alice", MessageKind::Message, text, None)
        .await
        .expect("send");
    let acked = wait_event(lead, since, "alice to take the message", |e| {
        e.kind == EventKind::MessageAcked && by_alice(e)
    })
    .await;
    let idle = wait_event(lead, acked.seq, "alice to wait again", |e| {
        e.kind == EventKind::MemberStatus && by_alice(e) && e.detail == "alice is idle"
    })
    .await;
    idle.seq
}

/// Asserts that alice did nothing the board records (no message, no model call,
/// no status change) after `since`, over a minute of one-second renewals.
async fn quiet_for_a_minute(lead: &Client, since: u64, after: &str) {
    tokio::time::sleep(Duration::from_secs(60)).await;
    let noise: Vec<Event> = events_after(lead, since)
        .await
        .into_iter()
        .filter(by_alice)
        .collect();
    assert!(noise.is_empty(), "alice was not quiet {after}: {noise:#?}");
}

#[tokio::test(start_paused = true)]
async fn a_teammate_tells_the_lead_it_is_idle_once_per_transition_only() {
    let daemon = boardd().await;
    let mut cfg = config(&daemon, scripted());
    cfg.idle_timeout = None;
    cfg.poll_interval = Duration::from_secs(1);
    let cancel = CancellationToken::new();
    let teammate = tokio::spawn(run(cfg, cancel.clone()));
    let lead = lead(&daemon.socket).await;
    let is_notice = |e: &Event| {
        e.kind == EventKind::MessageSent && e.detail.contains("alice → lead: idle_notification")
    };

    // Started with nothing to do: the one transition, the one notice.
    let mut seq = wait_event(&lead, 0, "alice to go idle", is_notice)
        .await
        .seq;
    // Woken for messages, she answers each and waits again, still idle: no news.
    for n in 1..=2 {
        seq = wake_with_a_message(&lead, seq, &format!("how is it going? ({n})")).await;
    }
    quiet_for_a_minute(&lead, seq, "after answering messages").await;
    assert_eq!(from_alice(&lead).await, [MessageKind::IdleNotification]);

    // A task she holds and finishes: going idle after it is a transition again.
    let t = lead
        .add_task(task("nothing to run"))
        .await
        .expect("add_task");
    let done = wait_event(&lead, seq, "the task to complete", |e| {
        e.kind == EventKind::TaskCompleted && e.task == Some(t.id)
    })
    .await;
    seq = wait_event(&lead, done.seq, "alice to go idle again", is_notice)
        .await
        .seq;
    seq = wake_with_a_message(&lead, seq, "thanks").await;
    quiet_for_a_minute(&lead, seq, "after a task and a message").await;
    assert_eq!(
        from_alice(&lead).await,
        [
            MessageKind::IdleNotification,
            MessageKind::Result,
            MessageKind::IdleNotification
        ]
    );

    // The lead acknowledging everything she sent does not wake her.
    let ids: Vec<u64> = lead
        .inbox()
        .await
        .expect("inbox")
        .iter()
        .map(|m| m.id)
        .collect();
    lead.ack(ids).await.expect("ack");
    let acked = events_after(&lead, seq).await;
    seq = acked.last().map_or(seq, |e| e.seq);
    quiet_for_a_minute(&lead, seq, "after the lead acknowledged her").await;

    cancel.cancel();
    let exit = teammate.await.expect("no panic").expect("runs");
    assert_eq!(exit, Exit::Terminated);
    daemon.stop().await;
}

/// A socket in front of boardd's that passes frames both ways until it has
/// passed on boardd's answer to a `respond_shutdown`; then it closes every
/// connection and its socket, as a boardd that stops right after answering.
async fn gone_after_the_shutdown_answer(front: tokio::net::UnixListener, back: std::path::PathBuf) {
    let cut = CancellationToken::new();
    let mut connections = tokio::task::JoinSet::new();
    loop {
        tokio::select! {
            _ = cut.cancelled() => break,
            accepted = front.accept() => {
                let (client, _) = accepted.expect("accept");
                let server = tokio::net::UnixStream::connect(&back).await.expect("boardd");
                connections.spawn(pass_until_the_answer(client, server, cut.clone()));
            }
        }
    }
    let path = front.local_addr().expect("address");
    let _ = std::fs::remove_file(path.as_pathname().expect("a path"));
    drop(front);
    connections.shutdown().await;
}

async fn pass_until_the_answer(
    client: tokio::net::UnixStream,
    server: tokio::net::UnixStream,
    cut: CancellationToken,
) {
    use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
    async fn read(r: &mut (impl AsyncRead + Unpin)) -> Option<Vec<u8>> {
        let len = r.read_u32().await.ok()?;
        let mut frame = vec![0; len as usize];
        r.read_exact(&mut frame).await.ok()?;
        Some(frame)
    }
    async fn write(w: &mut (impl AsyncWrite + Unpin), frame: &[u8]) -> Option<()> {
        w.write_u32(frame.len() as u32).await.ok()?;
        w.write_all(frame).await.ok()
    }
    let json =
        |frame: &[u8]| serde_json::from_slice::<serde_json::Value>(frame).unwrap_or_default();
    let (mut from_client, mut to_client) = client.into_split();
    let (mut from_server, mut to_server) = server.into_split();
    let asked = std::sync::Mutex::new(None);
    let up = async {
        while let Some(frame) = read(&mut from_client).await {
            let v = json(&frame);
            if v["op"] == "respond_shutdown" {
                *asked.lock().unwrap() = v["id"].as_u64();
            }
            write(&mut to_server, &frame).await?;
        }
        None::<()>
    };
    let down = async {
        while let Some(frame) = read(&mut from_server).await {
            write(&mut to_client, &frame).await?;
            let v = json(&frame);
            if v["type"] == "response"
                && v["id"].as_u64().is_some()
                && v["id"].as_u64() == *asked.lock().unwrap()
            {
                cut.cancel();
                return Some(());
            }
        }
        None
    };
    tokio::select! {
        _ = up => {}
        _ = down => {}
        _ = cut.cancelled() => {}
    }
}

/// A teammate that approved its shutdown leaves at once when boardd stops right
/// after the approval, with the shutdown's exit: it does not wait for a boardd
/// that may never come back.
#[tokio::test(start_paused = true)]
async fn a_teammate_that_approved_its_shutdown_leaves_when_boardd_stops_right_after() {
    let daemon = boardd().await;
    let front = daemon.dir().join("f");
    let listener = tokio::net::UnixListener::bind(&front).expect("bind");
    tokio::spawn(gone_after_the_shutdown_answer(
        listener,
        daemon.socket.clone(),
    ));
    let mut cfg = config(&daemon, scripted());
    cfg.socket = front;
    cfg.idle_timeout = None;
    let teammate = tokio::spawn(run(cfg, CancellationToken::new()));
    let lead = lead(&daemon.socket).await;
    wait_event(&lead, 0, "alice to go idle", |e| {
        e.kind == EventKind::MessageSent && e.detail.contains("alice → lead: idle_notification")
    })
    .await;
    let asked = Instant::now();
    lead.request_shutdown(teamboard_protocol::request::ShutdownArgs {
        to: "alice".into(),
        ..Default::default()
    })
    .await
    .expect("request_shutdown");
    let exit = teammate.await.expect("no panic");
    let took = asked.elapsed();
    assert_eq!(
        exit.expect("it leaves cleanly"),
        Exit::ShutdownRequested { by: "lead".into() }
    );
    assert!(took < Duration::from_secs(5), "{took:?}");
    daemon.stop().await;
}
