//! Budgets, reservations and the scheduling of calls against accounts.

use super::*;
use std::sync::Arc;
use teamboard_protocol::TokenUsage;
use teamboard_protocol::request::{ClearBudgetArgs, ReserveArgs, SetBudgetArgs, UsageArgs};
use teamboard_protocol::spend::{
    AccountRef, BudgetScope, Limits, MicroUsd, Pricing, RateLimits, RateSnapshot, Reservation,
};

/// $1 per million input tokens and $2 per million output, for `priced/*`;
/// everything else has no price.
fn pricer(model: &str, t: &TokenUsage) -> Pricing {
    if model.starts_with("priced/") {
        Pricing::Priced {
            usd: MicroUsd(t.all_input() + 2 * t.output),
        }
    } else {
        Pricing::Unpriced {
            reason: format!("no price for {model}"),
        }
    }
}

fn h() -> H {
    let mut h = H::new();
    h.board.set_pricer(Arc::new(pricer));
    h
}

fn account(name: &str) -> AccountRef {
    AccountRef {
        name: name.into(),
        model: "priced/m".into(),
        limits: RateLimits::default(),
        subscription: false,
    }
}

fn reserve_args(id: u64, task: Option<TaskId>, input: u64, output: u64) -> ReserveArgs {
    ReserveArgs {
        id,
        task,
        input,
        output,
        chain: vec![account("acct")],
    }
}

fn tokens(input: u64, output: u64) -> TokenUsage {
    TokenUsage {
        input,
        output,
        ..TokenUsage::default()
    }
}

impl H {
    fn budget(&mut self, scope: BudgetScope, per_ms: Option<u64>, limits: Limits) {
        let ctx = self.lead();
        let args = SetBudgetArgs {
            scope,
            per_ms,
            limits,
        };
        self.board.set_budget(ctx, args).unwrap();
    }

    fn reserve(&mut self, m: Mate, args: ReserveArgs) -> Result<Option<Reservation>> {
        let ctx = self.ctx(m);
        let request = 1000 + args.id;
        self.board.reserve_call(ctx, request, args)
    }

    fn settle(&mut self, m: Mate, id: u64, used: TokenUsage) -> teamboard_protocol::spend::Settled {
        let ctx = self.ctx(m);
        let args = UsageArgs {
            reservation: Some(id),
            tokens: used,
            ..UsageArgs::default()
        };
        self.board.settle_usage(ctx, args).unwrap()
    }

    fn lead_inbox(&self) -> Vec<String> {
        self.board
            .inbox(TEAM, LEAD)
            .into_iter()
            .map(|m| m.content)
            .collect()
    }

    /// Serves parked reservations; answers (request id, granted account).
    fn serve(&mut self) -> Vec<(u64, Result<usize>)> {
        let now = self.now();
        self.board.serve_calls(now);
        self.board
            .take_call_answers()
            .into_iter()
            .map(|(w, r)| (w.request, r.map(|r| r.account)))
            .collect()
    }
}

fn team_tokens(n: u64) -> Limits {
    Limits {
        tokens: Some(n),
        ..Limits::default()
    }
}

#[test]
fn a_teammate_stops_at_its_budget_plus_one_call_at_most() {
    let mut h = h();
    h.budget(BudgetScope::Team, None, team_tokens(50_000));
    let ann = h.join("ann", "dev");
    let task = h.add("work");
    h.claim(ann, task);
    // The teammate reserves a 1k prompt and a 4k output limit; the model
    // reports 10k a call, more than the reservation.
    let mut calls = 0;
    for id in 1.. {
        match h.reserve(ann, reserve_args(id, Some(task), 1_000, 4_000)) {
            Ok(Some(_)) => {
                calls += 1;
                h.settle(ann, id, tokens(9_000, 1_000));
            }
            Ok(None) => panic!("nothing should park without rate limits"),
            Err(e) => {
                assert_eq!(e.code, ErrorCode::BudgetExhausted);
                assert!(e.message.contains("team budget"), "{}", e.message);
                break;
            }
        }
    }
    let spent = h.task(task).tokens.total();
    assert_eq!(calls, 5, "five 10k calls fit, the sixth does not");
    assert_eq!(spent, 50_000);
    assert!(spent <= 60_000);
    let told = h.lead_inbox();
    assert_eq!(
        told.iter()
            .filter(|m| m.starts_with("budget exhausted"))
            .count(),
        1,
        "{told:?}"
    );
    // Refused again: the lead is not told twice.
    let refused = h.reserve(ann, reserve_args(99, Some(task), 1_000, 4_000));
    assert!(refused.is_err());
    let told = h.lead_inbox();
    assert_eq!(
        told.iter()
            .filter(|m| m.starts_with("budget exhausted"))
            .count(),
        1
    );
    assert_eq!(
        told.iter()
            .filter(|m| m.starts_with("budget warning"))
            .count(),
        1,
        "warned once at 80%: {told:?}"
    );
    let member = h.member(ann);
    assert!(
        member
            .waiting
            .as_ref()
            .is_some_and(|w| w.reason.starts_with("budget")),
        "{member:?}"
    );
}

