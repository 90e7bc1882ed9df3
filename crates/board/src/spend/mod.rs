//! Spend: budgets, the ledger, and the scheduling of model calls against
//! provider accounts.
//!
//! Every model call is reserved before it is made and settled after
//! (`calls`). A reservation holds the call's worst case against each budget
//! that covers it (`budgets`, counted by the team's `ledger`), so that many
//! teammates calling at once cannot overshoot a cap by more than what each
//! call in flight spends beyond its estimate. It is granted when the account
//! it goes to has capacity (`accounts`), so that teammates wait for a rate
//! limit instead of firing into it. A call whose caller went away is settled
//! or charged by `held`.
//!
//! Alternatives that lost:
//! - summing usage after each call and stopping once over (what most agent
//!   tools do): every call in flight when the sum crosses the cap is spent
//!   anyway, and with twenty teammates that is twenty calls past it;
//! - enforcing budgets in each teammate: teammates are separate processes,
//!   and a team cap is shared by all of them;
//! - pricing in the teammate: prices are the person's (their override file),
//!   and one place that prices keeps the ledger's dollars consistent.

mod accounts;
mod budgets;
mod calls;
mod held;
mod ledger;

pub(crate) use accounts::Accounts;
pub(crate) use calls::Calls;
pub use calls::Pricer;
pub use ledger::BudgetMarks;
pub use ledger::MAX_PERIOD_MS;
pub(crate) use ledger::{BudgetKey, Ledger};

/// The board's price function, with a `Debug` that does not print it.
#[derive(Clone)]
pub(crate) struct PricerFn(pub std::sync::Arc<Pricer>);

impl std::fmt::Debug for PricerFn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PricerFn")
    }
}
