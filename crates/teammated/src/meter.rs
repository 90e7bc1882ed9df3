//! The model loop's side of boardd's ledger: each call is reserved before it
//! is made and settled after, and the reservation says which account of the
//! chain to call.
//!
//! boardd decides: it refuses a call a budget has no room for, and holds one
//! back until its account has capacity. The meter only carries the question
//! and the answer, and keeps the reservation ids unique for the member across
//! its restarts (they start from the clock), so that a settlement after a
//! restart of boardd finds its reservation.

use crate::session::Session;
use std::sync::Arc;
use teamboard_protocol::request::{ReserveArgs, UsageArgs};
use teamboard_protocol::spend::{AccountRef, RateSnapshot, Reservation};
use teamboard_protocol::{Client, ClientError, ErrorCode, TaskId, TokenUsage};

/// How the meter reaches boardd: a teammate's reconnecting session, or the
/// lead's connection.
#[derive(Clone)]
pub enum Line {
    Session(Session),
    Client(Arc<Client>),
}

impl Line {
    async fn reserve(&self, args: ReserveArgs) -> Result<Reservation, ClientError> {
        match self {
            Line::Session(s) => {
                s.call(|c| {
                    let args = args.clone();
                    async move { c.reserve_call(args).await }
                })
                .await
            }
            Line::Client(c) => c.reserve_call(args).await,
        }
    }

    async fn settle(&self, args: UsageArgs) -> Result<(), ClientError> {
        match self {
            Line::Session(s) => {
                s.call(|c| {
                    let args = args.clone();
                    async move { c.settle_usage(args).await }
                })
                .await?;
            }
            Line::Client(c) => {
                c.settle_usage(args).await?;
            }
        }
        Ok(())
    }
}

/// Why a call was not granted.
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    /// A budget has no room for it; boardd's words.
    #[error("budget exhausted: {0}")]
    Budget(String),
    /// boardd could not be asked.
    #[error("cannot reserve the call with boardd: {0}")]
    Board(ClientError),
}

/// A granted call: which account to use.
#[derive(Debug, Clone)]
pub struct Grant {
    pub id: u64,
    pub account: usize,
    /// How long boardd held it back for the account's capacity, in ms.
    pub waited_ms: u64,
}

pub struct Meter {
    line: Line,
    chain: Vec<AccountRef>,
    next_id: u64,
    /// The scripted model's counts are estimates.
    estimated: bool,
}

impl Meter {
    pub fn new(line: Line, chain: Vec<AccountRef>, estimated: bool) -> Meter {
        // Unique across this member's processes: a restarted teammated must
        // not reuse an id an earlier one left open.
        let next_id = u64::try_from(teamboard_protocol::now_ms()).unwrap_or(1) * 1_000;
        Meter {
            line,
            chain,
            next_id,
            estimated,
        }
    }

    /// The accounts, in the order they are tried.
    pub fn chain(&self) -> &[AccountRef] {
        &self.chain
    }

    /// The id the next reservation will have: a caller that stops waiting for
    /// [`Meter::reserve`] withdraws it with [`Meter::withdraw`].
    pub fn next_id(&self) -> u64 {
        self.next_id
    }

    /// Reserves a call of `input` prompt tokens and `output` at most; waits
    /// while boardd holds it back for capacity.
    pub async fn reserve(
        &mut self,
        task: Option<TaskId>,
        input: u64,
        output: u64,
    ) -> Result<Grant, Refusal> {
        let id = self.next_id;
        self.next_id += 1;
        let args = ReserveArgs {
            id,
            task,
            input,
            output,
            chain: self.chain.clone(),
        };
        match self.line.reserve(args).await {
            Ok(r) => Ok(Grant {
                id: r.id,
                account: r.account.min(self.chain.len().saturating_sub(1)),
                waited_ms: r.waited_ms,
            }),
            Err(ClientError::Server(e)) if e.code == ErrorCode::BudgetExhausted => {
                Err(Refusal::Budget(e.message))
            }
            Err(e) => Err(Refusal::Board(e)),
        }
    }

    /// Settles a call: what it used (nothing, for one that failed), and what
    /// the provider said of the account.
    pub async fn settle(
        &self,
        id: u64,
        task: Option<TaskId>,
        tokens: TokenUsage,
        rate: Option<RateSnapshot>,
        estimated: bool,
    ) {
        let args = UsageArgs {
            reservation: Some(id),
            task,
            tokens,
            rate,
            estimated: estimated || self.estimated,
            ..UsageArgs::default()
        };
        if let Err(e) = self.line.settle(args).await {
            tracing::warn!(error = %e, id, "cannot settle a model call with boardd");
        }
    }

    /// Withdraws a reservation the caller stopped waiting for.
    pub async fn withdraw(&self, id: u64) {
        self.settle(id, None, TokenUsage::default(), None, false)
            .await;
    }
}
