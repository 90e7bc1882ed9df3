//! Command-line definitions for `teamctl budget`: the spend limits boardd
//! enforces before each model call. docs/budgets.md is the guide they follow.

use super::parse_task_id;
use clap::{Args, Subcommand};
use teamboard_protocol::TaskId;
use teamboard_protocol::spend::{MicroUsd, parse_period};

pub const BUDGET_ABOUT: &str = "\
Show the team's spend limits with what is spent, reserved and left; set or clear one";

pub const BUDGET_LONG: &str = "\
Show every spend limit of the team: what it limits (the team, a teammate or a task), \
over what period, its amounts, and what is spent, reserved by calls in flight and \
left, in tokens and dollars. One that has run out says why, and, for a rolling \
window, when it has room again. Then the provider accounts boardd schedules calls \
on: calls in flight and waiting, a block and its reason, and the rate-limit windows \
learned from the provider.

boardd keeps the ledger. Before each model call a teammate reserves the call's worst \
case (the prompt it is about to send plus its output limit); boardd grants it only \
if every limit that covers the call has room for it with the other calls in flight \
counted, so a cap is passed by at most what one call per teammate spends beyond its \
estimate. A refused call is not made: its task goes back to the board as `budget \
exhausted` (not a failed attempt), the lead is told once, and the teammate waits \
without spending until the limit is raised or its window rolls. The lead is also \
warned when a limit reaches 80%.

Tokens of models without a price count against token limits only: `teamctl budget` \
says how many there are. See docs/budgets.md.";

pub const BUDGET_EXAMPLES: &str = "\
Examples:
  teamctl budget                                     every limit, the team's spend, the accounts
  teamctl budget --json | jq '.budgets[] | {scope: .budget.scope, spent, reserved}'
  teamctl budget set --usd 5 --per 1d                $5 a day for the whole team
  teamctl budget set --member alice --tokens 1.5M    alice: 1.5 million tokens, ever
  teamctl budget set --task 7 --usd '$0.50'          task #7: fifty cents
  teamctl budget set --input-tokens 500k --per 30m   500k input tokens per 30 minutes
  teamctl budget clear --per 1d                      remove the team's daily limit";

pub const BUDGET_SET_LONG: &str = "\
Set a spend limit on the team (the default), one teammate (--member) or one task \
(--task), for all time or per period (--per). Name at least one amount: --tokens \
(everything the model read and wrote, cached input included), --input-tokens (what \
it read) or --usd (dollars, at the model's price). There is one limit per scope and \
period: setting it again changes the amounts you name and keeps the others.

--per makes it a rolling window, not a calendar period: with --per 30m only what \
was spent in the last 30 minutes counts, so room comes back as older calls fall out \
of the window, not all at once at midnight. Without --per the limit is for all time.

