//! (b, d) Durable claim-and-complete cycles per second on a pre-filled board.
//!
//! The parent starts boardd, fills the board, and starts a few client processes
//! (this same binary, `bench-client`), each with a tokio runtime and many
//! connections. Spreading clients over processes keeps one client runtime from
//! being the bottleneck, and the processes start together on a "go" line so that
//! every client measures the same window.

use super::Mode;
use crate::bench::harness::Bins;
use crate::bench::harness::board::{Scratch, stop};
use anyhow::{Context, bail};
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use teamboard_process::{cpu_time, die_with_parent};
use teamboard_protocol::request::NewTask;
use teamboard_protocol::{Client, ClientError};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdout, Command};
use tokio::task::JoinSet;

/// The team every load client works in, and the role it registers with. Tasks
/// carry no role, so any claimant may take any of them.
const TEAM: &str = "bench";
/// The most any single request may take before the bench calls boardd stuck.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);
/// How long client processes may take to connect and register.
const READY_TIMEOUT: Duration = Duration::from_secs(60);
/// Connections that fill the board, and requests each keeps in flight (boardd
/// answers `busy` above 256 per connection).
const PREFILL_CONNECTIONS: usize = 4;
const PREFILL_IN_FLIGHT: usize = 128;
/// A bound on filling the board, whatever the disk.
const PREFILL_TIMEOUT: Duration = Duration::from_secs(600);

/// One measured load phase.
#[derive(Debug, Clone, Serialize)]
pub struct LoadResult {
    pub mode: Mode,
    pub clients: usize,
    pub processes: usize,
    pub tasks_prefilled: u64,
    /// Completed claim + complete cycles, summed over every client.
    pub cycles: u64,
    /// From "go" until the last client stopped, in seconds.
    pub window_s: f64,
    pub cycles_per_s: f64,
    /// Clients that found no ready task before the window ended. When this is not
    /// zero the board ran dry and the window was cut short (the rate still holds).
    pub starved_clients: usize,
    /// CPU seconds boardd used during the window, and per second of window: 1.0 is
    /// one core busy.
    pub boardd_cpu_s: Option<f64>,
    pub boardd_cores: Option<f64>,
    /// CPU seconds all client processes used during the window.
    pub clients_cpu_s: f64,
    /// Answers each fsync released during the window, from boardd's `status`
    /// (`commits.requests / commits.transactions`): how much the clients shared
    /// their commits. `None` if `status` could not be read.
    pub answers_per_fsync: Option<f64>,
}

/// What a client process reports on its stdout, one JSON object per line.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
enum Report {
    /// Every connection is open and registered; waiting for "go".
    Ready,
    Done {
        cycles: u64,
        elapsed_s: f64,
        starved: usize,
        cpu_s: f64,
        errors: Vec<String>,
    },
}

/// Measures one phase on a fresh board in `state_dir`.
pub async fn measure(
    run: &Scratch,
    bins: &Bins,
    state_dir: &Path,
    mode: Mode,
    clients: usize,
    seconds: f64,
    tasks: u64,
) -> anyhow::Result<LoadResult> {
    // The board is always filled through a group-commit daemon: per-request commits
    // would take long to add the tasks. The measured daemon then starts on that
    // database, as boardd does after any restart. Both modes restart, so both begin
    // from the same state: a checkpointed database, an empty WAL, a restored board.
    let boardd = bins.get("boardd");
    let filler = run.boardd(&boardd, state_dir, Mode::Group.flags()).await?;
    prefill(&filler.socket, tasks).await?;
    stop(filler).await?;
    let daemon = run.boardd(&boardd, state_dir, mode.flags()).await?;
    let sockets = [daemon.socket.clone()];
    let r = measure_on(bins, &sockets, daemon.pid(), clients, seconds).await?;
    drop(daemon);
    Ok(LoadResult {
        mode,
        tasks_prefilled: tasks,
        ..r
    })
}

