//! A quiet team (issue 14 §5): once a team has finished its work and has nothing to
//! do, nobody sends a message and nobody calls a model. Idle teammates renew their
//! safety-net wait silently, and nothing the lead does to acknowledge them (nor
//! anything a teammate does on its own) wakes them.

use serde_json::json;
use std::path::Path;
use std::task::Poll;
use std::time::Duration;
use teamboard_protocol::request::{EventsArgs, NewTask};
use teamboard_protocol::{
    Client, ErrorCode, Event, EventKind, MemberStatus, MessageKind, TaskStatus, TokenUsage, Work,
};
use teamboard_testkit::mock_llm::{MockLlm, MockReply};
use teamboard_testkit::{
    Daemon, InProc, PATIENCE, Parked, Teammate, Teammated, code_of, eventually, lead, park,
    short_tempdir, task, teammate, workspace_bin,
};

/// Whether a parked wait is still unanswered, polled once.
async fn still_parked(wait: &mut Parked<'_>) -> bool {
    std::future::poll_fn(|cx| Poll::Ready(wait.as_mut().poll(cx).is_pending())).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledgements_reads_and_own_writes_do_not_wake_a_parked_teammate() {
    let daemon = InProc::start().await;
    let boss = lead(&daemon.socket).await;
    let alice = teammate(&daemon.socket, "alice", "dev").await;
    let bob = teammate(&daemon.socket, "bob", "dev").await;
    // What alice told the lead while she worked.
    let result = alice
        .send("lead", MessageKind::Result, "#1 done", None)
        .await
        .expect("send");
    let mut wait = park(&alice).await;

    // The lead reads and acknowledges.
    let inbox = boss.inbox().await.expect("inbox");
    assert_eq!(inbox, vec![result.clone()]);
    boss.ack(vec![result.id]).await.expect("ack");
    boss.team().await.expect("team");
    boss.list_tasks(None).await.expect("list");
    boss.events(EventsArgs::default()).await.expect("events");
    boss.status().await.expect("status");
    // alice's own writes, on her connection while she waits.
    alice
        .set_status(MemberStatus::Idle)
        .await
        .expect("set_status");
    let tokens = TokenUsage {
        input: 3,
        output: 1,
        ..Default::default()
    };
    alice.record_usage(None, tokens).await.expect("usage");
    let sent = alice.broadcast("the API changed").await.expect("broadcast");
    assert_eq!(sent.len(), 1, "only bob: {sent:?}");
    assert_eq!(
        code_of(
            alice
                .send("alice", MessageKind::Message, "note", None)
                .await
        ),
        ErrorCode::InvalidArgs
    );
    let ops = NewTask {
        role: Some("ops".into()),
        ..task("not for a dev")
    };
    alice.add_task(ops).await.expect("add_task");
    // Others talking.
    bob.send("lead", MessageKind::Message, "hi lead", None)
        .await
        .expect("send");
    boss.send("bob", MessageKind::Message, "hi bob", None)
        .await
        .expect("send");

    // boardd answers a woken waiter before the request that woke it, and frames
    // of one connection come back in order: once alice's own later request is
    // answered, a wake-up would already be in.
    alice.status().await.expect("status");
    assert!(still_parked(&mut wait).await, "{:?}", wait.await);

    // Real work still wakes her, with exactly that.
    let m = boss
        .send("alice", MessageKind::Message, "real work", None)
        .await
        .expect("send");
    let work = tokio::time::timeout(PATIENCE, wait)
        .await
        .expect("woken")
        .expect("work");
    assert_eq!(work, Work::Messages { messages: vec![m] });
    daemon.stop().await;
}

/// How long the finished team must stay quiet.
const QUIET: Duration = Duration::from_secs(60);
/// The teammates' safety-net renewal: many renewals within [`QUIET`].
const POLL_INTERVAL: &str = "1";
/// The debug line a teammate logs on each renewal of its wait.
const RENEWAL: &str = "renewing the wait";

/// The team on a real boardd, with every model call going to one mock server.
struct Team {
    daemon: Daemon,
    mock: MockLlm,
    boss: Client,
    members: Vec<Teammate>,
}

impl Team {
    async fn start(dir: &Path, mock: MockLlm) -> Team {
        let (socket, state) = (dir.join("s"), dir.join("state"));
        let daemon = Daemon::start(&socket, &state, &[]).await;
        let boss = lead(&socket).await;
        Team {
            daemon,
            mock,
            boss,
            members: Vec::new(),
        }
    }

    /// A teammate on the anthropic provider against the mock server, never leaving
    /// on its own (`--idle-timeout 0`), renewing its wait every second.
    fn spawn(&mut self, dir: &Path, name: &str) {
        let kit = Teammated::new(
            workspace_bin("teammated"),
            &self.daemon.socket,
            &self.daemon.state_dir,
        );
        let workdir = dir.join(format!("work-{name}"));
        std::fs::create_dir_all(&workdir).expect("workdir");
        let url = self.mock.url();
        let flags = [
            "--provider",
            "anthropic",
            "--base-url",
            &url,
            "--poll-interval",
            POLL_INTERVAL,
            "--idle-timeout",
            "0",
        ];
        let log = dir.join(format!("{name}.log"));
        let env = [("ANTHROPIC_API_KEY", "sk-test")];
        self.members
            .push(kit.spawn(name, "dev", &workdir, &log, &flags, &env));
    }

    async fn events_after(&self, since: u64) -> Vec<Event> {
        self.boss
            .events(EventsArgs {
                since: Some(since),
                ..Default::default()
            })
            .await
            .expect("events")
    }

    /// The seq of the newest event.
    async fn last_seq(&self) -> u64 {
        let newest = self
            .boss
            .events(EventsArgs {
                limit: Some(1),
                ..Default::default()
            })
            .await
            .expect("events");
        newest.last().map_or(0, |e| e.seq)
    }

    /// Whether every teammate's last word to the lead is its idle notification,
    /// and the roster shows it idle, connected and holding nothing.
    async fn all_idle(&self) -> bool {
        let Ok(events) = self.boss.events(EventsArgs::default()).await else {
            return false;
        };
        let Ok(roster) = self.boss.team().await else {
            return false;
        };
        self.members.iter().all(|t| {
            let last_word = events
                .iter()
                .rev()
                .find(|e| e.kind == EventKind::MessageSent && e.actor == t.name);
            let idle_now = roster.iter().any(|m| {
                m.name == t.name
                    && m.status == MemberStatus::Idle
                    && m.connected
                    && m.task.is_none()
            });
            idle_now && last_word.is_some_and(|e| e.detail.contains("→ lead: idle_notification"))
        })
    }

    /// How many times the teammates renewed their waits, from their logs.
    fn renewals(&self) -> usize {
        self.members
            .iter()
            .map(|t| t.log_text().matches(RENEWAL).count())
            .sum()
    }

    fn logs(&self) -> String {
        self.members
            .iter()
            .map(|t| format!("--- {} ---\n{}", t.name, t.log_text()))
            .collect()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_finished_team_goes_quiet_for_a_minute() {
    let dir = short_tempdir();
    // Any order of calls works: a `list_team` round is harmless wherever it lands
    // (it adds one call to that teammate's work phase), and the fallback text ends
    // a phase, completing the task held with it. So N tasks take exactly
    // N + ROSTER_LOOKS calls, however the two teammates interleave.
    const ROSTER_LOOKS: usize = 2;
    let looks = (1..=ROSTER_LOOKS)
        .map(|n| MockReply::anthropic_tool_use(&format!("toolu_{n}"), "list_team", json!({})))
        .collect();
    let mock = MockLlm::start_with_fallback(looks, MockReply::anthropic_text("Done."));
    let mut team = Team::start(dir.path(), mock).await;
    // The LLM lead (`teamctl lead`) does not exist yet. When it does, start it
    // here on the same mock server: its model calls then count with the
    // teammates', its messages are `message_sent` events like theirs, and
    // `all_idle` should also wait for its summary. Nothing else changes.
    for name in ["alice", "bob"] {
        team.spawn(dir.path(), name);
    }
    eventually("both teammates to go idle", PATIENCE, || async {
        team.all_idle().await.then_some(())
    })
    .await;

    // A little work, with a dependency.
    let a = team.boss.add_task(task("a")).await.expect("add").id;
    let b = team.boss.add_task(task("b")).await.expect("add").id;
    let after_a = NewTask {
        blocked_by: vec![a],
        ..task("after a")
    };
    let c = team.boss.add_task(after_a).await.expect("add").id;
    let d = team.boss.add_task(task("d")).await.expect("add").id;
    let ids = [a, b, c, d];
    let expected_calls = ids.len() + ROSTER_LOOKS;
    eventually("the team to finish and go idle", PATIENCE, || async {
        let done = team
            .boss
            .list_tasks(Some(TaskStatus::Completed))
            .await
            .ok()?;
        let finished = ids.iter().all(|id| done.iter().any(|t| t.id == *id));
        let quiet = finished && team.mock.calls() == expected_calls && team.all_idle().await;
        quiet.then_some(())
    })
    .await;
    // The roster reached the model, through list_team.
    let requests = team.mock.requests();
    assert!(
        requests
            .iter()
            .any(|r| r.body.to_string().contains("[working] role dev, holds #")),
        "no list_team result reached the model"
    );

    // The lead reads the results and idle notifications and acknowledges them,
    // which must wake nobody: a wake-up would show in the window.
    let inbox = team.boss.inbox().await.expect("inbox");
    assert!(
        inbox
            .iter()
            .any(|m| m.kind == MessageKind::IdleNotification),
        "{inbox:#?}"
    );
    let ids = inbox.iter().map(|m| m.id).collect();
    team.boss.ack(ids).await.expect("ack");

    // The quiet window: counts at its start and at its end.
    let seq = team.last_seq().await;
    let renewals = team.renewals();
    tokio::time::sleep(QUIET).await;
    let noise = team.events_after(seq).await;
    let messages: Vec<&Event> = noise
        .iter()
        .filter(|e| e.kind == EventKind::MessageSent)
        .collect();
    assert!(messages.is_empty(), "messages: {messages:#?}");
    assert_eq!(
        team.mock.calls(),
        expected_calls,
        "model calls while idle: {:#?}",
        &team.mock.requests()[expected_calls..]
    );
    // Stronger still: nothing at all happened on the board.
    assert!(noise.is_empty(), "events while idle: {noise:#?}");
    // And not because nobody was awake: each teammate renewed its wait about
    // once a second all along.
    let renewed = team.renewals() - renewals;
    assert!(
        renewed >= 2 * 30,
        "{renewed} renewals in {QUIET:?}:\n{}",
        team.logs()
    );
    assert!(
        team.members
            .iter_mut()
            .all(|t| t.child.try_wait().ok().flatten().is_none()),
        "a teammate exited:\n{}",
        team.logs()
    );
}
