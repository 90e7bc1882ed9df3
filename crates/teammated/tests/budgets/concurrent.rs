//! Twenty runaway teammates on one team cap.

use crate::team::{Team, reported, reported_total, saying};
use crate::{CALL_TOKENS, runaway_mock};
use teamboard_protocol::TaskStatus;

const TEAMMATES: usize = 20;
const CAP: u64 = 300_000;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_teammates_pass_a_shared_cap_by_one_call_each_at_most() {
    let team = Team::start(runaway_mock()).await;
    team.set_team_budget(Some(CAP), None).await;
    for n in 0..TEAMMATES {
        team.add(&format!("run away {n}")).await;
    }
    let mates: Vec<_> = (0..TEAMMATES)
        .map(|n| team.spawn(&format!("mate{n:02}")))
        .collect();
    let report = team.wait_stopped().await;
    let state = &report.budgets[0];
    assert!(state.exhausted.is_some(), "{report:#?}");

    // Within the cap plus the one call each teammate may have had in flight.
    let spent = report.spent.tokens;
    let bound = CAP + TEAMMATES as u64 * CALL_TOKENS;
    assert!(spent <= bound, "{spent} > {bound}: {report:#?}");
    assert!(spent > CAP / 2, "stopped for something else: {report:#?}");

    // The ledger counts what the provider reported, to the token.
    let calls = reported(&team.mock);
    let roster = team.lead.team().await.expect("team");
    let callers = roster.iter().filter(|m| m.tokens.total() > 0).count();
    eprintln!(
        "cap {CAP}, {TEAMMATES} teammates: {} calls by {callers}, {spent} tokens spent (bound {bound})",
        calls.len()
    );
    assert_eq!(spent, reported_total(&team.mock).total(), "{report:#?}");
    assert_eq!(spent, calls.len() as u64 * CALL_TOKENS);
    assert_eq!(state.spent.tokens, spent);

    // Each task went back without using up an attempt, and the roster's
    // tokens add up to the ledger's.
    let tasks = team.lead.list_tasks(None).await.expect("list_tasks");
    for t in &tasks {
        assert_eq!((t.status, t.attempts), (TaskStatus::Pending, 0), "{t:#?}");
    }
    let by_tasks: u64 = tasks.iter().map(|t| t.tokens.total()).sum();
    assert_eq!(by_tasks, spent);
    let by_members: u64 = roster.iter().map(|m| m.tokens.total()).sum();
    assert_eq!(by_members, spent);
    let said = team.boardd_said().await;
    assert_eq!(saying(&said, "budget exhausted"), 1, "{said:#?}");
    drop(mates);
}
