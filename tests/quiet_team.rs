//! A quiet team (issue 14 §5): once a team has finished its work and has nothing to
//! do, nobody sends a message and nobody calls a model, neither the LLM lead nor a
//! teammate. Idle teammates renew their safety-net wait silently, nothing the lead
//! does to acknowledge them (nor anything a teammate does on its own) wakes them,
//! and the lead, its summary given, waits on its events without waking its model.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "test code: a panic fails the test, and the harness captures what it prints"
)]

use serde_json::json;
use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Mutex};
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
    alice
        .record_usage(None, tokens, false)
        .await
        .expect("usage");
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
/// What the lead's model answers to the board-done report.
const SUMMARY: &str = "Summary: the four tasks are done.";

/// The LLM lead as the person runs it: `teamctl lead` on the anthropic provider
/// against its own mock server, so that its model calls count apart from the
/// teammates'. Its stdin stays open (closing it would be `/quit`).
struct LlmLead {
    child: Child,
    stdin: ChildStdin,
    stdout: Arc<Mutex<String>>,
    stderr: PathBuf,
    mock: MockLlm,
}

impl LlmLead {
    fn start(dir: &Path, daemon: &Daemon) -> LlmLead {
        // Every call it makes gets the summary; the test counts them.
        let mock = MockLlm::start_with_fallback(Vec::new(), MockReply::anthropic_text(SUMMARY));
        let work = dir.join("work-lead");
        std::fs::create_dir_all(&work).expect("workdir");
        let stderr = dir.join("lead.log");
        let mut child = Command::new(workspace_bin("teamctl"))
            .arg("--socket")
            .arg(&daemon.socket)
            .arg("--state-dir")
            .arg(&daemon.state_dir)
            .args(["lead", "--provider", "anthropic", "--base-url"])
            .arg(mock.url())
            .arg("--workdir")
            .arg(&work)
            .env("TEAMMATED_BIN", workspace_bin("teammated"))
            .env("ANTHROPIC_API_KEY", "sk-test")
            .env_remove("TEAMBOARD_TEAM")
            .env_remove("TEAMMATE_PROVIDER")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(File::create(&stderr).expect("lead log"))
            .spawn()
            .expect("teamctl lead starts");
        let stdin = child.stdin.take().expect("piped stdin");
        let out = child.stdout.take().expect("piped stdout");
        let stdout = Arc::new(Mutex::new(String::new()));
        let text = stdout.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { return };
                let mut t = text.lock().unwrap_or_else(|p| p.into_inner());
                t.push_str(&line);
                t.push('\n');
            }
        });
        LlmLead {
            child,
            stdin,
            stdout,
            stderr,
            mock,
        }
    }

    fn stdout(&self) -> String {
        self.stdout
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    fn output(&self) -> String {
        let stderr = std::fs::read_to_string(&self.stderr).unwrap_or_default();
        format!(
            "--- lead stdout ---\n{}--- lead stderr ---\n{stderr}",
            self.stdout()
        )
    }

    /// How many team events it has put into its context: one `· ` notice each.
    fn notices(&self, mark: &str) -> usize {
        self.stdout().matches(&format!("· {mark}")).count()
    }
}

