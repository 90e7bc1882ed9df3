//! `cargo xtask bench-spend`: what reserving and settling every model call
//! costs boardd.
//!
//! Before budgets, a teammate told boardd of a model call once, after it, with
//! `record_usage`. Now it asks before (`reserve_call`, written before it is
//! granted) and tells after (`settle_usage`). Both designs are measured in the
//! same run against the release boardd, from teammates registered on real
//! connections, with a team budget in place so that every reservation is
//! checked against one:
//!
//! - **latency**: one teammate, calls one after the other; the time of
//!   `record_usage` against that of `reserve_call` + `settle_usage`;
//! - **throughput**: `--clients` teammates at once, each calling in a loop;
//!   calls per second of each design.
//!
//! A model call takes hundreds of milliseconds at the least, so what matters
//! is that the added cost is a small fraction of that, and that many teammates
//! do not queue behind the ledger.

use super::harness::board::{Scratch, stop};
use super::harness::report::{Target, print_targets, write_results};
use super::harness::summary::{Col, Summary, ratio};
use super::harness::{self, Bins, Host};
use anyhow::bail;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use teamboard_protocol::request::{ReserveArgs, SetBudgetArgs, UsageArgs};
use teamboard_protocol::spend::{AccountRef, BudgetScope, Limits, RateLimits};
use teamboard_protocol::{Client, TokenUsage};

const TEAM: &str = "spend";

#[derive(Debug, Clone, clap::Args)]
pub struct SpendBenchArgs {
    /// Calls timed one after the other, per design.
    #[arg(long, default_value_t = 500)]
    calls: usize,
    /// Teammates calling at once for the throughput figure.
    #[arg(long, default_value_t = 16)]
    clients: usize,
    /// Calls per teammate in the throughput phase, per design.
    #[arg(long, default_value_t = 200)]
    each: usize,
    /// Where boardd's database goes [default: target/bench].
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
}

impl SpendBenchArgs {
    fn check(&self) -> anyhow::Result<()> {
        if !(1..=100_000).contains(&self.calls) || !(1..=100_000).contains(&self.each) {
            bail!("--calls and --each must be between 1 and 100000");
        }
        if !(1..=256).contains(&self.clients) {
            bail!("--clients must be between 1 and 256");
        }
        Ok(())
    }
}

#[derive(Debug, Serialize)]
struct Results {
    host: Host,
    record: Summary,
    reserve_settle: Summary,
    clients: usize,
    record_per_s: f64,
    reserve_settle_per_s: f64,
    targets: Vec<Target>,
}

/// `bench-spend`: build in release, then measure from there.
pub fn build_and_run(args: &SpendBenchArgs) -> anyhow::Result<()> {
    args.check()?;
    harness::hand_over_as(&["boardd", "xtask"], "bench-spend-run", true)
}

/// `bench-spend-run`: the measurement.
pub fn run(args: &SpendBenchArgs) -> anyhow::Result<()> {
    args.check()?;
    harness::block_on(2, run_async(args))
}

/// One registered teammate, with its reservation ids.
struct Mate {
    client: Client,
    next: u64,
}

impl Mate {
    async fn join(socket: &Path, name: &str) -> anyhow::Result<Mate> {
        let key = teamboard_process::lead_key(socket)?;
        let client = Client::connect(socket, "xtask-bench", name, TEAM, Some(&key)).await?;
        client.register("dev", None).await?;
        Ok(Mate { client, next: 1 })
    }

    /// The old way: one durable `record_usage` after the call.
    async fn record(&mut self) -> anyhow::Result<()> {
        self.client.record_usage(None, usage(), false).await?;
        Ok(())
    }

    /// The new way: a durable reservation before, a settlement after.
    async fn reserve_settle(&mut self) -> anyhow::Result<()> {
        let id = self.next;
        self.next += 1;
        let args = ReserveArgs {
            id,
            task: None,
            input: 2_000,
            output: 1_000,
            chain: vec![AccountRef {
                name: "bench".into(),
                model: "anthropic/claude-sonnet-4-5".into(),
                limits: RateLimits::default(),
                subscription: false,
            }],
        };
        self.client.reserve_call(args).await?;
        let settle = UsageArgs {
            reservation: Some(id),
            tokens: usage(),
            ..UsageArgs::default()
        };
        self.client.settle_usage(settle).await?;
        Ok(())
    }
}

fn usage() -> TokenUsage {
    TokenUsage {
        input: 1_500,
        output: 300,
        ..TokenUsage::default()
    }
}

