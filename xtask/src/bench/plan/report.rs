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

/// The figures of the counted rounds, each a (baseline, plan) pair.
pub(super) fn results(
    rounds: &[(Sample, Sample)],
    args: &PlanBenchArgs,
    host: Host,
    load_after: Option<f64>,
) -> Results {
    let of = |f: fn(&Sample, &Sample) -> Duration| {
        Summary::of(rounds.iter().map(|(base, plan)| f(base, plan)).collect())
    };
    let approve_to_call = of(|_, p| p.to_call);
    let send_to_call = of(|b, _| b.to_call);
    Results {
        iterations: args.iterations,
        hold_ms: args.hold_ms,
        host,
        load_after,
        ratio_p50: approve_to_call.p50_ms / send_to_call.p50_ms,
        approve_to_call,
        approve_to_tool_done: of(|_, p| p.to_tool_done),
        send_to_call,
        approve_process: of(|_, p| p.process),
        send_process: of(|b, _| b.process),
        submit_to_pending: of(|_, p| p.submit_to_pending),
        submit_to_call_less_decision: of(|_, p| p.submit_to_pending + p.to_call),
        submit_to_approve: of(|_, p| p.submit_to_approve),
    }
}

pub(super) fn print(r: &Results) {
    for (label, s) in [
        ("teamctl approve -> next model request", &r.approve_to_call),
        (
            "  (teamctl approve -> bash call done)",
            &r.approve_to_tool_done,
        ),
        ("baseline: teamctl send -> model request", &r.send_to_call),
        ("  (teamctl approve, spawn to exit)", &r.approve_process),
        ("  (teamctl send, spawn to exit)", &r.send_process),
        ("submission -> plan seen pending", &r.submit_to_pending),
        (
            "submission -> next model request, less decision",
            &r.submit_to_call_less_decision,
        ),
        ("submission -> approval (+ the hold)", &r.submit_to_approve),
    ] {
        println!("{}", s.line(label, 49, &[Col::P50, Col::P90, Col::MAX]));
    }
    println!(
        "approve / send, p50: {:.2}x; model calls while a plan was pending: none \
         (checked in every round, as for the idle teammate)",
        r.ratio_p50
    );
    let (before, after) = (shown(r.host.load_average), shown(r.load_after));
    println!(
        "load average {before} before, {after} after, on {} CPUs",
        r.host.cpus
    );
}
