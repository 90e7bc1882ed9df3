//! npm: asking the registry for a pinned package and installing it into its own
//! prefix.

use super::run::{Ended, bounded, last_lines};
use super::{Pin, say};
use anyhow::Context as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// How long the registry has to answer the look-up that precedes an install.
const PROBE_LIMIT: Duration = Duration::from_secs(60);

#[derive(Debug, thiserror::Error)]
pub(crate) enum NpmError {
    #[error(
        "npm is not installed (`npm --version`: {0}); install Node.js and npm \
         (Debian: `apt-get install nodejs npm`)"
    )]
    Missing(String),
    /// The registry did not answer; nothing says the package is at fault.
    #[error("cannot reach the npm registry {registry} for {spec}: {why}")]
    Unreachable {
        registry: String,
        spec: String,
        why: String,
    },
    #[error("{0}")]
    Failed(String),
}

/// npm's codes for a registry that cannot be reached, as in `npm error code X`.
const NETWORK_CODES: &[&str] = &[
    "ECONNREFUSED",
    "ECONNRESET",
    "ENOTFOUND",
    "EAI_AGAIN",
    "ETIMEDOUT",
    "ESOCKETTIMEDOUT",
    "ERR_SOCKET_TIMEOUT",
    "ENETUNREACH",
    "EHOSTUNREACH",
    "ENETDOWN",
    "EPROTO",
    "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
    "SELF_SIGNED_CERT_IN_CHAIN",
    "CERT_HAS_EXPIRED",
];

/// Installs `pin` into its directory: the registry is asked for the exact
/// version first (a quick, clear failure when it cannot be reached), then npm
/// installs into a partial directory, `finish` adds what the install needs on
/// top (it gets the partial directory), and the directory is renamed into place.
pub(crate) fn install(
    npm: &Npm,
    pin: &Pin,
    limit: Duration,
    finish: impl FnOnce(&Path) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let version = npm_version(npm)?;
    let spec = pin.spec();
    let parent = pin.dir.parent();
    let parent = parent.with_context(|| format!("{} has no parent", pin.dir.display()))?;
    let log = parent.join(format!("{}-{}.log", pin.label, pin.version));
    let _ = std::fs::remove_file(&log);
    probe(npm, pin, &log)?;
    // Removed when dropped, unless it was renamed into place.
    let partial = tempfile::Builder::new()
        .prefix(&format!(".{}-{}.partial-", pin.label, pin.version))
        .tempdir_in(parent)?;
    let (dir, shown) = (pin.dir.display(), log.display());
    say!("installing {spec} with npm {version} into {dir} (log: {shown})");
    let started = Instant::now();
    run_install(npm, pin, partial.path(), &log, limit)?;
    finish(partial.path())?;
    if pin.dir.exists() {
        std::fs::remove_dir_all(&pin.dir)?;
    }
    std::fs::rename(partial.path(), &pin.dir)?;
    let _ = partial.keep();
    say!("{spec}: npm took {:.1?}", started.elapsed());
    Ok(())
}

fn run_install(
    npm: &Npm,
    pin: &Pin,
    prefix: &Path,
    log: &Path,
    limit: Duration,
) -> anyhow::Result<()> {
    let spec = pin.spec();
    let mut cmd = npm.command();
    cmd.args(["install", "--prefix"])
        .arg(prefix)
        .args(["--no-audit", "--no-fund", "--save-exact", "--loglevel=warn"])
        .arg(&spec);
    let ended = bounded(&mut cmd, log, limit)
        .map_err(|e| NpmError::Failed(format!("cannot run npm install {spec}: {e}")))?;
    let text = std::fs::read_to_string(log).unwrap_or_default();
    match ended {
        Ended::Exited(s) if s.success() => Ok(()),
        Ended::Exited(s) => {
            Err(failure(npm, pin, &text, &format!("npm install {spec} failed ({s})")).into())
        }
        Ended::TimedOut => Err(NpmError::Failed(format!(
            "npm install {spec} did not finish within {limit:?} (raise --timeout); \
             the end of its log {}: {}",
            log.display(),
            last_lines(&text, 3)
        ))
        .into()),
    }
}

/// `npm view PKG@VERSION version`: whether the registry answers, and has it.
fn probe(npm: &Npm, pin: &Pin, log: &Path) -> Result<(), NpmError> {
    let spec = pin.spec();
    let mut cmd = npm.command();
    cmd.args(["view", &spec, "version"])
        .args([
            "--fetch-timeout=20000",
            "--fetch-retries=1",
            "--fetch-retry-mintimeout=2000",
        ])
        .arg("--fetch-retry-maxtimeout=5000");
    let ended = bounded(&mut cmd, log, PROBE_LIMIT)
        .map_err(|e| NpmError::Failed(format!("cannot run npm view {spec}: {e}")))?;
    let text = std::fs::read_to_string(log).unwrap_or_default();
    match ended {
        Ended::Exited(s) if s.success() && text.contains(pin.version) => Ok(()),
        Ended::Exited(s) if s.success() => Err(NpmError::Failed(format!(
            "the npm registry {} has no {spec} (npm view said {:?})",
            registry(npm),
            text.trim()
        ))),
        Ended::Exited(s) => Err(failure(
            npm,
            pin,
            &text,
            &format!("npm view {spec} failed ({s})"),
        )),
        Ended::TimedOut => Err(NpmError::Unreachable {
            registry: registry(npm),
            spec,
            why: format!("no answer within {PROBE_LIMIT:?}"),
        }),
    }
}