async fn run_async(args: &SpendBenchArgs) -> anyhow::Result<()> {
    let bins = Bins::beside_me(&["boardd"], "bench-spend")?;
    let host = Host::now();
    let (scratch, boardd) = Scratch::with_boardd("spend-", args.dir.as_deref(), &bins).await?;
    let key = teamboard_process::lead_key(&boardd.socket)?;
    let lead = Client::connect(&boardd.socket, "xtask-bench", "lead", TEAM, Some(&key)).await?;
    // A budget no call reaches: every reservation is checked against it.
    let budget = SetBudgetArgs {
        scope: BudgetScope::Team,
        per_ms: Some(86_400_000),
        limits: Limits {
            tokens: Some(u64::MAX / 2),
            ..Limits::default()
        },
    };
    lead.set_budget(budget).await?;
    let mut one = Mate::join(&boardd.socket, "solo").await?;
    // One call first: an account's first call goes alone (see
    // `board::spend::accounts`), and warm-up belongs to neither design.
    one.reserve_settle().await?;
    one.record().await?;
    let (mut record, mut both) = (Vec::new(), Vec::new());
    // Alternated, so that whatever the disk or the host does falls on both.
    for _ in 0..args.calls {
        let t = Instant::now();
        one.record().await?;
        record.push(t.elapsed());
        let t = Instant::now();
        one.reserve_settle().await?;
        both.push(t.elapsed());
    }
    let mut mates = Vec::new();
    for i in 0..args.clients {
        mates.push(Mate::join(&boardd.socket, &format!("m{i}")).await?);
    }
    let (mates, record_per_s) = throughput(mates, args.each, false).await?;
    let (mates, reserve_settle_per_s) = throughput(mates, args.each, true).await?;
    drop(mates);
    drop(one);
    drop(lead);
    stop(boardd).await?;
    drop(scratch);

    let (record, reserve_settle) = (Summary::of(record), Summary::of(both));
    let cols = [Col::P50, Col::P99, Col::MAX];
    println!("one teammate, {} calls each way:", args.calls);
    println!("{}", record.line("record_usage", 26, &cols));
    println!(
        "{}",
        reserve_settle.line("reserve_call+settle_usage", 26, &cols)
    );
    let latency = ratio(reserve_settle.p50_ms, record.p50_ms);
    println!(
        "{} teammates at once, {} calls each: record_usage {record_per_s:.0}/s, \
         reserve+settle {reserve_settle_per_s:.0}/s",
        args.clients, args.each
    );
    let share = reserve_settle.p50_ms / 500.0;
    let targets = vec![
        Target {
            name: "reserve+settle p50 / record_usage p50".into(),
            wanted: "report".into(),
            measured: latency.map_or("-".into(), |r| format!("{r:.2}x")),
            pass: true,
        },
        Target {
            name: "reserve+settle p50, of a 500 ms model call".into(),
            wanted: "< 2%".into(),
            measured: format!("{:.2}%", share * 100.0),
            pass: share < 0.02,
        },
        Target {
            name: "throughput, reserve+settle / record_usage".into(),
            wanted: "report".into(),
            measured: ratio(reserve_settle_per_s, record_per_s)
                .map_or("-".into(), |r| format!("{r:.2}x")),
            pass: true,
        },
    ];
    print_targets(&targets);
    write_results(
        "spend",
        &Results {
            host,
            record,
            reserve_settle,
            clients: args.clients,
            record_per_s,
            reserve_settle_per_s,
            targets,
        },
    )
}

/// Calls per second with every teammate calling `each` times at once; the
/// teammates come back for the next phase.
async fn throughput(
    mates: Vec<Mate>,
    each: usize,
    reserve: bool,
) -> anyhow::Result<(Vec<Mate>, f64)> {
    let n = mates.len();
    let start = Instant::now();
    let mut runs = tokio::task::JoinSet::new();
    for mut m in mates {
        runs.spawn(async move {
            for _ in 0..each {
                if reserve {
                    m.reserve_settle().await?;
                } else {
                    m.record().await?;
                }
            }
            Ok::<_, anyhow::Error>(m)
        });
    }
    let mut back = Vec::with_capacity(n);
    while let Some(done) = runs.join_next().await {
        back.push(done??);
    }
    let elapsed = start.elapsed().max(Duration::from_micros(1));
    Ok((back, (n * each) as f64 / elapsed.as_secs_f64()))
}
