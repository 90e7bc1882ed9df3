//! The WORK loop's handlers fed in an order the scheduler only sometimes
//! produces: a teammate built as teammated builds it against a real boardd,
//! with the kit's `fake-acp-agent` as its agent. Each test reads the agent's
//! events itself and hands them, and what the board brings, to the loop's
//! handlers in the order under test, so that a race between the two is the
//! same on every run. End-to-end tests of the loop are in
//! `tests/agent_loop/`.

use super::*;
use crate::config::{Config, RuntimeConfig};
use crate::runtime::RuntimeKind;
use teamboard_protocol::request::NewTask;
use teamboard_protocol::{Client, MessageKind, TaskStatus};
use teamboard_testkit::{InProc, PATIENCE, lead, workspace_bin};
use tokio_util::sync::CancellationToken;

struct Fixture {
    /// boardd, its directory and socket, for as long as the test runs.
    daemon: InProc,
    lead: Client,
    alice: Teammate,
    run: AgentRun,
    member: MemberServer,
}

impl Fixture {
    /// alice with the fake agent as her `acp` runtime.
    async fn start() -> Fixture {
        let daemon = InProc::start().await;
        let lead = lead(&daemon.socket).await;
        let home = daemon.dir().join("fake-acp");
        std::fs::create_dir_all(&home).expect("the fake agent's home");
        let mut cfg = Config::for_tests(&daemon);
        cfg.runtime = RuntimeConfig {
            kind: RuntimeKind::Acp,
            agent_cmd: Some(workspace_bin("fake-acp-agent")),
            agent_env: vec![("FAKE_ACP_HOME".into(), home.display().to_string())],
            ..RuntimeConfig::default()
        };
        let (alice, worker, _) = crate::run::open(cfg, CancellationToken::new())
            .await
            .expect("alice starts")
            .expect("not cancelled");
        let crate::work::Worker::Agent(mut run) = worker else {
            panic!("an agent runtime");
        };
        let member = run.member.take().expect("the member socket");
        Fixture {
            daemon,
            lead,
            alice,
            run,
            member,
        }
    }

    /// A new task with this script, claimed and held by alice as IDLE takes one.
    async fn hold(&mut self, script: &str) -> TaskId {
        let task = NewTask {
            subject: "scripted".into(),
            description: script.into(),
            no_worktree: true,
            ..NewTask::default()
        };
        let id = self.lead.add_task(task).await.expect("added").id;
        let claim = self
            .alice
            .session()
            .call(|c| async move { c.claim_task(id).await })
            .await
            .expect("claimed");
        self.alice
            .take_up(claim, "Claimed", true, &mut self.run)
            .await
            .expect("held");
        id
    }

    /// The agent started for what alice holds, as `agent_phase` starts it.
    async fn phase(&mut self) -> Phase {
        let brief = self.run.brief(&mut self.alice, &self.member);
        let key = brief.task;
        let spec = self.run.spec.clone();
        let agent = Agent::start(&spec, brief).await.expect("the agent starts");
        Phase {
            agent,
            pending: BTreeMap::new(),
            handed: BTreeSet::new(),
            refusals: 0,
            key,
            result: None,
            answer: None,
            only_messages: None,
            over_budget: None,
        }
    }

    /// Hands the agent's events to the loop until `stop` holds for one, which
    /// is returned unhandled. The loop must not end on the way.
    async fn events_until(
        &mut self,
        phase: &mut Phase,
        stop: impl Fn(&AgentEvent) -> bool,
    ) -> AgentEvent {
        loop {
            let ev = tokio::time::timeout(PATIENCE, phase.agent.next_event())
                .await
                .expect("an event from the agent");
            if stop(&ev) {
                return ev;
            }
            if let Some(end) = self.run.on_event(&mut self.alice, ev.clone(), phase).await {
                panic!("the loop ended at {ev:?}: {}", describe(&end));
            }
        }
    }

    /// Hands the agent's events to the loop until it ends.
    async fn events_to_the_end(&mut self, phase: &mut Phase) -> AgentEnd {
        loop {
            let ev = tokio::time::timeout(PATIENCE, phase.agent.next_event())
                .await
                .expect("an event from the agent");
            if let Some(end) = self.run.on_event(&mut self.alice, ev, phase).await {
                return end;
            }
        }
    }

    /// The prompts the fake agent took, in order.
    fn prompts(&self) -> Vec<String> {
        let file = self.daemon.dir().join("fake-acp").join("prompts.jsonl");
        std::fs::read_to_string(file)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter_map(|v| v["text"].as_str().map(str::to_string))
            .collect()
    }

