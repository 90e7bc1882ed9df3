//! Registering, reconnecting and statuses.

use super::*;
use teamboard_protocol::{EventKind, MemberStatus};

#[test]
fn register_puts_a_member_on_the_roster() {
    let mut h = H::new();
    h.advance(secs(2));
    let ann = h.stranger(TEAM, "ann");
    let ctx = h.ctx(ann);
    let m = h.board.register(ctx, "dev", Some(77)).unwrap();
    assert_eq!(m.name, "ann");
    assert_eq!(m.role, "dev");
    assert_eq!(m.status, MemberStatus::Idle);
    assert_eq!(m.pid, Some(77));
    assert_eq!(m.task, None);
    assert!(m.connected);
    assert_eq!(m.joined_at, WALL0 + 2000);
    assert!(h.board.is_member(TEAM, "ann"));
    assert_eq!(h.member(ann), m);
    let changes = h.board.take_changes();
    assert_eq!(changes.members, vec![(TEAM.to_string(), m)]);
    assert_eq!(changes.events.len(), 1);
    assert_eq!(changes.events[0].kind, EventKind::MemberRegistered);
}

#[test]
fn lead_cannot_register() {
    let mut h = H::new();
    let lead = h.stranger(TEAM, "lead");
    let ctx = h.ctx(lead);
    assert_eq!(
        code(h.board.register(ctx, "dev", None)),
        ErrorCode::InvalidArgs
    );
    assert!(!h.board.is_member(TEAM, "lead"));
    assert!(!h.board.has_changes());
}

#[test]
fn invalid_names_and_roles_are_refused() {
    let mut h = H::new();
    for (name, role) in [
        ("a b", "dev"),
        ("", "dev"),
        ("ann", ""),
        ("ann", "de v"),
        ("ann/x", "dev"),
    ] {
        let ctx = Ctx {
            team: TEAM,
            actor: name,
            session: 1,
            now: h.now(),
        };
        assert_eq!(
            code(h.board.register(ctx, role, None)),
            ErrorCode::InvalidArgs,
            "{name:?} / {role:?}"
        );
    }
    assert!(h.board.members(TEAM).is_empty());
    let ctx = h.lead();
    let bad_role = NewTask {
        role: Some("no spaces".into()),
        ..new_task("t")
    };
    assert_eq!(
        code(h.board.add_task(ctx, bad_role)),
        ErrorCode::InvalidArgs
    );
}

#[test]
fn a_second_live_session_under_the_same_name_is_refused() {
    let mut h = H::new();
    let a = h.add("a");
    let ann = h.join("ann", "dev");
    let twin = h.stranger(TEAM, "ann");
    let ctx = h.ctx(twin);
    assert_eq!(
        code(h.board.register(ctx, "dev", None)),
        ErrorCode::AlreadyConnected
    );
    // The first session keeps working; the twin is not a claimant.
    let ctx = h.ctx(twin);
    assert_eq!(code(h.board.claim_next(ctx)), ErrorCode::NotRegistered);
    assert_eq!(h.claim_next(ann).unwrap().task.id, a);
    assert_eq!(h.board.members(TEAM).len(), 1);
}

#[test]
fn registering_again_on_the_same_session_is_harmless() {
    let mut h = H::new();
    let a = h.add("a");
    let ann = h.join("ann", "dev");
    let c = h.claim(ann, a);
    let m = h.register(ann, "dev");
    assert_eq!(m.task, Some(a));
    assert_eq!(m.status, MemberStatus::Working);
    h.complete(ann, a, c.epoch);
}

