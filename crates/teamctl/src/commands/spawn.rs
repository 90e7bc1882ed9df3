//! `teamctl spawn`: start a teammate.
//!
//! By default teammated runs as a detached child: its own process group (so a
//! Ctrl-C in this terminal does not reach it), stdin from /dev/null and its output
//! appended to `<state dir>/teammates/<team>/<name>/teammated.log`. teamctl never
//! waits on it; it only watches the roster until the teammate shows up connected,
//! which is the one sign that the spawn worked (the binary ran, found boardd and
//! registered). If the child exits first, or does not connect within `--timeout`,
//! the spawn fails with what the child wrote.
//!
//! With `--systemd` the teammate becomes the user unit `teammated@NAME`: teamctl
//! writes the settings file the unit reads and asks systemd to start it.

use super::{Ctx, no_answer};
use crate::cli::SpawnArgs;
use crate::render;
use anyhow::{Context as _, bail};
use std::ffi::OsString;
use std::fs::{self, File, OpenOptions};
use std::future::Future;
use std::io::{Read as _, Seek as _, SeekFrom, Write as _};
use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _, PermissionsExt as _};
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, ExitStatus, Stdio};
use std::time::Duration;
use teamboard_protocol::names::validate_name;
use teamboard_protocol::transcript::process_log_path;
use teamboard_protocol::{Client, ClientError};
use tokio::signal::unix::{SignalKind, signal};

/// Overrides where teammated is found.
pub const TEAMMATED_BIN_ENV: &str = "TEAMMATED_BIN";
/// Overrides the `systemctl` program (tests substitute a script).
pub const SYSTEMCTL_ENV: &str = "TEAMCTL_SYSTEMCTL";
/// How often the roster is checked while waiting for the teammate to connect.
const POLL: Duration = Duration::from_millis(100);
/// How much of the child's log a failed spawn shows.
const TAIL_LINES: usize = 20;

