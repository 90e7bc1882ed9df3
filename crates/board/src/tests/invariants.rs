//! Random but reproducible sequences of operations, checking after every step that
//! the derived state (ready queues, open blocker counts, dependents, leases, member
//! holds) matches what the tasks say. A restore from the persisted rows must give the
//! same board.

use super::*;
use crate::team::Team;
use std::cmp::Reverse;
use std::collections::{BTreeSet, HashMap};
use teamboard_protocol::{MemberStatus, MessageKind, TaskStatus, Work};

/// xorshift64*: small, fast, and the same on every machine.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

const NAMES: [&str; 4] = ["ann", "bob", "cat", "dan"];
const ROLES: [&str; 2] = ["dev", "ops"];

#[track_caller]
fn check_team(name: &str, team: &Team, config: &BoardConfig) {
    let ctx = |id: &TaskId| format!("team {name}, task #{id}");
    // Dependents mirror blocked_by exactly.
    let mut expected_dependents: HashMap<TaskId, BTreeSet<TaskId>> = HashMap::new();
    for t in team.tasks.values() {
        for b in &t.blocked_by {
            assert!(
                team.tasks.contains_key(b),
                "{}: blocker #{b} missing",
                ctx(&t.id)
            );
            expected_dependents.entry(*b).or_default().insert(t.id);
        }
    }
    for (b, deps) in &team.dependents {
        let set: BTreeSet<TaskId> = deps.iter().copied().collect();
        assert_eq!(set.len(), deps.len(), "{}: duplicate dependents", ctx(b));
        assert_eq!(
            &set,
            expected_dependents.get(b).unwrap_or(&BTreeSet::new()),
            "{}: dependents",
            ctx(b)
        );
    }
    for b in expected_dependents.keys() {
        assert!(team.dependents.contains_key(b), "{}: dependents", ctx(b));
    }
    // No cycles: every task's blockers' transitive closure excludes itself.
    for t in team.tasks.values() {
        for b in &t.blocked_by {
            assert!(!team.waits_for(*b, t.id), "{}: cycle", ctx(&t.id));
        }
    }
    let mut ready_count = 0;
    for t in team.tasks.values() {
        let open = t
            .blocked_by
            .iter()
            .filter(|b| team.tasks[b].status != TaskStatus::Completed)
            .count();
        assert_eq!(
            team.open_blockers.get(&t.id).copied().unwrap_or(0),
            open,
            "{}: open blockers",
            ctx(&t.id)
        );
        let ready = t.status == TaskStatus::Pending && t.owner.is_none() && open == 0;
        let queued = team
            .ready
            .get(&t.role)
            .is_some_and(|s| s.contains(&(Reverse(t.priority), t.id)));
        assert_eq!(queued, ready, "{}: ready queue ({t:?})", ctx(&t.id));
        assert_eq!(t.ready, ready, "{}: ready flag ({t:?})", ctx(&t.id));
        ready_count += usize::from(ready);
        // Owner and lease follow the status.
        let leased = team.leases.contains_key(&t.id);
        match t.status {
            TaskStatus::InProgress => {
                assert!(
                    t.owner.is_some(),
                    "{}: in progress without owner",
                    ctx(&t.id)
                );
                assert!(leased, "{}: in progress without lease", ctx(&t.id));
            }
            TaskStatus::Completed => {
                assert!(t.owner.is_some(), "{}", ctx(&t.id));
                assert!(!leased, "{}", ctx(&t.id));
            }
            _ => {
                assert_eq!(t.owner, None, "{}", ctx(&t.id));
                assert!(!leased, "{}", ctx(&t.id));
            }
        }
        assert!(
            t.attempts <= config.max_attempts,
            "{}: attempts",
            ctx(&t.id)
        );
        if t.status == TaskStatus::InProgress {
            assert!(t.attempts >= 1 && t.epoch >= 1, "{}", ctx(&t.id));
        }
    }
    assert_eq!(
        team.ready_count(),
        ready_count,
        "team {name}: stale ready entries"
    );
    // Member holds and leases agree with task ownership.
    for (mname, m) in &team.members {
        assert_eq!(&m.member.name, mname);
        assert_eq!(
            m.member.connected,
            m.session.is_some(),
            "{mname}: connected"
        );
        let held: Vec<TaskId> = team
            .tasks
            .values()
            .filter(|t| {
                t.status == TaskStatus::InProgress && t.owner.as_deref() == Some(mname.as_str())
            })
            .map(|t| t.id)
            .collect();
        assert!(held.len() <= 1, "{mname} holds {held:?}");
        assert_eq!(m.member.task, held.first().copied(), "{mname}: member.task");
    }
    for (id, lease) in &team.leases {
        let owner = team.tasks[id].owner.clone().unwrap();
        if let Some(s) = lease.session {
            let m = &team.members[&owner];
            assert_eq!(m.session, Some(s), "{}: lease session", ctx(id));
        }
    }
    for w in team.waiters.values() {
        let m = &team.members[&w.name];
        assert_eq!(
            m.session,
            Some(w.session),
            "waiter of {} on a dead session",
            w.name
        );
    }
    for (to, inbox) in &team.inboxes {
        assert!(!inbox.is_empty(), "empty inbox of {to} kept");
        assert!(inbox.iter().all(|(id, m)| *id == m.id && &m.to == to));
    }
}

