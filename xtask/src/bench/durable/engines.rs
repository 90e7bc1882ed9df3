//! `cargo xtask bench --database postgres`: the storage engines side by side.
//!
//! In one run, on one disk, the same two figures for each way to keep the
//! board:
//!
//! - SQLite in the state directory (the default, the baseline of the ratios);
//! - PostgreSQL with one boardd;
//! - PostgreSQL with three boardd on the one database: one decides, and the
//!   other two forward their clients to it (`docs/design/cluster.md`).
//!
//! The figures are the wake-up (a task created → a parked waiter holds it; with
//! three boardd the waiter and the lead are on the two that forward, so the
//! path crosses the forwarding twice) and P1, claim-and-complete cycles per
//! second at 256 clients (spread over every boardd).
//!
//! The PostgreSQL server is a private one in the run's directory (so on the
//! same disk as SQLite's file), with `fsync` and `synchronous_commit` on, as a
//! server that keeps what it acknowledges runs. `TEAMBOARD_PG_URL` names an
//! existing server instead.

use super::load::{self, LoadResult};
use super::wake::{self, WakeResult};
use crate::bench::harness::board::{Scratch, stop};
use crate::bench::harness::{self, Bins};
use anyhow::Context;
use serde::Serialize;
use std::os::unix::fs::PermissionsExt as _;
use std::path::PathBuf;
use std::time::Duration;
use teamboard_process::Boardd;
use teamboard_process::pg::{PgOptions, PgServer};

/// Clients of the P1 phase.
const P1_CLIENTS: usize = 256;

/// One way to keep the board.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Setup {
    Sqlite,
    Postgres { boardds: usize },
}

impl std::fmt::Display for Setup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Setup::Sqlite => f.write_str("SQLite, 1 boardd"),
            Setup::Postgres { boardds: 1 } => f.write_str("PostgreSQL, 1 boardd"),
            Setup::Postgres { boardds } => write!(f, "PostgreSQL, {boardds} boardd"),
        }
    }
}

/// What one setup measured.
#[derive(Debug, Serialize)]
pub struct EngineResult {
    pub setup: Setup,
    pub wake: WakeResult,
    pub p1: LoadResult,
}

/// The run's results, as `target/bench/engines.json` has them.
#[derive(Debug, Serialize)]
struct Results {
    seconds_per_phase: f64,
    wake_samples: usize,
    cpus: usize,
    load_average: Option<f64>,
    setups: Vec<EngineResult>,
}

/// The boardd of one setup, on a fresh board.
struct Cluster {
    daemons: Vec<Boardd>,
}

impl Cluster {
    fn sockets(&self) -> Vec<PathBuf> {
        self.daemons.iter().map(|d| d.socket.clone()).collect()
    }

    /// The one that decides: the first, which started before the others.
    fn leader_pid(&self) -> Option<u32> {
        self.daemons.first().and_then(Boardd::pid)
    }

    async fn stop(self) -> anyhow::Result<()> {
        // Followers first, so that the leader's stop is not a takeover.
        for d in self.daemons.into_iter().rev() {
            stop(d).await?;
        }
        Ok(())
    }
}

