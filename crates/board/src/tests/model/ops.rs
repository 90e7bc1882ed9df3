//! The operations a sequence is made of, and how proptest draws them.
//!
//! Ops name tasks, members and requests by small numbers that the driver
//! resolves against the model's state when it runs them (see `Pick`), so that
//! a shrunk sequence stays meaningful: removing one `Add` renumbers nothing
//! the later ops could not still resolve.

use proptest::prelude::*;

/// How a fenced op finds the claim it acts on.
#[derive(Debug, Clone, Copy)]
pub(super) enum Target {
    /// The task the member holds now, at its epoch (or else a past claim).
    Held,
    /// A claim the board granted earlier, to anyone: mostly stale.
    Past(u8),
    /// Any task at its current epoch, whoever holds it.
    Task(u8),
}

#[derive(Debug, Clone, Copy)]
pub(super) enum Fenced {
    Heartbeat,
    Complete,
    Fail,
    Release { error: bool },
    SubmitPlan,
    OpenWorktree,
}

/// One step. `by: Some(m)`: a teammate tries what only the lead may do.
#[derive(Debug, Clone)]
pub(super) enum Op {
    Add {
        blockers: Vec<u8>,
        /// 0: anyone; else the role `ROLES[role - 1]`.
        role: u8,
        priority: i64,
        plan: bool,
        no_worktree: bool,
        review: bool,
    },
    Depend {
        task: u8,
        on: Vec<u8>,
    },
    Claim {
        who: u8,
        task: u8,
    },
    ClaimNext {
        who: u8,
    },
    /// `wait_for_work` after acknowledging the inbox; a wait that would park
    /// is withdrawn at once.
    Wait {
        who: u8,
    },
    Fenced {
        op: Fenced,
        who: u8,
        target: Target,
        /// Added to the epoch: -1, 0 or 1.
        skew: i8,
        /// Sent on the member's previous session rather than its live one.
        old_session: bool,
    },
    /// The lead changes a task's priority or role (0: anyone; else
    /// `ROLES[role - 1]`).
    Edit {
        task: u8,
        priority: Option<i64>,
        role: Option<u8>,
        by: Option<u8>,
    },
    Delete {
        task: u8,
        by: Option<u8>,
    },
    Cancel {
        task: u8,
        by: Option<u8>,
    },
    Retry {
        task: u8,
        by: Option<u8>,
    },
    /// The clock moves on by this many ms, and boardd's expiry runs.
    Advance {
        ms: u64,
    },
    Disconnect {
        who: u8,
    },
    /// boardd restarts on what it stored.
    Restart,
    Register {
        who: u8,
        /// It asks that its claims need an approved plan.
        plan: bool,
    },
    ReviewPlan {
        req: u8,
        approve: bool,
        by: Option<u8>,
    },
    CancelRequest {
        req: u8,
    },
    RequestShutdown {
        to: u8,
        timeout: Option<u64>,
        force: bool,
        by: Option<u8>,
    },
    RespondShutdown {
        /// Someone other than the addressee answers.
        who: Option<u8>,
        req: u8,
        approve: bool,
        old_session: bool,
    },
    /// The repo worker's reports: the gate, then the merge queue.
    GatePass {
        task: u8,
        stale: bool,
    },
    GateRefuse {
        task: u8,
        conflict: bool,
        stale: bool,
    },
    Landed {
        job: u8,
    },
    LandRefused {
        job: u8,
        conflict: bool,
        owner_waits: bool,
    },
    LandBlocked {
        job: u8,
    },
    /// The next step of the member's work along its usual path (claim, open
    /// the worktree, plan, complete, the gate, review, landing), so that
    /// sequences reach deep states often; it runs as that op.
    Drive {
        who: u8,
        choice: u8,
    },
    /// A person's review.
    Merge {
        task: u8,
        by: Option<u8>,
    },
    SendBack {
        task: u8,
        by: Option<u8>,
    },
}

fn who() -> impl Strategy<Value = u8> {
    0..3u8
}

/// Mostly the lead; sometimes a teammate, who must be refused.
fn by() -> impl Strategy<Value = Option<u8>> {
    prop_oneof![9 => Just(None), 1 => who().prop_map(Some)]
}

fn fenced() -> impl Strategy<Value = Fenced> {
    prop_oneof![
        3 => Just(Fenced::Heartbeat),
        5 => Just(Fenced::Complete),
        2 => Just(Fenced::Fail),
        2 => any::<bool>().prop_map(|error| Fenced::Release { error }),
        2 => Just(Fenced::SubmitPlan),
        4 => Just(Fenced::OpenWorktree),
    ]
}