pub async fn run(ctx: &Ctx, args: SpawnArgs) -> anyhow::Result<()> {
    check_names(ctx, &args)?;
    let workdir = workdir(args.workdir.as_deref())?;
    if args.systemd {
        return run_systemd(ctx, &args, &workdir).await;
    }

    // Up front: boardd must be there (the client's error says how to start it), and
    // the name must be free; a second process under a connected name would only be
    // turned away after it started.
    let client = within(ctx, async { ctx.connect().await }).await?;
    within(ctx, refuse_if_connected(ctx, &client, &args.name)).await?;
    let bin = find_teammated()?;
    // Before the child exists: a Ctrl-C from then on must stop it, not just teamctl.
    let mut interrupt = signal(SignalKind::interrupt())?;

    let state_dir = absolute(&ctx.state_dir(), "state dir")?;
    let log_path = process_log_path(&state_dir, &ctx.team, &args.name);
    let argv = teammated_args(ctx, &args, &workdir)?;
    let (log, from) = open_log(&log_path, &bin, &argv)?;
    let stdout = log
        .try_clone()
        .with_context(|| format!("cannot use {} for output", log_path.display()))?;
    let mut child = std::process::Command::new(&bin)
        .args(&argv)
        // The child should not pin whatever directory teamctl happened to run in.
        .current_dir(&workdir)
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
    // Whatever went wrong, the child has not registered, so it holds no claim:
    // stopping it loses nothing and leaves no half-started teammate behind that
    // might connect later, unexpected.
    match outcome {
        Waited::Connected => {}
        Waited::Exited(status) => bail!(
            "teammated for '{}' exited ({status}) before it connected to boardd. {}",
            args.name,
            log_tail(&log_path, from)
        ),
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

    if ctx.json {
        return render::json(&serde_json::json!({
            "name": args.name,
            "pid": pid,
            // Displayed, not serialized: a path that is not UTF-8 must not panic.
            "log": log_path.display().to_string(),
            "team": ctx.team,
        }));
    }
    render::line(&format!(
        "spawned {} (pid {pid}), log: {}",
        args.name,
        log_path.display()
    ))?;
    Ok(())
}

/// Names that boardd would refuse are refused here, before anything starts; they
/// also end up in file names and a systemd instance name.
fn check_names(ctx: &Ctx, args: &SpawnArgs) -> anyhow::Result<()> {
    validate_name(&args.name).map_err(|e| anyhow::anyhow!("bad teammate name: {e}"))?;
    if args.name == teamboard_protocol::LEAD {
        bail!("'lead' is the name of the person at teamctl; pick another name for the teammate");
    }
    validate_name(&args.role).map_err(|e| anyhow::anyhow!("bad role: {e}"))?;
    validate_name(&ctx.team).map_err(|e| anyhow::anyhow!("bad team name: {e}"))?;
    if let Some(model) = &args.model
        && (model.is_empty() || model.chars().any(char::is_control))
    {
        bail!("model {model:?} is empty or contains control characters");
    }
    Ok(())
}

/// The teammate's working directory, absolute (the child starts elsewhere), and
/// checked now rather than by a teammate that fails later.
fn workdir(given: Option<&Path>) -> anyhow::Result<PathBuf> {
    let dir = match given {
        Some(d) => absolute(d, "workdir")?,
        None => std::env::current_dir().context("cannot determine the current directory")?,
    };
    if !dir.is_dir() {
        bail!("workdir {} is not a directory", dir.display());
    }
    Ok(dir)
}

fn absolute(path: &Path, what: &str) -> anyhow::Result<PathBuf> {
    std::path::absolute(path)
        .with_context(|| format!("cannot make the {what} {} absolute", path.display()))
}

/// Runs one exchange with boardd under `--timeout`.
async fn within<T>(ctx: &Ctx, step: impl Future<Output = anyhow::Result<T>>) -> anyhow::Result<T> {
    match ctx.timeout() {
        Some(limit) => tokio::time::timeout(limit, step)
            .await
            .unwrap_or_else(|_| Err(no_answer(ctx.timeout))),
        None => step.await,
    }
}

async fn refuse_if_connected(ctx: &Ctx, client: &Client, name: &str) -> anyhow::Result<()> {
    let team = client.team().await?;
    if let Some(m) = team.iter().find(|m| m.name == name && m.connected) {
        let pid = m.pid.map_or_else(String::new, |p| format!(" (pid {p})"));
        bail!(
            "'{name}' is already connected in team '{}'{pid}; stop it first \
             (`teamctl send {name} stop --kind shutdown-request`) or pick another name",
            ctx.team
        );
    }
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

/// Kills and reaps a child that did not come up, with everything it started: it
/// leads its own process group, so a tool command it may have begun goes too.
fn stop(child: &mut Child) {
    if let Ok(pgid) = libc::pid_t::try_from(child.id()) {
        // SAFETY: kill(2) on the process group our child leads; no memory involved.
        unsafe { libc::kill(-pgid, libc::SIGKILL) };
    }
    // Either may fail only because the child is already gone, which is the goal.
    let _ = child.kill();
    let _ = child.wait();
}

/// teammated's command line. Paths are absolute because the child starts in the
/// workdir; the state dir is passed only when teamctl was given one, so that
/// otherwise teammated works out the same default itself.
fn teammated_args(ctx: &Ctx, args: &SpawnArgs, workdir: &Path) -> anyhow::Result<Vec<OsString>> {
    let mut argv: Vec<OsString> = vec![
        "--name".into(),
        args.name.clone().into(),
        "--role".into(),
        args.role.clone().into(),
        "--team".into(),
        ctx.team.clone().into(),
        "--socket".into(),
        absolute(&ctx.socket, "socket path")?.into(),
    ];
    if let Some(dir) = &ctx.state_dir_given {
        argv.push("--state-dir".into());
        argv.push(absolute(dir, "state dir")?.into());
    }
    if let Some(p) = args.provider {
        argv.push("--provider".into());
        argv.push(p.as_str().into());
    }
    if let Some(m) = &args.model {
        argv.push("--model".into());
        argv.push(m.into());
    }
    argv.push("--workdir".into());
    argv.push(workdir.into());
    if let Some(s) = args.idle_timeout {
        argv.push("--idle-timeout".into());
        argv.push(s.to_string().into());
    }
    if let Some(n) = args.max_rounds {
        argv.push("--max-rounds".into());
        argv.push(n.to_string().into());
    }
    Ok(argv)
}

/// Opens the process log for appending (private: tool output may hold anything)
/// and writes a header for this run. Returns the file and the offset where this
/// run's output starts, so a failure shows only what this run wrote.
fn open_log(path: &Path, bin: &Path, argv: &[OsString]) -> anyhow::Result<(File, u64)> {
    if let Some(dir) = path.parent() {
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
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

/// Where teammated is: `$TEAMMATED_BIN`, next to teamctl (as `cargo build` and
/// `cargo xtask install` leave them), or on `$PATH`. Always absolute, because the
/// child starts in another directory.
fn find_teammated() -> anyhow::Result<PathBuf> {
    if let Some(bin) = std::env::var_os(TEAMMATED_BIN_ENV).filter(|v| !v.is_empty()) {
        let bin = absolute(Path::new(&bin), TEAMMATED_BIN_ENV)?;
        if !is_executable(&bin) {
            bail!(
                "${TEAMMATED_BIN_ENV} is {}, which is not an executable file",
                bin.display()
            );
        }
        return Ok(bin);
    }
    let beside = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|dir| dir.join("teammated")));
    if let Some(bin) = beside.as_ref().filter(|b| is_executable(b)) {
        return Ok(bin.clone());
    }
    if let Some(path) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&path) {
            let bin = dir.join("teammated");
            if is_executable(&bin) {
                return absolute(&bin, "teammated path");
            }
        }
    }
    let beside = beside.as_ref().and_then(|b| b.parent()).map_or_else(
        || "teamctl's directory".to_string(),
        |d| d.display().to_string(),
    );
    bail!(
        "cannot find the teammated binary (looked in {beside} and on $PATH). Build it with \
         `cargo build` (it lands next to teamctl), install both with `cargo xtask install`, \
         or point ${TEAMMATED_BIN_ENV} at it"
    )
}

