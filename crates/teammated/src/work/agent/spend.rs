//! An agent's spend under the board's budgets and its account's limits.
//!
//! An agent calls its model by itself, so the native loop's way (reserve
//! each call's worst case before making it) is not open to it. What is: the
//! agent reports each call's usage as it goes (Claude Code at the end of each
//! model call, Codex likewise, an ACP agent at the end of its turn), and each
//! report is settled with boardd at once; when boardd answers that a budget
//! covering the teammate or its task has no room left, the agent's turn
//! stops there. A cap is thus passed by what the calls in flight at that
//! moment spend. Where the call that ran the budget out ended the agent's
//! turn, there is no call left to stop: the turn's answer may still complete
//! the task, as the native loop completes one after its last call, and only
//! a next turn (a refusal of the gate, a message waiting) is not started. Usage boardd cannot price, under a dollar limit, stops the
//! turn too, as boardd refuses the native loop such a call: the limit could
//! never run out. Before a task's agent starts, boardd is asked where the
//! budgets stand (a settlement of nothing), so that an agent is not started
//! for nothing, and Claude Code on an API key gets what the dollar limits
//! leave as its own `--max-budget-usd`.
//!
//! A usage limit with a reset (a subscription's five-hour window, Codex's
//! `usage_limit_reached`) is told to boardd as a block of the login's
//! account; the task goes back, and the teammate waits for the reset before
//! it takes more work. Not by a sleep of its own: by a reservation of nothing
//! on the account, which boardd parks until the block it knows ends (and
//! which ends early if the block is lifted, or learned later by another
//! teammate on the same login). The alternative, taking the next task and
//! starting the agent, would call the capped account again before its reset,
//! and a task claimed only to wait would sit out the reset on the board.

use crate::runtime::{Limit, Usage};
use crate::teammate::{Exit, Teammate};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use teamboard_protocol::request::{ReserveArgs, UsageArgs};
use teamboard_protocol::spend::{AccountRef, MicroUsd, Pricing, RateLimits, RateSnapshot};
use teamboard_protocol::{MemberStatus, MessageKind};

/// How often the inbox is looked at for a shutdown request while the
/// teammate waits for a reset.
const SHUTDOWN_POLL: Duration = Duration::from_secs(1);

/// Before an agent starts on the held task: `Err(why)` when a budget that
/// covers the task has no room left; else the dollars its dollar limits
/// leave, if any.
pub(super) async fn room(t: &Teammate) -> Result<Option<MicroUsd>, String> {
    match t.settle_agent_usage(UsageArgs::default()).await {
        Some(settled) => match settled.exhausted {
            Some(why) => Err(why),
            None => Ok(settled.usd_left),
        },
        None => Ok(None),
    }
}

/// Settles what the agent reported; `Some(why)` when a budget ran out.
pub(super) async fn settle(t: &Teammate, usage: Usage) -> Option<String> {
    if usage.tokens.total() == 0 {
        return None;
    }
    let args = UsageArgs {
        tokens: usage.tokens,
        model: usage.model,
        subscription: usage.subscription.is_some(),
        account: usage.subscription,
        ..UsageArgs::default()
    };
    let settled = t.settle_agent_usage(args).await?;
    if settled.exhausted.is_some() {
        return settled.exhausted;
    }
    // As boardd refuses the native loop a call it cannot price under a
    // dollar limit: such a limit would never run out.
    match (settled.pricing, settled.usd_left) {
        (Pricing::Unpriced { reason }, Some(_)) => Some(format!(
            "a dollar limit covers this work, and {reason}: add the model's price, or set the \
             limit in tokens"
        )),
        _ => None,
    }
}

/// Tells boardd that `limit`'s account must not be called before its reset.
pub(super) async fn block(t: &Teammate, limit: &Limit) {
    let args = UsageArgs {
        account: Some(limit.account.clone()),
        model: limit.model.clone(),
        rate: Some(RateSnapshot {
            blocked_until_ms: limit.until_ms,
            blocked_reason: Some(limit.reason.clone()),
            ..RateSnapshot::default()
        }),
        ..UsageArgs::default()
    };
    t.settle_agent_usage(args).await;
}