#[test]
fn concurrent_reservations_cannot_pass_the_cap_together() {
    let mut h = h();
    h.budget(BudgetScope::Team, None, team_tokens(100_000));
    let names = [
        "m0", "m1", "m2", "m3", "m4", "m5", "m6", "m7", "m8", "m9", "m10", "m11", "m12", "m13",
        "m14", "m15", "m16", "m17", "m18", "m19",
    ];
    let mates: Vec<Mate> = names.iter().map(|n| h.join(n, "dev")).collect();
    // Each asks for 8k at once, each on an account of its own (one account
    // would hold the calls for its capacity); only what fits under the cap
    // is granted.
    let mut granted = Vec::new();
    for (i, m) in mates.iter().enumerate() {
        let args = ReserveArgs {
            chain: vec![account(names[i])],
            ..reserve_args(i as u64 + 1, None, 4_000, 4_000)
        };
        if h.reserve(*m, args).is_ok_and(|r| r.is_some()) {
            granted.push((*m, i as u64 + 1));
        }
    }
    assert_eq!(granted.len(), 12, "12 x 8k fit under 100k, 13 do not");
    // Each reports 10k: over its estimate, by at most one call each.
    for (m, id) in granted {
        h.settle(m, id, tokens(9_000, 1_000));
    }
    let report = h.board.budget_report(TEAM, h.now());
    assert_eq!(report.spent.tokens, 120_000);
    assert!(report.spent.tokens <= 100_000 + 20 * 10_000);
    assert!(report.budgets[0].exhausted.is_some());
}

#[test]
fn the_report_and_the_ledger_agree_with_what_was_settled() {
    let mut h = h();
    let ann = h.join("ann", "dev");
    let task = h.add("work");
    h.claim(ann, task);
    h.reserve(ann, reserve_args(1, Some(task), 100, 100))
        .unwrap();
    let used = TokenUsage {
        input: 70,
        output: 30,
        cache_read: 1_000,
        cache_write: 5,
    };
    let settled = h.settle(ann, 1, used);
    assert_eq!(
        settled.pricing,
        Pricing::Priced {
            usd: MicroUsd(1_075 + 60)
        }
    );
    let changes = h.board.take_changes();
    assert_eq!(changes.usage.len(), 1);
    assert_eq!(changes.usage[0].1.tokens, used);
    assert_eq!(h.task(task).tokens, used);
    assert_eq!(h.task(task).cost.usd, MicroUsd(1_135));
    assert_eq!(h.member(ann).cost.usd, MicroUsd(1_135));
    let report = h.board.budget_report(TEAM, h.now());
    assert_eq!(report.spent.tokens, used.total());
    assert_eq!(report.spent.usd, MicroUsd(1_135));
    // Tokens on a model without a price are counted apart, per budget too.
    h.budget(
        BudgetScope::Member { name: "ann".into() },
        None,
        team_tokens(1_000_000),
    );
    let unpriced = ReserveArgs {
        chain: vec![AccountRef {
            model: "mystery/model".into(),
            ..account("other")
        }],
        ..reserve_args(2, Some(task), 10, 10)
    };
    h.reserve(ann, unpriced).unwrap();
    h.settle(ann, 2, tokens(7, 3));
    let report = h.board.budget_report(TEAM, h.now());
    assert_eq!(report.unpriced_tokens, 10);
    assert_eq!(report.budgets[0].unpriced_tokens, 10);
    assert_eq!(h.task(task).cost.unpriced_tokens, 10);
    // The reservation is gone from the store once settled.
    assert_eq!(changes.held.len(), 1);
    assert!(changes.held[0].3.is_none());
}

