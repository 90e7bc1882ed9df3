//! The figures of `cargo xtask tokens`: what a run measured, billed input, and
//! the table.

use serde_json::{Value, json};
use teamboard_protocol::TokenUsage;

/// The goal: billed input after at most this share of before (anthropic).
pub const GOAL: f64 = 0.30;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provider {
    Anthropic,
    OpenAi,
}

impl Provider {
    pub fn name(self) -> &'static str {
        match self {
            Provider::Anthropic => "anthropic",
            Provider::OpenAi => "openai",
        }
    }

    /// The whole prompt of one call, from the usage the mock answered with.
    pub fn prompt_of(self, usage: &Value) -> u64 {
        let n = |v: &Value| v.as_u64().unwrap_or(0);
        match self {
            // input_tokens excludes what was read from and written to the cache.
            Provider::Anthropic => {
                n(&usage["input_tokens"])
                    + n(&usage["cache_read_input_tokens"])
                    + n(&usage["cache_creation_input_tokens"])
            }
            // prompt_tokens includes the cached part.
            Provider::OpenAi => n(&usage["prompt_tokens"]),
        }
    }

    /// How the provider bills cached input, relative to fresh input.
    pub fn rates(self) -> Rates {
        match self {
            // Anthropic, 5-minute cache: writes cost 1.25x, reads 0.1x.
            Provider::Anthropic => Rates {
                cache_write: 1.25,
                cache_read: 0.1,
                said: "fresh + 1.25 x cache write + 0.1 x cache read (Anthropic's multipliers \
                       for the 5-minute cache)",
            },
            // OpenAI: no charge for writing; gpt-4o-mini, the default model, bills
            // cached input at half price (newer models at a quarter or a tenth).
            Provider::OpenAi => Rates {
                cache_write: 1.0,
                cache_read: 0.5,
                said: "fresh + 0.5 x cached (gpt-4o-mini's discount; OpenAI bills no writes)",
            },
        }
    }
}

/// Weights of input kinds, relative to fresh input.
#[derive(Debug, Clone, Copy)]
pub struct Rates {
    pub cache_write: f64,
    pub cache_read: f64,
    pub said: &'static str,
}

impl Rates {
    pub fn billed(&self, t: &TaskTokens) -> f64 {
        t.fresh as f64
            + self.cache_write * t.cache_write as f64
            + self.cache_read * t.cache_read as f64
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    /// The conversation carried on, no cache breakpoints: teammated before.
    Before,
    /// A fresh context per task, no cache breakpoints (anthropic only).
    FreshOnly,
    /// The conversation carried on, with cache breakpoints (anthropic only).
    CacheOnly,
    /// The defaults: a fresh context per task and cache breakpoints.
    After,
}

impl Variant {
    pub fn name(self) -> &'static str {
        match self {
            Variant::Before => "before",
            Variant::FreshOnly => "fresh context alone",
            Variant::CacheOnly => "prompt caching alone",
            Variant::After => "after",
        }
    }

    /// The variants measured for `provider`. OpenAI caches on its own, so the
    /// two halves of the change cannot be told apart there.
    pub fn all(provider: Provider) -> &'static [Variant] {
        match provider {
            Provider::Anthropic => &[
                Variant::Before,
                Variant::FreshOnly,
                Variant::CacheOnly,
                Variant::After,
            ],
            Provider::OpenAi => &[Variant::Before, Variant::After],
        }
    }

    /// teammated's flags for this variant (`--no-prompt-cache` means nothing to
    /// the openai provider).
    pub fn flags(self) -> Vec<&'static str> {
        match self {
            Variant::Before => vec!["--carry-context", "--no-prompt-cache"],
            Variant::FreshOnly => vec!["--no-prompt-cache"],
            Variant::CacheOnly => vec!["--carry-context"],
            Variant::After => Vec::new(),
        }
    }
}

/// One task's input, as boardd recorded it.
#[derive(Debug, Clone, Copy, Default)]
pub struct TaskTokens {
    pub task: u64,
    pub fresh: u64,
    pub cache_read: u64,
    pub cache_write: u64,
}

impl TaskTokens {
    pub fn of(task: u64, t: TokenUsage) -> TaskTokens {
        TaskTokens {
            task,
            fresh: t.input,
            cache_read: t.cache_read,
            cache_write: t.cache_write,
        }
    }

    fn add(&mut self, o: &TaskTokens) {
        self.fresh += o.fresh;
        self.cache_read += o.cache_read;
        self.cache_write += o.cache_write;
    }
}

/// What one run measured.
#[derive(Debug, Clone)]
pub struct RunTokens {
    pub tasks: Vec<TaskTokens>,
    /// Each call's whole prompt (fresh, read and written), in order.
    pub prompts: Vec<u64>,
}

impl RunTokens {
    fn total(&self) -> TaskTokens {
        let mut sum = TaskTokens::default();
        for t in &self.tasks {
            sum.add(t);
        }
        sum
    }
}

/// The runs of one provider.
pub struct Run {
    pub provider: Provider,
    pub before: RunTokens,
    pub after: RunTokens,
    /// Each half of the change on its own.
    pub partial: Vec<(Variant, RunTokens)>,
}

impl Run {
    pub fn ratio(&self) -> f64 {
        self.ratio_of(&self.after)
    }

