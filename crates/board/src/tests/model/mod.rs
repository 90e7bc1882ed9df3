//! A property-based state-machine test of [`Board`] against a reference model.
//!
//! proptest draws sequences of operations on one team: the lead adds tasks
//! (with blockers, roles, priorities, a required plan, a review), adds
//! dependencies, edits priorities and roles, deletes, cancels and retries;
//! three teammates claim (by id, the next ready one, and through
//! `wait_for_work`), heartbeat, complete, fail and release, sometimes with a
//! stale epoch, another member's claim or a dead session; time moves on
//! within and past the lease and the shutdown deadlines; teammates disconnect
//! and register again; boardd restarts on what it stored, batch by batch
//! (`Board::restore`); plans and shutdowns are requested and answered, by
//! whoever may and whoever may not; and the repo worker reports gates and
//! landings, with a person merging or sending back work in review. A `Drive`
//! op takes a member's work one step along its usual path, so that the deep
//! states (review, the queue, a conflict, a task sent back and taken up
//! again) come often enough to matter, and `coverage.rs` fails the run if any
//! of them never came. Each op runs on the board and on the model in
//! `reference/`, and after each one:
//! - the answers agree: the value (task, epoch, request) or the error code;
//! - the states agree: every task's status, owner, epoch, attempts,
//!   blockers, landing stage, worktree and readiness; every member's held
//!   task, connection and shutdown; every request's state; and the next
//!   moment boardd must wake (so leases agree to the millisecond);
//! - the invariants hold on the board alone, whatever the model says (see
//!   `invariants.rs`): one owner per task and one task per owner; epochs only
//!   grow, and only by a claim; a stale epoch or session is never accepted;
//!   a task is never ready while a blocker is unfinished; no task is lost and
//!   no id is given twice; a completed task stays as it was; a failed or
//!   cancelled one moves only by the lead (or a landing that already
//!   happened); a settled request stays settled.
//!
//! Alternatives that lost:
//! - `proptest-state-machine`: its preconditions keep invalid ops out of the
//!   sequences, and the invalid ops (stale epochs, wrong members, requests
//!   already answered) are half of what is worth checking here. Plain
//!   proptest draws a `Vec<Op>` and shrinks it just as well, and the ops
//!   resolve their targets against the model when they run.
//! - Checking only the invariants, as `tests/invariants.rs` does with its
//!   seeded walk: it proves the board consistent with itself, not right. A
//!   board that granted a blocked task, or failed a task one attempt early,
//!   would pass.
//! - The model sharing the board's indexes: it would agree with the board's
//!   bugs. The model recomputes readiness, the queue and holds from the tasks.
//!
//! Not modelled: messages and inboxes (a wait acknowledges its inbox first,
//! and one that would park is withdrawn at once), liveness and spending;
//! each has its own tests, and `tests/invariants.rs` walks parked waits at
//! random.
//!
//! A failure prints the shrunk sequence and the step whose answer or state
//! differed; proptest keeps its seed in `proptest-regressions/` to run first
//! next time. `PROPTEST_CASES` runs more sequences locally (fewer may miss
//! the coverage this run requires).

mod apply;
mod coverage;
mod drive;
mod invariants;
mod ops;
mod reference;
mod view;

use super::landing::repo;
use super::{H, Mate, Store, TEAM};
use crate::{Blocked, Conflict, GateRefusal, LandRefusal};
use coverage::Coverage;
use ops::{Fenced, Op, Target};
use proptest::prelude::*;
use proptest::test_runner::{RngAlgorithm, TestRunner};
use reference::{MAX_ATTEMPTS, MEMBERS, MTask, Model, ROLES, Res};
use std::cell::RefCell;
use teamboard_protocol::request::{EditTaskArgs, NewTask, RegisterArgs, ShutdownArgs};
use teamboard_protocol::{
    DiffStat, ErrorCode, Found, LandingStage, MemberStatus, RequestState, TaskId, TaskStatus, Work,
};
use view::View;