#[test]
fn an_exhausted_budget_holds_new_tasks_until_it_is_raised() {
    let mut h = h();
    let ann = h.join("ann", "dev");
    h.budget(
        BudgetScope::Member { name: "ann".into() },
        None,
        team_tokens(1_000),
    );
    let first = h.add("first");
    let second = h.add("second");
    let c = h.claim(ann, first);
    h.reserve(ann, reserve_args(1, Some(first), 500, 400))
        .unwrap();
    h.settle(ann, 1, tokens(500, 400));
    assert!(
        h.reserve(ann, reserve_args(2, Some(first), 500, 400))
            .is_err()
    );
    // Released for the budget: the attempt does not count.
    let ctx = h.ctx(ann);
    let t = h
        .board
        .release_task(ctx, first, c.epoch, None, Some("budget exhausted".into()))
        .unwrap();
    assert_eq!(t.attempts, 0, "a release without an error does not count");
    assert_eq!(h.park(ann, 7), None, "no task while the budget is out");
    assert!(h.dispatch().is_empty());
    // Another teammate is not covered by ann's budget.
    let bob = h.join("bob", "dev");
    assert!(h.claim_next(bob).is_some());
    h.budget(
        BudgetScope::Member { name: "ann".into() },
        None,
        team_tokens(10_000),
    );
    let handed = h.dispatch();
    assert_eq!(handed.len(), 1, "raised: ann is handed a task");
    assert!(h.member(ann).waiting.is_none());
    let _ = second;
}

#[test]
fn a_window_gives_room_again_when_it_rolls() {
    let mut h = h();
    let ann = h.join("ann", "dev");
    let thirty_min = 30 * 60_000;
    h.budget(
        BudgetScope::Team,
        Some(thirty_min),
        Limits {
            input_tokens: Some(500_000),
            ..Limits::default()
        },
    );
    h.reserve(ann, reserve_args(1, None, 400_000, 1_000))
        .unwrap();
    h.settle(ann, 1, tokens(400_000, 1_000));
    h.advance(secs(60));
    let refused = h.reserve(ann, reserve_args(2, None, 200_000, 1_000));
    assert_eq!(code(refused), ErrorCode::BudgetExhausted);
    let report = h.board.budget_report(TEAM, h.now());
    let rolls = report.budgets[0]
        .rolls_at
        .expect("a window says when it rolls");
    assert_eq!(rolls, WALL0 + thirty_min as i64);
    let wait = h.member(ann).waiting.expect("ann waits for the budget");
    assert_eq!(wait.until_ms, Some(rolls), "and says until when");
    assert!(h.board.next_deadline().is_some());
    let task = h.add("later");
    assert_eq!(h.park(ann, 5), None);
    h.t = Duration::from_millis(thirty_min);
    h.serve();
    let handed = h.dispatch();
    assert_eq!(handed.len(), 1, "the window rolled: ann gets #{task}");
    assert!(
        h.reserve(ann, reserve_args(3, None, 200_000, 1_000))
            .unwrap()
            .is_some()
    );
}

#[test]
fn an_account_at_its_concurrency_parks_calls_in_arrival_order() {
    let mut h = h();
    let ann = h.join("ann", "dev");
    let bob = h.join("bob", "dev");
    let limited = |id| ReserveArgs {
        chain: vec![AccountRef {
            limits: RateLimits {
                concurrent: Some(1),
                ..RateLimits::default()
            },
            ..account("acct")
        }],
        ..reserve_args(id, None, 10, 10)
    };
    assert!(h.reserve(ann, limited(1)).unwrap().is_some());
    assert_eq!(h.reserve(bob, limited(2)).unwrap(), None, "parked");
    assert!(
        h.member(bob)
            .waiting
            .is_some_and(|w| w.reason.contains("rate limit on acct"))
    );
    assert!(h.serve().is_empty(), "still one in flight");
    h.settle(ann, 1, tokens(10, 10));
    assert_eq!(h.serve(), vec![(1002, Ok(0))]);
    assert!(h.member(bob).waiting.is_none());
}

