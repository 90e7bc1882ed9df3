//! Rate limits that schedule instead of fail, through real `teammated`
//! processes and boardd, against mock providers that enforce limits the way
//! the real APIs do (see `mock_llm::limits`).
//!
//! - Many teammates on one account whose provider allows a fixed number of
//!   calls per window: no task fails, no call reaches the provider before a
//!   `retry-after` it was given, and the calls that get through keep up with
//!   what the provider allows.
//! - An account capped by a usage limit with a reset time (Codex's
//!   `usage_limit_reached`): the teammate fails over to the next account of
//!   its chain, never calls the capped one before the reset, and returns to it
//!   after.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "test code: a panic fails the test, and the harness captures what it prints"
)]

use std::time::{Duration, SystemTime};
use teamboard_protocol::TaskStatus;
use teamboard_testkit::mock_llm::{MockLlm, MockReply, Rate};
use teamboard_testkit::{Board, PATIENCE, eventually};

const TEAMMATED: &str = env!("CARGO_BIN_EXE_teammated");

/// The provider's allowance: this many calls per window.
const PER_WINDOW: u32 = 8;
const WINDOW: Duration = Duration::from_secs(2);
const TEAMMATES: usize = 16;
/// Enough calls for several full windows.
const TASKS: usize = 48;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixteen_teammates_keep_to_a_providers_rate_without_failing_or_calling_early() {
    keep_to(Rate::requests(PER_WINDOW, WINDOW), 0.9).await;
}

/// A provider that sends no limit headers: the teammates learn of the rate
/// from its 429s alone, and every `retry-after` holds the whole account.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_no_limit_headers_429s_hold_the_account_until_their_retry_after() {
    // Each 429 costs the rest of its window rounded up to a whole second, so
    // the floor is lower than with the headers.
    keep_to(Rate::requests(PER_WINDOW, WINDOW).without_headers(), 0.75).await;
}

