//! What the ledger, the task, the member and the usage events report, held
//! against what the mock reported and the prices file's rates.

use crate::team::{RATES, Team, reported};
use serde_json::{Value, json};
use teamboard_protocol::spend::MicroUsd;
use teamboard_protocol::{TaskStatus, TokenUsage};
use teamboard_testkit::mock_llm::{MockLlm, MockReply, anthropic_message};
use teamboard_testkit::{PATIENCE, eventually};

/// A Messages API answer reporting `usage`, cached tokens included.
fn answer(content: Value, stop: &str, usage: TokenUsage) -> MockReply {
    let mut message = anthropic_message(content, stop, (usage.input, usage.output));
    message["usage"]["cache_read_input_tokens"] = json!(usage.cache_read);
    message["usage"]["cache_creation_input_tokens"] = json!(usage.cache_write);
    MockReply::json(200, message)
}

fn bash(n: u32, usage: TokenUsage) -> MockReply {
    let content = json!([
        {"type": "text", "text": "Checking."},
        {"type": "tool_use", "id": format!("toolu_{n}"), "name": "bash", "input": {"command": "true"}}
    ]);
    answer(content, "tool_use", usage)
}

fn usage(input: u64, output: u64, cache_read: u64, cache_write: u64) -> TokenUsage {
    TokenUsage {
        input,
        output,
        cache_read,
        cache_write,
    }
}

/// A call's price at [`RATES`], in whole micro-dollars (a dollar per million
/// tokens is a micro-dollar per token), rounded once per call as boardd does.
fn price(u: &TokenUsage) -> u64 {
    let [input, output, cache_read, cache_write] = RATES;
    let micros = u.input as f64 * input
        + u.output as f64 * output
        + u.cache_read as f64 * cache_read
        + u.cache_write as f64 * cache_write;
    micros.round() as u64
}

/// `$0.0231` as micro-dollars.
fn micros(dollars: &str) -> u64 {
    let (whole, frac) = dollars
        .trim_start_matches('$')
        .split_once('.')
        .unwrap_or_else(|| panic!("not dollars: {dollars}"));
    let frac = format!("{frac:0<6}");
    whole.parse::<u64>().expect("dollars") * 1_000_000 + frac.parse::<u64>().expect("cents")
}

/// A usage event's tokens and price, from its line:
/// `alice used 5500 input (1200 fresh, 0 cache read, 4300 cache write) + 300
/// output tokens ($0.0231)`.
fn event_usage(detail: &str) -> (TokenUsage, u64) {
    let numbers: Vec<u64> = detail
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|w| w.parse().ok())
        .collect();
    let dollars = detail
        .rsplit_once("($")
        .and_then(|(_, rest)| rest.split_once(')'))
        .map(|(d, _)| micros(d))
        .unwrap_or_else(|| panic!("no price in {detail}"));
    let tokens = match numbers.as_slice() {
        [_, fresh, read, write, output, ..] if detail.contains("cache read") => {
            usage(*fresh, *output, *read, *write)
        }
        [input, output, ..] => usage(*input, *output, 0, 0),
        _ => panic!("no tokens in {detail}"),
    };
    (tokens, dollars)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ledger_the_task_the_member_and_the_events_agree_with_the_mock() {
    let script = [
        usage(1_200, 300, 0, 4_000),
        usage(200, 150, 4_000, 800),
        usage(100, 80, 4_800, 0),
        usage(57, 41, 4_800, 412),
    ];
    let mock = MockLlm::start(vec![
        bash(1, script[0]),
        bash(2, script[1]),
        bash(3, script[2]),
        answer(
            json!([{"type": "text", "text": "All done."}]),
            "end_turn",
            script[3],
        ),
    ]);
    let team = Team::start(mock).await;
    // A limit in dollars too: the calls must be priced to be granted.
    team.set_team_budget(Some(1_000_000), Some(MicroUsd(5_000_000)))
        .await;
    let task = team.add("a short job").await;
    let alice = team.spawn("alice");
    eventually("the job to complete", PATIENCE, || async {
        let (t, _) = team.task(task.id).await;
        t.status.is_ended().then_some(t)
    })
    .await;
    let (t, _) = team.task(task.id).await;
    assert_eq!(
        t.status,
        TaskStatus::Completed,
        "{t:#?}\n{}",
        alice.log_text()
    );

    // What the mock reported is what was scripted, call by call.
    assert_eq!(reported(&team.mock), script);
    let mut tokens = TokenUsage::default();
    for u in script {
        tokens.add(u);
    }
    let usd = MicroUsd(script.iter().map(price).sum());

    // The ledger, the budget, the task and the member, to the token and the
    // micro-dollar.
    let report = team.budgets().await;
    assert_eq!(report.spent.tokens, tokens.total(), "{report:#?}");
    assert_eq!(report.spent.input_tokens, tokens.all_input());
    assert_eq!(report.spent.usd, usd, "{report:#?}");
    assert_eq!(report.unpriced_tokens, 0);
    let state = &report.budgets[0];
    assert_eq!(state.spent, report.spent, "{state:#?}");
    assert_eq!(state.reserved.tokens, 0);
    assert_eq!(t.tokens, tokens, "{t:#?}");
    assert_eq!(t.cost.usd, usd);
    assert_eq!(t.cost.unpriced_tokens, 0);
    let member = team.member("alice").await;
    assert_eq!(member.tokens, tokens, "{member:#?}");
    assert_eq!(member.cost.usd, usd);
    assert!(!member.tokens_estimated);

    // One usage event per call, each with the call's tokens and price.
    let events = team.usage_events().await;
    let lines: Vec<(TokenUsage, u64)> = events.iter().map(|e| event_usage(&e.detail)).collect();
    let expected: Vec<(TokenUsage, u64)> = script.iter().map(|u| (*u, price(u))).collect();
    assert_eq!(lines, expected, "{events:#?}");
    assert!(
        events.iter().all(|e| e.task == Some(task.id)),
        "{events:#?}"
    );
}