#[test]
fn a_blocked_account_fails_over_and_comes_back_after_its_reset() {
    let mut h = h();
    let ann = h.join("ann", "dev");
    let chain = |id| ReserveArgs {
        chain: vec![account("first"), account("second")],
        ..reserve_args(id, None, 10, 10)
    };
    let r = h.reserve(ann, chain(1)).unwrap().unwrap();
    assert_eq!(r.account, 0);
    let ctx = h.ctx(ann);
    let reset = WALL0 + 60_000;
    let blocked = UsageArgs {
        reservation: Some(1),
        rate: Some(RateSnapshot {
            blocked_until_ms: Some(reset),
            blocked_reason: Some("usage_limit_reached".into()),
            ..RateSnapshot::default()
        }),
        ..UsageArgs::default()
    };
    h.board.settle_usage(ctx, blocked).unwrap();
    let kept = h.board.take_changes().account_blocks;
    assert_eq!(kept.len(), 1, "the block is kept across a restart");
    let r = h.reserve(ann, chain(2)).unwrap().unwrap();
    assert_eq!(r.account, 1, "the capped account is skipped");
    h.settle(ann, 2, tokens(10, 10));
    // With only the capped account, the call waits for its reset.
    let only_first = ReserveArgs {
        chain: vec![account("first")],
        ..reserve_args(3, None, 10, 10)
    };
    assert_eq!(h.reserve(ann, only_first).unwrap(), None);
    let wait = h.member(ann).waiting.expect("waits for the reset");
    assert_eq!(wait.until_ms, Some(reset));
    h.t = secs(59);
    assert!(h.serve().is_empty(), "never before the reset");
    h.t = secs(60);
    assert_eq!(h.serve(), vec![(1003, Ok(0))]);
    h.settle(ann, 3, tokens(10, 10));
    let r = h.reserve(ann, chain(4)).unwrap().unwrap();
    assert_eq!(r.account, 0, "back to the first after its reset");
}

#[test]
fn a_dollar_limit_refuses_a_model_without_a_price() {
    let mut h = h();
    let ann = h.join("ann", "dev");
    h.budget(
        BudgetScope::Team,
        None,
        Limits {
            usd: Some(MicroUsd(1_000_000)),
            ..Limits::default()
        },
    );
    let args = ReserveArgs {
        chain: vec![AccountRef {
            model: "mystery/model".into(),
            ..account("acct")
        }],
        ..reserve_args(1, None, 10, 10)
    };
    let e = h.reserve(ann, args).unwrap_err();
    assert_eq!(e.code, ErrorCode::BudgetExhausted);
    assert!(
        e.message.contains("no price for mystery/model"),
        "{}",
        e.message
    );
}

#[test]
fn a_closed_session_is_charged_its_calls_in_flight_once_its_grace_ends() {
    let mut h = h();
    let ann = h.join("ann", "dev");
    h.reserve(ann, reserve_args(1, None, 300, 200)).unwrap();
    let now = h.now();
    h.board.disconnect(ann.session, now);
    assert!(
        h.board.take_changes().usage.is_empty(),
        "not yet: it may come back"
    );
    let due = h.board.next_deadline().expect("the grace ends");
    assert!(due > h.now().mono);
    h.t += BoardConfig::default().restart_grace;
    h.expire();
    let usage = h.board.take_changes().usage;
    assert_eq!(usage.len(), 1);
    assert!(usage[0].1.estimated);
    assert_eq!(usage[0].1.tokens.total(), 500);
    let report = h.board.budget_report(TEAM, h.now());
    assert_eq!(report.spent.tokens, 500);
    assert_eq!(report.accounts[0].in_flight, 0, "the account is free again");
}