    /// Billed input of `run` against that of before.
    fn ratio_of(&self, run: &RunTokens) -> f64 {
        let rates = self.provider.rates();
        let before = rates.billed(&self.before.total());
        if before == 0.0 {
            return 0.0;
        }
        rates.billed(&run.total()) / before
    }

    /// Whether the run is held to the goal, and meets it.
    pub fn met(&self) -> bool {
        self.provider != Provider::Anthropic || self.ratio() <= GOAL
    }
}

/// Prints the tables; whether every goal was met.
pub fn print(runs: &[Run]) -> bool {
    let mut met = true;
    for run in runs {
        let rates = run.provider.rates();
        let tasks = run.before.tasks.len();
        let calls = run.before.prompts.len() / tasks.max(1);
        println!();
        println!(
            "{}: {tasks} tasks in sequence, {calls} model calls each; tokens estimated by the mock (bytes/4)",
            run.provider.name()
        );
        println!("billed input = {}", rates.said);
        println!(
            "  before: {}",
            match run.provider {
                Provider::Anthropic => "--carry-context, no cache_control",
                Provider::OpenAi => "--carry-context (OpenAI caches prefixes on its own)",
            }
        );
        println!("  after:  the defaults (a fresh context per task, cache breakpoints)");
        println!("  {:>4}  {:>30}  {:>30}  {:>6}", "", "before", "after", "");
        println!(
            "  {:>4}  {:>7} {:>7} {:>7} {:>7}  {:>7} {:>7} {:>7} {:>7}  {:>6}",
            "task", "fresh", "read", "write", "billed", "fresh", "read", "write", "billed", "ratio"
        );
        let rows = run.before.tasks.iter().zip(&run.after.tasks);
        for (n, (b, a)) in rows.enumerate() {
            print_row(&format!("{}", n + 1), b, a, &rates);
        }
        print_row("all", &run.before.total(), &run.after.total(), &rates);
        let first_calls = |r: &RunTokens| -> Vec<String> {
            r.prompts
                .iter()
                .step_by(calls.max(1))
                .map(|p| p.to_string())
                .collect()
        };
        println!(
            "  input per call, first call of each task: before {}; after {}",
            first_calls(&run.before).join(" → "),
            first_calls(&run.after).join(" → ")
        );
        for (variant, partial) in &run.partial {
            println!(
                "  {} (billed): {:.0}, {:.1}% of before",
                variant.name(),
                rates.billed(&partial.total()),
                run.ratio_of(partial) * 100.0
            );
        }
        let ratio = run.ratio();
        let held = if run.provider == Provider::Anthropic {
            format!(
                " (goal: at most {:.0}%: {})",
                GOAL * 100.0,
                if run.met() { "met" } else { "MISSED" }
            )
        } else {
            " (not held to the goal: OpenAI caches in both runs)".to_string()
        };
        println!("  billed input after/before: {:.1}%{held}", ratio * 100.0);
        met &= run.met();
    }
    met
}

fn print_row(label: &str, b: &TaskTokens, a: &TaskTokens, rates: &Rates) {
    let (bb, ab) = (rates.billed(b), rates.billed(a));
    let ratio = if bb > 0.0 { ab / bb } else { 0.0 };
    println!(
        "  {label:>4}  {:>7} {:>7} {:>7} {:>7.0}  {:>7} {:>7} {:>7} {:>7.0}  {:>5.1}%",
        b.fresh,
        b.cache_read,
        b.cache_write,
        bb,
        a.fresh,
        a.cache_read,
        a.cache_write,
        ab,
        ratio * 100.0
    );
}

/// The figures as JSON, for `target/bench/tokens.json`.
pub fn json(runs: &[Run]) -> Value {
    let side = |r: &RunTokens, rates: &Rates| {
        json!({
            "tasks": r.tasks.iter().map(|t| json!({
                "task": t.task,
                "fresh": t.fresh,
                "cache_read": t.cache_read,
                "cache_write": t.cache_write,
                "billed": rates.billed(t),
            })).collect::<Vec<_>>(),
            "prompt_per_call": r.prompts,
            "billed": rates.billed(&r.total()),
        })
    };
    Value::Array(
        runs.iter()
            .map(|run| {
                let rates = run.provider.rates();
                json!({
                    "provider": run.provider.name(),
                    "billed_input": rates.said,
                    "before": side(&run.before, &rates),
                    "after": side(&run.after, &rates),
                    "ratio": run.ratio(),
                    "partial": run.partial.iter().map(|(v, r)| json!({
                        "variant": v.name(),
                        "run": side(r, &rates),
                        "ratio": run.ratio_of(r),
                    })).collect::<Vec<_>>(),
                    "goal": if run.provider == Provider::Anthropic { Some(GOAL) } else { None },
                    "met": run.met(),
                })
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn billed_input_weighs_the_kinds_as_anthropic_does() {
        let t = TaskTokens {
            task: 1,
            fresh: 100,
            cache_read: 1000,
            cache_write: 40,
        };
        assert_eq!(Provider::Anthropic.rates().billed(&t), 100.0 + 50.0 + 100.0);
        assert_eq!(Provider::OpenAi.rates().billed(&t), 100.0 + 40.0 + 500.0);
        let usage = json!({"input_tokens": 3, "cache_read_input_tokens": 5, "cache_creation_input_tokens": 7});
        assert_eq!(Provider::Anthropic.prompt_of(&usage), 15);
        assert_eq!(Provider::OpenAi.prompt_of(&json!({"prompt_tokens": 9})), 9);
    }
}
