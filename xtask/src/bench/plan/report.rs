//! The figures of `cargo xtask bench-plan`: the series, their percentiles, the
//! ratio and the table.

use super::rounds::Sample;
use super::{PlanBenchArgs, ms};
use crate::bench::stats::percentile;
use serde::Serialize;
use std::time::Duration;

/// Percentiles of one series, in milliseconds.
#[derive(Debug, Clone, Copy, Serialize)]
struct Spread {
    samples: usize,
    p50_ms: f64,
    p90_ms: f64,
    max_ms: f64,
}

impl Spread {
    fn of(mut samples: Vec<Duration>) -> Spread {
        samples.sort_unstable();
        if samples.is_empty() {
            return Spread {
                samples: 0,
                p50_ms: 0.0,
                p90_ms: 0.0,
                max_ms: 0.0,
            };
        }
        let at = |q| ms(percentile(&samples, q));
        Spread {
            samples: samples.len(),
            p50_ms: at(0.50),
            p90_ms: at(0.90),
            max_ms: at(1.0),
        }
    }
}

#[derive(Debug, Serialize)]
pub(super) struct Results {
    iterations: usize,
    hold_ms: u64,
    cpus: usize,
    /// The 1-minute load average before and after the run: other work on the
    /// machine moves every figure.
    load_before: Option<f64>,
    load_after: Option<f64>,
    /// `teamctl approve` spawned → the teammate's next model request read.
    approve_to_call: Spread,
    /// `teamctl approve` spawned → the teammate's first tool call after the
    /// approval (`bash`) done, with a model that answers at once.
    approve_to_tool_done: Spread,
    /// `teamctl send` spawned → the woken teammate's model request read.
    send_to_call: Spread,
    /// approve_to_call's p50 over send_to_call's.
    ratio_p50: f64,
    /// The `teamctl approve` process's own run, spawn to exit.
    approve_process: Spread,
    /// The `teamctl send` process's own run, spawn to exit.
    send_process: Spread,
    /// The model call answered with `submit_plan` read → the plan first seen
    /// pending by the bench (polling every millisecond): the teammate's share of
    /// the way from the model's submission to the lead.
    submit_to_pending: Spread,
    /// submit_to_pending plus approve_to_call, sample by sample: from the
    /// model's submission to the teammate's next model request, less the time
    /// the lead takes to decide.
    submit_to_call_less_decision: Spread,
    /// The model call answered with `submit_plan` read → `teamctl approve`
    /// spawned. The teammate made no model call in any of these windows: one
    /// would have failed the run.
    submit_to_approve: Spread,
}

#[derive(Default)]
pub(super) struct Series {
    send: Vec<Duration>,
    send_process: Vec<Duration>,
    approve: Vec<Duration>,
    approve_tool_done: Vec<Duration>,
    approve_process: Vec<Duration>,
    submit_to_pending: Vec<Duration>,
    submit_to_call: Vec<Duration>,
    submit_to_approve: Vec<Duration>,
}

impl Series {
    pub(super) fn push(&mut self, base: Sample, plan: Sample) {
        self.send.push(base.to_call);
        self.send_process.push(base.process);
        self.approve.push(plan.to_call);
        self.approve_tool_done.push(plan.to_tool_done);
        self.approve_process.push(plan.process);
        self.submit_to_pending.push(plan.submit_to_pending);
        self.submit_to_call
            .push(plan.submit_to_pending + plan.to_call);
        self.submit_to_approve.push(plan.submit_to_approve);
    }

    pub(super) fn results(self, args: &PlanBenchArgs, load: [Option<f64>; 2]) -> Results {
        let approve_to_call = Spread::of(self.approve);
        let send_to_call = Spread::of(self.send);
        Results {
            iterations: args.iterations,
            hold_ms: args.hold_ms,
            cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
            load_before: load[0],
            load_after: load[1],
            ratio_p50: approve_to_call.p50_ms / send_to_call.p50_ms,
            approve_to_call,
            approve_to_tool_done: Spread::of(self.approve_tool_done),
            send_to_call,
            approve_process: Spread::of(self.approve_process),
            send_process: Spread::of(self.send_process),
            submit_to_pending: Spread::of(self.submit_to_pending),
            submit_to_call_less_decision: Spread::of(self.submit_to_call),
            submit_to_approve: Spread::of(self.submit_to_approve),
        }
    }
}

pub(super) fn print(r: &Results) {
    let row = |label: &str, s: &Spread| {
        println!(
            "  {label:<49} p50 {:>8.2} ms  p90 {:>8.2} ms  max {:>8.2} ms",
            s.p50_ms, s.p90_ms, s.max_ms
        );
    };
    row("teamctl approve -> next model request", &r.approve_to_call);
    row(
        "  (teamctl approve -> bash call done)",
        &r.approve_to_tool_done,
    );
    row("baseline: teamctl send -> model request", &r.send_to_call);
    row("  (teamctl approve, spawn to exit)", &r.approve_process);
    row("  (teamctl send, spawn to exit)", &r.send_process);
    row("submission -> plan seen pending", &r.submit_to_pending);
    row(
        "submission -> next model request, less decision",
        &r.submit_to_call_less_decision,
    );
    row("submission -> approval (+ the hold)", &r.submit_to_approve);
    println!(
        "approve / send, p50: {:.2}x; model calls while a plan was pending: none \
         (checked in every round, as for the idle teammate)",
        r.ratio_p50
    );
    let load = |l: Option<f64>| l.map_or("?".to_string(), |l| format!("{l:.2}"));
    println!(
        "load average {} before, {} after, on {} CPUs",
        load(r.load_before),
        load(r.load_after),
        r.cpus
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_of_thirty_samples() {
        let s = Spread::of((1..=30).rev().map(Duration::from_millis).collect());
        assert_eq!(
            (s.samples, s.p50_ms, s.p90_ms, s.max_ms),
            (30, 15.0, 27.0, 30.0)
        );
        assert_eq!(Spread::of(Vec::new()).samples, 0);
    }
}
