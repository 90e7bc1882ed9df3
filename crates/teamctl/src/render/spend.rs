//! Spend for people: what tokens cost, why a member waits, and the budgets
//! report (`teamctl budget`).
//!
//! Dollars and unpriced tokens are shown apart, never summed: a model without
//! a price is said to have none (`unpriced`), not shown as free.

use super::{clock, count, duration};
use teamboard_protocol::spend::{
    AccountState, Amounts, Budget, BudgetReport, BudgetState, Cost, Limits, MemberWait, RateLimits,
    RateWindow, fmt_period,
};

/// What some tokens cost: `$0.0123`; `unpriced` when none of them has a
/// price; `$0.0123 + 2.0k tokens unpriced` when some have.
pub fn cost(c: &Cost) -> String {
    match (c.usd.0, c.unpriced_tokens) {
        (_, 0) => c.usd.to_string(),
        (0, _) => "unpriced".to_string(),
        (_, n) => format!("{} + {} tokens unpriced", c.usd, count(n)),
    }
}

/// A count of tokens, exactly, as the person could type it back: `950`,
/// `50k`, `1.5M`, and with separators when no short form is exact
/// (`1,234,567`). A budget is read against its limit, where `12.3k` for
/// 12,345 would hide what is left.
pub fn exact_count(n: u64) -> String {
    let short = |unit: u64, suffix: &str| {
        let (whole, tenths) = (n / unit, n % unit * 10 / unit);
        n.is_multiple_of(unit / 10).then(|| match tenths {
            0 => format!("{whole}{suffix}"),
            t => format!("{whole}.{t}{suffix}"),
        })
    };
    let found = match n {
        0..=999 => Some(n.to_string()),
        1_000..=999_999 => short(1_000, "k"),
        _ => short(1_000_000, "M"),
    };
    found.unwrap_or_else(|| {
        let digits = n.to_string();
        let mut out = String::new();
        for (i, c) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i).is_multiple_of(3) {
                out.push(',');
            }
            out.push(c);
        }
        out
    })
}

/// How long until `at` (ms since the epoch): `41s`, `12m` (to the nearest
/// minute), `2h 5m`; `None` once it has passed.
fn until(at: i64, now: i64) -> Option<String> {
    let ahead = at.checked_sub(now).filter(|d| *d > 0)?;
    // Rounded up: a reset is never said to come sooner than it does.
    let secs = ahead.saturating_add(999) / 1000;
    Some(match secs {
        0..90 => format!("{secs}s"),
        90..5400 => format!("{}m", (secs + 30) / 60),
        _ => duration(secs.unsigned_abs() * 1000),
    })
}

/// A waiting member's state column and, when the reason says more, the
/// reason for the end of its line: (`waiting: rate limit (resets in 12m)`,
/// `rate limit on work (usage_limit_reached)`).
///
/// boardd's reasons start with what holds the member (`rate limit on ...`,
/// `budget: ...`); the column keeps that much, so that a long reason does
/// not push every other member's columns out.
pub fn wait_state(w: &MemberWait, now: i64) -> (String, Option<String>) {
    let reason = w.reason.trim();
    let kind = ["rate limit", "budget"]
        .into_iter()
        .find(|k| reason.starts_with(k))
        .unwrap_or_else(|| {
            let end = [":", " (", " on "]
                .iter()
                .filter_map(|sep| reason.find(sep))
                .min()
                .unwrap_or(reason.len());
            &reason[..end]
        });
    let mut state = format!("waiting: {kind}");
    if let Some(left) = w.until_ms.and_then(|at| until(at, now)) {
        state.push_str(&format!(" (resets in {left})"));
    }
    let why = (kind.len() < reason.len()).then(|| reason.to_string());
    (state, why)
}

/// `team budget`, `teammate alice budget per 30m`, `task #7 budget per 1d`.
pub fn budget_name(b: &Budget) -> String {
    match b.per_ms {
        Some(per) => format!("{} budget per {}", b.scope, fmt_period(per)),
        None => format!("{} budget", b.scope),
    }
}

