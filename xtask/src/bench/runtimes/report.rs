//! The figures of `bench-runtimes`: what each runtime measured, the tables on
//! stdout and `target/bench/runtimes.json`.

use super::latency::Latency;
use super::overhead::Overhead;
use super::runtime::Runtime;
use super::wakes::{How, Wakes};
use crate::bench::harness::Host;
use crate::bench::harness::summary::ratio;
use serde_json::{Value, json};

/// A measurement that ran, failed, or was not asked for.
pub type Outcome<T> = Option<Result<T, String>>;

/// Everything measured of one runtime.
pub struct Measured {
    pub rt: Runtime,
    /// The CLI's pinned version and the extra agent arguments, for the label.
    pub agent: Option<(String, Vec<String>)>,
    /// Why the runtime was not measured at all.
    pub skipped: Option<String>,
    pub overhead: Outcome<Overhead>,
    pub latency: Outcome<Latency>,
    pub wakes: Outcome<Wakes>,
}

impl Measured {
    pub fn new(rt: Runtime) -> Measured {
        Measured {
            rt,
            agent: None,
            skipped: None,
            overhead: None,
            latency: None,
            wakes: None,
        }
    }

    pub fn failed(&self) -> bool {
        [err(&self.overhead), err(&self.latency), err(&self.wakes)]
            .iter()
            .any(Option::is_some)
    }
}

/// What the run was asked to do, for the header and the JSON.
pub struct Setup {
    pub tasks: usize,
    pub messages: usize,
    pub wakes: usize,
    pub wake_after_s: u64,
    pub think_ms: f64,
    pub run_ms: f64,
    pub host: Host,
}

fn find(all: &[Measured], rt: Runtime) -> Option<&Measured> {
    all.iter().find(|m| m.rt == rt)
}

fn ok<T>(o: &Outcome<T>) -> Option<&T> {
    o.as_ref().and_then(|r| r.as_ref().ok())
}

fn err<T>(o: &Outcome<T>) -> Option<&String> {
    o.as_ref().and_then(|r| r.as_ref().err())
}

fn times(r: Option<f64>) -> String {
    r.map_or_else(|| "—".to_string(), |r| format!("{r:.2}x"))
}

/// `1,234`.
fn thousands(n: f64) -> String {
    let s = format!("{:.0}", n);
    let (sign, digits) = s.split_at(usize::from(s.starts_with('-')));
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    format!("{sign}{out}")
}

/// A runtime's name with its CLI's version and extra arguments.
fn label(m: &Measured) -> String {
    match &m.agent {
        Some((version, extra)) if extra.is_empty() => format!("{} ({version})", m.rt.name()),
        Some((version, extra)) => format!("{} ({version}, {})", m.rt.name(), extra.join(" ")),
        None => m.rt.name().to_string(),
    }
}

/// What a measurement says when it has no figures. A skip is said in full
/// in the first table (`full`), by its first words after that.
fn no_figures<T>(m: &Measured, o: &Outcome<T>, full: bool) -> String {
    if let Some(why) = &m.skipped {
        let why = first_line(why);
        let said = if full {
            why
        } else {
            why.split(" (").next().unwrap_or(why)
        };
        return format!("skipped: {said}");
    }
    err(o).map_or("not measured".to_string(), |e| {
        format!("FAILED: {}", first_line(e))
    })
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or_default()
}

pub fn print(all: &[Measured], setup: &Setup) {
    println!();
    println!(
        "Agent runtimes against the native one, on the same mock ({})",
        setup.host.said()
    );
    print_overhead(all, setup);
    if setup.messages > 0 {
        print_latency(all, setup);
    }
    if setup.wakes > 0 && all.iter().any(|m| m.rt.is_agent()) {
        print_wakes(all, setup);
    }
}

/// The width of the runtime column: the longest label.
fn width(all: &[Measured]) -> usize {
    all.iter()
        .map(|m| label(m).chars().count())
        .max()
        .unwrap_or(0)
        .max(8)
}

