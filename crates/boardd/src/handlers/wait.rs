//! `wait_for_work`: answer now if there is work, else park until there is.

use crate::actor::Actor;
use crate::outbox::Outbox;
use crate::reply::Reply;
use std::time::Duration;
use teamboard_board::Ctx;
use teamboard_protocol::ErrorBody;
use teamboard_protocol::request::WaitArgs;

pub(super) fn wait(actor: &mut Actor, ctx: Ctx, id: u64, args: WaitArgs, out: Outbox) {
    let token = actor.next_token;
    actor.next_token += 1;
    // A timeout too large to represent means "wait until work arrives".
    let deadline = args
        .timeout_ms
        .and_then(|ms| ctx.now.mono.checked_add(Duration::from_millis(ms)));
    match actor.board.park(ctx, token, deadline) {
        Ok(Some(work)) => actor.reply(&out, id, Ok(Reply::Work(Box::new(work)))),
        Ok(None) => {
            actor.waiters.insert(token, (ctx.session, out, id));
        }
        Err(e) => actor.reply(&out, id, Err(ErrorBody::from(e))),
    }
}
