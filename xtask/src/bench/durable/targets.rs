//! The bench's verdict: the table, and the targets `docs/benchmarks.md` states,
//! each against a baseline from the same run.
//!
//! Two targets were restated after runs showed they passed or missed with the
//! host's state rather than with boardd. The 16-client one was "8x the 1-client
//! rate", which the group-commit loop's shape fixes at about 8.5x (a faster
//! disk moment speeds one client more than sixteen); it is now the answers each
//! fsync releases. The wake-up one was "within F's tight-loop p99 plus 1 ms",
//! which the bare floor alone exceeded in some host states; it is now against
//! that floor.

use super::Mode;
use super::floor::FloorResult;
use super::fsync::FsyncResult;
use super::load::LoadResult;
use super::wake::WakeResult;
use crate::bench::harness::report::{Target, print_targets};
use crate::bench::harness::summary::{Col, Summary};
use serde::Serialize;

/// At 16 clients, each fsync must release at least this many answers: group
/// commit at work (the loop's bound is about half the clients).
const ANSWERS_PER_FSYNC_16: f64 = 6.0;
/// 256 clients must reach this many durable cycles per second ...
const ABS_256: f64 = 10_000.0;
/// ... or this multiple of the disk's fdatasync rate.
const REL_F_256: f64 = 40.0;
/// The wake-up p99 may exceed the floor's p99 (a bare process's durable answer
/// after the same pause) by this much: boardd's own cost.
const WAKE_SLACK_MS: f64 = 1.0;
/// Group commit must beat one transaction per request by this factor at 16 and
/// 256 clients. The issue names no number; 4× is chosen as "clearly pays for its
/// complexity" (the fsync-bound ideal is close to the client count).
const GROUP_SPEEDUP: f64 = 4.0;

#[derive(Debug, Serialize)]
pub struct Results {
    pub seconds_per_phase: f64,
    pub quick: bool,
    pub cpus: usize,
    /// The 1-minute load average before the bench started: other work skews it.
    pub load_average: Option<f64>,
    pub fsync: FsyncResult,
    /// What a bare process can do in the wake-up's situation; see `floor.rs`.
    pub floor: FloorResult,
    pub wake: WakeResult,
    pub load: Vec<LoadResult>,
    pub targets: Vec<Target>,
}

impl Results {
    fn phase(&self, mode: Mode, clients: usize) -> Option<&LoadResult> {
        self.load
            .iter()
            .find(|l| l.mode == mode && l.clients == clients)
    }

    /// Evaluates the targets into `self.targets`.
    pub fn check(&mut self) {
        let mut t = Vec::new();
        let mut target = |name: String, wanted: String, measured: String, pass: bool| {
            t.push(Target {
                name,
                wanted,
                measured,
                pass,
            });
        };
        if let Some(g16) = self.phase(Mode::Group, 16) {
            let a = g16.answers_per_fsync;
            target(
                "16 clients share their fsyncs".into(),
                format!(">= {ANSWERS_PER_FSYNC_16} answers per fsync"),
                a.map_or_else(
                    || "unknown (status unread)".into(),
                    |a| format!("{a:.1} answers per fsync ({:.0}/s)", g16.cycles_per_s),
                ),
                a.is_some_and(|a| a >= ANSWERS_PER_FSYNC_16),
            );
        }
        if let Some(g256) = self.phase(Mode::Group, 256).map(|l| l.cycles_per_s) {
            let f = self.fsync.ops_per_s;
            let x = g256 / f.max(f64::EPSILON);
            target(
                "256 clients throughput".into(),
                format!(
                    ">= {ABS_256:.0}/s or >= {REL_F_256}x F ({:.0}/s)",
                    REL_F_256 * f
                ),
                format!("{g256:.0}/s = {x:.1}x F"),
                g256 >= ABS_256 || x >= REL_F_256,
            );
        }
        let (floor, wake) = (&self.floor.durable_rtt, &self.wake.wake);
        let limit = floor.p99_ms + WAKE_SLACK_MS;
        target(
            "wake-up p99".into(),
            format!("<= the floor's p99 + {WAKE_SLACK_MS} ms = {limit:.2} ms"),
            format!("{:.2} ms (the floor: {:.2} ms)", wake.p99_ms, floor.p99_ms),
            wake.samples > 0 && floor.samples > 0 && wake.p99_ms <= limit,
        );
        for clients in [16, 256] {
            if let (Some(g), Some(p)) = (
                self.phase(Mode::Group, clients),
                self.phase(Mode::PerRequest, clients),
            ) {
                let (g, p) = (g.cycles_per_s, p.cycles_per_s);
                let x = g / p.max(f64::EPSILON);
                target(
                    format!("group vs per-request, {clients} clients"),
                    format!(">= {GROUP_SPEEDUP}x"),
                    format!("{x:.1}x ({g:.0}/s vs {p:.0}/s)"),
                    x >= GROUP_SPEEDUP,
                );
            }
        }
        self.targets = t;
    }

