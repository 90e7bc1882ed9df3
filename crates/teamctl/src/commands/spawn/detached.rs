//! The default mode: teammated as a detached child, in its own process group (so a
//! Ctrl-C in this terminal does not reach it), stdin from /dev/null and its output
//! appended to `<state dir>/teammates/<team>/<name>/teammated.log`. teamctl never
//! waits on it; it only watches the roster until the teammate shows up connected,
//! which is the one sign that the spawn worked (the binary ran, found boardd and
//! registered). If the child exits first, or does not connect within `--timeout`,
//! the spawn fails with what the child wrote, and says whether the child had
//! connected before it exited (the roster keeps the pid it registered with).

use super::checks::{absolute, private_dir, refuse_if_connected};
use super::{Setting, To, Value};
use crate::cli::SpawnArgs;
use crate::commands::find_bin::find_teammated;
use crate::commands::{Ctx, within};
use crate::render;
use anyhow::{Context as _, bail};
use std::ffi::OsString;
use std::fs::{File, OpenOptions};
use std::io::{Read as _, Seek as _, SeekFrom, Write as _};
use std::os::unix::fs::OpenOptionsExt as _;
use std::os::unix::process::CommandExt as _;
use std::path::Path;
use std::process::{Child, ExitStatus, Stdio};
use std::time::Duration;
use teamboard_protocol::names::{NATIVE_RUNTIME, SCRIPTED_MODEL};
use teamboard_protocol::transcript::process_log_path;
use teamboard_protocol::{Client, Member};
use tokio::signal::unix::{SignalKind, signal};

/// How often the roster is checked while waiting for the teammate to connect.
const POLL: Duration = Duration::from_millis(100);
/// How much of the child's log a failed spawn shows.
const TAIL_LINES: usize = 20;