    async fn task(&self, id: TaskId) -> teamboard_protocol::Task {
        self.lead.get_task(id).await.expect("the task").task
    }

    /// A team budget of `tokens` tokens.
    async fn budget(&self, tokens: u64) {
        use teamboard_protocol::request::SetBudgetArgs;
        use teamboard_protocol::spend::{BudgetScope, Limits};
        let limits = Limits {
            tokens: Some(tokens),
            ..Limits::default()
        };
        let args = SetBudgetArgs {
            scope: BudgetScope::Team,
            per_ms: None,
            limits,
        };
        self.lead.set_budget(args).await.expect("the budget");
    }
}

fn describe(end: &AgentEnd) -> String {
    match end {
        AgentEnd::Done => "done".into(),
        AgentEnd::GaveUp(why) => format!("gave up: {why}"),
        AgentEnd::StartFailed(e) => format!("start failed: {e}"),
        AgentEnd::Failed(why) => format!("failed: {why}"),
        AgentEnd::Refused => "refused".into(),
        AgentEnd::Lost => "lost".into(),
        AgentEnd::Stop(exit) => format!("stop: {exit}"),
        AgentEnd::Leave { .. } => "leave".into(),
        AgentEnd::OverBudget(why) => format!("over budget: {why}"),
        AgentEnd::LimitReached(limit) => format!("limit reached: {}", limit.reason),
    }
}

/// The race: the driver reports the end of the agent's turn, and before the
/// loop reads that, a message comes and the loop sends it on. The agent takes
/// the message in a turn of its own, and the task ends after it; the answer of
/// the turn before it, the work's, is the task's result, not the reply.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_that_ended_before_the_agent_took_a_message_does_not_end_the_task() {
    let mut f = Fixture::start().await;
    let id = f.hold("ANSWER: the answer before the note").await;
    let mut phase = f.phase().await;
    let ended = f
        .events_until(&mut phase, |ev| matches!(ev, AgentEvent::Idle { .. }))
        .await;
    // The turn has ended in the driver; the loop has not read it yet when the
    // message comes.
    let sent = f
        .lead
        .send("alice", MessageKind::Message, "A LATE NOTE", None)
        .await
        .expect("sent");
    let inbox = f
        .alice
        .session()
        .call(|c| async move { c.inbox().await })
        .await
        .expect("the inbox");
    let flow = inbox::on_messages(&mut f.alice, inbox, &mut phase)
        .await
        .expect("sent on");
    assert!(flow.is_none());
    let flow = f.run.on_event(&mut f.alice, ended, &mut phase).await;
    assert!(
        flow.is_none(),
        "the answer of the turn before the note ended the task: {}",
        flow.as_ref().map(describe).unwrap_or_default()
    );
    assert_eq!(f.task(id).await.status, TaskStatus::InProgress);
    let end = f.events_to_the_end(&mut phase).await;
    assert!(matches!(end, AgentEnd::Done), "{}", describe(&end));
    let done = f.task(id).await;
    assert_eq!(done.status, TaskStatus::Completed, "{done:#?}");
    assert_eq!(done.result.as_deref(), Some("the answer before the note"));
    // The note was answered, in a turn after the work's.
    let took = |p: &String| p.contains("A LATE NOTE") && p.contains(&format!("#{}", sent.id));
    assert!(f.prompts().iter().any(took), "{:#?}", f.prompts());
    phase.agent.stop().await;
}

/// The conversation about messages alone is resumed from one idle phase to
/// the next, until it has been started `MESSAGES_MAX_STARTS` times or is a day
/// old; then the next phase starts a new one, and says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_messages_conversation_is_started_afresh_once_it_has_worn_out() {
    use super::brief::now_ms;
    use crate::runtime::sessions::{MESSAGES, MESSAGES_MAX_AGE, MESSAGES_MAX_STARTS};
    let mut f = Fixture::start().await;
    let sessions = f.run.sessions.clone();
    let resume = |f: &mut Fixture| {
        f.run
            .inbox
            .push("[Message #1 from lead (message)] hi".into());
        f.run.brief(&mut f.alice, &f.member).resume
    };
    let started = |id: &str, resumed: bool, at: u64| {
        sessions
            .started(MESSAGES, RuntimeKind::Acp, id, resumed, at)
            .expect("recorded")
    };
    let now = now_ms();
    started("m1", false, now);
    for _ in 1..MESSAGES_MAX_STARTS {
        assert_eq!(resume(&mut f).as_deref(), Some("m1"));
        started("m1", true, now);
    }
    assert_eq!(resume(&mut f), None, "a worn-out conversation was resumed");
    let transcript = std::fs::read_to_string(teamboard_protocol::transcript::transcript_path(
        &f.alice.cfg().state_dir,
        "default",
        "alice",
    ))
    .expect("a transcript");
    assert!(
        transcript
            .contains("a new conversation about messages, not m1 (it has been started 10 times)"),
        "{transcript}"
    );
    // The new one is resumed, until it is a day old.
    started("m2", false, now);
    assert_eq!(resume(&mut f).as_deref(), Some("m2"));
    let day = MESSAGES_MAX_AGE.as_millis() as u64;
    started("m3", false, now - day - 1000);
    assert_eq!(resume(&mut f), None, "a day-old conversation was resumed");
    // A task's session is never started afresh, however often it was resumed.
    let id = f.hold("ANSWER: fine").await;
    sessions
        .started(id, RuntimeKind::Acp, "t1", false, now - day - 1000)
        .expect("recorded");
    for _ in 0..MESSAGES_MAX_STARTS {
        sessions
            .started(id, RuntimeKind::Acp, "t1", true, now)
            .expect("recorded");
    }
    assert_eq!(resume(&mut f).as_deref(), Some("t1"));
}