A dollar limit refuses calls to models without a price: their cost is not known, \
so they could pass it unseen. Add the model's price to ~/.config/teamboard/prices.toml \
(boardd reads it when it starts), or limit such a teammate in tokens:

  [models.\"openai/gpt-4o-mini\"]   # dollars per million tokens
  input = 0.15
  output = 0.60

Only the lead sets limits; raising one that ran out lets its teammates work again at \
once. Prints what was set.";

pub const BUDGET_SET_EXAMPLES: &str = "\
Examples:
  teamctl budget set --usd 5                         $5 for the whole team, for all time
  teamctl budget set --usd 0.50 --per 1d             fifty cents a day
  teamctl budget set --tokens 50000                  50,000 tokens (also: 50k)
  teamctl budget set --input-tokens 500k --per 30m   at most 500k input tokens in any 30 minutes
  teamctl budget set --member alice --tokens 1.5M --per 1d
  teamctl budget set --task 7 --usd '$2' --tokens 200k
  teamctl budget set --usd 10 --per 1w --json

Numbers of tokens: 50000, 50k, 1.5M. Dollars: 0.50 or $0.50 (quote the $ in a shell). \
Periods: 90s, 30m, 12h, 1d, 1w.";

pub const BUDGET_CLEAR_LONG: &str = "\
Remove a spend limit: the one of the team (the default), of --member NAME or of \
--task ID, for all time or, with --per, the rolling window of that length. Teammates \
that waited for it may work again at once. Prints the limit as it was.";

pub const BUDGET_CLEAR_EXAMPLES: &str = "\
Examples:
  teamctl budget clear                    the team's all-time limit
  teamctl budget clear --per 1d           the team's daily limit
  teamctl budget clear --member alice --per 30m
  teamctl budget clear --task 7";

#[derive(Debug, Args)]
pub struct BudgetArgs {
    #[command(subcommand)]
    pub command: Option<BudgetCommand>,
}

#[derive(Debug, Subcommand)]
pub enum BudgetCommand {
    /// Every limit with what is spent, reserved and left, then the accounts
    /// (the same as `teamctl budget`)
    #[command(long_about = BUDGET_LONG, after_help = BUDGET_EXAMPLES)]
    Show,

    /// Set a limit in tokens and/or dollars on the team, a teammate or a task
    /// (lead only)
    #[command(long_about = BUDGET_SET_LONG, after_help = BUDGET_SET_EXAMPLES)]
    Set(BudgetSetArgs),

    /// Remove a limit (lead only)
    #[command(long_about = BUDGET_CLEAR_LONG, after_help = BUDGET_CLEAR_EXAMPLES)]
    Clear(BudgetClearArgs),
}

/// What a limit covers: the team unless one of these names a part of it.
#[derive(Debug, Args)]
pub struct BudgetScopeArgs {
    /// The limit of one teammate's calls rather than the team's
    #[arg(long, value_name = "NAME", conflicts_with = "task")]
    pub member: Option<String>,

    /// The limit of the calls made for one task (`3` or `#3`)
    #[arg(long, value_name = "ID", value_parser = parse_task_id)]
    pub task: Option<TaskId>,

    /// The limit over a rolling window: only what was spent within the last
    /// PERIOD counts (90s, 30m, 12h, 1d, 1w) [default: for all time]
    #[arg(long, value_name = "PERIOD", value_parser = parse_period)]
    pub per: Option<u64>,
}

#[derive(Debug, Args)]
pub struct BudgetSetArgs {
    #[command(flatten)]
    pub scope: BudgetScopeArgs,

    /// Tokens in all: what the model read, cached or not, and wrote (50000,
    /// 50k, 1.5M)
    #[arg(long, value_name = "N", value_parser = parse_tokens)]
    pub tokens: Option<u64>,

    /// Input tokens only: fresh, read from and written to the prompt cache
    #[arg(long, value_name = "N", value_parser = parse_tokens)]
    pub input_tokens: Option<u64>,

    /// Dollars at the models' prices (0.50 or $0.50); refuses calls to models
    /// without a price
    #[arg(long, value_name = "USD", value_parser = parse_usd)]
    pub usd: Option<MicroUsd>,
}

#[derive(Debug, Args)]
pub struct BudgetClearArgs {
    #[command(flatten)]
    pub scope: BudgetScopeArgs,
}

/// A number of tokens as a person writes it: `50000`, `50_000`, `50k`, `1.5M`.
pub fn parse_tokens(s: &str) -> Result<u64, String> {
    let bad = || format!("'{s}' is not a number of tokens; write it like 50000, 50k or 1.5M");
    let t = s.trim().replace('_', "");
    let (number, scale) = match t.char_indices().last() {
        Some((i, 'k' | 'K')) => (&t[..i], 1_000),
        Some((i, 'm' | 'M')) => (&t[..i], 1_000_000),
        _ => (t.as_str(), 1),
    };
    let (digits, places) = decimal(number).ok_or_else(bad)?;
    scaled(digits, places, scale).ok_or_else(|| {
        if places > 0 && scale > 1 {
            format!("'{s}' is not a whole number of tokens")
        } else {
            bad()
        }
    })
}

/// Dollars as a person writes them: `5`, `0.50`, `$0.50`, to the millionth.
pub fn parse_usd(s: &str) -> Result<MicroUsd, String> {
    let t = s.trim();
    let number = t.strip_prefix('$').unwrap_or(t).trim();
    let (digits, places) = decimal(number).ok_or_else(|| {
        format!("'{s}' is not an amount of dollars; write it like 5, 0.50 or $0.50")
    })?;
    scaled(digits, places, 1_000_000)
        .map(MicroUsd)
        .ok_or_else(|| format!("'{s}' is finer than a millionth of a dollar, or too large"))
}

/// `12.5` as its digits (125) and how many of them follow the point (1).
/// Decimal, not a float, so that `1.1M` is exactly 1,100,000.
fn decimal(s: &str) -> Option<(u128, u32)> {
    let (whole, frac) = s.split_once('.').unwrap_or((s, ""));
    let all_digits = |p: &str| p.bytes().all(|b| b.is_ascii_digit());
    if whole.is_empty() && frac.is_empty() || !all_digits(whole) || !all_digits(frac) {
        return None;
    }
    let places = u32::try_from(frac.len()).ok().filter(|p| *p <= 18)?;
    let digits = format!("{whole}{frac}").trim_start_matches('0').to_string();
    if digits.len() > 30 {
        return None;
    }
    Some((
        if digits.is_empty() {
            0
        } else {
            digits.parse().ok()?
        },
        places,
    ))
}

/// `digits / 10^places * scale`, if that is a whole number that fits.
fn scaled(digits: u128, places: u32, scale: u128) -> Option<u64> {
    let value = digits.checked_mul(scale)?;
    let unit = 10u128.pow(places);
    value
        .is_multiple_of(unit)
        .then(|| value / unit)
        .and_then(|v| u64::try_from(v).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_read_as_people_write_them() {
        assert_eq!(parse_tokens("50000"), Ok(50_000));
        assert_eq!(parse_tokens("50_000"), Ok(50_000));
        assert_eq!(parse_tokens("50k"), Ok(50_000));
        assert_eq!(parse_tokens("1.5M"), Ok(1_500_000));
        assert_eq!(parse_tokens("1.1m"), Ok(1_100_000));
        assert_eq!(parse_tokens(" 2K "), Ok(2_000));
        assert_eq!(parse_tokens("0"), Ok(0));
        for bad in ["", "k", "5x", "-5", "1.5", "1e6", "five", "1..5k"] {
            let e = parse_tokens(bad).expect_err(bad);
            assert!(e.contains("50k or 1.5M"), "{bad}: {e}");
        }
        assert!(
            parse_tokens("1.0001k")
                .unwrap_err()
                .contains("whole number")
        );
        assert!(parse_tokens("99999999999999999999999M").is_err());
    }

    #[test]
    fn dollars_read_with_or_without_the_sign() {
        assert_eq!(parse_usd("0.50"), Ok(MicroUsd(500_000)));
        assert_eq!(parse_usd("$0.50"), Ok(MicroUsd(500_000)));
        assert_eq!(parse_usd("5"), Ok(MicroUsd(5_000_000)));
        assert_eq!(parse_usd(".25"), Ok(MicroUsd(250_000)));
        assert_eq!(parse_usd("$0.000001"), Ok(MicroUsd(1)));
        for bad in ["", "$", "-1", "five", "5 USD", "1,50"] {
            let e = parse_usd(bad).expect_err(bad);
            assert!(e.contains("0.50 or $0.50"), "{bad}: {e}");
        }
        assert!(parse_usd("0.0000001").unwrap_err().contains("millionth"));
    }
}