/// Measures one phase against boards already filled, with the clients spread
/// over `sockets` in turn; `pid` is the boardd whose CPU time is counted. The
/// result's mode and board size are the caller's to fill in.
pub async fn measure_on(
    bins: &Bins,
    sockets: &[std::path::PathBuf],
    pid: Option<u32>,
    clients: usize,
    seconds: f64,
) -> anyhow::Result<LoadResult> {
    let boardd_cpu = || pid.and_then(cpu_time);
    let first = sockets.first().context("no boardd to measure")?;

    // One client is one process; more are spread so that no client runtime
    // saturates a core on its own, as evenly as possible: 256 over 4 is 64 each.
    // With several boardd, at least one process per boardd.
    let processes = match clients {
        0 | 1 => 1,
        2..=16 => 2,
        _ => 4,
    }
    .max(sockets.len().min(clients));
    let mut children = Vec::with_capacity(processes);
    for p in 0..processes {
        let n = clients / processes + usize::from(p < clients % processes);
        children.push(ClientProcess::spawn(
            &bins.xtask,
            &sockets[p % sockets.len()],
            p,
            n,
            seconds,
        )?);
    }
    let ready_by = Instant::now() + READY_TIMEOUT;
    for c in &mut children {
        match c.next_report(ready_by).await? {
            Report::Ready => {}
            other => bail!("client process {} sent {other:?} before ready", c.index),
        }
    }

    let cpu_before = boardd_cpu();
    let commits_before = commit_stats(first).await;
    for c in &mut children {
        let stdin = c.child.stdin.as_mut().context("client stdin")?;
        stdin.write_all(b"go\n").await?;
        stdin.flush().await?;
    }
    // Every client stops by itself after `seconds`; the slack covers one slow
    // request per client and process exit.
    let done_by = Instant::now() + Duration::from_secs_f64(seconds) + CALL_TIMEOUT;
    let (mut cycles, mut window_s, mut starved, mut clients_cpu_s) = (0, 0f64, 0, 0f64);
    for c in &mut children {
        let Report::Done {
            cycles: n,
            elapsed_s,
            starved: s,
            cpu_s,
            errors,
        } = c.next_report(done_by).await?
        else {
            bail!("client process {} sent Ready instead of its count", c.index);
        };
        if let Some(first) = errors.first() {
            let n = errors.len();
            bail!(
                "client process {} saw {n} errors; the first: {first}",
                c.index
            );
        }
        cycles += n;
        window_s = window_s.max(elapsed_s);
        starved += s;
        clients_cpu_s += cpu_s;
    }
    let answers_per_fsync = match (commits_before, commit_stats(first).await) {
        (Some(a), Some(b)) if b.transactions > a.transactions => Some(
            b.requests.saturating_sub(a.requests) as f64 / (b.transactions - a.transactions) as f64,
        ),
        _ => None,
    };
    let boardd_cpu_s =
        (cpu_before.zip(boardd_cpu())).map(|(a, b)| b.saturating_sub(a).as_secs_f64());
    for mut c in children {
        let status = tokio::time::timeout(Duration::from_secs(10), c.child.wait())
            .await
            .with_context(|| format!("client process {} did not exit", c.index))??;
        if !status.success() {
            bail!("client process {} exited with {status}", c.index);
        }
    }
    Ok(LoadResult {
        mode: Mode::Group,
        clients,
        processes,
        tasks_prefilled: 0,
        cycles,
        window_s,
        cycles_per_s: if window_s > 0.0 {
            cycles as f64 / window_s
        } else {
            0.0
        },
        starved_clients: starved,
        boardd_cpu_s,
        boardd_cores: boardd_cpu_s.map(|c| c / window_s.max(f64::EPSILON)),
        clients_cpu_s,
        answers_per_fsync,
    })
}

/// boardd's commit counters, read on a connection of their own.
async fn commit_stats(socket: &Path) -> Option<teamboard_protocol::CommitStats> {
    let key = teamboard_process::lead_key(socket).ok()?;
    let client = Client::connect(socket, "xtask-bench", "lead", TEAM, Some(&key))
        .await
        .ok()?;
    Some(client.status().await.ok()?.commits)
}

/// Adds `tasks` role-less tasks, many requests in flight at once.
pub async fn prefill(socket: &Path, tasks: u64) -> anyhow::Result<()> {
    let started = Instant::now();
    let next = Arc::new(AtomicU64::new(0));
    let mut workers = JoinSet::new();
    for _ in 0..PREFILL_CONNECTIONS {
        let key = teamboard_process::lead_key(socket)?;
        let client =
            Arc::new(Client::connect(socket, "xtask-bench", "lead", TEAM, Some(&key)).await?);
        for _ in 0..PREFILL_IN_FLIGHT {
            let (client, next) = (client.clone(), next.clone());
            workers.spawn(async move {
                while next.fetch_add(1, Ordering::Relaxed) < tasks {
                    let subject = "bench task".into();
                    client
                        .add_task(NewTask {
                            subject,
                            ..NewTask::default()
                        })
                        .await?;
                }
                anyhow::Ok(())
            });
        }
    }
    let all = async {
        while let Some(r) = workers.join_next().await {
            r.context("prefill worker panicked")??;
        }
        anyhow::Ok(())
    };
    tokio::time::timeout(PREFILL_TIMEOUT, all)
        .await
        .with_context(|| format!("adding {tasks} tasks took longer than {PREFILL_TIMEOUT:?}"))??;
    let took = started.elapsed().as_secs_f64();
    let rate = tasks as f64 / took;
    println!("    prefilled {tasks} tasks in {took:.2} s ({rate:.0} adds/s)");
    Ok(())
}

/// A running `bench-client` process, killed if dropped.
struct ClientProcess {
    index: usize,
    child: Child,
    stdout: Lines<BufReader<ChildStdout>>,
}

