//! The harness: a real `boardd` process (killable with `kill -9` and started
//! again on the same state), the lead's client, real `teammated` processes on
//! the Anthropic API, and the mock that answers them and remembers what usage
//! it reported.

use std::path::{Path, PathBuf};
use std::time::Duration;
use teamboard_protocol::request::{NewTask, SetBudgetArgs};
use teamboard_protocol::spend::{BudgetReport, BudgetScope, Limits, MicroUsd};
use teamboard_protocol::{
    Client, Event, EventKind, Member, Message, Task, TaskId, TaskStatus, TokenUsage,
};
use teamboard_testkit::mock_llm::MockLlm;
use teamboard_testkit::{Daemon, PATIENCE, Teammate, Teammated, eventually, lead, short_tempdir};
use tempfile::TempDir;

/// The model the teammates call, as boardd prices it: a name no catalog
/// knows, so that its only price is the one the prices file gives.
pub const MODEL: &str = "budget-mock";

/// Its rates in dollars per million tokens (a micro-dollar per token): fresh
/// input, output, cache read, cache write. Exact in binary, so that a test can
/// work out a call's price in whole numbers.
pub const RATES: [f64; 4] = [3.0, 15.0, 0.25, 3.75];

/// How often an idle teammate renews its wait on boardd, in seconds: the
/// longest it could take to act on something boardd did not push to it.
pub const POLL_SECS: f64 = 1.0;

/// A boardd, its lead, and the mock its teammates call.
pub struct Team {
    pub daemon: Daemon,
    pub lead: Client,
    pub mock: MockLlm,
    teammated: Teammated,
    prices: PathBuf,
    // Last: the daemon is killed before its directory goes.
    dir: TempDir,
}

impl Team {
    /// Starts boardd, with the prices file, short leases and a short restart
    /// grace.
    pub async fn start(mock: MockLlm) -> Team {
        let dir = short_tempdir();
        let socket = dir.path().join("s");
        let state_dir = dir.path().join("state");
        let prices = dir.path().join("prices.toml");
        let [input, output, cache_read, cache_write] = RATES;
        std::fs::write(
            &prices,
            format!(
                "[models.\"anthropic/{MODEL}\"]\ninput = {input:?}\noutput = {output:?}\n\
                 cache_read = {cache_read:?}\ncache_write = {cache_write:?}\n"
            ),
        )
        .expect("write the prices file");
        let daemon = Daemon::start(&socket, &state_dir, &boardd_flags(&prices)).await;
        let lead = lead(&socket).await;
        let teammated = Teammated::new(crate::TEAMMATED, &socket, &state_dir);
        Team {
            daemon,
            lead,
            mock,
            teammated,
            prices,
            dir,
        }
    }

    /// `kill -9` of boardd, then a new one on the same socket and state, and
    /// the lead connected to it.
    pub async fn kill9_and_restart(&mut self) {
        self.daemon.kill9();
        let (socket, state_dir) = (self.daemon.socket.clone(), self.daemon.state_dir.clone());
        self.daemon = Daemon::start(&socket, &state_dir, &boardd_flags(&self.prices)).await;
        self.lead = lead(&socket).await;
    }

    /// Starts a teammate of role `dev` on the mock: the Anthropic API with a
    /// dummy key, retries at once, rounds without end.
    pub fn spawn(&self, name: &str) -> Teammate {
        let workdir = self.dir.path().join(format!("work-{name}"));
        std::fs::create_dir_all(&workdir).expect("workdir");
        let log = self.dir.path().join(format!("{name}.log"));
        let url = self.mock.url();
        let poll = POLL_SECS.to_string();
        let flags = [
            "--provider",
            "anthropic",
            "--base-url",
            &url,
            "--model",
            MODEL,
            "--retry-base-ms",
            "1",
            "--max-rounds",
            "10000",
            "--poll-interval",
            &poll,
            "--idle-timeout",
            "600",
        ];
        let env = [("ANTHROPIC_API_KEY", "sk-test-budgets")];
        self.teammated
            .spawn(name, "dev", &workdir, &log, &flags, &env)
    }

    pub async fn add(&self, subject: &str) -> Task {
        let task = NewTask {
            subject: subject.into(),
            description: "Keep working until you are stopped.".into(),
            ..NewTask::default()
        };
        self.lead.add_task(task).await.expect("add_task")
    }

    /// Sets the team's all-time limit.
    pub async fn set_team_budget(&self, tokens: Option<u64>, usd: Option<MicroUsd>) {
        let limits = Limits {
            tokens,
            usd,
            ..Limits::default()
        };
        let args = SetBudgetArgs {
            scope: BudgetScope::Team,
            per_ms: None,
            limits,
        };
        self.lead.set_budget(args).await.expect("set_budget");
    }

