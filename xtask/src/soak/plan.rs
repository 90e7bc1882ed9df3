//! The soak's task graph: what each task asks its teammate to do, drawn from
//! the seed. The teammate reads its instructions from the task's description
//! (a line `soak-spec: {json}`), the way a model reads a prompt.

use super::rng;
use serde::{Deserialize, Serialize};

/// The team the soak runs in.
pub const TEAM: &str = "soak";
/// The target branch.
pub const TARGET: &str = "main";
/// The description line that carries the spec.
const SPEC_MARK: &str = "soak-spec: ";

/// What one task asks for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Spec {
    /// The task's number in the plan (1-based): its own file is `tasks/t<n>.txt`
    /// and every line it writes starts with `t<n> `.
    pub n: usize,
    /// A shared file it also appends to, which forces conflicts with the other
    /// tasks that append to it.
    #[serde(default)]
    pub shared: Option<String>,
    /// Edit steps (each appends a line or two).
    pub steps: u32,
    /// It has a check: `done t<n>` must be a line of its own file.
    #[serde(default)]
    pub checked: bool,
    /// The teammate leaves the `done` line out until a failed check tells it,
    /// so the check fails the first time.
    #[serde(default)]
    pub forget_done: bool,
    /// The blockers' own files: a worktree opened for this task must hold them,
    /// because it starts from the blockers' landed work.
    #[serde(default)]
    pub needs: Vec<String>,
}

impl Spec {
    /// Reads the spec out of a task's description.
    pub fn from_description(text: &str) -> Option<Spec> {
        let line = text.lines().find_map(|l| l.strip_prefix(SPEC_MARK))?;
        serde_json::from_str(line).ok()
    }

    pub fn own_file(&self) -> String {
        own_file(self.n)
    }

    /// The prefix of every line the task writes.
    pub fn tag(&self) -> String {
        tag(self.n)
    }

    pub fn done_line(&self) -> String {
        format!("done t{}", self.n)
    }
}

pub fn own_file(n: usize) -> String {
    format!("tasks/t{n}.txt")
}

pub fn tag(n: usize) -> String {
    format!("t{n} ")
}

pub fn shared_file(k: usize) -> String {
    format!("shared/s{k}.txt")
}

/// One task to add.
#[derive(Debug, Clone)]
pub struct Planned {
    pub subject: String,
    pub description: String,
    /// Plan numbers of its blockers (all lower than its own).
    pub blocked_by: Vec<usize>,
    pub checks: Vec<String>,
}

/// The knobs of the graph.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Shape {
    pub tasks: usize,
    pub shared_files: usize,
    pub conflict_rate: f64,
    pub check_rate: f64,
    pub check_fail_rate: f64,
    pub dep_rate: f64,
    pub check_secs: f64,
}

/// The whole graph, from the seed.
pub fn plan(seed: u64, shape: &Shape) -> Vec<Planned> {
    let mut rng = rng::derive(seed, &[0x0504_1a4e]);
    let mut out = Vec::with_capacity(shape.tasks);
    for n in 1..=shape.tasks {
        let shared = (shape.shared_files > 0 && rng.f64() < shape.conflict_rate)
            .then(|| shared_file(1 + rng.usize(..shape.shared_files)));
        let checked = rng.f64() < shape.check_rate;
        let forget_done = checked && rng.f64() < shape.check_fail_rate;
        let mut blocked_by = Vec::new();
        // The first few tasks start the graph; later ones may wait on one or
        // two earlier tasks, never on a later one, so the graph has no cycle.
        if n > 4 && rng.f64() < shape.dep_rate {
            for _ in 0..1 + rng.usize(..2) {
                let b = 1 + rng.usize(..n - 1);
                if !blocked_by.contains(&b) {
                    blocked_by.push(b);
                }
            }
            blocked_by.sort_unstable();
        }
        let steps = rng.u64(1..=3) as u32;
        let needs = blocked_by.iter().map(|b| own_file(*b)).collect();
        let shared_ = shared.clone();
        let spec = Spec {
            n,
            shared: shared_,
            steps,
            checked,
            forget_done,
            needs,
        };
        let (own, done, secs) = (spec.own_file(), spec.done_line(), shape.check_secs);
        let checks = match checked {
            true => vec![format!("sleep {secs}; grep -qx '{done}' {own}")],
            false => Vec::new(),
        };
        let also = shared
            .as_deref()
            .map(|s| format!(" and append to {s}"))
            .unwrap_or_default();
        let subject = format!("soak t{n}: write {own}{also}");
        let also = shared
            .as_deref()
            .map(|s| format!(" and to {s}"))
            .unwrap_or_default();
        let json = serde_json::to_string(&spec).unwrap_or_default();
        let description = format!(
            "Append lines starting with 't{n} ' to {own}{also}; end it with the line '{done}'.\n{SPEC_MARK}{json}"
        );
        out.push(Planned {
            subject,
            description,
            blocked_by,
            checks,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape() -> Shape {
        Shape {
            tasks: 50,
            shared_files: 3,
            conflict_rate: 0.4,
            check_rate: 0.6,
            check_fail_rate: 0.3,
            dep_rate: 0.3,
            check_secs: 0.2,
        }
    }

    #[test]
    fn the_spec_survives_the_description_and_blockers_come_first() {
        let plan = plan(42, &shape());
        assert_eq!(plan.len(), 50);
        let specs: Vec<Spec> = plan
            .iter()
            .map(|p| Spec::from_description(&p.description).expect("a spec line"))
            .collect();
        for (i, (p, spec)) in plan.iter().zip(&specs).enumerate() {
            assert_eq!(spec.n, i + 1);
            assert!(p.blocked_by.iter().all(|b| *b < spec.n));
            assert_eq!(p.checks.is_empty(), !spec.checked);
            assert_eq!(spec.needs.len(), p.blocked_by.len());
        }
        assert!(specs.iter().any(|s| s.shared.is_some()));
        assert!(plan.iter().any(|p| !p.blocked_by.is_empty()));
        assert!(specs.iter().any(|s| s.forget_done));
    }
}
