//! The tasks the lead adds. A teammate's task is a script for the scripted
//! model: ```sh blocks that sleep (so that there is a command to kill) and
//! sometimes fail. A driver's task has no script: the driver decides.

use crate::soak::rng::Rng;
use teamboard_protocol::TaskId;
use teamboard_protocol::request::NewTask;

/// The role of the teammated processes; their tasks name it.
pub const MATE_ROLE: &str = "mate";
/// The role of the driver members; their tasks name it.
pub const DRIVER_ROLE: &str = "driver";

/// Task number `n`: a teammate's or a driver's, blocked by up to two of
/// `recent`, and one in eight needing a plan.
pub fn new_task(rng: &mut Rng, n: usize, for_teammate: bool, recent: &[TaskId]) -> NewTask {
    let mut blocked_by = Vec::new();
    if !recent.is_empty() && rng.u32(0..100) < 25 {
        for _ in 0..rng.usize(1..=2) {
            let b = recent[rng.usize(..recent.len())];
            if !blocked_by.contains(&b) {
                blocked_by.push(b);
            }
        }
    }
    let (role, description) = if for_teammate {
        (MATE_ROLE, script(rng, n))
    } else {
        (DRIVER_ROLE, format!("Soak task {n}, for a driver."))
    };
    NewTask {
        subject: format!("soak {n}"),
        description,
        blocked_by,
        role: Some(role.to_string()),
        require_plan: rng.u32(0..100) < 12,
        ..NewTask::default()
    }
}

/// A scripted teammate's task: one or two sleeps, and one in six fails. One
/// in four leaves a long sleep in the background, which only the teammate's
/// end (or its claim's) may stop: one still running after the shutdown is a
/// process left behind.
fn script(rng: &mut Rng, n: usize) -> String {
    let mut s = format!("Soak task {n}.\n");
    if rng.u32(0..4) == 0 {
        s.push_str("\n```sh\nsleep 600 >/dev/null 2>&1 &\n```\n");
    }
    for _ in 0..rng.usize(1..=2) {
        let ms = rng.u64(100..900);
        s.push_str(&format!(
            "\n```sh\nsleep {}.{:03}\n```\n",
            ms / 1000,
            ms % 1000
        ));
    }
    if rng.u32(0..6) == 0 {
        s.push_str("\n```sh\necho the soak fails this one; exit 3\n```\n");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_teammates_task_sleeps_and_a_drivers_does_not() {
        let mut rng = Rng::with_seed(5);
        let t = new_task(&mut rng, 1, true, &[]);
        assert!(
            t.description.contains("```sh\nsleep 0."),
            "{}",
            t.description
        );
        assert_eq!(t.role.as_deref(), Some(MATE_ROLE));
        assert!(t.blocked_by.is_empty());
        let d = new_task(&mut rng, 2, false, &[1]);
        assert!(!d.description.contains("```"));
        assert_eq!(d.role.as_deref(), Some(DRIVER_ROLE));
    }
}
