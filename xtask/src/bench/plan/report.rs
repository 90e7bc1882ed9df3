//! The figures of `cargo xtask bench-plan`: the series, their percentiles, the
//! ratio and the table.

use super::PlanBenchArgs;
use super::rounds::Sample;
use crate::bench::harness::summary::{Col, Summary};
use crate::bench::harness::{Host, shown};
use serde::Serialize;
use std::time::Duration;

#[derive(Debug, Serialize)]
pub(super) struct Results {
    iterations: usize,
    hold_ms: u64,
    /// The machine, with its load average before the run, and the load average
    /// after: other work on the machine moves every figure.
    host: Host,
    load_after: Option<f64>,
    /// `teamctl approve` spawned → the teammate's next model request read.
    approve_to_call: Summary,
    /// `teamctl approve` spawned → the teammate's first tool call after the
    /// approval (`bash`) done, with a model that answers at once.
    approve_to_tool_done: Summary,
    /// `teamctl send` spawned → the woken teammate's model request read.
    send_to_call: Summary,
    /// approve_to_call's p50 over send_to_call's.
    ratio_p50: f64,
    /// The `teamctl approve` process's own run, spawn to exit.
    approve_process: Summary,
    /// The `teamctl send` process's own run, spawn to exit.
    send_process: Summary,
    /// The model call answered with `submit_plan` read → the plan first seen
    /// pending by the bench (polling every millisecond): the teammate's share of
    /// the way from the model's submission to the lead.
    submit_to_pending: Summary,
    /// submit_to_pending plus approve_to_call, sample by sample: from the
    /// model's submission to the teammate's next model request, less the time
    /// the lead takes to decide.
    submit_to_call_less_decision: Summary,
    /// The model call answered with `submit_plan` read → `teamctl approve`
    /// spawned. The teammate made no model call in any of these windows: one
    /// would have failed the run.
    submit_to_approve: Summary,
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

    pub(super) fn results(
        self,
        args: &PlanBenchArgs,
        host: Host,
        load_after: Option<f64>,
    ) -> Results {
        let approve_to_call = Summary::of(self.approve);
        let send_to_call = Summary::of(self.send);
        Results {
            iterations: args.iterations,
            hold_ms: args.hold_ms,
            host,
            load_after,
            ratio_p50: approve_to_call.p50_ms / send_to_call.p50_ms,
            approve_to_call,
            approve_to_tool_done: Summary::of(self.approve_tool_done),
            send_to_call,
            approve_process: Summary::of(self.approve_process),
            send_process: Summary::of(self.send_process),
            submit_to_pending: Summary::of(self.submit_to_pending),
            submit_to_call_less_decision: Summary::of(self.submit_to_call),
            submit_to_approve: Summary::of(self.submit_to_approve),
        }
    }
}

pub(super) fn print(r: &Results) {
    let row = |label: &str, s: &Summary| {
        println!("{}", s.line(label, 49, &[Col::P50, Col::P90, Col::Max]));
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
    println!(
        "load average {} before, {} after, on {} CPUs",
        shown(r.host.load_average),
        shown(r.load_after),
        r.host.cpus
    );
}