fn target() -> impl Strategy<Value = Target> {
    prop_oneof![
        8 => Just(Target::Held),
        1 => any::<u8>().prop_map(Target::Past),
        1 => any::<u8>().prop_map(Target::Task),
    ]
}

/// A sequence: a few tasks first, since a board without any has little to
/// say, then anything.
pub(super) fn sequence(len: std::ops::Range<usize>) -> impl Strategy<Value = Vec<Op>> {
    let adds = proptest::collection::vec(add(), 1..4);
    (adds, proptest::collection::vec(op(), len)).prop_map(|(mut adds, ops)| {
        adds.extend(ops);
        adds
    })
}

fn add() -> impl Strategy<Value = Op> {
    (
        prop_oneof![
            6 => Just(vec![]),
            3 => proptest::collection::vec(any::<u8>(), 1),
            1 => proptest::collection::vec(any::<u8>(), 2),
        ],
        0..3u8,
        0..3i64,
        proptest::bool::weighted(0.15),
        proptest::bool::weighted(0.3),
        proptest::bool::weighted(0.3),
    )
        .prop_map(
            |(blockers, role, priority, plan, no_worktree, review)| Op::Add {
                blockers,
                role,
                priority,
                plan,
                no_worktree,
                review,
            },
        )
}

pub(super) fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        12 => add(),
        3 => (any::<u8>(), proptest::collection::vec(any::<u8>(), 1..3))
            .prop_map(|(task, on)| Op::Depend { task, on }),
        4 => (who(), any::<u8>()).prop_map(|(who, task)| Op::Claim { who, task }),
        14 => who().prop_map(|who| Op::ClaimNext { who }),
        4 => who().prop_map(|who| Op::Wait { who }),
        16 => (who(), any::<u8>()).prop_map(|(who, choice)| Op::Drive { who, choice }),
        30 => (fenced(), who(), target(), prop_oneof![8 => Just(0i8), 1 => Just(-1), 1 => Just(1)], proptest::bool::weighted(0.05))
            .prop_map(|(op, who, target, skew, old_session)| Op::Fenced {
                op,
                who,
                target,
                skew,
                old_session,
            }),
        2 => (any::<u8>(), by()).prop_map(|(task, by)| Op::Cancel { task, by }),
        2 => (any::<u8>(), by()).prop_map(|(task, by)| Op::Delete { task, by }),
        2 => (
            any::<u8>(),
            proptest::option::of(0..3i64),
            proptest::option::of(0..3u8),
            by(),
        )
            .prop_map(|(task, priority, role, by)| Op::Edit { task, priority, role, by }),
        3 => (any::<u8>(), by()).prop_map(|(task, by)| Op::Retry { task, by }),
        6 => prop_oneof![0..3_000u64, 9_000..11_000u64, 20_000..130_000u64]
            .prop_map(|ms| Op::Advance { ms }),
        2 => who().prop_map(|who| Op::Disconnect { who }),
        1 => Just(Op::Restart),
        3 => (who(), proptest::bool::weighted(0.2))
            .prop_map(|(who, plan)| Op::Register { who, plan }),
        4 => (any::<u8>(), any::<bool>(), by())
            .prop_map(|(req, approve, by)| Op::ReviewPlan { req, approve, by }),
        1 => any::<u8>().prop_map(|req| Op::CancelRequest { req }),
        2 => (who(), proptest::option::of(1_000..30_000u64), proptest::bool::weighted(0.2), by())
            .prop_map(|(to, timeout, force, by)| Op::RequestShutdown { to, timeout, force, by }),
        3 => (by(), any::<u8>(), any::<bool>(), proptest::bool::weighted(0.05))
            .prop_map(|(who, req, approve, old_session)| Op::RespondShutdown {
                who,
                req,
                approve,
                old_session,
            }),
        6 => (any::<u8>(), proptest::bool::weighted(0.1))
            .prop_map(|(task, stale)| Op::GatePass { task, stale }),
        3 => (any::<u8>(), any::<bool>(), proptest::bool::weighted(0.1))
            .prop_map(|(task, conflict, stale)| Op::GateRefuse { task, conflict, stale }),
        4 => any::<u8>().prop_map(|job| Op::Landed { job }),
        2 => (any::<u8>(), any::<bool>(), any::<bool>())
            .prop_map(|(job, conflict, owner_waits)| Op::LandRefused { job, conflict, owner_waits }),
        2 => any::<u8>().prop_map(|job| Op::LandBlocked { job }),
        3 => (any::<u8>(), by()).prop_map(|(task, by)| Op::Merge { task, by }),
        2 => (any::<u8>(), by()).prop_map(|(task, by)| Op::SendBack { task, by }),
    ]
}
