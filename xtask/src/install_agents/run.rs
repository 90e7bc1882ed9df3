//! Running npm and the installed programs under a time limit, and what is left
//! of an interrupted install.

use super::{Pin, say};
use std::fs::File;
use std::os::unix::process::CommandExt as _;
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// How long a program has to print its version.
const VERSION_LIMIT: Duration = Duration::from_secs(60);

/// How a bounded run ended.
pub(crate) enum Ended {
    Exited(ExitStatus),
    TimedOut,
}

/// Runs `cmd` with its output appended to `log`, for at most `limit`. The command
/// leads its own process group, and on the deadline the whole group is killed:
/// npm's install scripts and fetch workers go with it.
pub(crate) fn bounded(cmd: &mut Command, log: &Path, limit: Duration) -> std::io::Result<Ended> {
    let out = File::options().create(true).append(true).open(log)?;
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(out.try_clone()?)
        .stderr(out)
        .process_group(0)
        .spawn()?;
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(Ended::Exited(status));
        }
        if Instant::now() >= deadline {
            if let Ok(pid) = libc::pid_t::try_from(child.id()) {
                // SAFETY: kill(2) on the process group our unreaped child leads.
                unsafe { libc::kill(-pid, libc::SIGKILL) };
            }
            let _ = child.kill();
            let _ = child.wait();
            return Ok(Ended::TimedOut);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Runs `program --version` in a scratch home, with the CLIs' update checks and
/// telemetry off, and returns what it printed.
pub(crate) fn version_output(program: &Path) -> Result<String, String> {
    let scratch = tempfile::tempdir().map_err(|e| format!("no scratch directory: {e}"))?;
    let log = scratch.path().join("out");
    let mut cmd = Command::new(program);
    cmd.arg("--version")
        .current_dir(scratch.path())
        .env("HOME", scratch.path())
        .env("DISABLE_AUTOUPDATER", "1")
        .env("DISABLE_TELEMETRY", "1")
        .env("DISABLE_ERROR_REPORTING", "1")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DO_NOT_TRACK", "1");
    let ended = bounded(&mut cmd, &log, VERSION_LIMIT)
        .map_err(|e| format!("`{} --version` cannot run: {e}", program.display()))?;
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    match ended {
        Ended::TimedOut => Err(format!(
            "`{} --version` did not answer within {VERSION_LIMIT:?}",
            program.display()
        )),
        Ended::Exited(s) if !s.success() => Err(format!(
            "`{} --version` failed ({s}): {}",
            program.display(),
            last_lines(&text, 3)
        )),
        Ended::Exited(_) => Ok(text),
    }
}

/// Whether the pin's program runs and says its pinned version.
pub(crate) fn version_of(pin: &Pin) -> Result<(), String> {
    if !pin.program.exists() {
        return Err(format!("{} is missing", pin.program.display()));
    }
    let text = version_output(&pin.program)?;
    if says_version(&text, pin.version) {
        Ok(())
    } else {
        Err(format!(
            "`{} --version` says {:?}, not {}",
            pin.program.display(),
            text.trim(),
            pin.version
        ))
    }
}

/// Whether `--version` output names `version` as a whole word: `2.1.332 (Claude
/// Code)`, `codex-cli 0.171.0`, `0.61.0`, `v20.20.2`, but not `0.61.01`.
pub(crate) fn says_version(text: &str, version: &str) -> bool {
    text.split(|c: char| c.is_whitespace() || c == '(' || c == ')')
        .any(|w| w == version || w.strip_prefix('v') == Some(version))
}

/// The last `n` non-blank lines of `text`, joined with " | ".
pub(crate) fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let tail = &lines[lines.len().saturating_sub(n)..];
    if tail.is_empty() {
        "no output".to_string()
    } else {
        tail.join(" | ")
    }
}

/// Removes what interrupted runs left: `.NAME.partial-PID` directories.
pub(crate) fn remove_partials(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with('.') && name.contains(".partial-") {
            say!("removing {name}, left by an interrupted run");
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Waits until a script this test process just wrote can be run: a fork by
    /// another test thread may briefly hold it open for writing ("text file
    /// busy") until that child execs.
    pub(crate) fn settle(script: &Path) {
        for _ in 0..100 {
            match Command::new(script).arg("--version").output() {
                Err(e) if e.raw_os_error() == Some(libc::ETXTBSY) => {
                    std::thread::sleep(Duration::from_millis(10));
                }
                _ => return,
            }
        }
    }

    #[test]
    fn versions_are_matched_as_whole_words() {
        assert!(says_version("2.1.332 (Claude Code)\n", "2.1.332"));
        assert!(says_version("codex-cli 0.171.0\n", "0.171.0"));
        assert!(says_version("0.61.0\n", "0.61.0"));
        assert!(says_version("v20.20.2\n", "20.20.2"));
        assert!(!says_version("0.61.01\n", "0.61.0"));
        assert!(!says_version("2.1.3320", "2.1.332"));
        assert!(!says_version("", "0.61.0"));
    }

    #[test]
    fn a_program_that_never_answers_is_stopped() {
        let dir = tempfile::tempdir().expect("tempdir");
        let log = dir.path().join("log");
        let started = Instant::now();
        let pid_file = dir.path().join("pid");
        let script = format!("sleep 30 & echo $! > '{}'; wait", pid_file.display());
        let ended = bounded(
            Command::new("sh").args(["-c", &script]),
            &log,
            Duration::from_millis(300),
        )
        .expect("runs");
        assert!(matches!(ended, Ended::TimedOut));
        assert!(started.elapsed() < Duration::from_secs(10));
        // The grandchild went with the group (gone, or a zombie nobody reaped).
        // SIGKILL is delivered asynchronously: give it a moment, no more.
        let pid = std::fs::read_to_string(&pid_file).expect("the shell started sleep");
        let running = || {
            std::fs::read_to_string(format!("/proc/{}/stat", pid.trim())).is_ok_and(|s| {
                s.rsplit_once(')')
                    .and_then(|(_, rest)| rest.split_whitespace().next())
                    .is_some_and(|state| state != "Z")
            })
        };
        let waited = Instant::now();
        while running() && waited.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(!running(), "sleep {} outlived the deadline", pid.trim());
    }
}