fn is_executable(path: &Path) -> bool {
    fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

// ---------------------------------------------------------------- systemd

async fn run_systemd(ctx: &Ctx, args: &SpawnArgs, workdir: &Path) -> anyhow::Result<()> {
    // The unit Requires= boardd.service, so systemd starts boardd if it is down;
    // only a running boardd can say whether the name is taken.
    match within(ctx, async { ctx.connect().await }).await {
        Ok(client) => within(ctx, refuse_if_connected(ctx, &client, &args.name)).await?,
        Err(e) if matches!(e.downcast_ref(), Some(ClientError::NotRunning { .. })) => {}
        Err(e) => return Err(e),
    }
    let unit = format!("teammated@{}", args.name);
    let program = std::env::var_os(SYSTEMCTL_ENV)
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| "systemctl".into());
    // `start` does nothing to a unit that is already running (connected or still
    // reconnecting), so new settings would be written and silently not used.
    let active = tokio::process::Command::new(&program)
        .args(["--user", "is-active", "--quiet", &unit])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .await
        .is_ok_and(|s| s.success());
    if active {
        bail!(
            "{unit} is already running; stop it first (`systemctl --user stop {unit}`), \
             or run `systemctl --user restart {unit}` after editing {}",
            env_file_path(&args.name)?.display()
        );
    }
    let env_file = env_file_path(&args.name)?;
    write_env_file(&env_file, &env_file_text(ctx, args, workdir)?)?;

    let started = tokio::process::Command::new(&program)
        .args(["--user", "start", &unit])
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let output = match ctx.timeout() {
        Some(limit) => tokio::time::timeout(limit, started).await.map_err(|_| {
            anyhow::anyhow!(
                "`systemctl --user start {unit}` did not finish within {} s; \
                 see `systemctl --user status {unit}`",
                ctx.timeout
            )
        })?,
        None => started.await,
    }
    .with_context(|| {
        format!(
            "cannot run {} (--systemd needs a systemd user session)",
            Path::new(&program).display()
        )
    })?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let stderr = stderr.trim();
        let hint = if stderr.contains("not found") {
            " Install the units with `cargo xtask install`."
        } else {
            ""
        };
        bail!(
            "`systemctl --user start {unit}` failed ({}): {}{hint} \
             See `systemctl --user status {unit}` and `journalctl --user -u {unit}`.",
            output.status,
            if stderr.is_empty() {
                "no message"
            } else {
                stderr
            },
        );
    }

    if ctx.json {
        return render::json(&serde_json::json!({
            "name": args.name,
            "team": ctx.team,
            "unit": unit,
            "env_file": env_file.display().to_string(),
        }));
    }
    render::line(&format!(
        "spawned {} as {unit}, settings: {}",
        args.name,
        env_file.display()
    ))?;
    Ok(())
}

/// `$XDG_CONFIG_HOME/teamboard/teammates/NAME.env` (`~/.config/...` by default),
/// where `teammated@.service` reads its settings (`%E` is the config home).
fn env_file_path(name: &str) -> anyhow::Result<PathBuf> {
    let config = teamboard_protocol::paths::config_dir()
        .context("neither $XDG_CONFIG_HOME nor $HOME is set: nowhere to put the settings")?;
    Ok(config.join("teammates").join(format!("{name}.env")))
}