fn print_overhead(all: &[Measured], setup: &Setup) {
    let w = width(all);
    println!();
    println!(
        "Per task ({} tasks each: one shell command that writes a file, then the answer; \
         wall = claim → completed; tokens = the mock's estimate, bytes/4):",
        setup.tasks
    );
    println!(
        "  {:<w$} {:>8} {:>8} {:>8} {:>7} {:>16} {:>6} {:>8} {:>8} {:>7} {:>7}  vs",
        "runtime",
        "wall p50",
        "mean",
        "+mean",
        "×",
        "agent start",
        "calls",
        "KB sent",
        "prompt",
        "cached",
        "×"
    );
    for m in all {
        let Some(o) = ok(&m.overhead) else {
            let why = no_figures(m, &m.overhead, true);
            println!("  {:<w$} {why}", label(m));
            continue;
        };
        let base = find(all, m.rt.baseline()).and_then(|b| ok(&b.overhead));
        let tokens = o.per_task(o.prompt_tokens);
        let start = match (&o.startup, o.startup_share()) {
            (Some(s), Some(share)) => format!("{:.0} ms {:>3.0}%", s.mean_ms, share * 100.0),
            _ => "—".to_string(),
        };
        let calls = if o.side_calls > 0 {
            format!(
                "{:.1}+{:.1}",
                o.per_task((o.calls - o.side_calls) as u64),
                o.per_task(o.side_calls as u64)
            )
        } else {
            format!("{:.1}", o.per_task(o.calls as u64))
        };
        println!(
            "  {:<w$} {:>5.0} ms {:>5.0} ms {:>8} {:>7} {:>16} {:>6} {:>8.1} {:>8} {:>6.0}% {:>7}  {}",
            label(m),
            o.wall.p50_ms,
            o.wall.mean_ms,
            base.map_or_else(
                || "—".to_string(),
                |b| format!("{:+.0} ms", o.wall.mean_ms - b.wall.mean_ms)
            ),
            times(base.and_then(|b| ratio(o.wall.mean_ms, b.wall.mean_ms))),
            start,
            calls,
            o.per_task(o.request_bytes) / 1024.0,
            thousands(tokens),
            ratio(o.cached_tokens as f64, o.prompt_tokens as f64).unwrap_or(0.0) * 100.0,
            times(base.and_then(|b| ratio(tokens, b.per_task(b.prompt_tokens)))),
            m.rt.baseline().name(),
        );
    }
    println!(
        "  (+mean, × = against the baseline named last: wall time by the mean, prompt tokens per \
         task; agent start = mean and share of the wall time; calls a+b = conversation + side \
         calls; cached = the share of the prompt a real API's cache would serve)"
    );
}

fn print_latency(all: &[Measured], setup: &Setup) {
    let w = width(all);
    println!();
    println!(
        "A message to a busy agent ({} messages each; busy = steps of a {:.0} ms model call and a \
         {:.0} ms shell command, {} steps to an ACP turn; send → the first model call that \
         carries it):",
        setup.messages,
        setup.think_ms,
        setup.run_ms,
        super::script::TURN
    );
    println!(
        "  {:<w$} {:>8} {:>8} {:>7} {:>12} {:>12} {:>10} {:>10}  delivered",
        "runtime", "p50", "p95", "× p50", "in call p50", "in cmd p50", "after turn", "step gap"
    );
    let base = find(all, Runtime::Native).and_then(|b| ok(&b.latency));
    for m in all.iter().filter(|m| m.rt != Runtime::NativeOpenai) {
        let Some(l) = ok(&m.latency) else {
            let why = no_figures(m, &m.latency, false);
            println!("  {:<w$} {why}", label(m));
            continue;
        };
        println!(
            "  {:<w$} {:>5.0} ms {:>5.0} ms {:>7} {:>9.0} ms {:>9.0} ms {:>10} {:>7.0} ms  {}",
            label(m),
            l.to_model.p50_ms,
            l.to_model.p95_ms,
            times(base.and_then(|b| ratio(l.to_model.p50_ms, b.to_model.p50_ms))),
            l.in_model_call.p50_ms,
            l.in_command.p50_ms,
            l.after_turn_end
                .map_or_else(|| "—".to_string(), |s| format!("{:.0} ms", s.p50_ms)),
            l.turnaround.p50_ms,
            m.rt.delivery()
        );
    }
    println!(
        "  (in call / in cmd = p50 of the messages sent during the model call / the command; \
         after turn = from the end of the turn; step gap = p50 of the agent's own time from a \
         command's end to its next model call)"
    );
}