#[test]
fn after_disconnect_the_name_can_register_again() {
    let mut h = H::new();
    let a = h.add("a");
    let ann = h.join("ann", "dev");
    let ctx = h.ctx(ann);
    h.board
        .record_usage(
            ctx,
            None,
            teamboard_protocol::TokenUsage {
                input: 3,
                output: 4,
                ..Default::default()
            },
            true,
        )
        .unwrap();
    h.advance(secs(1));
    let now = h.now();
    h.board.disconnect(ann.session, now);
    h.advance(secs(1));
    let again = h.stranger(TEAM, "ann");
    let m = h.register(again, "reviewer");
    assert!(m.connected);
    assert_eq!(m.status, MemberStatus::Idle);
    assert_eq!(m.role, "reviewer");
    assert_eq!(m.joined_at, WALL0, "joined_at is the first registration");
    assert_eq!(m.tokens.total(), 7, "usage survives a reconnect");
    assert!(m.tokens_estimated, "and so does its being an estimate");
    assert_eq!(h.board.members(TEAM).len(), 1);
    // The new session claims; the old one is not registered.
    let ctx = h.ctx(ann);
    assert_eq!(code(h.board.claim_next(ctx)), ErrorCode::NotRegistered);
    assert_eq!(h.claim_next(again).unwrap().task.id, a);
}

#[test]
fn a_shutdown_member_that_registers_again_is_idle() {
    let mut h = H::new();
    let ann = h.join("ann", "dev");
    let ctx = h.ctx(ann);
    h.board.set_status(ctx, MemberStatus::Shutdown).unwrap();
    let now = h.now();
    h.board.disconnect(ann.session, now);
    let again = h.stranger(TEAM, "ann");
    assert_eq!(h.register(again, "dev").status, MemberStatus::Idle);
}

#[test]
fn set_status_changes_and_records_the_status() {
    let mut h = H::new();
    let ann = h.join("ann", "dev");
    h.board.take_changes();
    let ctx = h.ctx(ann);
    // Setting the status it already has writes nothing.
    h.board.set_status(ctx, MemberStatus::Idle).unwrap();
    assert!(!h.board.has_changes());
    let ctx = h.ctx(ann);
    h.board.set_status(ctx, MemberStatus::Shutdown).unwrap();
    let changes = h.board.take_changes();
    assert_eq!(changes.members[0].1.status, MemberStatus::Shutdown);
    assert_eq!(changes.events[0].kind, EventKind::MemberStatus);
}

#[test]
fn members_are_listed_by_name_and_counted() {
    let mut h = H::new();
    let zed = h.join("zed", "dev");
    h.join("ann", "dev");
    h.join("max", "ops");
    let names: Vec<String> = h.board.members(TEAM).into_iter().map(|m| m.name).collect();
    assert_eq!(names, vec!["ann", "max", "zed"]);
    let now = h.now();
    h.board.disconnect(zed.session, now);
    let s = h.board.summary(TEAM);
    assert_eq!((s.members, s.connected), (3, 2));
    assert!(h.board.members("other").is_empty());
}

#[test]
fn touch_updates_last_seen_without_writing() {
    let mut h = H::new();
    let ann = h.join("ann", "dev");
    h.board.take_changes();
    h.advance(secs(9));
    let ctx = h.ctx(ann);
    h.board.touch(&ctx);
    h.board.touch(&Ctx {
        actor: "nobody",
        ..ctx
    });
    h.board.touch(&Ctx {
        team: "nowhere",
        ..ctx
    });
    assert_eq!(h.member(ann).last_seen, WALL0 + 9000);
    assert!(!h.board.has_changes());
}

#[test]
fn a_member_shutting_down_takes_no_new_tasks() {
    let mut h = H::new();
    let a = h.add("a");
    let ann = h.join("ann", "dev");
    let ctx = h.ctx(ann);
    h.board.set_status(ctx, MemberStatus::Shutdown).unwrap();
    let ctx = h.ctx(ann);
    assert_eq!(code(h.board.claim_next(ctx)), ErrorCode::InvalidState);
    let ctx = h.ctx(ann);
    assert_eq!(code(h.board.claim_task(ctx, a)), ErrorCode::InvalidState);
    // Parked, it is still told about messages but never handed the task.
    assert_eq!(h.park(ann, 1), None);
    h.board.dispatch(h.now());
    assert!(h.ready(a));
}