/// The settings as `KEY=value` lines, in the variables teammated reads.
fn env_file_text(ctx: &Ctx, args: &SpawnArgs, workdir: &Path) -> anyhow::Result<String> {
    let mut vars: Vec<(&str, String)> = vec![("TEAMMATE_ROLE", args.role.clone())];
    if let Some(p) = args.provider {
        vars.push(("TEAMMATE_PROVIDER", p.as_str().to_string()));
    }
    if let Some(m) = &args.model {
        vars.push(("TEAMMATE_MODEL", m.clone()));
    }
    vars.push(("TEAMMATE_WORKDIR", utf8(workdir, "workdir")?));
    vars.push(("TEAMBOARD_TEAM", ctx.team.clone()));
    if let Some(s) = args.idle_timeout {
        vars.push(("TEAMMATE_IDLE_TIMEOUT", s.to_string()));
    }
    if let Some(n) = args.max_rounds {
        vars.push(("TEAMMATE_MAX_ROUNDS", n.to_string()));
    }
    // A boardd or state dir named to this teamctl is the one the teammate must use
    // too; the defaults are the same for both, so they need no line.
    if ctx.socket_given {
        let socket = absolute(&ctx.socket, "socket path")?;
        vars.push(("TEAMBOARD_SOCKET", utf8(&socket, "socket path")?));
    }
    if let Some(dir) = &ctx.state_dir_given {
        let dir = absolute(dir, "state dir")?;
        vars.push((
            teamboard_protocol::paths::STATE_DIR_ENV,
            utf8(&dir, "state dir")?,
        ));
    }
    let mut text = format!(
        "# teammated@{} settings, written by `teamctl spawn --systemd`.\n",
        args.name
    );
    for (key, value) in vars {
        text.push_str(&format!("{key}={}\n", env_value(key, &value)?));
    }
    Ok(text)
}

fn utf8(path: &Path, what: &str) -> anyhow::Result<String> {
    path.to_str()
        .map(str::to_string)
        .with_context(|| format!("the {what} {} is not valid UTF-8", path.display()))
}

/// A value as systemd's `EnvironmentFile=` reads it back unchanged: bare when it
/// is plainly safe, otherwise double-quoted with `\`, `"`, `` ` `` and `$` escaped
/// (systemd unescapes exactly these inside double quotes). A control character
/// (a newline in a directory name, say) is refused rather than trusted to survive.
fn env_value(key: &str, value: &str) -> anyhow::Result<String> {
    if value.chars().any(char::is_control) {
        bail!(
            "{key} would be {value:?}, which has control characters that a settings file cannot hold"
        );
    }
    let plain = !value.is_empty()
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-./:@+,%".contains(c));
    if plain {
        return Ok(value.to_string());
    }
    let mut out = String::from("\"");
    for c in value.chars() {
        if matches!(c, '"' | '\\' | '`' | '$') {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    Ok(out)
}

/// Writes the settings with mode 0600 in a 0700 directory (they may one day name
/// credentials), replacing any old file in one step so that systemd never reads a
/// half-written one.
fn write_env_file(path: &Path, text: &str) -> anyhow::Result<()> {
    let dir = path
        .parent()
        .context("the settings file has no directory")?;
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .with_context(|| format!("cannot create {}", dir.display()))?;
    // The directory may predate teamctl (created by hand with a looser umask); it
    // is teamboard's own, so tighten it.
    fs::set_permissions(dir, fs::Permissions::from_mode(0o700))
        .with_context(|| format!("cannot make {} private", dir.display()))?;
    let tmp = dir.join(format!(
        ".{}.tmp-{}",
        path.file_name()
            .map_or_else(|| "settings".into(), |n| n.to_string_lossy().into_owned()),
        std::process::id()
    ));
    let written = (|| {
        let mut f = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&tmp)?;
        // `mode` applies only to a new file; a leftover temp file keeps its own.
        f.set_permissions(fs::Permissions::from_mode(0o600))?;
        f.write_all(text.as_bytes())?;
        f.sync_all()?;
        fs::rename(&tmp, path)
    })();
    if let Err(e) = written {
        let _ = fs::remove_file(&tmp);
        return Err(e).with_context(|| format!("cannot write {}", path.display()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_values_are_quoted_only_when_needed() {
        let v = |s: &str| env_value("K", s).expect("a value");
        assert_eq!(v("backend"), "backend");
        assert_eq!(v("/home/me/src/app"), "/home/me/src/app");
        assert_eq!(v("llama3.1:8b"), "llama3.1:8b");
        assert_eq!(v("/home/me/my project"), "\"/home/me/my project\"");
        assert_eq!(v(r#"a"b\c$d`e"#), r#""a\"b\\c\$d\`e""#);
        assert_eq!(v(""), "\"\"");
        assert!(env_value("K", "two\nlines").is_err());
    }
}
