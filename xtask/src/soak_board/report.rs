//! The run's summary on the terminal and in `target/soak/report.json`.

use super::check::Figures;
use super::faults::Done;
use crate::bench::harness::summary::Col;
use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Debug, Serialize)]
pub struct Report {
    pub passed: bool,
    pub seed: u64,
    pub cycles: u64,
    pub teammates: usize,
    pub clients: usize,
    pub lease_ttl_s: u64,
    /// `release` or `debug`.
    pub build: &'static str,
    pub cpus: usize,
    pub load_average_before: Option<f64>,
    pub load_average_after: Option<f64>,
    /// The whole run, start to report.
    pub seconds: f64,
    pub faults: Done,
    /// Lines of the ack log, by op.
    pub acks: BTreeMap<String, u64>,
    /// Tries with an old epoch that boardd refused, as it must.
    pub stale_tries_refused: u64,
    pub events: usize,
    pub tasks_by_status: BTreeMap<String, u64>,
    /// Teammates that exited by themselves during the run.
    pub teammate_crashes: Vec<String>,
    /// Teammates that had not exited when their shutdown's time ran out.
    pub did_not_shut_down: Vec<String>,
    /// The run's processes (boardd, teammates, their commands) just before
    /// the shutdown: what the last figure looks at afterwards.
    pub processes_before_shutdown: usize,
    pub figures: Figures,
    pub run_dir: Option<String>,
}

impl Report {
    pub fn print(&self) {
        let f = &self.faults;
        println!(
            "\nsoak: seed {}, {} cycles in {:.0} s ({} build, {} CPUs), {} teammates, {} clients",
            self.seed,
            f.boardd_kills,
            self.seconds,
            self.build,
            self.cpus,
            self.teammates,
            self.clients
        );
        println!(
            "  kill -9: boardd {}, teammates {}, commands {}; SIGSTOP past the lease: {}",
            f.boardd_kills, f.teammate_kills, f.command_kills, f.freezes
        );
        println!(
            "  boardd restart to first answer: {}",
            f.restart.cells(&[Col::P50, Col::P99, Col::MAX])
        );
        let acks: Vec<String> = self.acks.iter().map(|(k, v)| format!("{k} {v}")).collect();
        println!("  acks logged: {}", acks.join(", "));
        println!(
            "  old epochs tried and refused: {}; events read back: {}",
            self.stale_tries_refused, self.events
        );
        let tasks: Vec<String> = self
            .tasks_by_status
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        println!("  tasks at the end: {}", tasks.join(", "));
        println!(
            "  processes of the run before the shutdown: {}",
            self.processes_before_shutdown
        );
        for c in &self.teammate_crashes {
            println!("  note: {c}");
        }
        if !self.did_not_shut_down.is_empty() {
            println!(
                "  note: not gone after their shutdown: {}",
                self.did_not_shut_down.join(", ")
            );
        }
        println!("\nFigures (each must be 0)");
        for (name, fig) in self.figures.all() {
            let mark = if fig.count == 0 { "PASS" } else { "FAIL" };
            println!("  {mark}  {name:<58} {}", fig.count);
            for e in &fig.examples {
                println!("          {e}");
            }
        }
    }
}
