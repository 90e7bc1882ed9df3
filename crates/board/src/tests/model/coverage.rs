//! What the sequences reached. A generator that stopped reaching a rule (a
//! changed weight, a new precondition on the board) would leave the model
//! test passing while proving nothing about that rule, so the run counts each
//! op's outcomes and the states the tasks passed through, and fails if any
//! listed here was never reached.

use super::ops::{Fenced, Op};
use super::{Answer, View};
use std::collections::BTreeSet;
use teamboard_protocol::{LandingStage, TaskStatus};

/// Each must be reached by some step of the run: `op outcome`, or a state.
const REQUIRED: &[&str] = &[
    "add ok",
    "add NotFound",
    "add InvalidArgs",
    "depend ok",
    "depend Cycle",
    "depend InvalidState",
    "claim ok",
    "claim Conflict",
    "claim RoleMismatch",
    "claim AlreadyHoldsTask",
    "claim NotRegistered",
    "claim InvalidState",
    "claim_next ok",
    "wait ok",
    "state taken up after review",
    "heartbeat ok",
    "heartbeat StaleEpoch",
    "complete ok",
    "complete StaleEpoch",
    "complete PlanRequired",
    "complete InvalidState",
    "fail ok",
    "release ok",
    "open_worktree ok",
    "open_worktree StaleEpoch",
    "submit_plan ok",
    "edit ok",
    "edit InvalidState",
    "delete ok",
    "delete InvalidState",
    "cancel ok",
    "cancel InvalidState",
    "cancel PermissionDenied",
    "retry ok",
    "retry InvalidState",
    "register ok",
    "restart ok",
    "register AlreadyConnected",
    "review_plan ok",
    "review_plan InvalidState",
    "review_plan PermissionDenied",
    "cancel_request ok",
    "request_shutdown ok",
    "request_shutdown NotConnected",
    "respond_shutdown ok",
    "respond_shutdown PermissionDenied",
    "respond_shutdown InvalidState",
    "gate_pass ok",
    "gate_pass StaleEpoch",
    "gate_refuse ok",
    "landed ok",
    "land_refused ok",
    "land_blocked ok",
    "merge ok",
    "merge InvalidState",
    "send_back ok",
    "state failed",
    "state stopped",
    "state lease lapsed",
    "state checking",
    "state queued",
    "state blocked",
    "state review",
    "state conflict",
    "state conflict waits for a person",
    "state merged from review",
];

#[derive(Debug, Default)]
pub(super) struct Coverage(BTreeSet<String>);

impl Coverage {
    /// One step: the op's outcome (unless it found nothing to act on) and
    /// the states it left.
    pub fn record(&mut self, op: &Op, got: &Answer, acted: bool, before: &View, after: &View) {
        if acted {
            let outcome = match got {
                Ok(_) => "ok".to_string(),
                Err(code) => format!("{code:?}"),
            };
            self.0.insert(format!("{} {outcome}", kind(op)));
        }
        for t in &after.tasks {
            let state = match (t.status, t.landing) {
                (TaskStatus::Failed, _) => "failed",
                (TaskStatus::Pending, Some(LandingStage::Conflict)) => {
                    "conflict waits for a person"
                }
                (_, Some(LandingStage::Checking)) => "checking",
                (_, Some(LandingStage::Queued)) if t.owner_done => "merged from review",
                (_, Some(LandingStage::Queued)) => "queued",
                (_, Some(LandingStage::Blocked)) => "blocked",
                (_, Some(LandingStage::Review)) => "review",
                (_, Some(LandingStage::Conflict)) => "conflict",
                _ => continue,
            };
            self.0.insert(format!("state {state}"));
        }
        if let (Op::Wait { .. }, Ok(Some((id, _)))) = (op, got)
            && before
                .tasks
                .iter()
                .any(|t| t.id == *id && t.status == TaskStatus::InProgress)
        {
            self.0.insert("state taken up after review".into());
        }
        if after.members.iter().any(|m| m.shut) {
            self.0.insert("state stopped".into());
        }
        let lapsed = before.tasks.iter().any(|a| {
            let b = after.tasks.iter().find(|b| b.id == a.id);
            a.status == TaskStatus::InProgress && b.is_some_and(|b| b.status != a.status)
        });
        if matches!(op, Op::Advance { .. }) && lapsed {
            self.0.insert("state lease lapsed".into());
        }
    }

    pub fn merge(&mut self, other: Coverage) {
        self.0.extend(other.0);
    }

    /// What no step reached.
    pub fn missing(&self) -> Vec<&'static str> {
        let reached = |r: &&str| self.0.contains(*r);
        REQUIRED.iter().copied().filter(|r| !reached(r)).collect()
    }
}

fn kind(op: &Op) -> &'static str {
    match op {
        Op::Add { .. } => "add",
        Op::Depend { .. } => "depend",
        Op::Claim { .. } => "claim",
        Op::ClaimNext { .. } => "claim_next",
        Op::Wait { .. } => "wait",
        Op::Fenced { op, .. } => match op {
            Fenced::Heartbeat => "heartbeat",
            Fenced::Complete => "complete",
            Fenced::Fail => "fail",
            Fenced::Release { .. } => "release",
            Fenced::SubmitPlan => "submit_plan",
            Fenced::OpenWorktree => "open_worktree",
        },
        Op::Edit { .. } => "edit",
        Op::Cancel { .. } => "cancel",
        Op::Delete { .. } => "delete",
        Op::Retry { .. } => "retry",
        Op::Advance { .. } => "advance",
        Op::Disconnect { .. } => "disconnect",
        Op::Restart => "restart",
        Op::Register { .. } => "register",
        Op::ReviewPlan { .. } => "review_plan",
        Op::CancelRequest { .. } => "cancel_request",
        Op::RequestShutdown { .. } => "request_shutdown",
        Op::RespondShutdown { .. } => "respond_shutdown",
        Op::GatePass { .. } => "gate_pass",
        Op::GateRefuse { .. } => "gate_refuse",
        Op::Landed { .. } => "landed",
        Op::LandRefused { .. } => "land_refused",
        Op::LandBlocked { .. } => "land_blocked",
        Op::Merge { .. } => "merge",
        Op::Drive { .. } => "drive",
        Op::SendBack { .. } => "send_back",
    }
}