/// Runs [`TASKS`] one-call tasks on [`TEAMMATES`] teammates sharing one
/// account whose provider enforces `rate`; the windows between the first and
/// the last must let through at least `floor` of what the rate allows.
async fn keep_to(rate: Rate, floor: f64) {
    let mut board = Board::start(TEAMMATED).await;
    let replies = (0..TASKS)
        .map(|_| MockReply::openai_text("Done."))
        .collect();
    let mock = MockLlm::start(replies);
    mock.enforce_rate(rate);
    let url = mock.url();
    let mut mates = Vec::new();
    for i in 0..TEAMMATES {
        let name = format!("m{i}");
        mates.push(board.spawn(
            &name,
            "dev",
            &[
                "--provider",
                "openai",
                "--base-url",
                &url,
                "--account",
                "shared",
            ],
        ));
    }
    for i in 0..TEAMMATES {
        board.wait_idle(&format!("m{i}")).await;
    }
    let mut ids = Vec::new();
    for i in 0..TASKS {
        ids.push(board.add(&format!("t{i}"), "Say done.", &[]).await.id);
    }
    let tasks = board.wait_done(&ids).await;
    let failed: Vec<_> = tasks
        .iter()
        .filter(|t| t.status != TaskStatus::Completed)
        .collect();
    assert!(failed.is_empty(), "no task fails: {failed:#?}");
    // No teammate calls again before the `retry-after` of its own 429.
    let all = mock.requests();
    let caller = |r: &teamboard_testkit::mock_llm::RecordedRequest| {
        let text = r.body.to_string();
        (0..TEAMMATES)
            .rev()
            .find(|i| text.contains(&format!("You are m{i},")))
    };
    for (i, r) in all.iter().enumerate() {
        let Some(throttle) = r.throttled else {
            continue;
        };
        let next = all[i + 1..].iter().find(|n| caller(n) == caller(r));
        if let Some(next) = next {
            assert!(
                next.received_at >= throttle.until,
                "m{:?} called again {:?} before its retry-after",
                caller(r),
                throttle.until - next.received_at
            );
        }
    }
    // With the provider's headers, no call at all reaches it before a
    // retry-after it gave anyone: boardd keeps to the window and sends no
    // call into a spent one. Without them, the calls already on their way
    // when the first 429 of a window comes back cannot know of it.
    if rate.headers {
        let early = mock.early_calls();
        assert!(
            early.is_empty(),
            "{} calls reached the provider before a retry-after it had given",
            early.len()
        );
    }
    // Throughput: the windows between the first and the last are full.
    let windows = mock.rate_windows();
    assert!(windows.len() >= 4, "{windows:?}");
    let middle = &windows[1..windows.len() - 1];
    let through: u32 = middle.iter().map(|w| w.calls).sum();
    let allowed = PER_WINDOW * middle.len() as u32;
    let ratio = f64::from(through) / f64::from(allowed);
    println!(
        "rate limit (headers: {}): {through} calls through in {} full windows, {allowed} allowed: {:.0}%; \
         429s: {}",
        rate.headers,
        middle.len(),
        ratio * 100.0,
        mock.requests()
            .iter()
            .filter(|r| r.throttled.is_some())
            .count()
    );
    assert!(
        ratio >= floor,
        "throughput {ratio:.2} of the rate: {windows:?}"
    );
    drop(mates);
    board.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_capped_account_fails_over_and_is_used_again_after_its_reset() {
    let mut board = Board::start(TEAMMATED).await;
    let capped = MockLlm::start((0..4).map(|_| MockReply::openai_text("Done.")).collect());
    let spare = MockLlm::start((0..4).map(|_| MockReply::openai_text("Done.")).collect());
    // A whole second ahead at least: `resets_at` is in whole seconds.
    let reset = SystemTime::now() + Duration::from_secs(4);
    capped.usage_limit_until(reset);
    let providers = board.dir().join("providers.toml");
    std::fs::write(
        &providers,
        format!(
            "[accounts.spare]\nprovider = \"openai\"\nbase_url = \"{}\"\n",
            spare.url()
        ),
    )
    .unwrap();
    let capped_url = capped.url();
    let alice = board.spawn(
        "alice",
        "dev",
        &[
            "--provider",
            "openai",
            "--base-url",
            &capped_url,
            "--account",
            "plus",
            "--fallback",
            "spare",
            "--providers",
            providers.to_str().unwrap(),
        ],
    );
    board.wait_idle("alice").await;
    let first = board.add("first", "Say done.", &[]).await;
    board.wait_done(&[first.id]).await;
    assert_eq!(board.task(first.id).await.status, TaskStatus::Completed);
    assert_eq!(capped.calls(), 1, "the capped account is called once");
    assert_eq!(spare.calls(), 1, "and the call goes to the spare");
    let report = board.lead.budgets().await.unwrap();
    let plus = report.accounts.iter().find(|a| a.name == "plus").unwrap();
    assert_eq!(plus.blocked_reason.as_deref(), Some("usage_limit_reached"));
    // Before the reset: the spare again.
    let second = board.add("second", "Say done.", &[]).await;
    board.wait_done(&[second.id]).await;
    assert_eq!(capped.calls(), 1, "never called again before its reset");
    assert_eq!(spare.calls(), 2);
    // After it: back to the first account.
    eventually("the reset", PATIENCE, || async {
        (SystemTime::now() > reset + Duration::from_millis(1_100)).then_some(())
    })
    .await;
    let third = board.add("third", "Say done.", &[]).await;
    board.wait_done(&[third.id]).await;
    assert_eq!(board.task(third.id).await.status, TaskStatus::Completed);
    assert_eq!(
        capped.calls(),
        2,
        "back to the first account after the reset"
    );
    assert_eq!(spare.calls(), 2);
    assert!(capped.early_calls().is_empty());
    drop(alice);
    board.stop().await;
}

/// A fallback account's key is read from the variable the providers file
/// names, and then taken out of the environment like the primary's: nothing
/// the model runs sees it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fallback_accounts_key_is_not_in_the_tools_environment() {
    let mut board = Board::start(TEAMMATED).await;
    let mock = MockLlm::start(vec![
        MockReply::openai_tool_call("call_1", "bash", r#"{"command":"env"}"#),
        MockReply::openai_text("Done."),
    ]);
    let spare = MockLlm::start(Vec::new());
    let providers = board.dir().join("providers.toml");
    std::fs::write(
        &providers,
        format!(
            "[accounts.spare]\nprovider = \"openai\"\nbase_url = \"{}\"\nkey_env = \"SPARE_SECRET_KEY\"\n",
            spare.url()
        ),
    )
    .unwrap();
    let url = mock.url();
    let alice = board.spawn_with_env(
        "alice",
        "dev",
        &[
            "--provider",
            "openai",
            "--base-url",
            &url,
            "--fallback",
            "spare",
            "--providers",
            providers.to_str().unwrap(),
        ],
        &[("SPARE_SECRET_KEY", "sk-spare-secret")],
    );
    board.wait_idle("alice").await;
    let t = board.add("env", "Show the environment.", &[]).await;
    board.wait_done(&[t.id]).await;
    let calls = mock.requests();
    assert_eq!(calls.len(), 2, "{}", alice.log_text());
    let seen = calls[1].body.to_string();
    assert!(seen.contains("PATH="), "env ran: {seen}");
    assert!(
        !seen.contains("sk-spare-secret"),
        "the key reached the model"
    );
    drop(alice);
    board.stop().await;
}