    pub fn print(&self) {
        let (f, l) = (&self.fsync, &self.fsync.latency);
        println!(
            "\nfdatasync of 4 KiB on {} ({} CPUs):  F = {:.0} ops/s   p50 {:.3} ms   p99 {:.3} ms   max {:.3} ms",
            f.filesystem, self.cpus, f.ops_per_s, l.p50_ms, l.p99_ms, l.max_ms
        );
        // `--wake-only` has no load phases.
        if !self.load.is_empty() {
            self.print_load();
        }
        self.print_wake();
        print_targets(&self.targets);
    }

    fn print_load(&self) {
        println!(
            "\nDurable claim+complete cycles per second ({:.1} s per phase)",
            self.seconds_per_phase
        );
        let row = |cells: [&str; 8]| {
            let [a, b, c, d, e, f, g, h] = cells;
            println!("{a:>7} {b:>5} | {c:>12} {d:>6} {e:>9} | {f:>12} {g:>9} | {h:>7}");
        };
        row([
            "clients",
            "procs",
            "group/s",
            "x F",
            "boardd",
            "per-req/s",
            "boardd",
            "speedup",
        ]);
        let mut clients: Vec<usize> = self.load.iter().map(|l| l.clients).collect();
        clients.sort_unstable();
        clients.dedup();
        let cell = |l: Option<&LoadResult>| match l {
            Some(l) => format!(
                "{:.0}{}",
                l.cycles_per_s,
                if l.starved_clients > 0 { "*" } else { "" }
            ),
            None => "-".into(),
        };
        let cores = |l: Option<&LoadResult>| match l.and_then(|l| l.boardd_cores) {
            Some(x) => format!("{:.0}% cpu", x * 100.0),
            None => "-".into(),
        };
        for c in clients {
            let (g, p) = (self.phase(Mode::Group, c), self.phase(Mode::PerRequest, c));
            let speedup = match (g, p) {
                (Some(g), Some(p)) if p.cycles_per_s > 0.0 => {
                    format!("{:.1}x", g.cycles_per_s / p.cycles_per_s)
                }
                _ => "-".into(),
            };
            let x_f = g.map_or("-".into(), |g| {
                format!("{:.1}", g.cycles_per_s / self.fsync.ops_per_s)
            });
            let procs = g.or(p).map_or(0, |l| l.processes).to_string();
            row([
                &c.to_string(),
                &procs,
                &cell(g),
                &x_f,
                &cores(g),
                &cell(p),
                &cores(p),
                &speedup,
            ]);
        }
        // Where the time goes: how many answers one fsync released, and how busy
        // the client processes were, phase by phase.
        let per_phase = |f: &dyn Fn(&LoadResult) -> Option<String>| {
            let group = self.load.iter().filter(|l| l.mode == Mode::Group);
            let cells: Vec<String> = group
                .filter_map(|l| f(l).map(|v| format!("{v} ({})", l.clients)))
                .collect();
            cells.join(", ")
        };
        println!(
            "  group commit, answers per fsync (clients): {}",
            per_phase(&|l| l.answers_per_fsync.map(|a| format!("{a:.1}")))
        );
        println!(
            "  group commit, client processes' cpu:       {}",
            per_phase(&|l| Some(format!(
                "{:.0}%",
                100.0 * l.clients_cpu_s / l.window_s.max(f64::EPSILON)
            )))
        );
        if self.load.iter().any(|l| l.starved_clients > 0) {
            println!("  * the board ran dry before the end; the rate is over the shortened window");
        }
    }

    fn print_wake(&self) {
        let w = &self.wake.wake;
        println!(
            "\nWake-up, add_task -> parked waiter holds the claim ({} samples): p50 {:.3} ms   p99 {:.3} ms   max {:.3} ms",
            w.samples, w.p50_ms, w.p99_ms, w.max_ms
        );
        let line =
            |label: &str, l: &Summary| println!("{}", l.line(label, 46, &[Col::P50, Col::P99]));
        line("add_task acknowledged:", &self.wake.add_ack);
        line("idle round trip without a commit:", &self.wake.idle_rtt);
        line("busy round trip without a commit:", &self.wake.busy_rtt);
        if let Some(idle) = &self.fsync.after_pause {
            let l = idle.line(
                "fdatasync alone after the same pause:",
                46,
                &[Col::P50, Col::P99],
            );
            println!("{l}   (a reference, not the target's F)");
        }
        println!(
            "  the floor: a bare child process answers instead of boardd, after the same pause"
        );
        line("  one byte there and back:", &self.floor.rtt);
        line(
            "  the same with a 4 KiB fdatasync (the floor):",
            &self.floor.durable_rtt,
        );
    }
}