    pub async fn budgets(&self) -> BudgetReport {
        self.lead.budgets().await.expect("budgets")
    }

    pub async fn task(&self, id: TaskId) -> (Task, Vec<Event>) {
        let detail = self.lead.get_task(id).await.expect("get_task");
        (detail.task, detail.history)
    }

    pub async fn member(&self, name: &str) -> Member {
        let team = self.lead.team().await.expect("team");
        team.into_iter()
            .find(|m| m.name == name)
            .unwrap_or_else(|| panic!("{name} is not on the roster"))
    }

    /// What boardd told the lead.
    pub async fn boardd_said(&self) -> Vec<Message> {
        let inbox = self.lead.inbox().await.expect("inbox");
        inbox.into_iter().filter(|m| m.from == "boardd").collect()
    }

    /// Waits until task `id` has been given back `times` times for a budget.
    pub async fn wait_budget_releases(&self, id: TaskId, times: usize, by: &Teammate) {
        let what = with_log(by, format!("#{id} released {times} time(s) for a budget"));
        eventually(what, PATIENCE, || async {
            let (_, history) = self.task(id).await;
            (budget_releases(&history) >= times).then_some(())
        })
        .await;
    }

    /// Waits until a budget ran out, no call holds a reservation and no task
    /// is in progress: every teammate has stopped calling, and none may claim
    /// a task again.
    pub async fn wait_stopped(&self) -> BudgetReport {
        let what = "a budget exhausted, every call settled and every task given back";
        eventually(what, PATIENCE, || async {
            let report = self.budgets().await;
            let exhausted = report.budgets.iter().any(|b| b.exhausted.is_some());
            let reserved: u64 = report.budgets.iter().map(|b| b.reserved.tokens).sum();
            let tasks = self.lead.list_tasks(None).await.expect("list_tasks");
            let busy = tasks.iter().any(|t| t.status == TaskStatus::InProgress);
            (exhausted && reserved == 0 && !busy).then_some(report)
        })
        .await
    }

    /// Every usage event of the team so far.
    pub async fn usage_events(&self) -> Vec<Event> {
        let args = teamboard_protocol::request::EventsArgs {
            limit: Some(100_000),
            ..Default::default()
        };
        let events = self.lead.events(args).await.expect("events");
        events
            .into_iter()
            .filter(|e| e.kind == EventKind::UsageRecorded)
            .collect()
    }
}

fn boardd_flags(prices: &Path) -> Vec<&str> {
    let prices = prices.to_str().expect("a UTF-8 temporary path");
    vec![
        "--lease-ttl",
        "3",
        "--restart-grace",
        "10",
        "--prices",
        prices,
    ]
}

/// How many of `said` start with `prefix` (`budget exhausted`).
pub fn saying(said: &[Message], prefix: &str) -> usize {
    said.iter()
        .filter(|m| m.content.starts_with(prefix))
        .count()
}

/// The times the history shows the task given back for a budget.
pub fn budget_releases(history: &[Event]) -> usize {
    history
        .iter()
        .filter(|e| e.kind == EventKind::TaskReleased && e.detail.contains("budget exhausted"))
        .count()
}

/// What the mock reported, call by call, in the ledger's terms.
pub fn reported(mock: &MockLlm) -> Vec<TokenUsage> {
    mock.requests()
        .iter()
        .map(|r| {
            let u = &r.answered_usage;
            let n = |k: &str| u[k].as_u64().unwrap_or(0);
            TokenUsage {
                input: n("input_tokens"),
                output: n("output_tokens"),
                cache_read: n("cache_read_input_tokens"),
                cache_write: n("cache_creation_input_tokens"),
            }
        })
        .collect()
}

/// The sum of what the mock reported.
pub fn reported_total(mock: &MockLlm) -> TokenUsage {
    let mut sum = TokenUsage::default();
    for u in reported(mock) {
        sum.add(u);
    }
    sum
}

/// Sleeps for an absence to show: what the teammate would have done by now,
/// had it been going to. Only for that: a presence is waited for.
pub async fn long_enough_for_a_poll() {
    tokio::time::sleep(Duration::from_secs_f64(POLL_SECS * 2.0)).await;
}

/// `what` a failed wait waited for, with `by`'s log, read only then.
fn with_log(by: &Teammate, what: String) -> impl std::fmt::Display + '_ {
    Later(move || format!("{what}; {}'s log:\n{}", by.name, by.log_text()))
}

struct Later<F>(F);

impl<F: Fn() -> String> std::fmt::Display for Later<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&(self.0)())
    }
}
