//! `teamctl budget`, `budget set` and `budget clear`, and the spend that
//! `teamctl team` and `task show` carry. Teammates' model calls are played by
//! protocol clients that reserve and settle them as teammated does.

use crate::{Cli, stderr, stdout};
use std::sync::Arc;
use teamboard_protocol::request::{ReserveArgs, UsageArgs};
use teamboard_protocol::spend::{AccountRef, RateLimits, RateSnapshot};
use teamboard_protocol::{Client, TokenUsage, now_ms};
use teamboard_testkit::{PATIENCE, eventually_blocking};

/// An account whose model no price table knows: its calls are unpriced.
fn account(name: &str) -> AccountRef {
    AccountRef {
        name: name.into(),
        model: "mock/no-price".into(),
        limits: RateLimits::default(),
        subscription: false,
    }
}

fn reserve(id: u64, task: Option<u64>, input: u64, output: u64, chain: &str) -> ReserveArgs {
    ReserveArgs {
        id,
        task,
        input,
        output,
        chain: vec![account(chain)],
    }
}

/// Settles reservation `id` with what the call used.
fn settled(id: u64, input: u64, output: u64) -> UsageArgs {
    UsageArgs {
        reservation: Some(id),
        tokens: TokenUsage {
            input,
            output,
            ..TokenUsage::default()
        },
        ..UsageArgs::default()
    }
}

/// The line of `teamctl team` for `name`.
fn member_line(team: &str, name: &str) -> String {
    team.lines()
        .find(|l| l.split_whitespace().next() == Some(name))
        .unwrap_or_else(|| panic!("no line for {name} in:\n{team}"))
        .to_string()
}

#[test]
fn with_no_budget_it_says_so_with_the_spend_and_an_example() {
    let d = Cli::start();
    let text = d.ok(&["budget"]);
    assert_eq!(
        text,
        "spent by team 'default', all time: 0 tokens (0 input), $0.00\n\
         no budgets in team 'default': nothing limits what its teammates spend\n\
         set one, e.g. `teamctl budget set --usd 5 --per 1d` ($5 a day for the team)\n"
    );
    assert_eq!(d.ok(&["budget", "show"]), text, "show is the default");
    let json = d.json(&["budget"]);
    assert_eq!(json["budgets"], serde_json::json!([]));
    assert_eq!(json["spent"]["tokens"], 0);
}