/// Runs every setup and prints the table.
pub async fn run(
    run: &Scratch,
    bins: &Bins,
    seconds: f64,
    wake_samples: usize,
) -> anyhow::Result<()> {
    let server = match std::env::var("TEAMBOARD_PG_URL") {
        Ok(url) if !url.is_empty() => PgServer::existing(url),
        _ => {
            println!(
                "starting a private PostgreSQL in {} ...",
                run.path().display()
            );
            // As root, the server runs as `postgres`, which must get through the
            // run's directory (made 0700) to its own.
            std::fs::set_permissions(run.path(), std::fs::Permissions::from_mode(0o711))
                .with_context(|| format!("cannot open {} to PostgreSQL", run.path().display()))?;
            PgServer::start(&PgOptions {
                durable: true,
                parent: Some(run.path().to_path_buf()),
                ..PgOptions::default()
            })
            .context("cannot start PostgreSQL for the bench")?
        }
    };
    let setups = [
        Setup::Sqlite,
        Setup::Postgres { boardds: 1 },
        Setup::Postgres { boardds: 3 },
    ];
    let budget = Duration::from_secs_f64((seconds * 10.0).max(30.0));
    let mut results = Vec::new();
    for (i, setup) in setups.into_iter().enumerate() {
        println!("{setup}: wake-up, {wake_samples} samples ...");
        let cluster = start(run, bins, &server, setup, &format!("wake-{i}")).await?;
        let sockets = cluster.sockets();
        // The waiter and the lead on different boardd when there are several,
        // neither of them the one that decides.
        let (waiter_at, lead_at) = match sockets.len() {
            n if n >= 3 => (&sockets[1], &sockets[2]),
            _ => (&sockets[0], &sockets[0]),
        };
        let w = wake::measure_on(waiter_at, lead_at, wake_samples, budget).await?;
        cluster.stop().await?;
        println!(
            "    p50 {:.3} ms, p99 {:.3} ms",
            w.wake.p50_ms, w.wake.p99_ms
        );

        println!("{setup}: P1, {P1_CLIENTS} clients, {seconds} s ...");
        let cluster = start(run, bins, &server, setup, &format!("load-{i}")).await?;
        let tasks = (P1_TASK_RATE * seconds) as u64 + 4 * P1_CLIENTS as u64;
        load::prefill(&cluster.sockets()[0], tasks).await?;
        let p1 = load::measure_on(
            bins,
            &cluster.sockets(),
            cluster.leader_pid(),
            P1_CLIENTS,
            seconds,
        )
        .await?;
        cluster.stop().await?;
        let starved = if p1.starved_clients > 0 {
            ", board ran dry"
        } else {
            ""
        };
        println!("    {:.0} cycles/s{starved}", p1.cycles_per_s);
        results.push(EngineResult {
            setup,
            wake: w,
            p1: LoadResult {
                tasks_prefilled: tasks,
                ..p1
            },
        });
    }
    print_table(&results);
    let host = harness::Host::now();
    let results = Results {
        seconds_per_phase: seconds,
        wake_samples,
        cpus: host.cpus,
        load_average: host.load_average,
        setups: results,
    };
    harness::report::write_results("engines.json", &results)
}

/// A generous rate for sizing P1's board: a phase must not run dry.
const P1_TASK_RATE: f64 = 20_000.0;

/// Starts the boardd of `setup` on a fresh board named `name`.
async fn start(
    run: &Scratch,
    bins: &Bins,
    server: &PgServer,
    setup: Setup,
    name: &str,
) -> anyhow::Result<Cluster> {
    let boardd = bins.get("boardd");
    let state = |i: usize| run.path().join(format!("{name}-{i}"));
    let daemons = match setup {
        Setup::Sqlite => vec![run.boardd(&boardd, &state(0), &[]).await?],
        Setup::Postgres { boardds } => {
            let url = server
                .create_database()
                .context("cannot create the bench's database")?;
            let mut daemons = Vec::with_capacity(boardds);
            for i in 0..boardds {
                let mut flags = vec!["--database".to_string(), url.clone()];
                if boardds > 1 {
                    // Each advertises its own socket: on one host, the
                    // followers forward to the leader's socket.
                    let socket = run.next_socket();
                    flags.extend([
                        "--advertise".into(),
                        socket.display().to_string(),
                        "--node".into(),
                        format!("bench-{i}"),
                    ]);
                }
                let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
                daemons.push(run.boardd(&boardd, &state(i), &flags).await?);
            }
            daemons
        }
    };
    Ok(Cluster { daemons })
}

fn print_table(results: &[EngineResult]) {
    let Some(base) = results.iter().find(|r| r.setup == Setup::Sqlite) else {
        return;
    };
    println!();
    println!(
        "| setup | wake p50 | wake p99 | p99 ratio | P1 cycles/s | P1 ratio | answers per commit |"
    );
    println!("|---|---|---|---|---|---|---|");
    for r in results {
        let per_commit =
            r.p1.answers_per_fsync
                .map_or("n/a".to_string(), |a| format!("{a:.1}"));
        println!(
            "| {} | {:.2} ms | {:.2} ms | {:.2}× | {:.0} | {:.2}× | {per_commit} |",
            r.setup,
            r.wake.wake.p50_ms,
            r.wake.wake.p99_ms,
            r.wake.wake.p99_ms / base.wake.wake.p99_ms.max(f64::EPSILON),
            r.p1.cycles_per_s,
            r.p1.cycles_per_s / base.p1.cycles_per_s.max(f64::EPSILON),
        );
    }
}