#[test]
fn a_process_that_reconnects_settles_its_call_once() {
    let mut h = h();
    let ann = h.join("ann", "dev");
    let first = h.reserve(ann, reserve_args(1, None, 300, 200)).unwrap();
    let now = h.now();
    h.board.disconnect(ann.session, now);
    // The same process (pid 4242) reconnects and repeats its calls.
    let again = h.stranger(TEAM, "ann");
    h.register(again, "dev");
    assert_eq!(
        h.reserve(again, reserve_args(1, None, 300, 200)).unwrap(),
        first
    );
    h.settle(again, 1, tokens(100, 50));
    h.t += BoardConfig::default().restart_grace;
    h.expire();
    let report = h.board.budget_report(TEAM, h.now());
    assert_eq!(report.spent.tokens, 150, "its real usage, once");
}

#[test]
fn calls_in_flight_make_a_call_wait_not_a_budget_run_out() {
    let mut h = h();
    let ann = h.join("ann", "dev");
    let bob = h.join("bob", "dev");
    h.budget(BudgetScope::Team, None, team_tokens(1_000));
    // Each account its own, so that only the budget holds the second call.
    let on = |id, acct: &str| ReserveArgs {
        chain: vec![account(acct)],
        ..reserve_args(id, None, 300, 300)
    };
    assert!(h.reserve(ann, on(1, "a")).unwrap().is_some());
    assert_eq!(
        h.reserve(bob, on(2, "b")).unwrap(),
        None,
        "waits for ann's call"
    );
    let wait = h.member(bob).waiting.expect("bob waits");
    assert!(wait.reason.contains("calls in flight"), "{wait:?}");
    assert!(
        h.lead_inbox()
            .iter()
            .all(|m| !m.starts_with("budget exhausted"))
    );
    // Ann's call settles for far less than it held: bob's fits.
    h.settle(ann, 1, tokens(50, 50));
    assert_eq!(h.serve(), vec![(1002, Ok(0))]);
}

#[test]
fn a_call_bigger_than_a_limit_is_refused_alone() {
    let mut h = h();
    let ann = h.join("ann", "dev");
    h.budget(BudgetScope::Team, None, team_tokens(1_000));
    let e = h.reserve(ann, reserve_args(1, None, 900, 900)).unwrap_err();
    assert_eq!(e.code, ErrorCode::BudgetExhausted);
    assert!(
        e.message.contains("the call alone needs up to 1800 tokens"),
        "{}",
        e.message
    );
    // The budget is not out: the next, smaller call goes, and tasks are handed.
    assert!(
        h.reserve(ann, reserve_args(2, None, 300, 300))
            .unwrap()
            .is_some()
    );
    assert!(
        h.board.budget_report(TEAM, h.now()).budgets[0]
            .exhausted
            .is_none()
    );
}

#[test]
fn a_window_back_under_80_percent_warns_again_on_its_next_climb() {
    let mut h = h();
    let ann = h.join("ann", "dev");
    h.budget(BudgetScope::Team, Some(10_000), team_tokens(1_000));
    h.reserve(ann, reserve_args(1, None, 100, 100)).unwrap();
    h.settle(ann, 1, tokens(800, 50));
    h.t = secs(11);
    h.reserve(ann, reserve_args(2, None, 100, 100)).unwrap();
    h.settle(ann, 2, tokens(10, 10));
    h.reserve(ann, reserve_args(3, None, 100, 100)).unwrap();
    h.settle(ann, 3, tokens(800, 50));
    let warned = h.lead_inbox();
    assert_eq!(
        warned
            .iter()
            .filter(|m| m.starts_with("budget warning"))
            .count(),
        2,
        "{warned:?}"
    );
}

#[test]
fn a_rate_limit_of_zero_and_oversized_names_are_refused() {
    let mut h = h();
    let ann = h.join("ann", "dev");
    let zero = ReserveArgs {
        chain: vec![AccountRef {
            limits: RateLimits {
                concurrent: Some(0),
                ..RateLimits::default()
            },
            ..account("acct")
        }],
        ..reserve_args(1, None, 10, 10)
    };
    assert_eq!(code(h.reserve(ann, zero)), ErrorCode::InvalidArgs);
    let long = ReserveArgs {
        chain: vec![account(&"x".repeat(200))],
        ..reserve_args(2, None, 10, 10)
    };
    assert_eq!(code(h.reserve(ann, long)), ErrorCode::InvalidArgs);
    assert_eq!(
        code(h.reserve(ann, reserve_args(3, None, u64::MAX, 10))),
        ErrorCode::InvalidArgs
    );
}