#[test]
fn a_team_budget_is_set_shown_changed_and_cleared() {
    let d = Cli::start();
    let out = d.run(&[
        "budget", "set", "--tokens", "50k", "--usd", "$0.50", "--per", "30m",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "team budget per 30m: $0.50 and 50k tokens \
         (a rolling window: only what was spent in the last 30m counts)\n"
    );
    assert!(
        stderr(&out).contains("refuses calls to models without a price")
            && stderr(&out).contains("~/.config/teamboard/prices.toml"),
        "{}",
        stderr(&out)
    );

    let text = d.ok(&["budget"]);
    let expected = "\
team budget per 30m (a rolling window: the last 30m counts)
           limit  spent  reserved   left
  tokens     50k      0         0    50k
  dollars  $0.50  $0.00     $0.00  $0.50
";
    assert!(text.contains(expected), "{text}");

    let json = d.json(&["budget"]);
    let b = &json["budgets"][0];
    assert_eq!(b["budget"]["scope"], "team");
    assert_eq!(b["budget"]["per_ms"], 1_800_000);
    assert_eq!(b["budget"]["limits"]["tokens"], 50_000);
    assert_eq!(b["budget"]["limits"]["usd"], 500_000);
    assert_eq!(b["spent"]["tokens"], 0);
    assert_eq!(b["reserved"]["tokens"], 0);

    // Setting it again changes the amounts named and keeps the others; the
    // --json answer is the budget.
    let set = d.json(&["budget", "set", "--input-tokens", "1.5M", "--per", "30m"]);
    assert_eq!(set["limits"]["input_tokens"], 1_500_000);
    assert_eq!(set["limits"]["tokens"], 50_000);
    assert_eq!(set["limits"]["usd"], 500_000);
    // An all-time limit is another budget.
    assert_eq!(
        d.ok(&["budget", "set", "--tokens", "2000000"]),
        "team budget: 2M tokens (for all time)\n"
    );
    assert_eq!(
        d.json(&["budget"])["budgets"].as_array().map(Vec::len),
        Some(2)
    );

    assert_eq!(
        d.ok(&["budget", "clear", "--per", "30m"]),
        "cleared the team budget per 30m (it was $0.50, 50k tokens and 1.5M input tokens)\n"
    );
    let cleared = d.json(&["budget", "clear"]);
    assert_eq!(cleared["limits"]["tokens"], 2_000_000);
    assert!(d.ok(&["budget"]).contains("no budgets in team 'default'"));
}

#[test]
fn mistakes_are_refused_with_what_to_write() {
    let d = Cli::start();
    let refused = |args: &[&str], code: i32, says: &str| {
        let out = d.run(args);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(says), "{args:?}: {}", stderr(&out));
        assert!(stdout(&out).is_empty(), "{args:?}: {}", stdout(&out));
    };
    refused(
        &["budget", "set", "--per", "1d"],
        1,
        "name at least one amount to limit: --tokens N, --input-tokens N or --usd X",
    );
    refused(
        &[
            "budget", "set", "--member", "alice", "--task", "1", "--tokens", "5",
        ],
        2,
        "'--member <NAME>' cannot be used with '--task <ID>'",
    );
    refused(
        &["budget", "set", "--tokens", "5x"],
        2,
        "'5x' is not a number of tokens; write it like 50000, 50k or 1.5M",
    );
    refused(
        &["budget", "set", "--usd", "five"],
        2,
        "'five' is not an amount of dollars; write it like 5, 0.50 or $0.50",
    );
    refused(
        &["budget", "set", "--tokens", "5", "--per", "3y"],
        2,
        "'y' is not a unit; use s, m, h, d or w",
    );
    refused(
        &["budget", "set", "--task", "9", "--tokens", "5"],
        1,
        "task #9 does not exist",
    );
    refused(
        &["budget", "clear", "--member", "alice"],
        1,
        "there is no teammate alice budget",
    );
    assert!(d.ok(&["budget"]).contains("no budgets"), "nothing was set");
}

#[test]
fn member_and_task_budgets_count_what_their_calls_spent() {
    let d = Cli::start();
    d.ok(&["task", "add", "parse"]);
    assert_eq!(
        d.ok(&["budget", "set", "--member", "alice", "--tokens", "5k"]),
        "teammate alice budget: 5k tokens (for all time)\n"
    );
    assert_eq!(
        d.ok(&[
            "budget",
            "set",
            "--task",
            "#1",
            "--input-tokens",
            "10k",
            "--per",
            "1d"
        ]),
        "task #1 budget per 1d: 10k input tokens \
         (a rolling window: only what was spent in the last 1d counts)\n"
    );
    let alice = d.teammate("alice", "coder");
    d.block_on(async {
        alice.claim_task(1).await.expect("claim");
        alice
            .reserve_call(reserve(1, Some(1), 3_000, 1_000, "work"))
            .await
            .expect("the first call fits");
        alice
            .settle_usage(settled(1, 3_000, 1_000))
            .await
            .expect("settle");
        // 4,000 more would pass alice's 5,000: refused before it is made.
        let refused = alice
            .reserve_call(reserve(2, Some(1), 3_000, 1_000, "work"))
            .await
            .expect_err("over alice's budget");
        assert!(
            refused.to_string().contains("teammate alice budget"),
            "{refused}"
        );
    });

    let text = d.ok(&["budget"]);
    assert!(
        text.starts_with(
            "spent by team 'default', all time: 4k tokens (3k input), $0.00; \
             4k tokens on models without a price\n"
        ),
        "{text}"
    );
    let alice_budget = "\
teammate alice budget, for all time
           limit  spent  reserved  left
  tokens      5k     4k         0    1k
  dollars      -  $0.00     $0.00     -
  4k tokens on models without a price: they count against token limits, never the dollar one
  exhausted: teammate alice budget limit of 5000 tokens reached: 4000 tokens used, \
and a call needs 4000 tokens
";
    assert!(text.contains(alice_budget), "{text}");
    let task_budget = "\
task #1 budget per 1d (a rolling window: the last 1d counts)
                limit  spent  reserved  left
  tokens            -     4k         0     -
  input tokens    10k     3k         0    7k
  dollars           -  $0.00     $0.00     -
";
    assert!(text.contains(task_budget), "{text}");
    assert!(
        text.contains("accounts boardd schedules calls on:\n  work  0 in flight, 0 waiting\n"),
        "{text}"
    );

    // The ledger, to the token.
    let json = d.json(&["budget"]);
    assert_eq!(json["spent"]["tokens"], 4_000);
    assert_eq!(json["spent"]["input_tokens"], 3_000);
    assert_eq!(json["unpriced_tokens"], 4_000);
    for b in json["budgets"].as_array().expect("budgets") {
        assert_eq!(b["spent"]["tokens"], 4_000, "{b}");
    }
    assert_eq!(json["accounts"][0]["name"], "work");

    let team = d.ok(&["team"]);
    let line = member_line(&team, "alice");
    assert!(
        line.contains("4.0k tokens (3.0k in, 0 cached, 1.0k out)  unpriced  "),
        "{line}"
    );
    assert!(line.contains("waiting: budget"), "{line}");
    assert!(
        line.contains("why: budget: teammate alice budget limit"),
        "{line}"
    );

    let show = d.ok(&["task", "show", "1"]);
    assert!(
        show.contains(
            "tokens:     4.0k tokens (3.0k in, 0 cached, 1.0k out)\ncost:       unpriced\n"
        ),
        "{show}"
    );

    // Raising the limit lets alice call again.
    d.ok(&["budget", "set", "--member", "alice", "--tokens", "50k"]);
    d.block_on(alice.reserve_call(reserve(3, Some(1), 3_000, 1_000, "work")))
        .expect("fits under the raised limit");
    let line = member_line(&d.ok(&["team"]), "alice");
    assert!(!line.contains("waiting"), "{line}");
    let text = d.ok(&["budget"]);
    assert!(
        text.contains("  tokens     50k     4k        4k   42k\n"),
        "{text}"
    );
    assert!(!text.contains("exhausted"), "{text}");
}