/// `$5.00, 50k tokens and 500k input tokens`.
pub fn limits(l: &Limits) -> String {
    let mut parts = Vec::new();
    if let Some(usd) = l.usd {
        parts.push(usd.to_string());
    }
    if let Some(t) = l.tokens {
        parts.push(format!("{} tokens", exact_count(t)));
    }
    if let Some(t) = l.input_tokens {
        parts.push(format!("{} input tokens", exact_count(t)));
    }
    match parts.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
        None => "nothing".to_string(),
    }
}

/// What `budget set` prints: `team budget per 1d: $5.00 and 50k tokens (a
/// rolling window: only the last 1d counts)`.
pub fn budget_set_line(b: &Budget) -> String {
    let window = b
        .per_ms
        .map(|per| {
            format!(
                " (a rolling window: only what was spent in the last {} counts)",
                fmt_period(per)
            )
        })
        .unwrap_or_else(|| " (for all time)".to_string());
    format!("{}: {}{window}", budget_name(b), limits(&b.limits))
}

/// What `budget clear` prints.
pub fn budget_cleared_line(b: &Budget) -> String {
    format!(
        "cleared the {} (it was {})",
        budget_name(b),
        limits(&b.limits)
    )
}

/// `12.3k tokens (10k input), $0.0123`.
fn amounts(a: &Amounts) -> String {
    format!(
        "{} tokens ({} input), {}",
        exact_count(a.tokens),
        exact_count(a.input_tokens),
        a.usd
    )
}

/// `12.3k tokens on models without a price`, when there are any.
fn unpriced_note(tokens: u64) -> Option<String> {
    (tokens > 0).then(|| format!("{} tokens on models without a price", exact_count(tokens)))
}

/// Everything `teamctl budget` shows: the team's spend, each limit, then the
/// accounts. With no limit, says so and how to set one.
pub fn budget_report_lines(r: &BudgetReport, team: &str, now: i64) -> Vec<String> {
    let mut spent = format!("spent by team '{team}', all time: {}", amounts(&r.spent));
    if let Some(note) = unpriced_note(r.unpriced_tokens) {
        spent.push_str(&format!("; {note}"));
    }
    let mut out = vec![spent];
    if r.budgets.is_empty() {
        out.push(format!(
            "no budgets in team '{team}': nothing limits what its teammates spend"
        ));
        out.push(
            "set one, e.g. `teamctl budget set --usd 5 --per 1d` ($5 a day for the team)"
                .to_string(),
        );
    }
    for b in &r.budgets {
        out.push(String::new());
        out.extend(budget_lines(b, now));
    }
    if !r.accounts.is_empty() {
        out.push(String::new());
        out.push("accounts boardd schedules calls on:".to_string());
        let width = r.accounts.iter().map(|a| a.name.len()).max().unwrap_or(0);
        for a in &r.accounts {
            out.extend(account_lines(a, width, now));
        }
    }
    out
}

