//! `wait_for_work`: answer now if there is work, else park in the board until
//! there is.

use super::Outcome;
use crate::reply::Reply;
use std::time::Duration;
use teamboard_board::{Board, Ctx};
use teamboard_protocol::request::WaitArgs;

pub(super) fn wait(board: &mut Board, ctx: Ctx, id: u64, args: WaitArgs) -> Outcome {
    // A deadline past what the monotonic clock can represent means "wait until
    // work arrives".
    let deadline = args
        .timeout_ms
        .and_then(|ms| ctx.now.mono.checked_add(Duration::from_millis(ms)));
    match board.park(ctx, id, deadline) {
        Ok(Some(work)) => Outcome::Reply(Ok(Reply::Work(Box::new(work)))),
        Ok(None) => Outcome::Parked,
        Err(e) => Outcome::Reply(Err(e.into())),
    }
}