#[test]
fn budgets_and_the_ledger_survive_a_restart() {
    let mut h = h();
    let mut store = Store::default();
    let ann = h.join("ann", "dev");
    h.budget(BudgetScope::Team, None, team_tokens(1_000));
    h.reserve(ann, reserve_args(1, None, 300, 300)).unwrap();
    h.settle(ann, 1, tokens(300, 300));
    // One call in flight when boardd stops.
    h.reserve(ann, reserve_args(2, None, 100, 100)).unwrap();
    store.apply(h.board.take_changes());
    let now = h.now();
    let mut h2 = H::new();
    h2.board = Board::restore(BoardConfig::default(), store.snapshot(), now);
    h2.board.set_pricer(Arc::new(pricer));
    let report = h2.board.budget_report(TEAM, now);
    assert_eq!(report.budgets.len(), 1);
    assert_eq!(report.budgets[0].spent.tokens, 600);
    assert_eq!(report.budgets[0].reserved.tokens, 200);
    // The same process comes back and settles its call.
    for _ in 0..100 {
        h2.new_session();
    }
    let ann2 = h2.join("ann", "dev");
    h2.settle(ann2, 2, tokens(100, 50));
    let report = h2.board.budget_report(TEAM, h2.now());
    assert_eq!(report.budgets[0].spent.tokens, 750);
    assert_eq!(report.budgets[0].reserved.tokens, 0);
    let e = h2
        .reserve(ann2, reserve_args(3, None, 200, 100))
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::BudgetExhausted);
}

#[test]
fn an_exhausted_budget_stays_exhausted_through_a_restart_and_the_lead_hears_once() {
    let mut h = h();
    let mut store = Store::default();
    let ann = h.join("ann", "dev");
    h.budget(BudgetScope::Team, None, team_tokens(1_000));
    h.reserve(ann, reserve_args(1, None, 400, 400)).unwrap();
    h.settle(ann, 1, tokens(400, 400));
    // 800 of 1000: warned. One call in flight, and one refused: told.
    h.reserve(ann, reserve_args(2, None, 50, 50)).unwrap();
    let refused = h.reserve(ann, reserve_args(3, None, 150, 100));
    assert_eq!(code(refused), ErrorCode::BudgetExhausted);
    store.apply(h.board.take_changes());
    let now = h.now();
    let mut h2 = H::new();
    h2.board = Board::restore(BoardConfig::default(), store.snapshot(), now);
    h2.board.set_pricer(Arc::new(pricer));
    for _ in 0..100 {
        h2.new_session();
    }
    // 900 spent once the call in flight is charged, and the refused 250
    // still does not fit: no task, no call, and no second word to the lead.
    let ann2 = h2.join("ann", "dev");
    let report = h2.board.budget_report(TEAM, h2.now());
    assert!(report.budgets[0].exhausted.is_some(), "{report:#?}");
    h2.add("more");
    assert_eq!(h2.park(ann2, 7), None, "no task while the budget is out");
    let refused = h2.reserve(ann2, reserve_args(4, None, 150, 100));
    assert_eq!(code(refused), ErrorCode::BudgetExhausted);
    let told = h2.lead_inbox();
    let count = |prefix: &str| told.iter().filter(|m| m.starts_with(prefix)).count();
    assert_eq!(count("budget warning"), 1, "{told:#?}");
    assert_eq!(count("budget exhausted"), 1, "{told:#?}");
    // Raised, it has room again, and a new story begins.
    h2.budget(BudgetScope::Team, None, team_tokens(10_000));
    assert!(h2.reserve(ann2, reserve_args(5, None, 150, 100)).is_ok());
}