pub(super) async fn run(
    ctx: &Ctx,
    args: &SpawnArgs,
    settings: &[Setting],
    workdir: &Path,
) -> anyhow::Result<()> {
    // Up front: boardd must be there (the client's error says how to start it), and
    // the name must be free; a second process under a connected name would only be
    // turned away after it started.
    let limit = ctx.timeout();
    let client = within(limit, ctx.connect_as(&args.name)).await?;
    within(limit, refuse_if_connected(ctx, &client, &args.name)).await?;
    // What the roster said before: a registration of our child must change it.
    let before = within(limit, roster_entry(&client, &args.name)).await?;
    let bin = find_teammated()?;
    // Before the child exists: a Ctrl-C from then on must stop it, not just teamctl.
    let mut interrupt = signal(SignalKind::interrupt())?;

    let state_dir = absolute(&ctx.state_dir(), "state dir")?;
    let log_path = process_log_path(&state_dir, &ctx.team, &args.name);
    let argv = teammated_args(settings);
    let (log, from) = open_log(&log_path, &bin, &argv)?;
    let stdout = log
        .try_clone()
        .with_context(|| format!("cannot use {} for output", log_path.display()))?;
    let mut child = std::process::Command::new(&bin)
        .args(&argv)
        // The child should not pin whatever directory teamctl happened to run in.
        .current_dir(workdir)
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(log)
        // Its own process group: a Ctrl-C (or a job-control signal) meant for the
        // shell's foreground job must not reach a teammate that outlives teamctl.
        .process_group(0)
        .spawn()
        .with_context(|| format!("cannot start {}", bin.display()))?;
    let pid = child.id();

    let outcome = {
        let waited = wait_until_connected(&client, &args.name, &mut child);
        let limited = async {
            match ctx.timeout() {
                Some(limit) => tokio::time::timeout(limit, waited).await.ok(),
                None => Some(waited.await),
            }
        };
        tokio::select! {
            _ = interrupt.recv() => Waited::Interrupted,
            waited = limited => match waited {
                Some(Ok(None)) => Waited::Connected,
                Some(Ok(Some(status))) => Waited::Exited(status),
                Some(Err(e)) => Waited::Failed(e),
                None => Waited::TimedOut,
            },
        }
    };
    // A child still running is stopped (see `stop`), so that no half-started
    // teammate is left behind to connect later, unexpected. One that exited may
    // have registered first.
    match outcome {
        Waited::Connected => {}
        Waited::Exited(status) => {
            let after = within(limit, roster_entry(&client, &args.name)).await?;
            if registered(before.as_ref(), after.as_ref(), pid) {
                bail!(
                    "'{}' connected to boardd, then exited ({status}) before teamctl saw it \
                     up. {}",
                    args.name,
                    log_tail(&log_path, from)
                );
            }
            bail!(
                "teammated for '{}' exited ({status}) before it connected to boardd. {}",
                args.name,
                log_tail(&log_path, from)
            )
        }
        Waited::Failed(e) => {
            stop(&mut child);
            return Err(e.context(format!(
                "while waiting for '{}' to connect (teamctl stopped it, pid {pid})",
                args.name
            )));
        }
        Waited::Interrupted => {
            stop(&mut child);
            bail!(
                "interrupted before '{}' connected; teamctl stopped it (pid {pid})",
                args.name
            );
        }
        Waited::TimedOut => {
            stop(&mut child);
            bail!(
                "'{}' did not connect to boardd within {} s, so teamctl stopped it (pid {pid}); \
                 raise --timeout if it needs longer. {}",
                args.name,
                ctx.timeout,
                log_tail(&log_path, from)
            );
        }
    }
    // Dropping `child` neither kills nor waits for it: the teammate keeps running
    // after teamctl exits, and init adopts it.
    drop(child);
    // What runs it, as it registered: the provider it picked (from its flags,
    // its environment, or its default) is the teammate's to say, not teamctl's.
    let member = within(limit, roster_entry(&client, &args.name)).await?;
    let member = member.filter(|m| m.pid == Some(pid));
    let runs = member.as_ref().and_then(render::engine);

    if ctx.json {
        return render::json(&serde_json::json!({
            "name": args.name,
            "pid": pid,
            // Displayed, not serialized: a path that is not UTF-8 must not panic.
            "log": log_path.display().to_string(),
            "team": ctx.team,
            "runtime": member.as_ref().map(|m| m.runtime.as_deref().unwrap_or(NATIVE_RUNTIME)),
            "model": member.as_ref().and_then(|m| m.model.as_deref()),
        }));
    }
    let runs = match runs.as_deref() {
        Some(SCRIPTED_MODEL) => {
            ", on the scripted model: offline, canned answers, estimated tokens; \
                          --provider anthropic or openai for a real one"
                .to_string()
        }
        Some(engine) => format!(", on {engine}"),
        None => String::new(),
    };
    render::line(&format!(
        "spawned {} (pid {pid}{runs}), log: {}",
        args.name,
        log_path.display()
    ))?;
    Ok(())
}

/// How waiting for the new teammate ended.
enum Waited {
    Connected,
    Exited(ExitStatus),
    Failed(anyhow::Error),
    Interrupted,
    TimedOut,
}

/// Polls the roster until `name` is connected (`None`) or the child has exited
/// (its status). The roster is checked first, so a teammate that registered and
/// then exited in between two checks is still caught by the second.
async fn wait_until_connected(
    client: &Client,
    name: &str,
    child: &mut Child,
) -> anyhow::Result<Option<ExitStatus>> {
    let pid = child.id();
    loop {
        let team = client.team().await?;
        // Our process, by pid: the name alone could be another teammate that took
        // it first (a second spawn, or a systemd unit reconnecting), in which case
        // ours is turned away and exits, and the next check reports that.
        if team
            .iter()
            .any(|m| m.name == name && m.connected && m.pid == Some(pid))
        {
            return Ok(None);
        }
        if let Some(status) = child
            .try_wait()
            .context("cannot check on the teammated process")?
        {
            return Ok(Some(status));
        }
        tokio::time::sleep(POLL).await;
    }
}

/// The roster's entry for `name`, if the name is known.
async fn roster_entry(client: &Client, name: &str) -> anyhow::Result<Option<Member>> {
    Ok(client.team().await?.into_iter().find(|m| m.name == name))
}

/// Whether our child (`pid`) registered between the two looks at the roster: the
/// entry names its pid, and the registration is new. A member keeps the pid it
/// registered with after it disconnects; `last_seen` moves with every
/// registration, so an earlier run that happened to have the same pid does not
/// count.
fn registered(before: Option<&Member>, after: Option<&Member>, pid: u32) -> bool {
    let Some(after) = after.filter(|m| m.pid == Some(pid)) else {
        return false;
    };
    match before {
        None => true,
        Some(b) => b.pid != Some(pid) || b.last_seen != after.last_seen,
    }
}