#[test]
fn team_shows_a_member_parked_behind_a_blocked_account_as_waiting() {
    let d = Cli::start();
    let bob = Arc::new(d.teammate("bob", "coder"));
    let reset = now_ms() + 12 * 60_000;
    d.block_on(async {
        bob.reserve_call(reserve(1, None, 1_000, 500, "work"))
            .await
            .expect("granted");
        // The provider says the account is capped until the reset.
        let mut usage = settled(1, 1_000, 200);
        usage.rate = Some(RateSnapshot {
            blocked_until_ms: Some(reset),
            blocked_reason: Some("usage_limit_reached".into()),
            ..RateSnapshot::default()
        });
        bob.settle_usage(usage).await.expect("settle");
        // The next call parks until the reset: nothing answers it in this test.
        let parked: Arc<Client> = Arc::clone(&bob);
        tokio::spawn(async move {
            parked
                .reserve_call(reserve(2, None, 1_000, 500, "work"))
                .await
        });
    });

    let line = eventually_blocking("bob waiting in `teamctl team`", PATIENCE, || {
        let line = member_line(&d.ok(&["team"]), "bob");
        line.contains("waiting:").then_some(line)
    });
    assert!(
        line.starts_with("bob  coder  waiting: rate limit (resets in 12m)  pid 4242"),
        "{line}"
    );
    assert!(
        line.ends_with("why: rate limit on work (usage_limit_reached)"),
        "{line}"
    );
    assert!(
        line.contains("1.2k tokens (1.0k in, 0 cached, 200 out)  unpriced"),
        "{line}"
    );
    assert!(
        !line.contains("working") && !line.contains("idle"),
        "{line}"
    );
    let json = d.json(&["team"]);
    assert_eq!(json[0]["waiting"]["until_ms"], reset);

    let text = d.ok(&["budget"]);
    assert!(
        text.contains("  work  0 in flight, 1 waiting  blocked until ")
            && text.contains(" UTC (in 12m): usage_limit_reached\n"),
        "{text}"
    );
    let account = &d.json(&["budget"])["accounts"][0];
    assert_eq!(account["waiting"], 1);
    assert_eq!(account["blocked_until_ms"], reset);
}
