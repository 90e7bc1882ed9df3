//! The soak's figures and summary, and `target/soak-git/report.json`.

use super::driver::{
    BoarddKill, Driven, HELD_NOTHING, NOT_OPENED, NOTHING_UNCOMMITTED, WorkerKill,
};
use super::journal::{Record, Records};
use super::plan::{Shape, Spec};
use super::verify::{Check, ManifestCounts};
use crate::bench::harness::shown;
use crate::bench::harness::summary::Summary;
use serde::Serialize;
use std::collections::HashMap;
use std::time::Duration;
use teamboard_protocol::{EventKind, TaskDetail};

#[derive(Debug, Serialize)]
pub struct Report {
    pub passed: bool,
    pub seed: u64,
    pub teammates: usize,
    pub tasks: usize,
    pub shape: Shape,
    pub kill_every_s: f64,
    pub seconds: f64,
    pub cpus: usize,
    pub load_average_before: Option<f64>,
    pub load_average_after: Option<f64>,
    pub checks: Vec<Check>,
    pub figures: Figures,
    pub counts: Counts,
    pub worker_kills: Vec<WorkerKill>,
    pub boardd_kills: Vec<BoarddKillSeen>,
    /// Retried tasks (their attempts were used up by kills).
    pub retried: Vec<u64>,
    /// The refusals with code `git` and the git trouble the teammates worked
    /// around, as they read.
    pub git_trouble: Vec<String>,
    /// The run's directory, when it was kept.
    pub run_dir: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct BoarddKillSeen {
    #[serde(flatten)]
    pub kill: BoarddKill,
    /// Tasks whose history shows them queued before the kill and landed (or
    /// refused) after it: landings that the restart resumed.
    pub queued_across: Vec<u64>,
}

#[derive(Debug, Default, Serialize)]
pub struct Figures {
    /// The teammate's `complete_task` sent → its answer, the task landed.
    pub complete_to_merge: Summary,
    /// `complete_task` sent → `merge_queued` (commit, update, checks), for
    /// tasks with a check and without.
    pub gate_with_checks: Summary,
    pub gate_without_checks: Summary,
    /// `merge_queued` → `task_completed`: waiting in the queue and landing.
    pub queue: Summary,
    /// The check runs that let the landed completions through.
    pub check_runs: Summary,
}

#[derive(Debug, Default, Serialize)]
pub struct Counts {
    pub worker_kills: usize,
    pub kills_with_manifest: usize,
    pub kills_while_landing: usize,
    pub kills_holding_nothing: usize,
    pub kills_nothing_uncommitted: usize,
    pub kills_before_open: usize,
    pub kills_other: usize,
    pub manifests: ManifestCounts,
    pub boardd_kills: usize,
    pub boardd_kills_across_a_queued_landing: usize,
    pub claims: usize,
    pub completions_asked: usize,
    pub completions_landed: usize,
    pub merge_conflicts_answered: usize,
    pub merge_conflicts_in_history: usize,
    pub check_failures: usize,
    pub git_refusals: usize,
    pub other_refusals: usize,
    pub resolved_both: usize,
    pub resolved_own: usize,
    pub found_in_progress: usize,
    pub released: usize,
    pub lost: usize,
    pub reconnects: usize,
    pub landed_while_away: usize,
    pub retried_failed_tasks: usize,
}

/// The figures, from the teammates' journals and the task histories.
pub fn figures(journals: &Records, details: &[TaskDetail]) -> Figures {
    let by_id: HashMap<u64, &TaskDetail> = details.iter().map(|d| (d.task.id, d)).collect();
    let ms = |d: i64| Duration::from_millis(d.max(0) as u64);
    let (mut total, mut gate_c, mut gate_u) = (Vec::new(), Vec::new(), Vec::new());
    let (mut queue, mut runs) = (Vec::new(), Vec::new());
    for (_, at, r) in journals {
        let Record::Answered {
            task,
            sent_at,
            code: None,
            ..
        } = r
        else {
            continue;
        };
        total.push(ms(at - sent_at));
        let Some(d) = by_id.get(task) else { continue };
        let history = || d.history.iter();
        let queued = history().find(|e| e.kind == EventKind::MergeQueued && e.at >= *sent_at);
        let landed = history().rev().find(|e| e.kind == EventKind::TaskCompleted);
        if let (Some(q), Some(l)) = (queued, landed) {
            match Spec::from_description(&d.task.description).is_some_and(|s| s.checked) {
                true => gate_c.push(ms(q.at - sent_at)),
                false => gate_u.push(ms(q.at - sent_at)),
            }
            queue.push(ms(l.at - q.at));
        }
        if !d.task.check_runs.is_empty() {
            runs.push(Duration::from_millis(
                d.task.check_runs.iter().map(|r| r.duration_ms).sum(),
            ));
        }
    }
    Figures {
        complete_to_merge: Summary::of(total),
        gate_with_checks: Summary::of(gate_c),
        gate_without_checks: Summary::of(gate_u),
        queue: Summary::of(queue),
        check_runs: Summary::of(runs),
    }
}

/// The tasks queued before `at_ms` whose landing ended after it.
pub fn queued_across(details: &[TaskDetail], at_ms: i64) -> Vec<u64> {
    use EventKind::{ChecksFailed, MergeConflict, MergeQueued, TaskCompleted};
    let ends = |k: EventKind| matches!(k, TaskCompleted | MergeConflict | ChecksFailed);
    let across = |d: &TaskDetail| {
        let queued = d
            .history
            .iter()
            .filter(|e| e.kind == MergeQueued && e.at < at_ms);
        let Some(q) = queued.map(|e| e.seq).max() else {
            return false;
        };
        let end = d.history.iter().find(|e| e.seq > q && ends(e.kind));
        end.is_some_and(|e| e.at >= at_ms)
    };
    details
        .iter()
        .filter(|d| across(d))
        .map(|d| d.task.id)
        .collect()
}

pub fn counts(
    journals: &Records,
    driven: &Driven,
    manifests: ManifestCounts,
    conflicts: (usize, usize),
    boardd_kills: &[BoarddKillSeen],
) -> Counts {
    let across = boardd_kills.iter().filter(|k| !k.queued_across.is_empty());
    let mut c = Counts {
        worker_kills: driven.worker_kills.len(),
        manifests,
        boardd_kills: driven.boardd_kills.len(),
        boardd_kills_across_a_queued_landing: across.count(),
        merge_conflicts_answered: conflicts.0,
        merge_conflicts_in_history: conflicts.1,
        retried_failed_tasks: driven.retried.len(),
        ..Counts::default()
    };
    for k in &driven.worker_kills {
        let count = match (&k.manifest, k.skipped.as_deref()) {
            (Some(_), _) => &mut c.kills_with_manifest,
            (None, Some(s)) if s.contains("was checking") || s.contains("was queued") => {
                &mut c.kills_while_landing
            }
            (None, Some(HELD_NOTHING)) => &mut c.kills_holding_nothing,
            (None, Some(NOTHING_UNCOMMITTED)) => &mut c.kills_nothing_uncommitted,
            (None, Some(NOT_OPENED)) => &mut c.kills_before_open,
            _ => &mut c.kills_other,
        };
        *count += 1;
    }
    for (_, _, r) in journals {
        let count = match r {
            Record::Claimed { .. } => &mut c.claims,
            Record::Answered { code, .. } => {
                c.completions_asked += 1;
                match code.as_deref() {
                    None => &mut c.completions_landed,
                    Some("merge_conflict") => continue,
                    Some("check_failed") => &mut c.check_failures,
                    Some("git") => &mut c.git_refusals,
                    Some(_) => &mut c.other_refusals,
                }
            }
            Record::Resolved { how, .. } => match how.as_str() {
                "both" => &mut c.resolved_both,
                "own" => &mut c.resolved_own,
                _ => &mut c.found_in_progress,
            },
            Record::Released { .. } => &mut c.released,
            Record::Lost { .. } => &mut c.lost,
            Record::Reconnect { .. } => &mut c.reconnects,
            Record::LandedAway { .. } => &mut c.landed_while_away,
            _ => continue,
        };
        *count += 1;
    }
    c
}

/// The git refusals and worked-around git trouble, as they read.
pub fn git_trouble(journals: &Records) -> Vec<String> {
    let said = |(who, _, r): &(String, i64, Record)| match r {
        Record::Answered {
            task,
            code: Some(code),
            message,
            ..
        } if code != "merge_conflict" && code != "check_failed" => {
            Some(format!("{who} #{task}: {code}: {message}"))
        }
        Record::GitTrouble { task, what, .. } => Some(format!("{who} #{task}: {what}")),
        _ => None,
    };
    journals.iter().filter_map(said).collect()
}

impl Report {
    pub fn print(&self) {
        let (c, f) = (&self.counts, &self.figures);
        let (before, after) = (
            shown(self.load_average_before),
            shown(self.load_average_after),
        );
        println!(
            "\nsoak-git: {} teammates, {} tasks, seed {}, {:.1} s on {} CPUs (load {before} → {after})",
            self.teammates, self.tasks, self.seed, self.seconds, self.cpus
        );
        println!(
            "  kill -9 of a teammate: {} ({} with a manifest of {} files; without: {} while their task landed, {} with nothing uncommitted, {} before opening, {} holding nothing, {} other)",
            c.worker_kills,
            c.kills_with_manifest,
            c.manifests.files,
            c.kills_while_landing,
            c.kills_nothing_uncommitted,
            c.kills_before_open,
            c.kills_holding_nothing,
            c.kills_other
        );
        let kills = |f: &dyn Fn(&BoarddKillSeen) -> String| {
            self.boardd_kills
                .iter()
                .map(f)
                .collect::<Vec<_>>()
                .join(", ")
        };
        let moments = kills(&|k| format!("{:?}", k.kill.moment));
        let across = kills(&|k| k.queued_across.len().to_string());
        let n = c.boardd_kills;
        println!("  kill -9 of boardd: {n} ({moments}; landings queued across each: {across})");
        println!(
            "  completions: {} asked, {} landed; refused: {} merge_conflict, {} check_failed, {} git, {} other",
            c.completions_asked,
            c.completions_landed,
            c.merge_conflicts_answered,
            c.check_failures,
            c.git_refusals,
            c.other_refusals
        );
        println!(
            "  conflicts resolved: {} both sides, {} own side, {} found half done; {} given back; {} claims lost; {} reconnects; {} failed tasks retried",
            c.resolved_both,
            c.resolved_own,
            c.found_in_progress,
            c.released,
            c.lost,
            c.reconnects,
            c.retried_failed_tasks
        );
        for (label, l) in [
            ("complete_task → landed:", &f.complete_to_merge),
            ("gate with a check:", &f.gate_with_checks),
            ("gate without:", &f.gate_without_checks),
            ("the checks' own runs:", &f.check_runs),
            ("queued → landed:", &f.queue),
        ] {
            println!(
                "  {label:<30} p50 {:>7.0} ms  p99 {:>7.0} ms  max {:>7.0} ms  (n={})",
                l.p50_ms, l.p99_ms, l.max_ms, l.samples
            );
        }
        let (with, without) = (f.gate_with_checks.p50_ms, f.gate_without_checks.p50_ms);
        println!(
            "  the checks add {:.0} ms at p50 to the gate ({:.0} ms of which is their own run)",
            with - without,
            f.check_runs.p50_ms
        );
        println!("\nChecks");
        for check in &self.checks {
            let pass = if check.pass { "PASS" } else { "FAIL" };
            println!("  {pass}  {:<72} {}", check.name, check.looked_at);
            for p in check.problems.iter().take(10) {
                println!("        - {p}");
            }
            if check.problems.len() > 10 {
                println!("        … and {} more", check.problems.len() - 10);
            }
        }
        if !self.git_trouble.is_empty() {
            println!("\nGit refusals and trouble the teammates worked around (first 10):");
            for t in self.git_trouble.iter().take(10) {
                println!("  {}", t.lines().next().unwrap_or(""));
            }
        }
    }
}