/// Stops and reaps a child that did not come up, with everything it started.
///
/// SIGTERM first: a teammated that registered at the last moment may already
/// hold a claim, which it then gives back without using up an attempt (a kill
/// would count one, as a closed connection). What is left after
/// [`STOP_GRACE`] is killed: the child leads its own process group, so a tool
/// command it may have begun goes too.
fn stop(child: &mut Child) {
    let Ok(pid) = libc::pid_t::try_from(child.id()) else {
        let _ = child.kill();
        let _ = child.wait();
        return;
    };
    // SAFETY: kill(2) on our own child, not yet reaped; no memory involved.
    unsafe { libc::kill(pid, libc::SIGTERM) };
    let deadline = std::time::Instant::now() + STOP_GRACE;
    while std::time::Instant::now() < deadline {
        // Exited and reaped: teammated stops its own tools on SIGTERM. (Its
        // group id may not be ours to signal any more.)
        if matches!(child.try_wait(), Ok(Some(_))) {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    // Still running, so not reaped: the group id is still our child's.
    // SAFETY: kill(2) on the process group our child leads; no memory involved.
    unsafe { libc::kill(-pid, libc::SIGKILL) };
    // Either may fail only because the child is already gone, which is the goal.
    let _ = child.kill();
    let _ = child.wait();
}

/// How long a child that did not come up has to stop after SIGTERM.
const STOP_GRACE: Duration = Duration::from_secs(2);

/// teammated's command line: the flags of `settings`.
fn teammated_args(settings: &[Setting]) -> Vec<OsString> {
    let mut argv: Vec<OsString> = Vec::new();
    for s in settings.iter().filter(|s| s.to != To::Var) {
        let flag = format!("--{}", s.flag);
        match &s.value {
            Value::Text(text) => argv.extend([flag.into(), text.into()]),
            Value::Path(path, _) => argv.extend([flag.into(), path.into()]),
            Value::Switch => argv.push(flag.into()),
            Value::List(items) => argv.extend(items.iter().map(|a| format!("{flag}={a}").into())),
        }
    }
    argv
}

/// Opens the process log for appending (private: tool output may hold anything)
/// and writes a header for this run. Returns the file and the offset where this
/// run's output starts, so a failure shows only what this run wrote.
fn open_log(path: &Path, bin: &Path, argv: &[OsString]) -> anyhow::Result<(File, u64)> {
    if let Some(dir) = path.parent() {
        private_dir(dir)?;
    }
    let mut log = OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("cannot open the log file {}", path.display()))?;
    let command: Vec<String> = std::iter::once(bin.as_os_str())
        .chain(argv.iter().map(OsString::as_os_str))
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    writeln!(
        log,
        "--- {} teamctl spawn: {}",
        render::datetime(render::now_ms()),
        command.join(" ")
    )
    .with_context(|| format!("cannot write to {}", path.display()))?;
    let from = log
        .metadata()
        .with_context(|| format!("cannot read {}", path.display()))?
        .len();
    Ok((log, from))
}

/// The last lines the child wrote to its log since `from`, for an error message.
fn log_tail(path: &Path, from: u64) -> String {
    let mut text = String::new();
    let read = File::open(path).and_then(|mut f| {
        f.seek(SeekFrom::Start(from))?;
        let mut bytes = Vec::new();
        f.read_to_end(&mut bytes)?;
        text = String::from_utf8_lossy(&bytes).into_owned();
        Ok(())
    });
    if let Err(e) = read {
        return format!("(cannot read its log {}: {e})", path.display());
    }
    let lines: Vec<&str> = text.lines().collect();
    if lines.iter().all(|l| l.trim().is_empty()) {
        return format!("It wrote nothing to {}.", path.display());
    }
    let skip = lines.len().saturating_sub(TAIL_LINES);
    let mut out = format!("Last lines of {}:", path.display());
    for l in &lines[skip..] {
        out.push_str("\n  ");
        out.push_str(l);
    }
    out
}