fn check(board: &Board) {
    for (name, team) in &board.teams {
        check_team(name, team, &board.config);
    }
}

/// One random step. Errors are fine (many ops are invalid on purpose); the state must
/// stay consistent either way.
fn step(
    h: &mut H,
    rng: &mut Rng,
    sessions: &mut [Option<Mate>; 4],
    claims: &mut Vec<(Mate, TaskId, u64)>,
    next_token: &mut u64,
) {
    let n = h.board.tasks(TEAM, None).len() as u64;
    let pick_task = |rng: &mut Rng| rng.below(n + 1) + 1; // sometimes one that does not exist
    let who = rng.below(4) as usize;
    let live = sessions[who];
    match rng.below(22) {
        0..=2 => {
            let blockers: Vec<TaskId> =
                (0..rng.below(3)).map(|_| rng.below(n.max(1)) + 1).collect();
            let role = match rng.below(4) {
                0 => Some(ROLES[0].to_string()),
                1 => Some(ROLES[1].to_string()),
                _ => None,
            };
            let new = NewTask {
                subject: format!("t{n}"),
                blocked_by: if n == 0 { vec![] } else { blockers },
                priority: rng.below(3) as i64,
                role,
                ..Default::default()
            };
            let ctx = h.lead();
            let _ = h.board.add_task(ctx, new);
        }
        3 => {
            let id = pick_task(rng);
            let on = [pick_task(rng), pick_task(rng)];
            let ctx = h.lead();
            let _ = h
                .board
                .add_dependency(ctx, id, &on[..1 + rng.below(2) as usize]);
        }
        4..=6 => {
            if let Some(m) = live {
                let ctx = h.ctx(m);
                let r = if rng.chance(70) {
                    h.board.claim_next(ctx)
                } else {
                    h.board.claim_task(ctx, pick_task(rng)).map(Some)
                };
                if let Ok(Some(c)) = r {
                    claims.push((m, c.task.id, c.epoch));
                }
            }
        }
        7..=11 => {
            // Mostly the claims members hold now; sometimes an old one.
            let current: Vec<(Mate, TaskId, u64)> = sessions
                .iter()
                .flatten()
                .filter_map(|m| {
                    let id = h.member(*m).task?;
                    Some((*m, id, h.task(id).epoch))
                })
                .collect();
            let (m, id, mut epoch) = if !current.is_empty() && rng.chance(80) {
                current[rng.below(current.len() as u64) as usize]
            } else if !claims.is_empty() {
                claims[rng.below(claims.len() as u64) as usize]
            } else {
                return;
            };
            if rng.chance(10) {
                epoch += 1;
            }
            let ctx = h.ctx(m);
            let _ = match rng.below(5) {
                0 | 1 => h.board.complete_task(ctx, id, epoch, "ok".into()),
                2 => h.board.fail_task(ctx, id, epoch, "bad".into()),
                3 => h
                    .board
                    .release_task(ctx, id, epoch, rng.chance(50).then(|| "e".into()), None),
                _ => h.board.heartbeat(ctx, id, epoch),
            };
        }
        12 => {
            let ctx = h.lead();
            let _ = h.board.cancel_task(ctx, pick_task(rng));
        }
        13 => {
            let ctx = h.lead();
            let _ = h.board.retry_task(ctx, pick_task(rng));
        }
        14 => {
            if let Some(m) = live {
                let now = h.now();
                h.board.disconnect(m.session, now);
                sessions[who] = None;
            }
        }
        15 => {
            if live.is_none() {
                let m = h.stranger(TEAM, NAMES[who]);
                let ctx = h.ctx(m);
                h.board
                    .register(ctx, ROLES[rng.below(2) as usize], None)
                    .unwrap();
                sessions[who] = Some(m);
            }
        }
        16 => {
            h.advance(ms(rng.below(8000)));
            h.expire();
        }
        17 | 18 => {
            if let Some(m) = live {
                let ctx = h.ctx(m);
                *next_token += 1;
                let deadline = rng.chance(50).then(|| h.base + h.t + ms(rng.below(5000)));
                if let Ok(Some(Work::Task { claim })) = h.board.park(ctx, *next_token, deadline) {
                    claims.push((m, claim.task.id, claim.epoch));
                }
            }
        }
        19 => {
            let now = h.now();
            for (token, work) in requests(h.board.dispatch(now)) {
                assert!(token <= *next_token);
                if let Work::Task { claim } = work {
                    let owner = claim.task.owner.clone().unwrap();
                    let m = sessions
                        .iter()
                        .flatten()
                        .find(|m| m.name == owner)
                        .copied()
                        .expect("a task handed to a live member");
                    assert_eq!(
                        h.board.task(TEAM, claim.task.id).unwrap().epoch,
                        claim.epoch
                    );
                    claims.push((m, claim.task.id, claim.epoch));
                }
            }
        }
        20 => {
            let to = if rng.chance(20) {
                LEAD
            } else {
                NAMES[rng.below(4) as usize]
            };
            let ctx = h.lead();
            let _ = h
                .board
                .send(ctx, to, MessageKind::Message, "m".into(), None);
        }
        _ => {
            if let Some(m) = live {
                let ids: Vec<u64> = h.board.inbox(TEAM, m.name).iter().map(|m| m.id).collect();
                let ctx = h.ctx(m);
                h.board.ack(ctx, &ids);
            }
        }
    }
}