/// What an op answered: a task and epoch, a request id, a flag; or nothing.
type Answer = Result<Option<(u64, u64)>, ErrorCode>;

/// A fenced op as it was sent, for the stale-epoch invariant.
#[derive(Debug, Clone, Copy)]
pub(super) struct Sent {
    /// The member that sent it; `None`: the repo worker's report on a gate.
    pub who: Option<usize>,
    pub task: TaskId,
    pub epoch: u64,
    /// The session was the member's live one.
    pub live: bool,
}

/// A gate report on `task` with `epoch`, for the stale-epoch invariant.
fn report(task: TaskId, epoch: u64) -> Option<Sent> {
    let (who, live) = (None, true);
    Some(Sent {
        who,
        task,
        epoch,
        live,
    })
}

/// Resolves a drawn number: mostly one of `preferred` (what the op is about:
/// the ready tasks for a claim, the pending plans for a review), else any id
/// from 1 to one past the last, which does not exist.
fn pick(n: u8, preferred: &[u64], count: u64) -> u64 {
    if n < 240 && !preferred.is_empty() {
        preferred[n as usize % preferred.len()]
    } else {
        u64::from(n) % (count + 1) + 1
    }
}

fn answer<T>(r: crate::Result<T>, f: impl FnOnce(T) -> Option<(u64, u64)>) -> Answer {
    r.map(f).map_err(|e| e.code)
}

fn model_answer<T>(r: Res<T>, f: impl FnOnce(T) -> Option<(u64, u64)>) -> Answer {
    r.map(f)
}

fn none<T>(_: T) -> Option<(u64, u64)> {
    None
}

struct Run {
    h: H,
    model: Model,
    /// Every claim granted: member, task, epoch.
    claims: Vec<(usize, TaskId, u64)>,
    /// The highest task id the board ever showed.
    highest: TaskId,
    /// What boardd stored, batch by batch, for a restart.
    store: Store,
    /// The last op found nothing to act on (the queue held no job).
    idle: bool,
    coverage: Coverage,
}

impl Run {
    fn new() -> Self {
        let mut h = H::cfg(|c| {
            c.max_attempts = MAX_ATTEMPTS;
            c.lease_ttl = std::time::Duration::from_millis(reference::TTL_MS);
            c.restart_grace = std::time::Duration::from_millis(reference::GRACE_MS);
        });
        let ctx = h.lead();
        h.board.set_repo(ctx, repo()).expect("a repository");
        for (name, role) in MEMBERS {
            let m = h.stranger(TEAM, name);
            h.register(m, role);
        }
        Run {
            h,
            model: Model::new(),
            claims: Vec::new(),
            highest: 0,
            store: Store::default(),
            idle: false,
            coverage: Coverage::default(),
        }
    }

    fn mate(&self, m: usize, old: bool) -> Mate {
        Mate {
            team: TEAM,
            name: MEMBERS[m].0,
            session: self.model.session(m, old),
        }
    }

