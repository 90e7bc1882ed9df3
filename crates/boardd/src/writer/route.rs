//! Where a job goes when the actor hands it over: the one rule for when a reply
//! leaves, in one pure function.
//!
//! Every reply waits for the changes made before it to be durable, and nothing
//! overtakes a reply already queued on its connection. Within that:
//!
//! - **Now**: a job that writes nothing and reads nothing from the store, handed
//!   over when every earlier job is answered, observed only durable state. Its
//!   replies go straight out from the actor's thread.
//! - **Here**: a daemon at rest (nothing else waiting for the actor, nothing handed
//!   over for [`INLINE_AFTER_REST`], every earlier job answered) commits the job on
//!   the actor's own thread and writes its replies from there. Under a stream of
//!   requests there is fsync to overlap with work; at rest there is not, and a hand
//!   over would only add two wake-ups of sleeping threads (the writer's, then the
//!   runtime's) to the one fsync a parked teammate waits for.
//! - **Thread**: everything else goes to the writer thread, which commits all that
//!   queued during the previous fsync in one transaction (group commit) and hands
//!   the replies to the connections' write tasks. Reads of history always go there:
//!   a large one would hold up the actor, and nobody is parked on it.
//!
//! `docs/design/group-commit.md` weighs the alternatives.

use std::time::Duration;

/// How long the actor must have handed over nothing before a job counts as
/// arriving at rest. Far above the gaps between one client's back-to-back
/// requests (a fraction of a millisecond), far below the seconds an idle
/// teammate waits.
pub const INLINE_AFTER_REST: Duration = Duration::from_millis(1);

/// What the actor knows when it hands over a job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Moment {
    /// No other command is waiting for the actor.
    pub quiet: bool,
    /// Nothing was handed over for [`INLINE_AFTER_REST`].
    pub rested: bool,
    /// Every job handed to the writer thread has been answered.
    pub idle: bool,
    /// The job has changes to persist.
    pub writes: bool,
    /// The job reads history from the store.
    pub reads_store: bool,
}

/// Where the job goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// Replies go out at once; nothing to commit.
    Now,
    /// Committed on the actor's thread, replies written from there.
    Here,
    /// Queued for the writer thread.
    Thread,
}

/// The rule; see the module doc.
pub fn route(m: Moment) -> Route {
    if m.idle && !m.writes && !m.reads_store {
        Route::Now
    } else if m.idle && m.quiet && m.rested && !m.reads_store {
        Route::Here
    } else {
        Route::Thread
    }
}

#[cfg(test)]
mod tests;