fn register_runtime(h: &mut H, m: Mate, runtime: Option<&str>) -> Result<Member> {
    let ctx = h.ctx(m);
    let args = teamboard_protocol::request::RegisterArgs {
        role: "dev".into(),
        runtime: runtime.map(str::to_string),
        ..Default::default()
    };
    h.board.register_with(ctx, &args)
}

#[test]
fn the_roster_carries_the_runtime_and_keeps_it_across_a_restart() {
    let mut h = H::new();
    let mut store = Store::default();
    let ann = h.stranger(TEAM, "ann");
    let m = register_runtime(&mut h, ann, Some("claude")).unwrap();
    assert_eq!(m.runtime.as_deref(), Some("claude"));
    let changes = h.board.take_changes();
    assert_eq!(changes.members[0].1.runtime.as_deref(), Some("claude"));
    assert!(
        changes.events[0].detail.ends_with("(runtime claude)"),
        "{}",
        changes.events[0].detail
    );
    store.apply(changes);
    // The native runtime has one spelling on the roster: none.
    let bob = h.stranger(TEAM, "bob");
    assert_eq!(
        register_runtime(&mut h, bob, Some("native"))
            .unwrap()
            .runtime,
        None
    );
    store.apply(h.board.take_changes());
    let now = h.now();
    let restored = Board::restore(*h.board.config(), store.snapshot(), now);
    let runtimes: Vec<_> = restored
        .members(TEAM)
        .into_iter()
        .map(|m| (m.name, m.runtime))
        .collect();
    assert_eq!(
        runtimes,
        vec![("ann".into(), Some("claude".into())), ("bob".into(), None)]
    );
}

#[test]
fn registering_again_replaces_the_runtime() {
    let mut h = H::new();
    let ann = h.stranger(TEAM, "ann");
    register_runtime(&mut h, ann, Some("codex")).unwrap();
    let now = h.now();
    h.board.disconnect(ann.session, now);
    let again = h.stranger(TEAM, "ann");
    let m = register_runtime(&mut h, again, None).unwrap();
    assert_eq!(m.runtime, None, "restarted as a native teammate");
    assert_eq!(h.member(again).runtime, None);
}

#[test]
fn a_bad_runtime_name_is_refused_and_changes_nothing() {
    let mut h = H::new();
    for bad in ["", "Claude", "claude code", "../x", &"a".repeat(33)] {
        let ann = h.stranger(TEAM, "ann");
        let err = register_runtime(&mut h, ann, Some(bad)).unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidArgs, "{bad:?}");
        assert!(err.message.contains("runtime"), "{bad:?}: {}", err.message);
    }
    assert!(h.board.members(TEAM).is_empty());
    assert!(!h.board.has_changes());
}

#[test]
fn a_team_no_one_made_is_refused_and_a_made_one_survives_a_restart() {
    let mut h = H::new();
    let mut store = Store::default();
    assert_eq!(h.board.known_teams(), vec!["default".to_string()]);
    h.board
        .admit("default", Some(false))
        .expect("default always exists");
    assert_eq!(
        h.board.admit("defualt", Some(false)),
        Err("no team 'defualt'; known teams: default. Use --new-team defualt to create it".into())
    );
    assert!(
        h.board.take_changes().is_empty(),
        "a refusal changes nothing"
    );
    h.board.admit("web", Some(true)).expect("created");
    h.board.admit("web", Some(false)).expect("exists now");
    // A client older than `new_team` makes the team, as before.
    h.board.admit("old", None).expect("made");
    let changes = h.board.take_changes();
    assert_eq!(changes.teams, vec!["old".to_string(), "web".to_string()]);
    store.apply(changes);
    let restored = Board::restore(*h.board.config(), store.snapshot(), h.now());
    assert_eq!(restored.known_teams(), vec!["default", "old", "web"]);
    assert!(restored.has_team("web") && !restored.has_team("wbe"));
}