    /// The lead, or the teammate `by` posing as one.
    fn lead_or(&self, by: Option<u8>) -> crate::Ctx<'static> {
        match by {
            None => self.h.lead(),
            Some(m) => self.h.ctx(self.mate(m as usize, false)),
        }
    }

    /// The first member from `who` on for whom `f` holds, or else `who`:
    /// ops go where they can do something, and are refused when none can.
    fn rotate(&self, who: u8, f: impl Fn(usize) -> bool) -> usize {
        let who = usize::from(who);
        (0..MEMBERS.len())
            .map(|i| (who + i) % MEMBERS.len())
            .find(|m| f(*m))
            .unwrap_or(who)
    }

    /// Connected, not stopped and holding nothing: free to claim.
    fn free(&self, m: usize) -> bool {
        let mm = &self.model.members[m];
        mm.session.is_some() && !mm.shut && self.model.held(m).is_none()
    }

    fn ids(&self, f: impl Fn(&MTask) -> bool) -> Vec<u64> {
        let tasks = self.model.tasks.iter();
        tasks.filter(|(_, t)| f(t)).map(|(id, _)| *id).collect()
    }

    /// The highest id given so far.
    fn task_count(&self) -> u64 {
        self.model.next_id - 1
    }

    fn requests(&self, plan: Option<bool>) -> Vec<u64> {
        let pending = self.model.requests.iter();
        pending
            .filter(|(_, r)| r.state == RequestState::Pending)
            .filter(|(_, r)| {
                plan.is_none_or(|p| matches!(r.kind, reference::Kind::Plan { .. }) == p)
            })
            .map(|(id, _)| *id)
            .collect()
    }

    fn epoch_of(&self, id: TaskId) -> u64 {
        self.model.tasks.get(&id).map_or(0, |t| t.epoch)
    }

    /// What boardd's actor does at the end of every batch: settle liveness,
    /// serve waiters (there are none), and take what the batch produced.
    fn end_batch(&mut self) {
        let now = self.h.now();
        self.h.board.settle_liveness(now);
        assert!(self.h.board.dispatch(now).is_empty(), "no one waits");
        self.store.apply(self.h.board.take_changes());
        self.h.board.take_notices();
        self.h.board.take_stops();
        self.h.board.take_dropped();
    }

    /// Runs one op and checks it; answers the board's state after it.
    fn step(&mut self, i: usize, op: &Op, before: &View) -> View {
        let driven;
        let op = match op {
            Op::Drive { who, choice } => {
                driven = self.drive(*who, *choice);
                &driven
            }
            op => op,
        };
        self.idle = false;
        let (got, want, sent) = self.apply(op);
        self.end_batch();
        assert_eq!(got, want, "step {i}: the answer to {op:?}");
        let after = self.board_view();
        invariants::check(before, &after, op, &got, sent, self.highest);
        self.highest = (after.tasks.iter().map(|t| t.id)).fold(self.highest, u64::max);
        assert_eq!(after, self.model_view(), "step {i}: the state after {op:?}");
        let acted = !self.idle;
        self.coverage.record(op, &got, acted, before, &after);
        after
    }

    /// Runs a sequence; answers what it reached.
    fn run(ops: &[Op]) -> Coverage {
        let mut run = Run::new();
        let mut view = run.board_view();
        for (i, op) in ops.iter().enumerate() {
            view = run.step(i, op, &view);
        }
        run.coverage
    }
}

fn stage(t: &MTask) -> Option<LandingStage> {
    t.landing.map(|l| l.0)
}

fn conflict_with() -> Conflict {
    Conflict {
        paths: vec!["src/lib.rs".into()],
        onto: "onto1".into(),
    }
}

/// A model answer of `()`.
fn unit(r: Res) -> Answer {
    r.map(|()| None)
}

/// How many sequences run: `PROPTEST_CASES` asks for more (or fewer) locally.
fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(10_000)
}

/// The runner by hand rather than `proptest!`, to gather what the cases
/// reached across the whole run.
#[test]
fn the_board_agrees_with_its_model() {
    let config = ProptestConfig {
        cases: cases(),
        max_shrink_iters: 20_000,
        // ChaCha, the default, unoptimized in a test build, took most of the
        // time; the draws need no cryptographic strength.
        rng_algorithm: RngAlgorithm::XorShift,
        // Where `proptest!` would look for and keep failures.
        source_file: Some(file!()),
        ..ProptestConfig::default()
    };
    let reached = RefCell::new(Coverage::default());
    let mut runner = TestRunner::new(config);
    let result = runner.run(&ops::sequence(1..48), |ops| {
        let run = Run::run(&ops);
        reached.borrow_mut().merge(run);
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
    let missing = reached.borrow().missing();
    assert!(missing.is_empty(), "no sequence reached {missing:?}");
}
