//! What a batch of operations changed, for the store.

use std::collections::BTreeSet;
use teamboard_protocol::spend::{AccountBlock, Budget, BudgetScope, HeldCall, UsageRecord};
use teamboard_protocol::{Event, Member, Message, Repo, RequestId, Task, TaskId, TeamRequest};

/// Whether each named collection of a value is empty: [`Dirty`] and [`Changes`]
/// hold the same kinds of row.
macro_rules! all_empty {
    ($s:ident: $($field:ident),*) => { $($s.$field.is_empty())&&* };
}

/// Keys of rows changed since the last take. A row changed ten times in one batch is
/// written once, with its final value.
#[derive(Debug, Default)]
pub(crate) struct Dirty {
    pub tasks: BTreeSet<(String, TaskId)>,
    pub tasks_deleted: BTreeSet<(String, TaskId)>,
    pub members: BTreeSet<(String, String)>,
    pub messages_added: BTreeSet<(String, u64)>,
    pub messages_acked: BTreeSet<u64>,
    pub requests: BTreeSet<(String, RequestId)>,
    /// Teams whose repository was set.
    pub repos: BTreeSet<String>,
    /// Teams created explicitly.
    pub teams: BTreeSet<String>,
    pub events: Vec<Event>,
    /// Budgets set, cleared, or marked (a call refused, the lead warned).
    pub budgets: BTreeSet<(String, crate::spend::BudgetKey)>,
    /// Calls in flight granted or ended: (team, member, reservation).
    pub held: BTreeSet<(String, String, u64)>,
    /// Settled calls, in order.
    pub usage: Vec<(String, UsageRecord)>,
    /// Accounts whose block changed.
    pub account_blocks: BTreeSet<String>,
}

impl Dirty {
    pub fn is_empty(&self) -> bool {
        all_empty!(self: tasks, tasks_deleted, members, messages_added, messages_acked, requests, repos, teams, events, budgets, held, usage, account_blocks)
    }
}

/// (team, scope, period, budget and what it came to) for a budget set or
/// marked; `None` for one cleared.
pub type BudgetChange = (
    String,
    BudgetScope,
    Option<u64>,
    Option<(Budget, crate::spend::BudgetMarks)>,
);

/// The rows to write for one batch: the final values of everything that changed.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Changes {
    /// (team, task) for tasks created or changed.
    pub tasks: Vec<(String, Task)>,
    /// (team, task) for tasks deleted, to remove.
    pub tasks_deleted: Vec<(String, TaskId)>,
    /// (team, member) for members added or changed.
    pub members: Vec<(String, Member)>,
    /// (team, message) for messages sent and still unacknowledged.
    pub messages_added: Vec<(String, Message)>,
    /// Ids of messages acknowledged, to delete.
    pub messages_acked: Vec<u64>,
    /// (team, request) for requests opened or settled.
    pub requests: Vec<(String, TeamRequest)>,
    /// (team, repository) for repositories attached or changed.
    pub repos: Vec<(String, Repo)>,
    /// Teams created explicitly (`Hello::new_team`).
    pub teams: Vec<String>,
    pub events: Vec<Event>,
    pub budgets: Vec<BudgetChange>,
    /// (team, member, id, call) for calls granted; `None` for one settled.
    pub held: Vec<(String, String, u64, Option<HeldCall>)>,
    /// Settled calls, to append to the ledger.
    pub usage: Vec<(String, UsageRecord)>,
    /// Accounts blocked until a reset.
    pub account_blocks: Vec<AccountBlock>,
    /// The message id counter after the batch. Acknowledged messages are deleted, so
    /// the highest stored id is not enough to never reuse one.
    pub next_message_id: u64,
}

impl Changes {
    pub fn is_empty(&self) -> bool {
        all_empty!(self: tasks, tasks_deleted, members, messages_added, messages_acked, requests, repos, teams, events, budgets, held, usage, account_blocks)
    }
}
