//! A budget through `kill -9` of boardd in the middle of a run.

use crate::team::{Team, long_enough_for_a_poll, reported_total, saying};
use crate::{CALL, CALL_TOKENS};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use teamboard_protocol::{EventKind, TaskStatus};
use teamboard_testkit::mock_llm::{MockLlm, endless_tool_calls};
use teamboard_testkit::{PATIENCE, eventually};

const CAP: u64 = 100_000;

/// The call boardd is killed under: past 80% of the cap, so that the lead
/// was warned before the kill.
const KILLED_UNDER: usize = 9;

/// How long the mock takes to answer that call: long enough that boardd
/// surely dies with it in flight (and with no request of the teammate's half
/// answered), so that the teammate settles it with the boardd that comes
/// after.
const ANSWER_DELAY: Duration = Duration::from_secs(3);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_budget_and_its_ledger_survive_kill_9_of_boardd_in_the_middle_of_a_run() {
    let mock = MockLlm::start(Vec::new());
    let endless = endless_tool_calls("bash", serde_json::json!({"command": "true"}), Some(CALL));
    let seen = AtomicUsize::new(0);
    mock.set_responder(move |r| {
        let reply = endless(r)?;
        let n = seen.fetch_add(1, Ordering::Relaxed) + 1;
        Some(if n == KILLED_UNDER {
            reply.with_delay(ANSWER_DELAY)
        } else {
            reply
        })
    });
    let mut team = Team::start(mock).await;
    team.set_team_budget(Some(CAP), None).await;
    let task = team.add("run away").await;
    let alice = team.spawn("alice");

    // Killed once that call reached the mock, which is still answering it.
    tokio::time::timeout(PATIENCE, team.mock.wait_for_calls(KILLED_UNDER))
        .await
        .unwrap_or_else(|_| panic!("{KILLED_UNDER} calls; log:\n{}", alice.log_text()));
    let held = team.budgets().await;
    let before = held.spent.tokens;
    let reserved = held.budgets[0].reserved.tokens;
    eprintln!("killed with {before} tokens spent and {reserved} reserved");
    assert_eq!(before, (KILLED_UNDER as u64 - 1) * CALL_TOKENS, "{held:#?}");
    assert!(reserved > 0, "no call in flight: {held:#?}");
    team.kill9_and_restart().await;

    // The limit and what was spent are still there.
    let report = team.budgets().await;
    assert_eq!(report.budgets.len(), 1, "{report:#?}");
    assert_eq!(report.budgets[0].budget.limits.tokens, Some(CAP));
    // The call in flight is held still, or settled already by alice.
    let held_or_settled = report.budgets[0].reserved.tokens == reserved
        || report.spent.tokens == before + CALL_TOKENS;
    assert!(report.spent.tokens >= before, "{report:#?} < {before}");
    assert!(held_or_settled, "{report:#?}");

    // alice goes on with the new boardd, and stops at the cap.
    team.wait_budget_releases(task.id, 1, &alice).await;
    let report = team.wait_stopped().await;
    let spent = report.spent.tokens;
    let reported = reported_total(&team.mock).total();
    assert!(
        reported > KILLED_UNDER as u64 * CALL_TOKENS,
        "no call after the restart: {}",
        alice.log_text()
    );
    assert!(spent <= CAP + CALL_TOKENS, "{report:#?}");
    assert!(reported <= CAP + CALL_TOKENS, "{reported}");
    eprintln!("cap {CAP}: {spent} tokens spent, {reported} reported by the mock");
    assert_eq!(spent, reported, "{report:#?}");
    let (t, _) = team.task(task.id).await;
    assert_eq!((t.status, t.attempts), (TaskStatus::Pending, 0), "{t:#?}");
    assert_eq!(t.tokens.total(), spent, "{t:#?}");
    // The call in flight was settled with what the mock reported, not charged
    // at its worst case as an orphan.
    assert!(!team.member("alice").await.tokens_estimated);
    // The lead heard of 80% before the kill and of the end after it: once each.
    let said = team.boardd_said().await;
    assert_eq!(saying(&said, "budget warning"), 1, "{said:#?}");
    assert_eq!(saying(&said, "budget exhausted"), 1, "{said:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exhausted_budget_stays_exhausted_through_a_restart_of_boardd() {
    // Not a whole number of calls: the last one that fits leaves room, too
    // little for the next.
    const CAP: u64 = 5 * CALL_TOKENS + CALL_TOKENS / 2;
    let mut team = Team::start(crate::runaway_mock()).await;
    team.set_team_budget(Some(CAP), None).await;
    let task = team.add("run away").await;
    let alice = team.spawn("alice");
    team.wait_budget_releases(task.id, 1, &alice).await;
    let calls = team.mock.calls();
    team.kill9_and_restart().await;

    // alice is back, and waits: no claim, no call, no second word to the lead.
    eventually("alice to reconnect", PATIENCE, || async {
        team.member("alice").await.connected.then_some(())
    })
    .await;
    long_enough_for_a_poll().await;
    assert_eq!(team.mock.calls(), calls, "{}", alice.log_text());
    let (t, history) = team.task(task.id).await;
    let claims = history
        .iter()
        .filter(|e| e.kind == EventKind::TaskClaimed)
        .count();
    assert_eq!(claims, 1, "{history:#?}");
    assert_eq!((t.status, t.attempts), (TaskStatus::Pending, 0), "{t:#?}");
    let report = team.budgets().await;
    assert!(report.budgets[0].exhausted.is_some(), "{report:#?}");
    let said = team.boardd_said().await;
    assert_eq!(saying(&said, "budget exhausted"), 1, "{said:#?}");
    assert_eq!(saying(&said, "budget warning"), 1, "{said:#?}");
}