#[test]
fn an_exhausted_window_still_rolls_after_a_restart() {
    let mut h = h();
    let mut store = Store::default();
    let ann = h.join("ann", "dev");
    let thirty_min = 30 * 60_000;
    h.budget(
        BudgetScope::Team,
        Some(thirty_min),
        Limits {
            input_tokens: Some(500_000),
            ..Limits::default()
        },
    );
    h.reserve(ann, reserve_args(1, None, 400_000, 1_000))
        .unwrap();
    h.settle(ann, 1, tokens(400_000, 1_000));
    h.advance(secs(60));
    let refused = h.reserve(ann, reserve_args(2, None, 200_000, 1_000));
    assert_eq!(code(refused), ErrorCode::BudgetExhausted);
    store.apply(h.board.take_changes());
    let mut h2 = H::new();
    (h2.base, h2.t) = (h.base, h.t);
    h2.board = Board::restore(BoardConfig::default(), store.snapshot(), h2.now());
    h2.board.set_pricer(Arc::new(pricer));
    for _ in 0..100 {
        h2.new_session();
    }
    let ann2 = h2.join("ann", "dev");
    let report = h2.board.budget_report(TEAM, h2.now());
    assert_eq!(report.budgets[0].rolls_at, Some(WALL0 + thirty_min as i64));
    let task = h2.add("later");
    assert_eq!(h2.park(ann2, 5), None, "still exhausted");
    h2.t = Duration::from_millis(thirty_min);
    h2.serve();
    let handed = h2.dispatch();
    assert_eq!(handed.len(), 1, "the window rolled: ann gets #{task}");
}

#[test]
fn setting_and_clearing_budgets_is_the_leads() {
    let mut h = h();
    let ann = h.join("ann", "dev");
    let ctx = h.ctx(ann);
    let args = SetBudgetArgs {
        scope: BudgetScope::Team,
        per_ms: None,
        limits: team_tokens(5),
    };
    assert_eq!(
        code(h.board.set_budget(ctx, args)),
        ErrorCode::PermissionDenied
    );
    let ctx = h.lead();
    let empty = SetBudgetArgs {
        scope: BudgetScope::Team,
        per_ms: None,
        limits: Limits::default(),
    };
    assert_eq!(code(h.board.set_budget(ctx, empty)), ErrorCode::InvalidArgs);
    let ctx = h.lead();
    let no_task = SetBudgetArgs {
        scope: BudgetScope::Task { id: 42 },
        per_ms: None,
        limits: team_tokens(5),
    };
    assert_eq!(code(h.board.set_budget(ctx, no_task)), ErrorCode::NotFound);
    // Setting again changes what it names and keeps the rest.
    h.budget(BudgetScope::Team, None, team_tokens(5));
    h.budget(
        BudgetScope::Team,
        None,
        Limits {
            usd: Some(MicroUsd(7)),
            ..Limits::default()
        },
    );
    let report = h.board.budget_report(TEAM, h.now());
    assert_eq!(report.budgets.len(), 1);
    assert_eq!(report.budgets[0].budget.limits.tokens, Some(5));
    assert_eq!(report.budgets[0].budget.limits.usd, Some(MicroUsd(7)));
    let ctx = h.lead();
    let clear = ClearBudgetArgs {
        scope: BudgetScope::Team,
        per_ms: None,
    };
    h.board.clear_budget(ctx, clear.clone()).unwrap();
    let ctx = h.lead();
    assert_eq!(code(h.board.clear_budget(ctx, clear)), ErrorCode::NotFound);
}

#[test]
fn a_reservation_asked_again_gets_the_same_answer() {
    let mut h = h();
    let ann = h.join("ann", "dev");
    let first = h
        .reserve(ann, reserve_args(1, None, 10, 10))
        .unwrap()
        .unwrap();
    let again = h
        .reserve(ann, reserve_args(1, None, 10, 10))
        .unwrap()
        .unwrap();
    assert_eq!(first, again);
    let report = h.board.budget_report(TEAM, h.now());
    assert_eq!(report.accounts[0].in_flight, 1, "held once");
    // A parked one, asked again on another request, answers that request.
    let bob = h.join("bob", "dev");
    assert_eq!(h.reserve(bob, reserve_args(2, None, 10, 10)).unwrap(), None);
    let ctx = h.ctx(bob);
    assert_eq!(
        h.board
            .reserve_call(ctx, 77, reserve_args(2, None, 10, 10))
            .unwrap(),
        None
    );
    h.settle(ann, 1, tokens(10, 10));
    assert_eq!(h.serve(), vec![(77, Ok(0))]);
}