#[test]
fn random_operations_keep_the_derived_state_exact() {
    for seed in 1..=25u64 {
        let mut h = H::cfg(|c| {
            c.max_attempts = 2;
            c.lease_ttl = secs(10);
            c.restart_grace = secs(5);
        });
        let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
        let mut store = Store::default();
        let mut sessions: [Option<Mate>; 4] = [None; 4];
        let mut claims = Vec::new();
        let mut token = 0;
        for i in 0..300 {
            step(&mut h, &mut rng, &mut sessions, &mut claims, &mut token);
            check(&h.board);
            if i % 7 == 0 {
                store.apply(h.board.take_changes());
            }
        }
        store.apply(h.board.take_changes());
        // The persisted rows rebuild the same board.
        let config = *h.board.config();
        let r = Board::restore(config, store.snapshot(), h.now());
        check(&r);
        assert_eq!(
            r.tasks(TEAM, None),
            h.board.tasks(TEAM, None),
            "seed {seed}"
        );
        for t in h.board.tasks(TEAM, None) {
            assert_eq!(
                r.is_ready(TEAM, t.id),
                h.board.is_ready(TEAM, t.id),
                "seed {seed}"
            );
        }
        for name in NAMES.iter().chain([&LEAD]) {
            assert_eq!(
                r.inbox(TEAM, name),
                h.board.inbox(TEAM, name),
                "seed {seed}"
            );
        }
        // Stored member rows hold what survives a restart; the held task,
        // `working`/`idle`, the connection and last contact are rebuilt or reset.
        let durable = |mut m: Member| {
            m.task = None;
            m.connected = false;
            m.last_seen = 0;
            if m.status != MemberStatus::Shutdown {
                m.status = MemberStatus::Offline;
            }
            m
        };
        let mut stored: Vec<Member> = store.members.values().cloned().map(durable).collect();
        stored.sort_by(|a, b| a.name.cmp(&b.name));
        let live: Vec<Member> = h.board.members(TEAM).into_iter().map(durable).collect();
        assert_eq!(stored, live, "seed {seed}: member rows are current");
    }
}
