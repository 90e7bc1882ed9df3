//! One runaway teammate under a 50k-token team budget.

use crate::team::{Team, budget_releases, long_enough_for_a_poll, reported_total, saying};
use crate::{CALL_TOKENS, runaway_mock};
use teamboard_protocol::{MemberStatus, TaskStatus};
use teamboard_testkit::{PATIENCE, eventually};

const CAP: u64 = 50_000;
const RAISED: u64 = 200_000;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runaway_teammate_stops_at_its_budget_and_goes_on_once_it_is_raised() {
    let team = Team::start(runaway_mock()).await;
    team.set_team_budget(Some(CAP), None).await;
    let task = team.add("run away").await;
    let alice = team.spawn("alice");
    team.wait_budget_releases(task.id, 1, &alice).await;
    let calls = team.mock.calls();

    // Stopped inside the turn, at the cap or one call past it at most.
    let report = team.budgets().await;
    let spent = report.spent.tokens;
    assert!(calls >= 1, "{}", alice.log_text());
    eprintln!("cap {CAP}: {calls} calls, {spent} tokens spent");
    assert_eq!(spent, calls as u64 * CALL_TOKENS, "{report:#?}");
    assert_eq!(spent, reported_total(&team.mock).total());
    assert!(spent <= CAP + CALL_TOKENS, "{report:#?}");
    let state = &report.budgets[0];
    assert_eq!(state.spent.tokens, spent);
    assert_eq!(state.reserved.tokens, 0, "{state:#?}");
    assert!(state.exhausted.is_some(), "{state:#?}");

    // Given back, not failed: the claim's attempt was handed back with it.
    let (t, _) = team.task(task.id).await;
    assert_eq!(t.status, TaskStatus::Pending, "{t:#?}");
    assert_eq!(t.owner, None);
    assert_eq!(t.attempts, 0, "{t:#?}");
    assert_eq!(t.last_error, None, "{t:#?}");
    assert!(
        t.handoff
            .as_deref()
            .is_some_and(|h| h.starts_with("budget exhausted")),
        "{t:#?}"
    );
    assert_eq!(t.tokens.total(), spent, "{t:#?}");

    // The roster says why alice waits; the lead heard once of 80% and once
    // of the end.
    let member = team.member("alice").await;
    let waiting = member.waiting.clone().expect("alice waits");
    assert!(waiting.reason.starts_with("budget"), "{member:#?}");
    assert_eq!(member.tokens.total(), spent);
    let said = team.boardd_said().await;
    assert_eq!(saying(&said, "budget exhausted"), 1, "{said:#?}");
    assert_eq!(saying(&said, "budget warning"), 1, "{said:#?}");

    // Idle, it asks for no model call and gets no task back.
    eventually("alice to go idle", PATIENCE, || async {
        (team.member("alice").await.status == MemberStatus::Idle).then_some(())
    })
    .await;
    long_enough_for_a_poll().await;
    assert_eq!(team.mock.calls(), calls, "{}", alice.log_text());
    let (t, history) = team.task(task.id).await;
    assert_eq!((t.status, t.attempts), (TaskStatus::Pending, 0), "{t:#?}");
    assert_eq!(budget_releases(&history), 1);

    // Raised, the budget lets alice claim the task again and call again,
    // until the new limit runs out in turn.
    team.set_team_budget(Some(RAISED), None).await;
    tokio::time::timeout(PATIENCE, team.mock.wait_for_calls(calls + 1))
        .await
        .unwrap_or_else(|_| panic!("no call after the raise; log:\n{}", alice.log_text()));
    team.wait_budget_releases(task.id, 2, &alice).await;
    let report = team.budgets().await;
    let spent = report.spent.tokens;
    eprintln!("raised to {RAISED}: {spent} tokens spent in all");
    assert!(spent > CAP, "{report:#?}");
    assert!(spent <= RAISED + CALL_TOKENS, "{report:#?}");
    assert_eq!(spent, reported_total(&team.mock).total());
    let (t, history) = team.task(task.id).await;
    assert_eq!((t.status, t.attempts), (TaskStatus::Pending, 0), "{t:#?}");
    let claims = history
        .iter()
        .filter(|e| e.kind == teamboard_protocol::EventKind::TaskClaimed)
        .count();
    assert_eq!(claims, 2, "{history:#?}");
    // A new limit is a new story: the lead hears of it once more.
    let said = team.boardd_said().await;
    assert_eq!(saying(&said, "budget exhausted"), 2, "{said:#?}");
    assert_eq!(saying(&said, "budget warning"), 2, "{said:#?}");
}