impl Drop for LlmLead {
    fn drop(&mut self) {
        // Our own unreaped child: kill and reap it, whatever the test's outcome.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The team on a real boardd: the LLM lead, and teammates with every model call
/// going to one mock server.
struct Team {
    daemon: Daemon,
    mock: MockLlm,
    /// The person at teamctl, beside the LLM lead (both are `lead` to boardd).
    boss: Client,
    lead: LlmLead,
    members: Vec<Teammate>,
}

impl Team {
    async fn start(dir: &Path, mock: MockLlm) -> Team {
        let (socket, state) = (dir.join("s"), dir.join("state"));
        let daemon = Daemon::start(&socket, &state, &[]).await;
        let boss = lead(&socket).await;
        let lead = LlmLead::start(dir, &daemon);
        // The greeting comes after its subscription: no event is missed from here.
        eventually(
            format!("the lead to greet; {}", lead.output()),
            PATIENCE,
            || async {
                lead.stdout()
                    .contains("Tell me what you want done")
                    .then_some(())
            },
        )
        .await;
        Team {
            daemon,
            mock,
            boss,
            lead,
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

    /// Whether what is left in the lead's inbox is only idle notifications: the
    /// lead has read them and keeps them for the digest of its next delivery;
    /// everything else is in its context and acknowledged.
    async fn lead_inbox_settled(&self) -> bool {
        self.boss.inbox().await.is_ok_and(|inbox| {
            inbox
                .iter()
                .all(|m| m.kind == MessageKind::IdleNotification)
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
        let teammates: String = self
            .members
            .iter()
            .map(|t| format!("--- {} ---\n{}", t.name, t.log_text()))
            .collect();
        format!("{teammates}{}", self.lead.output())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_finished_team_with_its_llm_lead_goes_quiet_for_a_minute() {
    let dir = short_tempdir();
    // Any order of calls works: a `list_team` round is harmless wherever it lands
    // (it adds one call to that teammate's work phase), and the fallback text ends
    // a phase, completing the task held with it. So N tasks take exactly
    // N + ROSTER_LOOKS calls, however the two teammates interleave.
    //
    // The looks are the first two calls and come back late: no task can end
    // before the person has put all four on the board, so the board is done once,
    // and the lead sums up exactly once.
    const ROSTER_LOOKS: usize = 2;
    let looks = (1..=ROSTER_LOOKS)
        .map(|n| {
            MockReply::anthropic_tool_use(&format!("toolu_{n}"), "list_team", json!({}))
                .with_delay(Duration::from_millis(300))
        })
        .collect();
    let mock = MockLlm::start_with_fallback(looks, MockReply::anthropic_text("Done."));
    let mut team = Team::start(dir.path(), mock).await;
    for name in ["alice", "bob"] {
        team.spawn(dir.path(), name);
    }
    // Their idle notifications reach the lead's inbox; it keeps them for the
    // digest of its first delivery.
    eventually("both teammates to go idle", PATIENCE, || async {
        team.all_idle().await.then_some(())
    })
    .await;

    // A little work, with a dependency, put on the board by the person beside
    // the lead.
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
    // The lead's one call: the summary turn once the board is done.
    let lead_calls = 1;
    // Settled: every task completed, the teammates idle with their idle
    // notifications sent and no call more than the work needs; the lead's
    // summary printed (its last model call answered), every result in its
    // context, and its inbox holding only idle notifications.
    eventually(
        format!("the team to finish and go quiet; so far:\n{}", team.logs()),
        PATIENCE,
        || async {
            let done = team
                .boss
                .list_tasks(Some(TaskStatus::Completed))
                .await
                .ok()?;
            let finished = ids.iter().all(|id| done.iter().any(|t| t.id == *id));
            let lead = &team.lead;
            let quiet = finished
                && team.mock.calls() == expected_calls
                && team.all_idle().await
                && lead.mock.calls() == lead_calls
                && lead.stdout().contains(SUMMARY)
                && lead.notices("[Result from ") == ids.len()
                && team.lead_inbox_settled().await;
            quiet.then_some(())
        },
    )
    .await;
    // The roster reached the model, through list_team.
    let requests = team.mock.requests();
    assert!(
        requests
            .iter()
            .any(|r| r.body.to_string().contains("[working] role dev, holds #")),
        "no list_team result reached the model"
    );
    // The lead's summary call saw the board's outcome and the idle digest of the
    // teammates' first idle notifications (both were in its inbox before any
    // result, and went in with the first delivery).
    let summary = team.lead.mock.requests()[0].body.to_string();
    assert!(
        summary.contains("[Board done] 4 task(s): 4 completed"),
        "{summary}"
    );
    assert!(
        summary.contains("[Idle] alice, bob") || summary.contains("[Idle] bob, alice"),
        "{summary}"
    );

    // The quiet window: counts at its start and at its end.
    let seq = team.last_seq().await;
    let renewals = team.renewals();
    let printed = team.lead.stdout();
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
        "teammates' model calls while idle: {:#?}",
        &team.mock.requests()[expected_calls..]
    );
    assert_eq!(
        team.lead.mock.calls(),
        lead_calls,
        "the lead's model calls while idle: {:#?}",
        &team.lead.mock.requests()[lead_calls..]
    );
    // Stronger still: nothing at all happened on the board, and the lead had
    // nothing to tell the person.
    assert!(noise.is_empty(), "events while idle: {noise:#?}");
    assert_eq!(team.lead.stdout(), printed, "the lead spoke while idle");
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
    // The lead is still there, and answers the person.
    assert!(
        team.lead.child.try_wait().ok().flatten().is_none(),
        "the lead exited:\n{}",
        team.logs()
    );
    team.lead
        .stdin
        .write_all(b"/quit\n")
        .and_then(|()| team.lead.stdin.flush())
        .expect("the lead reads stdin");
    let status = tokio::task::block_in_place(|| team.lead.child.wait()).expect("the lead exits");
    assert!(status.success(), "{status:?}\n{}", team.logs());
}