/// The note a task goes back with: `usage limit on claude-subscription
/// (five_hour usage limit) until <its reset as an HTTP date>`.
pub(super) fn limit_note(limit: &Limit) -> String {
    let until = match limit.until_ms {
        Some(ms) => format!("until {}", when(ms)),
        None => "(its reset time unknown)".to_string(),
    };
    format!(
        "usage limit on {} ({}) {until}",
        limit.account, limit.reason
    )
}

/// A moment in ms since the epoch, as an HTTP date.
fn when(ms: i64) -> String {
    let at = UNIX_EPOCH + Duration::from_millis(u64::try_from(ms).unwrap_or(0));
    httpdate::fmt_http_date(at)
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// Waits until `limit`'s account may be called again (see the module's
/// notes), holding no task and reading no message but a shutdown request,
/// which ends the wait (IDLE then answers it). `Some(exit)` when teammated is
/// told to stop meanwhile. A limit whose reset is unknown is not waited for:
/// IDLE rests as after a failure (up to a minute), so that the next start
/// does not call the capped account again at once.
pub(super) async fn wait_out(t: &mut Teammate, limit: &Limit) -> Option<Exit> {
    let Some(until) = limit.until_ms.filter(|&u| u > now_ms()) else {
        t.failed();
        return None;
    };
    if let Err(e) = t.set_status(MemberStatus::Idle).await {
        tracing::warn!(error = %e, "cannot set the status to idle");
    }
    t.lifecycle(&format!(
        "agent: waiting for {} to reset, {}",
        limit.account,
        when(until)
    ));
    // Unique for the member: an agent runtime makes no other reservation.
    let id = u64::try_from(now_ms()).unwrap_or(0);
    let args = ReserveArgs {
        id,
        task: None,
        input: 0,
        output: 0,
        chain: vec![AccountRef {
            name: limit.account.clone(),
            model: limit.model.clone().unwrap_or_default(),
            limits: RateLimits::default(),
            // Costs nothing, so that no dollar limit asks for its price.
            subscription: true,
        }],
    };
    let session = t.session().clone();
    let args = &args;
    let reserve = session.call(|c| async move { c.reserve_call(args.clone()).await });
    tokio::pin!(reserve);
    let cancel = t.cancel().clone();
    let asked_to_leave = loop {
        tokio::select! {
            _ = cancel.cancelled() => return Some(Exit::Terminated),
            granted = &mut reserve => {
                if let Err(e) = granted {
                    tracing::warn!(error = %e, "cannot wait for the account's reset");
                }
                break false;
            }
            _ = tokio::time::sleep(SHUTDOWN_POLL) => {
                if shutdown_asked(t).await {
                    break true;
                }
            }
        }
    };
    // Granted, or to be withdrawn: either way it ends here.
    let end = UsageArgs {
        reservation: Some(id),
        ..UsageArgs::default()
    };
    t.settle_agent_usage(end).await;
    if asked_to_leave {
        // Answered with its withdrawal.
        let _ = reserve.await;
        t.lifecycle("agent: a shutdown request ended the wait for the reset");
    } else {
        t.lifecycle(&format!("agent: {} may be called again", limit.account));
    }
    None
}

/// Whether a shutdown request waits in the inbox.
async fn shutdown_asked(t: &Teammate) -> bool {
    match t.session().call(|c| async move { c.inbox().await }).await {
        Ok(messages) => messages
            .iter()
            .any(|m| m.kind == MessageKind::ShutdownRequest),
        Err(e) => {
            tracing::warn!(error = %e, "cannot read the inbox");
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_limit_note_says_the_account_the_limit_and_its_reset() {
        let mut limit = Limit {
            account: "claude-subscription".into(),
            model: None,
            until_ms: Some(1_796_544_882_000),
            reason: "five_hour usage limit".into(),
        };
        assert_eq!(
            limit_note(&limit),
            "usage limit on claude-subscription (five_hour usage limit) until Sun, 06 Dec 2026 08:14:42 GMT"
        );
        limit.until_ms = None;
        assert_eq!(
            limit_note(&limit),
            "usage limit on claude-subscription (five_hour usage limit) (its reset time unknown)"
        );
    }
}
