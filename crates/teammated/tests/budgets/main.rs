//! Budgets end to end: real `boardd` and `teammated` processes against the
//! mock LLM, which reports a known usage for every call and remembers it, so
//! that what the ledger counts can be held against what the provider said.
//!
//! - `single`: one runaway teammate stops inside its turn at its budget, makes
//!   no further call, gives the task back without using up an attempt, and
//!   goes on once the limit is raised.
//! - `concurrent`: twenty teammates on one team cap pass it by at most one
//!   call each, and the ledger matches the mock to the token.
//! - `reports`: tokens (cached apart) and dollars agree across the ledger, the
//!   task, the member, the usage events and the mock.
//! - `restart`: a budget and its ledger survive `kill -9` of boardd in the
//!   middle of a run, and the cap still holds after it.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "test code: a panic fails the test, and the harness captures what it prints"
)]

mod concurrent;
mod reports;
mod restart;
mod single;
mod team;

/// The binary under test, built by cargo for this package's tests.
const TEAMMATED: &str = env!("CARGO_BIN_EXE_teammated");

/// What each call of a runaway teammate reports: 9,000 tokens in, 1,000 out.
const CALL: (u64, u64) = (9_000, 1_000);
const CALL_TOKENS: u64 = CALL.0 + CALL.1;

/// A mock whose every answer is one more `bash true`, at [`CALL`] each: a
/// teammate that never ends its turn by itself.
fn runaway_mock() -> teamboard_testkit::mock_llm::MockLlm {
    let mock = teamboard_testkit::mock_llm::MockLlm::start(Vec::new());
    mock.set_responder(teamboard_testkit::mock_llm::endless_tool_calls(
        "bash",
        serde_json::json!({"command": "true"}),
        Some(CALL),
    ));
    mock
}
