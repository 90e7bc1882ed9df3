//! `--give-up-after`: a goal whose open tasks have nobody to take them ends
//! instead of waiting for ever.
//!
//! The lead's spawns can fail (an agent that is not installed, a flag `teamctl
//! spawn` refuses) and its teammates can stop (an idle timeout, a crash, a
//! person's `teamctl stop`). The board keeps the tasks either way, so waiting
//! loses nothing; but unattended, `teamctl lead --goal` in a script would never
//! return. So the goal's loop looks at the roster now and then, and once no
//! teammate has been connected for the whole grace while a task is still open,
//! the session ends and says why.
//!
//! The test is "nobody connected", not "nobody working". A teammate that is
//! connected but idle while tasks stay open (a role nobody has, a plan waiting
//! for the person) is a stall a person sees in `teamctl watch` and can mend;
//! counting it would end goals that are only slow. The trap the grace covers: a
//! teammate that restarts (systemd, a reconnect after boardd restarted) is away
//! for a moment, and a freshly spawned one needs a moment to join.

use super::settled::stuck_behind;
use std::time::{Duration, Instant};
use teamboard_protocol::{LEAD, Member, Task};

/// How often the goal's loop looks.
pub(super) fn tick(grace: Duration) -> Duration {
    (grace / 4).clamp(Duration::from_millis(250), Duration::from_secs(5))
}

/// Since when the open tasks have had nobody to take them.
#[derive(Debug)]
pub(super) struct Unstaffed {
    grace: Duration,
    since: Option<Instant>,
}

impl Unstaffed {
    pub(super) fn new(grace: Duration) -> Unstaffed {
        Unstaffed { grace, since: None }
    }

    /// Looks at the board and the roster at `now`; says why to give up once
    /// the open tasks have had no connected teammate for the whole grace.
    pub(super) fn observe(
        &mut self,
        now: Instant,
        tasks: &[Task],
        team: &[Member],
    ) -> Option<String> {
        let open: Vec<&Task> = tasks
            .iter()
            .filter(|t| !t.status.is_ended() && stuck_behind(tasks, t).is_none())
            .collect();
        let staffed = team.iter().any(|m| m.name != LEAD && m.connected);
        if open.is_empty() || staffed {
            self.since = None;
            return None;
        }
        let since = *self.since.get_or_insert(now);
        if now.duration_since(since) < self.grace {
            return None;
        }
        let ids: Vec<String> = open.iter().map(|t| format!("#{}", t.id)).collect();
        Some(format!(
            "no teammate has been on the team for {}s while {} task(s) are open ({}): \
             the lead's spawns failed (see its output above) or its teammates stopped. \
             The tasks stay on the board; `teamctl spawn NAME --role ROLE` starts a \
             teammate that takes them",
            self.grace.as_secs(),
            open.len(),
            ids.join(", ")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(id: u64, status: &str, blocked_by: &[u64]) -> Task {
        serde_json::from_value(serde_json::json!({
            "id": id, "subject": format!("t{id}"), "status": status,
            "blocked_by": blocked_by, "created_at": 0, "updated_at": 0,
        }))
        .expect("a task")
    }

    fn member(name: &str, connected: bool) -> Member {
        serde_json::from_value(serde_json::json!({
            "name": name, "role": "dev", "status": "idle", "connected": connected,
            "joined_at": 0, "last_seen": 0,
        }))
        .expect("a member")
    }

    #[test]
    fn open_tasks_with_nobody_connected_for_the_grace_give_up() {
        let grace = Duration::from_secs(60);
        let t0 = Instant::now();
        let mut u = Unstaffed::new(grace);
        let tasks = vec![task(1, "pending", &[]), task(2, "completed", &[])];
        let gone = vec![member("ada", false)];
        assert_eq!(u.observe(t0, &tasks, &gone), None);
        assert_eq!(u.observe(t0 + grace / 2, &tasks, &gone), None);
        // A teammate back for a moment starts the grace again.
        assert_eq!(
            u.observe(t0 + grace / 2, &tasks, &[member("ada", true)]),
            None
        );
        assert_eq!(u.observe(t0 + grace, &tasks, &gone), None);
        let why = u.observe(t0 + grace * 2, &tasks, &gone).expect("gave up");
        assert!(
            why.starts_with(
                "no teammate has been on the team for 60s while 1 task(s) are open (#1)"
            ),
            "{why}"
        );
    }

    #[test]
    fn a_done_or_stuck_board_or_a_connected_teammate_never_gives_up() {
        let grace = Duration::from_secs(1);
        let t0 = Instant::now();
        let later = t0 + Duration::from_secs(10);
        let mut u = Unstaffed::new(grace);
        // Only tasks that can never start: the summary, not this, ends the goal.
        let stuck = vec![task(1, "failed", &[]), task(2, "pending", &[1])];
        assert_eq!(u.observe(t0, &stuck, &[]), None);
        assert_eq!(u.observe(later, &stuck, &[]), None);
        // The lead itself is not a teammate; a connected teammate is.
        let open = vec![task(1, "in_progress", &[])];
        let mut u = Unstaffed::new(grace);
        assert_eq!(u.observe(t0, &open, &[member("ada", true)]), None);
        assert_eq!(u.observe(later, &open, &[member("ada", true)]), None);
        let mut u = Unstaffed::new(grace);
        assert_eq!(u.observe(t0, &open, &[member(LEAD, true)]), None);
        assert!(u.observe(later, &open, &[member(LEAD, true)]).is_some());
    }

    #[test]
    fn the_loop_looks_often_enough_but_not_too_often() {
        assert_eq!(tick(Duration::from_secs(120)), Duration::from_secs(5));
        assert_eq!(tick(Duration::from_secs(2)), Duration::from_millis(500));
        assert_eq!(tick(Duration::from_millis(100)), Duration::from_millis(250));
    }
}
