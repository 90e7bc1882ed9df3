//! `cargo xtask demo`: the whole system in one command, offline; what it
//! plays and shows is [`LONG_ABOUT`]. The person's side (a git repository, the
//! lead, the checks at the end) is [`repo`], the example [`script`], the live
//! view [`view`]. Everything the demo starts is stopped on every way out:
//! success, an error, the timeout, Ctrl-C, SIGTERM or SIGHUP (see [`procs`]).

mod procs;
mod repo;
mod runtime;
mod script;
mod stop;
mod view;

use crate::cargo;
use anyhow::{Context, anyhow, bail};
use clap::Args;
use procs::{Bins, Procs};
use std::collections::HashSet;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;
use teamboard_protocol::{Client, DEFAULT_TEAM, EventKind, LEAD, Member};
use tempfile::TempDir;
use view::Board;

pub const LONG_ABOUT: &str = "\
Run the whole system once, offline, and watch a lead and its team work.

The demo builds boardd, teamctl and teammated and starts a boardd of its own in a fresh \
temporary directory. As the person, it makes a tiny backend a git repository and \
attaches it to the team (`teamctl repo set DIR --branch main`), then asks the lead \
(`teamctl lead --goal ... --yes`, with the offline `scripted` lead) for a refactor: \
config and auth in parallel, tests once both have landed (their plan is reviewed by \
the lead before they run, and they land only when their test script passes as their \
completion check), and a summary. The lead proposes the team plan, starts it (tasks \
with dependencies, three teammates ada, brook and cy), reviews the plan, and sums up \
when the board is done. The teammates use the offline `scripted` model, which runs \
the ```sh blocks of the task it holds: no network and no API key are needed.

Each task works in a git worktree of its own, created by boardd from main as it is \
when the task is claimed. When a teammate completes, boardd commits the work, runs \
the checks and lands it on main through its merge queue, one task at a time.

The demo shows the board live, from the events boardd pushes (worktrees opened, \
checks passed, work landed), with the lead's words, then who did what, how long it \
took, the tokens spent (the lead's split between planning, coordination and \
summary) and `git log --graph` of main. It prunes the landed worktrees, asks each \
teammate to shut down, stops boardd and removes the temporary directories (unless \
--keep, which keeps the repository, its worktrees and the board to look at).

With --runtime claude the teammates are Claude Code instead (`claude` on PATH or \
installed by `cargo xtask install-agents`, and ANTHROPIC_API_KEY set): the same \
board and lead, real model calls, real tokens. The default demo stays offline.

The first run compiles the workspace, which takes a few minutes; later runs take a \
few seconds.";

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Keep the demo's directory (board database, teammates' transcripts, the
    /// repository and the task worktrees as the team left them) and print how to
    /// look at it
    #[arg(long)]
    keep: bool,
    /// Give up when the team has not finished within this many seconds
    /// [default: 120; 900 with --runtime claude]
    #[arg(long, value_name = "SECS")]
    timeout: Option<u64>,
    /// Build and run release binaries instead of debug ones (a longer first build)
    #[arg(long)]
    release: bool,
    /// What does the teammates' work: the offline scripted model, or Claude Code
    #[arg(long, value_enum, default_value = "native", value_name = "RUNTIME")]
    runtime: runtime::DemoRuntime,
}
/// How long, after the last task, the demo waits for the teammates to go idle (so
/// the token counts include their last model call).
const SETTLE_WAIT: Duration = Duration::from_secs(5);

pub fn run(args: &DemoArgs) -> anyhow::Result<()> {
    let timeout = args
        .timeout
        .unwrap_or_else(|| runtime::default_timeout(args.runtime));
    if timeout == 0 {
        bail!("--timeout must be at least 1 second");
    }
    // Before the build: a missing agent or key is said at once.
    let team = runtime::check(args.runtime)?;
    println!(
        "teamboard demo: a person asks the lead for a backend refactor; the lead plans it, \
         starts a team of three, reviews the tests' plan and sums up. The backend is a git \
         repository: each task works in a worktree of its own and lands on main through \
         boardd's merge queue, the tests only once their checks pass.\n{}\n",
        team.describe()
    );
    println!(
        "Building boardd, teamctl and teammated ({} profile; the first build takes a couple \
         of minutes, later ones seconds):",
        if args.release { "release" } else { "debug" }
    );
    let dir = cargo::build(&["boardd", "teamctl", "teammated"], args.release, false)?;
    let bins = Bins {
        boardd: dir.join("boardd"),
        teamctl: dir.join("teamctl"),
        teammated: dir.join("teammated"),
    };
    for bin in [&bins.boardd, &bins.teamctl, &bins.teammated] {
        if !bin.is_file() {
            bail!("{} is missing after the build", bin.display());
        }
    }
    // Single-threaded: boardd must be spawned from the main thread, because its
    // parent-death signal fires when the spawning *thread* exits.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(run_async(args, timeout, team, bins))
}

async fn run_async(
    args: &DemoArgs,
    timeout: u64,
    team: runtime::Team,
    bins: Bins,
) -> anyhow::Result<()> {
    // From here on Ctrl-C, SIGTERM and SIGHUP (a closed terminal) end the demo
    // through its cleanup instead of killing it with its processes still running.
    let mut signals = procs::Signals::new()?;
    procs::become_subreaper()?;
    let mut demo = Demo::new(bins, team)?;
    let played = tokio::select! {
        r = tokio::time::timeout(Duration::from_secs(timeout), demo.play(args.keep)) => {
            r.unwrap_or_else(|_| Err(anyhow!(
                "the team did not finish within {timeout} s (--timeout); rerun with --keep and see \
                 `teamctl logs NAME` for what the teammates did"
            )))
        }
        name = signals.recv() => Err(anyhow!("interrupted by {name}")),
    };
    // A teammate is asked politely only when all went well; otherwise SIGTERM,
    // which it also handles by giving its task back and leaving.
    let stopped = demo.shutdown(played.is_ok()).await;
    demo.finish(args.keep, played.is_err());
    if let (Err(_), Err(e)) = (&played, &stopped) {
        // Only one error can be returned; the first one is the story.
        eprintln!("while stopping: {e:#}");
    }
    played?;
    stopped
}

/// The demo's directories and processes. Fields drop in order: the processes stop
/// (teammates, then boardd) before the directories they use are removed.
struct Demo {
    procs: Procs,
    bins: Bins,
    /// Who the teammates are: scripted, or Claude Code.
    team: runtime::Team,
    socket: String,
    state: String,
    work: String,
    /// Holds the state and the working directory.
    root: Option<TempDir>,
    /// A short directory in /tmp for the socket: Linux socket paths must stay under
    /// 108 bytes, and $TMPDIR may be long.
    _socket_dir: TempDir,
}

impl Demo {
    fn new(bins: Bins, team: runtime::Team) -> anyhow::Result<Demo> {
        let temp = |prefix, dir: &Path| tempfile::Builder::new().prefix(prefix).tempdir_in(dir);
        let root = temp("teamboard-demo-", &std::env::temp_dir())
            .context("cannot create a temporary directory")?;
        let socket_dir = temp("tb-demo-", Path::new("/tmp"))
            .context("cannot create a socket directory in /tmp")?;
        // teamctl gets these on its command line; demanding UTF-8 once here keeps
        // the rest simple, and a temporary directory that is not UTF-8 is rare.
        let utf8 = |p: PathBuf| {
            let shown = p.display().to_string();
            p.into_os_string()
                .into_string()
                .ok()
                .with_context(|| format!("{shown} is not valid UTF-8"))
        };
        let state = utf8(root.path().join("state"))?;
        let work = utf8(root.path().join("work"))?;
        let socket = utf8(socket_dir.path().join("boardd.sock"))?;
        let backend = Path::new(&work).join("backend");
        for dir in [Path::new(&state), &backend] {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
        }
        std::fs::write(backend.join("app.py"), script::APP_PY)
            .with_context(|| format!("cannot write {}/app.py", backend.display()))?;
        Ok(Demo {
            procs: Procs::default(),
            bins,
            team,
            socket,
            state,
            work,
            root: Some(root),
            _socket_dir: socket_dir,
        })
    }

    async fn play(&mut self, keep: bool) -> anyhow::Result<()> {
        println!("\nStarting boardd in a fresh state directory:");
        let (state, socket) = (Path::new(&self.state), Path::new(&self.socket));
        self.procs
            .start_boardd(&self.bins.boardd, state, socket, &foreign_env())
            .await?;
        println!("  socket    {}", self.socket);
        println!("  state     {}", self.state);
        println!(
            "  workdir   {}  (a tiny backend: backend/app.py)",
            self.work
        );
        let key = teamboard_process::lead_key(socket)?;
        let client = Client::connect(socket, "xtask-demo", LEAD, DEFAULT_TEAM, Some(&key))
            .await
            .context("cannot connect to the demo's boardd")?;
        // Subscribed before anything happens, so the live view misses nothing.
        client.subscribe().await?;
        self.attach_repo().await?;

        let goal = script::goal();
        println!("\nThe person asks the lead:\n  \"{}\"", script::REQUEST);
        println!(
            "(with the team plan as a ````plan block, which the offline scripted lead reads; \
             a model would write it)"
        );
        let extra: String = self
            .team
            .lead_args()
            .iter()
            .map(|a| format!(" {a}"))
            .collect();
        println!(
            "$ teamctl lead --goal \"$GOAL\" --yes --provider scripted --workdir {} \
             --teammate-idle-timeout 0{extra}",
            self.work
        );
        let lead = self.start_lead(&goal)?;
        let board = self.follow(&client, lead).await?;

        let members: Vec<Member> =
            serde_json::from_slice(&self.teamctl(&["team", "--json"]).await?)
                .context("cannot read `teamctl team --json`")?;
        self.procs.adopt(&members);
        println!();
        for line in board.report(&members) {
            println!("{line}");
        }
        println!("{}", self.lead_tokens());
        let mut tasks = client.list_tasks(None).await?;
        tasks.sort_by_key(|t| t.id);
        self.verify(&tasks).await?;
        self.show_log().await?;
        if !keep {
            self.prune().await?;
        }
        Ok(())
    }

    /// teamctl against the demo's boardd, without the user's teamboard settings.
    fn teamctl_command(&self) -> tokio::process::Command {
        let mut cmd = tokio::process::Command::new(&self.bins.teamctl);
        cmd.args(["--socket", &self.socket, "--state-dir", &self.state])
            .stdin(Stdio::null())
            // An interrupted demo must not leave a teamctl running; a teammate that
            // a killed `spawn` had started is found by `adopt_strays`.
            .kill_on_drop(true);
        for key in foreign_env() {
            cmd.env_remove(key);
        }
        // Set after the removals, which would otherwise take it out again when the
        // user's shell exports a TEAMMATED_BIN of its own.
        cmd.env("TEAMMATED_BIN", &self.bins.teammated);
        cmd
    }

    /// Starts `teamctl lead --goal ... --yes` with its output piped to the demo.
    fn start_lead(&self, goal: &str) -> anyhow::Result<tokio::process::Child> {
        let mut cmd = self.teamctl_command();
        cmd.args(["lead", "--goal", goal, "--yes", "--provider", "scripted"])
            .args(["--workdir", &self.work])
            // The demo ends the teammates itself with a shutdown request, so none
            // may leave on its own while it waits for blocked work.
            .args(["--teammate-idle-timeout", "0"])
            .args(self.team.lead_args())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(path) = self.team.lead_path() {
            cmd.env("PATH", path);
        }
        cmd.spawn()
            .with_context(|| format!("cannot run {} lead", self.bins.teamctl.display()))
    }

    /// Prints boardd's events and the lead's words as they come, until the lead has
    /// exited after the summary and the teammates have settled; fails when the lead
    /// fails, or a task fails for good or is cancelled.
    async fn follow(
        &self,
        client: &Client,
        mut lead: tokio::process::Child,
    ) -> anyhow::Result<Board> {
        use tokio::io::{AsyncBufReadExt, AsyncReadExt};
        println!(
            "\nLive: the lead's words (lead │) and boardd's event stream (what `teamctl \
             events --follow` shows):"
        );
        let mut board = Board::new(script::BRANCH);
        let mut out = tokio::io::BufReader::new(lead.stdout.take().context("lead stdout")?).lines();
        let mut err_pipe = lead.stderr.take().context("lead stderr")?;
        let stderr = tokio::spawn(async move {
            let mut text = String::new();
            let _ = err_pipe.read_to_string(&mut text).await;
            text
        });
        // Who is working, from the member_status events: after the last task the
        // demo waits until all are idle, so the token counts include every call.
        let mut working: HashSet<String> = HashSet::new();
        let mut lead_done = false;
        let mut settle = None;
        let day = Duration::from_secs(86_400);
        loop {
            let until = settle.unwrap_or_else(|| tokio::time::Instant::now() + day);
            tokio::select! {
                line = out.next_line(), if !lead_done => match line {
                    Ok(Some(line)) => println!("   lead │ {line}"),
                    _ => {
                        let status = lead.wait().await?;
                        lead_done = true;
                        if !status.success() {
                            let err = stderr.await.unwrap_or_default();
                            bail!("the lead exited ({status}):\n{}", err.trim());
                        }
                        if board.all_completed() && working.is_empty() {
                            return Ok(board);
                        }
                        settle.get_or_insert(tokio::time::Instant::now() + SETTLE_WAIT);
                    }
                },
                next = client.next_event() => {
                    let Some(e) = next else {
                        bail!("boardd closed the connection; its log:\n{}", self.procs.boardd_log());
                    };
                    if e.team != DEFAULT_TEAM {
                        continue;
                    }
                    // Keeps the set of working teammates up to date, from what
                    // each says of itself (boardd's liveness events are its own).
                    if e.kind == EventKind::MemberStatus
                        && let Some(member) = &e.member
                        && e.actor == *member
                    {
                        match e.detail.ends_with(" is working") {
                            true => working.insert(member.clone()),
                            false => working.remove(member),
                        };
                    }
                    if e.kind == EventKind::TaskCreated && let Some(id) = e.task {
                        board.add(&client.get_task(id).await?.task);
                    }
                    if let Some(id) = board.wants_task(&e) {
                        board.set_task(&client.get_task(id).await?.task);
                    }
                    for line in [board.apply(&e), board.line_after(&e)].into_iter().flatten() {
                        println!("{line}");
                    }
                    if let Some(why) = board.stuck() {
                        bail!("{why}");
                    }
                    if lead_done && board.all_completed() && working.is_empty() {
                        return Ok(board);
                    }
                }
                _ = tokio::time::sleep_until(until) => return Ok(board),
            }
        }
    }

    /// The lead's tokens by cause, from the ledger it keeps.
    fn lead_tokens(&self) -> String {
        let path = Path::new(&self.state).join("teammates/default/lead/usage.json");
        let Ok(bytes) = std::fs::read(&path) else {
            return format!("(the lead's token ledger {} is missing)", path.display());
        };
        let Ok(v) = serde_json::from_slice::<serde_json::Value>(&bytes) else {
            return format!("(cannot read the lead's token ledger {})", path.display());
        };
        let part = |k: &str| {
            let (t, calls) = (&v[k]["tokens"], &v[k]["calls"]);
            format!(
                "{k} {} in + {} out ({calls} calls)",
                t["input"], t["output"]
            )
        };
        let parts = [part("planning"), part("coordination"), part("summary")];
        format!("  lead   {}", parts.join(", "))
    }

    /// Runs one teamctl command against the demo's boardd and returns its output.
    async fn teamctl(&self, args: &[&str]) -> anyhow::Result<Vec<u8>> {
        let out = self.teamctl_command().args(args).output().await;
        let out = out.with_context(|| format!("cannot run {}", self.bins.teamctl.display()))?;
        if !out.status.success() {
            bail!(
                "`teamctl {}` failed ({}): {}",
                args.first().copied().unwrap_or_default(),
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        Ok(out.stdout)
    }
}

/// The user's teamboard settings, which the demo's processes must not inherit: a
/// TEAMBOARD_TEAM or TEAMMATE_MAX_ROUNDS from the shell would change the demo.
fn foreign_env() -> Vec<OsString> {
    let ours = |k: &str| {
        ["TEAMBOARD_", "TEAMMATE_", "TEAMMATED_"]
            .iter()
            .any(|p| k.starts_with(p))
    };
    std::env::vars_os()
        .map(|(k, _)| k)
        .filter(|k| ours(&k.to_string_lossy()))
        .collect()
}

/// A binary's path, relative to the workspace when inside it (as a user would type
/// it from there).
fn shown(path: &Path) -> String {
    path.strip_prefix(cargo::workspace_dir())
        .unwrap_or(path)
        .display()
        .to_string()
}