#[test]
fn a_window_that_rolls_while_still_out_looks_again_later_not_at_once() {
    let mut h = h();
    let ann = h.join("ann", "dev");
    h.budget(BudgetScope::Team, Some(10_000), team_tokens(100));
    h.reserve(ann, reserve_args(1, None, 40, 20)).unwrap();
    h.settle(ann, 1, tokens(40, 20));
    h.advance(secs(5));
    h.reserve(ann, reserve_args(2, None, 20, 10)).unwrap();
    h.settle(ann, 2, tokens(20, 10));
    // 90 used: a call of 60 waits for the first 60 to leave the window.
    assert!(h.reserve(ann, reserve_args(3, None, 40, 20)).is_err());
    // At 10 s the first call leaves, but usage an agent reported in the
    // meantime (settled without a reservation) keeps the window out of room.
    h.t = secs(9);
    let ctx = h.ctx(ann);
    let agent = UsageArgs {
        tokens: tokens(40, 20),
        model: Some("priced/m".into()),
        ..UsageArgs::default()
    };
    h.board.settle_usage(ctx, agent).unwrap();
    h.t = secs(10);
    h.serve();
    let next = h
        .board
        .next_deadline()
        .expect("the window rolls again later");
    assert!(next > h.now().mono, "not a moment already passed");
}

#[test]
fn a_settlement_repeated_after_a_lost_answer_is_not_charged_twice() {
    let mut h = h();
    let ann = h.join("ann", "dev");
    h.reserve(ann, reserve_args(1, None, 100, 100)).unwrap();
    h.settle(ann, 1, tokens(60, 40));
    // The client repeats the call once it has reconnected.
    h.settle(ann, 1, tokens(60, 40));
    let report = h.board.budget_report(TEAM, h.now());
    assert_eq!(report.spent.tokens, 100);
    // Across a restart too: the ledger remembers what it settled.
    let mut store = Store::default();
    store.apply(h.board.take_changes());
    let now = h.now();
    let mut h2 = H::new();
    h2.board = Board::restore(BoardConfig::default(), store.snapshot(), now);
    for _ in 0..100 {
        h2.new_session();
    }
    let ann2 = h2.join("ann", "dev");
    h2.settle(ann2, 1, tokens(60, 40));
    assert_eq!(h2.board.budget_report(TEAM, now).spent.tokens, 100);
}

#[test]
fn usage_an_agent_reports_past_a_budget_tells_the_lead_once() {
    let mut h = h();
    let ann = h.join("ann", "dev");
    h.budget(BudgetScope::Team, None, team_tokens(100));
    let ctx = h.ctx(ann);
    let agent = |n| UsageArgs {
        tokens: tokens(n, 0),
        model: Some("priced/m".into()),
        ..UsageArgs::default()
    };
    let s = h.board.settle_usage(ctx, agent(120)).unwrap();
    assert!(s.exhausted.is_some());
    let ctx = h.ctx(ann);
    h.board.settle_usage(ctx, agent(10)).unwrap();
    let told = h.lead_inbox();
    assert_eq!(
        told.iter()
            .filter(|m| m.starts_with("budget exhausted"))
            .count(),
        1,
        "{told:?}"
    );
}

#[test]
fn a_parked_call_refused_for_another_reason_ends_its_rate_limit_wait() {
    let mut h = h();
    let ann = h.join("ann", "dev");
    let bob = h.join("bob", "dev");
    let unpriced = |id| ReserveArgs {
        chain: vec![AccountRef {
            model: "mystery/model".into(),
            limits: RateLimits {
                concurrent: Some(1),
                ..RateLimits::default()
            },
            ..account("acct")
        }],
        ..reserve_args(id, None, 10, 10)
    };
    assert!(h.reserve(ann, unpriced(1)).unwrap().is_some());
    assert_eq!(h.reserve(bob, unpriced(2)).unwrap(), None);
    assert!(h.member(bob).waiting.is_some());
    // A dollar limit now covers a model without a price: bob's call is refused.
    h.budget(
        BudgetScope::Team,
        None,
        Limits {
            usd: Some(MicroUsd(1_000_000)),
            ..Limits::default()
        },
    );
    h.settle(ann, 1, tokens(5, 5));
    let served = h.serve();
    assert_eq!(served.len(), 1);
    assert!(served[0].1.is_err());
    assert_eq!(h.member(bob).waiting, None, "no stale rate-limit wait");
}