impl ClientProcess {
    fn spawn(
        xtask: &Path,
        socket: &Path,
        index: usize,
        clients: usize,
        seconds: f64,
    ) -> anyhow::Result<Self> {
        let mut cmd = Command::new(xtask);
        let (key_var, key) = teamboard_process::lead_key_env(socket);
        cmd.env(key_var, key);
        cmd.arg("bench-client")
            .arg("--socket")
            .arg(socket)
            .args([
                "--proc",
                &index.to_string(),
                "--clients",
                &clients.to_string(),
            ])
            .args(["--seconds", &seconds.to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true);
        die_with_parent(cmd.as_std_mut(), libc::SIGKILL);
        let mut child = cmd
            .spawn()
            .with_context(|| format!("cannot start {}", xtask.display()))?;
        let stdout = BufReader::new(child.stdout.take().context("client stdout")?).lines();
        Ok(ClientProcess {
            index,
            child,
            stdout,
        })
    }

    async fn next_report(&mut self, by: Instant) -> anyhow::Result<Report> {
        let i = self.index;
        let line = tokio::time::timeout_at(by.into(), self.stdout.next_line())
            .await
            .with_context(|| format!("client process {i} did not report in time"))??
            .with_context(|| format!("client process {i} exited without reporting"))?;
        serde_json::from_str(&line).with_context(|| format!("client process {i} reported {line:?}"))
    }
}

/// The `bench-client` process: opens `clients` connections, registers each, waits
/// for "go" on stdin, then runs claim + complete cycles for `seconds`.
pub fn client_process(
    socket: &Path,
    proc: usize,
    clients: usize,
    seconds: f64,
) -> anyhow::Result<()> {
    // One thread: the parallelism comes from several processes, and a single-threaded
    // runtime has no cross-thread wake-ups on each response.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let mut conns = Vec::with_capacity(clients);
    // A process of its own: the key's file comes in `TEAMBOARD_LEAD_KEY`.
    let key = teamboard_process::lead_key(socket)?;
    for i in 0..clients {
        let name = format!("c{proc}-{i}");
        let client = rt
            .block_on(Client::connect(
                socket,
                "xtask-bench",
                &name,
                TEAM,
                Some(&key),
            ))
            .with_context(|| format!("{name} cannot connect"))?;
        rt.block_on(client.register(TEAM, Some(std::process::id())))
            .with_context(|| format!("{name} cannot register"))?;
        conns.push(client);
    }
    emit(&Report::Ready)?;
    let mut line = String::new();
    // Blocking here is fine: nothing runs on the runtime until "go". EOF means the
    // parent is gone.
    std::io::stdin().read_line(&mut line)?;
    if line.trim() != "go" {
        bail!("expected \"go\" on stdin, got {line:?}");
    }
    let own_cpu = || cpu_time(std::process::id()).unwrap_or_default();
    let cpu_before = own_cpu();
    let start = Instant::now();
    let deadline = start + Duration::from_secs_f64(seconds);
    let (mut cycles, mut end, mut starved, mut errors) = (0, start, 0, Vec::new());
    rt.block_on(async {
        let mut set = JoinSet::new();
        for client in conns {
            set.spawn(cycle_loop(client, deadline));
        }
        while let Some(joined) = set.join_next().await {
            match joined {
                Ok((n, stopped, result)) => {
                    cycles += n;
                    end = end.max(stopped);
                    match result {
                        Ok(dry) => starved += usize::from(dry),
                        Err(e) => errors.push(e),
                    }
                }
                Err(e) => errors.push(format!("client task failed: {e}")),
            }
        }
    });
    emit(&Report::Done {
        cycles,
        elapsed_s: (end - start).as_secs_f64(),
        starved,
        cpu_s: (own_cpu() - cpu_before).as_secs_f64(),
        errors,
    })
}

/// Claims and completes tasks until the deadline or until the board runs dry:
/// the cycles, when it stopped, and whether the board ran dry or what failed.
async fn cycle_loop(client: Client, deadline: Instant) -> (u64, Instant, Result<bool, String>) {
    let mut cycles = 0;
    let result = async {
        while Instant::now() < deadline {
            let Some(claim) = timed("claim_next", client.claim_next()).await? else {
                return Ok(true);
            };
            timed(
                "complete_task",
                client.complete_task(claim.task.id, claim.epoch, ""),
            )
            .await?;
            cycles += 1;
        }
        Ok(false)
    }
    .await;
    (cycles, Instant::now(), result)
}

/// A request with [`CALL_TIMEOUT`], its failure as one line.
async fn timed<T>(
    what: &str,
    call: impl Future<Output = Result<T, ClientError>>,
) -> Result<T, String> {
    match tokio::time::timeout(CALL_TIMEOUT, call).await {
        Ok(r) => r.map_err(|e| format!("{what}: {e}")),
        Err(_) => Err(format!("{what} timed out")),
    }
}

fn emit(report: &Report) -> anyhow::Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    writeln!(out, "{}", serde_json::to_string(report)?)?;
    Ok(out.flush()?)
}