/// A budget that a call inside the turn runs out stops the turn there, and
/// the task goes back without using up an attempt; one that the call which
/// ended the turn runs out has nothing left to stop, and the turn's answer
/// completes the task.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spent_budget_stops_the_turn_unless_the_turn_is_over() {
    use crate::runtime::Usage;
    let mut f = Fixture::start().await;
    f.budget(100).await;
    let id = f.hold("SLEEP: 30").await;
    let mut phase = f.phase().await;
    f.events_until(&mut phase, |ev| matches!(ev, AgentEvent::Delivered(_)))
        .await;
    let call = Usage {
        tokens: teamboard_protocol::TokenUsage {
            input: 90,
            output: 20,
            ..Default::default()
        },
        model: Some("anthropic/claude-sonnet-4-5".into()),
        subscription: None,
        ends_turn: false,
    };
    let end = f
        .run
        .on_event(&mut f.alice, AgentEvent::Usage(call), &mut phase)
        .await;
    let Some(end @ AgentEnd::OverBudget(_)) = end else {
        panic!("the turn goes on: {:?}", end.as_ref().map(describe));
    };
    assert!(
        describe(&end).contains("team budget limit of 100 tokens reached: 110 tokens used"),
        "{}",
        describe(&end)
    );
    phase.agent.stop().await;
    let exit = f.run.settle(&mut f.alice, end).await.expect("settled");
    assert!(exit.is_none());
    let back = f.task(id).await;
    assert_eq!(back.status, TaskStatus::Pending, "{back:#?}");
    assert_eq!((back.attempts, back.last_error.as_deref()), (0, None));
    assert_eq!(back.tokens.total(), 110);

    // Room again; the fake agent's own usage (reported with its prompt's
    // end, as Gemini's) runs it out once more, with the turn already over.
    f.budget(111).await;
    let id = f.hold("ANSWER: the work is done").await;
    let mut phase = f.phase().await;
    let end = f.events_to_the_end(&mut phase).await;
    assert!(matches!(end, AgentEnd::Done), "{}", describe(&end));
    let done = f.task(id).await;
    assert_eq!(done.status, TaskStatus::Completed, "{done:#?}");
    assert_eq!(done.result.as_deref(), Some("the work is done"));
    let report = f.lead.budgets().await.expect("the budgets");
    assert!(report.budgets[0].exhausted.is_some(), "{report:#?}");
    phase.agent.stop().await;
}

/// A task held while a budget that covers it has no room left is given back
/// before its agent starts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_agent_starts_for_a_task_the_budget_has_no_room_for() {
    let mut f = Fixture::start().await;
    let id = f.hold("ANSWER: never").await;
    f.budget(1).await;
    f.alice
        .settle_agent_usage(teamboard_protocol::request::UsageArgs {
            tokens: teamboard_protocol::TokenUsage {
                input: 5,
                ..Default::default()
            },
            ..Default::default()
        })
        .await
        .expect("settled");
    let Fixture {
        daemon,
        lead,
        mut alice,
        mut run,
        member,
    } = f;
    run.member = Some(member);
    let exit = run.work(&mut alice).await.expect("the phase");
    assert!(exit.is_none());
    let back = lead.get_task(id).await.expect("the task").task;
    assert_eq!(back.status, TaskStatus::Pending, "{back:#?}");
    assert_eq!(back.attempts, 0);
    let prompts = daemon.dir().join("fake-acp").join("prompts.jsonl");
    assert!(!prompts.exists(), "the agent started");
}