fn print_wakes(all: &[Measured], setup: &Setup) {
    let w = width(all);
    println!();
    println!(
        "Wakes of one task that resumed its session ({} wakes each, {} s into each stretch: kill \
         -9 of the teammate and a restart, in turn with kill -9 of the agent and a re-claim):",
        setup.wakes, setup.wake_after_s
    );
    println!(
        "  {:<w$} {:>14} {:>9} {:>9}  new sessions, why",
        "runtime", "resumed/wakes", "restart", "crash"
    );
    for m in all.iter().filter(|m| m.rt.is_agent()) {
        let Some(k) = ok(&m.wakes) else {
            let why = no_figures(m, &m.wakes, false);
            println!("  {:<w$} {why}", label(m));
            continue;
        };
        let pair = |(a, b): (usize, usize)| format!("{a}/{b}");
        let why: Vec<String> = k
            .each
            .iter()
            .filter_map(|x| Some(format!("{}: {}", x.how, x.why_new.as_deref()?)))
            .collect();
        println!(
            "  {:<w$} {:>5}/{:<2} {:>4.0}% {:>9} {:>9}  {}",
            label(m),
            k.resumed,
            k.starts.saturating_sub(1),
            k.share().unwrap_or(0.0) * 100.0,
            pair(k.of(How::Restart)),
            pair(k.of(How::Crash)),
            if why.is_empty() {
                "none".to_string()
            } else {
                why.join("; ")
            }
        );
    }
}

/// The figures as JSON, for `target/bench/runtimes.json`.
pub fn json(all: &[Measured], setup: &Setup, unix_s: u64) -> Value {
    let outcome = |o: Value, e: Option<&String>| e.map_or(o, |e| json!({"error": e}));
    let runtimes: Vec<Value> = all
        .iter()
        .map(|m| {
            let base = find(all, m.rt.baseline()).and_then(|b| ok(&b.overhead));
            let overhead = ok(&m.overhead).map(|o| {
                json!({
                    "figures": o,
                    "per_task": {
                        "calls": o.per_task(o.calls as u64),
                        "side_calls": o.per_task(o.side_calls as u64),
                        "request_bytes": o.per_task(o.request_bytes),
                        "prompt_tokens": o.per_task(o.prompt_tokens),
                        "cached_tokens": o.per_task(o.cached_tokens),
                    },
                    "startup_share": o.startup_share(),
                    "against": m.rt.baseline().name(),
                    "wall_mean_ratio": base.and_then(|b| ratio(o.wall.mean_ms, b.wall.mean_ms)),
                    "wall_p50_ratio": base.and_then(|b| ratio(o.wall.p50_ms, b.wall.p50_ms)),
                    "prompt_tokens_ratio": base.and_then(|b| ratio(o.prompt_tokens as f64, b.prompt_tokens as f64)),
                    "request_bytes_ratio": base.and_then(|b| ratio(o.request_bytes as f64, b.request_bytes as f64)),
                })
            });
            let native = find(all, Runtime::Native).and_then(|b| ok(&b.latency));
            let latency = ok(&m.latency).map(|l| {
                json!({
                    "figures": l,
                    "delivered": m.rt.delivery(),
                    "p50_ratio_to_native": native.and_then(|b| ratio(l.to_model.p50_ms, b.to_model.p50_ms)),
                })
            });
            let wakes = ok(&m.wakes).map(|w| json!({"figures": w, "share": w.share()}));
            json!({
                "runtime": m.rt.name(),
                "agent": m.agent.as_ref().map(|(v, extra)| json!({"version": v, "extra_args": extra})),
                "skipped": m.skipped,
                "overhead": outcome(json!(overhead), err(&m.overhead)),
                "latency": outcome(json!(latency), err(&m.latency)),
                "wakes": outcome(json!(wakes), err(&m.wakes)),
            })
        })
        .collect();
    json!({
        "at_unix_s": unix_s,
        "cpus": setup.host.cpus,
        "load_average": setup.host.load_average,
        "tasks": setup.tasks,
        "messages": setup.messages,
        "wakes": setup.wakes,
        "wake_after_s": setup.wake_after_s,
        "busy_step": {"model_call_ms": setup.think_ms, "command_ms": setup.run_ms, "acp_turn_steps": super::script::TURN},
        "runtimes": runtimes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn big_numbers_get_separators() {
        assert_eq!(thousands(0.0), "0");
        assert_eq!(thousands(999.4), "999");
        assert_eq!(thousands(45_123.0), "45,123");
        assert_eq!(thousands(-1_234_567.0), "-1,234,567");
    }
}