/// What npm's output says went wrong: the registry out of reach, or anything
/// else (a missing version, a full disk, a failed install script).
fn failure(npm: &Npm, pin: &Pin, text: &str, what: &str) -> NpmError {
    if let Some(code) = error_code(text).filter(|c| NETWORK_CODES.contains(&c.as_str())) {
        let reason = text
            .lines()
            .find_map(|l| l.split_once("reason: ").map(|(_, r)| r.trim().to_string()))
            .unwrap_or(code);
        return NpmError::Unreachable {
            registry: registry(npm),
            spec: pin.spec(),
            why: reason,
        };
    }
    NpmError::Failed(format!("{what}: {}", last_lines(text, 4)))
}

/// The `X` of npm's `npm error code X` line (`npm ERR! code X` before npm 10).
fn error_code(text: &str) -> Option<String> {
    text.lines().find_map(|l| {
        let rest = l
            .strip_prefix("npm error code ")
            .or_else(|| l.strip_prefix("npm ERR! code "))?;
        Some(rest.trim().to_string())
    })
}

/// The registry npm uses (`npm config get registry`), for messages.
fn registry(npm: &Npm) -> String {
    npm.command()
        .args(["config", "get", "registry"])
        .stdin(std::process::Stdio::null())
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .filter(|r| !r.is_empty())
        .unwrap_or_else(|| "(npm's default)".to_string())
}

fn npm_version(npm: &Npm) -> Result<String, NpmError> {
    match npm.command().arg("--version").output() {
        Ok(o) if o.status.success() => Ok(String::from_utf8_lossy(&o.stdout).trim().to_string()),
        Ok(o) => Err(NpmError::Missing(last_lines(
            &String::from_utf8_lossy(&o.stderr),
            2,
        ))),
        Err(e) => Err(NpmError::Missing(e.to_string())),
    }
}

/// The npm to run: `npm` on PATH, or a test's stand-in.
#[derive(Debug, Clone)]
pub(crate) struct Npm(pub PathBuf);

impl Default for Npm {
    fn default() -> Npm {
        Npm(PathBuf::from("npm"))
    }
}

impl Npm {
    /// npm, without its update notice.
    fn command(&self) -> Command {
        let mut cmd = Command::new(&self.0);
        cmd.env("NPM_CONFIG_UPDATE_NOTIFIER", "false");
        cmd
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pin() -> Pin {
        Pin {
            label: "codex",
            package: "@openai/codex",
            version: "0.171.0",
            dir: PathBuf::from("/x/codex-0.171.0"),
            program: PathBuf::from("/x/codex"),
        }
    }

    #[test]
    fn a_refused_or_unresolved_registry_is_unreachable_and_says_why() {
        let refused = "npm error code ECONNREFUSED\nnpm error syscall connect\n\
            npm error FetchError: request to http://127.0.0.1:9/@openai%2fcodex failed, \
            reason: connect ECONNREFUSED 127.0.0.1:9\n";
        match failure(&Npm::default(), &pin(), refused, "npm view failed") {
            NpmError::Unreachable { spec, why, .. } => {
                assert_eq!(spec, "@openai/codex@0.171.0");
                assert_eq!(why, "connect ECONNREFUSED 127.0.0.1:9");
            }
            other => panic!("{other:?}"),
        }
        let dns = "npm ERR! code ENOTFOUND\nnpm ERR! errno ENOTFOUND\n";
        assert!(matches!(
            failure(&Npm::default(), &pin(), dns, "x"),
            NpmError::Unreachable { why, .. } if why == "ENOTFOUND"
        ));
    }

    #[test]
    fn a_missing_version_is_a_failure_not_an_unreachable_registry() {
        let missing = "npm error code ETARGET\nnpm error notarget No matching version found for @openai/codex@0.171.0.\n";
        match failure(
            &Npm::default(),
            &pin(),
            missing,
            "npm install failed (exit status: 1)",
        ) {
            NpmError::Failed(m) => {
                assert!(
                    m.starts_with("npm install failed (exit status: 1): "),
                    "{m}"
                );
                assert!(m.contains("No matching version"), "{m}");
            }
            other => panic!("{other:?}"),
        }
    }
}