/// One limit: its name and period, a table of limit, spent, reserved and
/// left, then what has no price and why it ran out.
pub fn budget_lines(s: &BudgetState, now: i64) -> Vec<String> {
    let b = &s.budget;
    let l = &b.limits;
    let title = match b.per_ms {
        Some(per) => format!(
            "{} (a rolling window: the last {} counts)",
            budget_name(b),
            fmt_period(per)
        ),
        None => format!("{}, for all time", budget_name(b)),
    };
    let tokens = |limit: Option<u64>, spent: u64, reserved: u64| {
        let left = limit.map(|l| l.saturating_sub(spent).saturating_sub(reserved));
        [
            limit.map_or_else(|| "-".to_string(), exact_count),
            exact_count(spent),
            exact_count(reserved),
            left.map_or_else(|| "-".to_string(), exact_count),
        ]
    };
    let mut rows = vec![(
        "tokens",
        tokens(l.tokens, s.spent.tokens, s.reserved.tokens),
    )];
    if l.input_tokens.is_some() {
        rows.push((
            "input tokens",
            tokens(
                l.input_tokens,
                s.spent.input_tokens,
                s.reserved.input_tokens,
            ),
        ));
    }
    let usd_left = l
        .usd
        .map(|u| u.saturating_sub(s.spent.usd).saturating_sub(s.reserved.usd));
    rows.push((
        "dollars",
        [
            l.usd.map_or_else(|| "-".to_string(), |u| u.to_string()),
            s.spent.usd.to_string(),
            s.reserved.usd.to_string(),
            usd_left.map_or_else(|| "-".to_string(), |u| u.to_string()),
        ],
    ));
    let head = ["limit", "spent", "reserved", "left"];
    let lw = rows.iter().map(|(n, _)| n.len()).max().unwrap_or(0);
    let cw: Vec<usize> = (0..head.len())
        .map(|i| {
            rows.iter()
                .map(|(_, r)| r[i].len())
                .chain([head[i].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let row = |label: &str, cells: [&str; 4]| {
        let cells: Vec<String> = cells
            .iter()
            .zip(&cw)
            .map(|(c, w)| format!("{c:>w$}"))
            .collect();
        format!("  {label:<lw$}  {}", cells.join("  "))
            .trim_end()
            .to_string()
    };
    let mut out = vec![title, row("", head)];
    for (label, cells) in &rows {
        out.push(row(label, cells.each_ref().map(String::as_str)));
    }
    if let Some(note) = unpriced_note(s.unpriced_tokens) {
        out.push(format!(
            "  {note}: they count against token limits, never the dollar one"
        ));
    }
    if let Some(why) = &s.exhausted {
        let mut line = format!("  exhausted: {why}");
        if let Some(left) = s.rolls_at.and_then(|at| until(at, now)) {
            line.push_str(&format!("; rolls in {left}"));
        }
        out.push(line);
    }
    out
}

/// An account: calls in flight and waiting, a block, then the limits set
/// and those learned from the provider.
fn account_lines(a: &AccountState, width: usize, now: i64) -> Vec<String> {
    let mut first = format!(
        "  {:<width$}  {} in flight, {} waiting",
        a.name, a.in_flight, a.waiting
    );
    if let Some(at) = a.blocked_until_ms
        && let Some(left) = until(at, now)
    {
        first.push_str(&format!("  blocked until {} UTC (in {left})", clock(at)));
        if let Some(why) = &a.blocked_reason {
            first.push_str(&format!(": {why}"));
        }
    }
    let mut out = vec![first];
    let pad = " ".repeat(width + 4);
    if let Some(set) = rate_limits(&a.limits) {
        out.push(format!("{pad}set: {set}"));
    }
    let learned: Vec<String> = [("requests", &a.requests), ("tokens", &a.tokens)]
        .into_iter()
        .filter_map(|(what, w)| w.as_ref().map(|w| window(what, w, now)))
        .collect();
    if !learned.is_empty() {
        out.push(format!("{pad}learned: {}", learned.join("; ")));
    }
    out
}

/// `4 at once, 50 requests/min, 40k tokens/min`, if any is set.
fn rate_limits(l: &RateLimits) -> Option<String> {
    let parts: Vec<String> = [
        l.concurrent.map(|n| format!("{n} at once")),
        l.requests_per_minute.map(|n| format!("{n} requests/min")),
        l.tokens_per_minute
            .map(|n| format!("{} tokens/min", exact_count(n))),
    ]
    .into_iter()
    .flatten()
    .collect();
    (!parts.is_empty()).then(|| parts.join(", "))
}

/// `requests 10 of 50 left (resets in 30s)`.
fn window(what: &str, w: &RateWindow, now: i64) -> String {
    let mut s = match w.limit {
        Some(limit) => format!(
            "{what} {} of {} left",
            exact_count(w.remaining),
            exact_count(limit)
        ),
        None => format!("{what} {} left", exact_count(w.remaining)),
    };
    if let Some(left) = until(w.reset_at_ms, now) {
        s.push_str(&format!(" (resets in {left})"));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use teamboard_protocol::spend::{BudgetScope, MicroUsd};

    #[test]
    fn a_cost_keeps_dollars_and_unpriced_tokens_apart() {
        let c = |usd, unpriced_tokens| {
            cost(&Cost {
                usd: MicroUsd(usd),
                unpriced_tokens,
            })
        };
        assert_eq!(c(12_300, 0), "$0.0123");
        assert_eq!(c(0, 0), "$0.00");
        assert_eq!(c(0, 1_200), "unpriced");
        assert_eq!(c(5_110_000, 2_000), "$5.11 + 2.0k tokens unpriced");
    }

    #[test]
    fn limits_read_as_they_could_be_typed() {
        assert_eq!(exact_count(950), "950");
        assert_eq!(exact_count(9_999), "9,999");
        assert_eq!(exact_count(1_000), "1k");
        assert_eq!(exact_count(50_000), "50k");
        assert_eq!(exact_count(12_500), "12.5k");
        assert_eq!(exact_count(1_500_000), "1.5M");
        assert_eq!(exact_count(2_000_000), "2M");
        assert_eq!(exact_count(1_234_000), "1,234,000");
        assert_eq!(exact_count(12_345), "12,345");
        assert_eq!(exact_count(1_234_567), "1,234,567");
    }

    #[test]
    fn a_wait_shows_what_holds_the_member_and_when_it_resets() {
        let now = 1_000_000;
        let rate = MemberWait {
            reason: "rate limit on work (usage_limit_reached)".into(),
            until_ms: Some(now + 12 * 60_000 - 500),
        };
        assert_eq!(
            wait_state(&rate, now),
            (
                "waiting: rate limit (resets in 12m)".to_string(),
                Some("rate limit on work (usage_limit_reached)".to_string())
            )
        );
        let soon = |ms| until(now + ms, now);
        assert_eq!(soon(500), Some("1s".into()));
        assert_eq!(soon(12 * 60_000 - 1_000), Some("12m".into()));
        assert_eq!(soon(125 * 60_000), Some("2h 5m".into()));
        assert_eq!(soon(0), None);
        let passed = MemberWait {
            until_ms: Some(now - 1),
            ..rate
        };
        assert_eq!(wait_state(&passed, now).0, "waiting: rate limit");
        let budget = MemberWait {
            reason: "budget: team budget limit of 50000 tokens reached".into(),
            until_ms: None,
        };
        assert_eq!(
            wait_state(&budget, now),
            (
                "waiting: budget".to_string(),
                Some("budget: team budget limit of 50000 tokens reached".to_string())
            )
        );
        let other = MemberWait {
            reason: "capacity".into(),
            until_ms: None,
        };
        assert_eq!(wait_state(&other, now), ("waiting: capacity".into(), None));
    }

    fn budget(scope: BudgetScope, per_ms: Option<u64>, limits: Limits) -> Budget {
        Budget {
            scope,
            per_ms,
            limits,
            set_by: "lead".into(),
            set_at: 0,
        }
    }

    #[test]
    fn set_and_clear_say_what_the_limit_is() {
        let b = budget(
            BudgetScope::Member {
                name: "alice".into(),
            },
            Some(1_800_000),
            Limits {
                tokens: None,
                input_tokens: Some(500_000),
                usd: Some(MicroUsd(500_000)),
            },
        );
        assert_eq!(
            budget_set_line(&b),
            "teammate alice budget per 30m: $0.50 and 500k input tokens \
             (a rolling window: only what was spent in the last 30m counts)"
        );
        assert_eq!(
            budget_cleared_line(&b),
            "cleared the teammate alice budget per 30m (it was $0.50 and 500k input tokens)"
        );
        let t = budget(
            BudgetScope::Task { id: 7 },
            None,
            Limits {
                tokens: Some(50_000),
                ..Limits::default()
            },
        );
        assert_eq!(
            budget_set_line(&t),
            "task #7 budget: 50k tokens (for all time)"
        );
    }

    #[test]
    fn a_budget_shows_limit_spent_reserved_and_left() {
        let state = BudgetState {
            budget: budget(
                BudgetScope::Team,
                None,
                Limits {
                    tokens: Some(50_000),
                    input_tokens: None,
                    usd: Some(MicroUsd(5_000_000)),
                },
            ),
            spent: Amounts {
                tokens: 12_300,
                input_tokens: 10_000,
                usd: MicroUsd(12_300),
            },
            reserved: Amounts {
                tokens: 10_000,
                input_tokens: 8_000,
                usd: MicroUsd(20_000),
            },
            unpriced_tokens: 12_300,
            exhausted: None,
            rolls_at: None,
        };
        assert_eq!(
            budget_lines(&state, 0),
            vec![
                "team budget, for all time",
                "           limit    spent  reserved     left",
                "  tokens     50k    12.3k       10k    27.7k",
                "  dollars  $5.00  $0.0123     $0.02  $4.9677",
                "  12.3k tokens on models without a price: \
                 they count against token limits, never the dollar one",
            ]
        );
    }

    #[test]
    fn an_exhausted_window_says_why_and_when_it_rolls() {
        let now = 5_000_000;
        let state = BudgetState {
            budget: budget(
                BudgetScope::Team,
                Some(1_800_000),
                Limits {
                    input_tokens: Some(500_000),
                    ..Limits::default()
                },
            ),
            spent: Amounts {
                tokens: 510_000,
                input_tokens: 500_000,
                usd: MicroUsd::ZERO,
            },
            reserved: Amounts::default(),
            unpriced_tokens: 0,
            exhausted: Some("team budget per 30m limit of 500000 input tokens reached".into()),
            rolls_at: Some(now + 12 * 60_000),
        };
        let lines = budget_lines(&state, now);
        assert_eq!(
            lines[0],
            "team budget per 30m (a rolling window: the last 30m counts)"
        );
        assert_eq!(lines[3], "  input tokens   500k   500k         0     0");
        assert_eq!(
            lines.last().map(String::as_str),
            Some(
                "  exhausted: team budget per 30m limit of 500000 input tokens reached; \
                 rolls in 12m"
            )
        );
        // Once the moment passed, there is nothing to count down to.
        let later = budget_lines(&state, now + 13 * 60_000);
        assert!(!later.concat().contains("rolls in"), "{later:?}");
    }

    #[test]
    fn no_budget_says_so_with_the_spend_and_an_example() {
        let report = BudgetReport {
            spent: Amounts {
                tokens: 1_200,
                input_tokens: 1_000,
                usd: MicroUsd(3_200),
            },
            unpriced_tokens: 200,
            ..BudgetReport::default()
        };
        assert_eq!(
            budget_report_lines(&report, "default", 0),
            vec![
                "spent by team 'default', all time: 1.2k tokens (1k input), $0.0032; \
                 200 tokens on models without a price",
                "no budgets in team 'default': nothing limits what its teammates spend",
                "set one, e.g. `teamctl budget set --usd 5 --per 1d` ($5 a day for the team)",
            ]
        );
    }

    #[test]
    fn accounts_show_flights_waits_blocks_and_windows() {
        let now = 0;
        let report = BudgetReport {
            accounts: vec![
                AccountState {
                    name: "work".into(),
                    limits: RateLimits {
                        concurrent: Some(4),
                        requests_per_minute: None,
                        tokens_per_minute: Some(40_000),
                    },
                    in_flight: 1,
                    waiting: 2,
                    blocked_until_ms: Some(12 * 60_000),
                    blocked_reason: Some("usage_limit_reached".into()),
                    requests: Some(RateWindow {
                        limit: Some(50),
                        remaining: 10,
                        reset_at_ms: 30_000,
                    }),
                    tokens: None,
                },
                AccountState {
                    name: "spare-key".into(),
                    limits: RateLimits::default(),
                    in_flight: 0,
                    waiting: 0,
                    blocked_until_ms: None,
                    blocked_reason: None,
                    requests: None,
                    tokens: None,
                },
            ],
            ..BudgetReport::default()
        };
        let lines = budget_report_lines(&report, "default", now);
        let at = lines
            .iter()
            .position(|l| l == "accounts boardd schedules calls on:")
            .expect("an accounts heading");
        assert_eq!(
            lines[at + 1..],
            [
                "  work       1 in flight, 2 waiting  blocked until 00:12:00 UTC (in 12m): \
                 usage_limit_reached",
                "             set: 4 at once, 40k tokens/min",
                "             learned: requests 10 of 50 left (resets in 30s)",
                "  spare-key  0 in flight, 0 waiting",
            ]
        );
    }
}
