//! `--systemd`: the teammate becomes the user unit `teammated@NAME`. teamctl writes
//! the settings file the unit reads and asks systemd to start it.

use super::checks::{private_dir, refuse_if_connected};
use super::{Setting, To, Value};
use crate::cli::SpawnArgs;
use crate::commands::{Ctx, within};
use crate::render;
use anyhow::{Context as _, bail};
use std::fs;
use std::io::Write as _;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use teamboard_protocol::ClientError;

/// Overrides the `systemctl` program (tests substitute a script).
pub(crate) const SYSTEMCTL_ENV: &str = "TEAMCTL_SYSTEMCTL";

pub(super) async fn run(ctx: &Ctx, args: &SpawnArgs, settings: &[Setting]) -> anyhow::Result<()> {
    // The unit Requires= boardd.service, so systemd starts boardd if it is down;
    // only a running boardd can say whether the name is taken.
    match within(ctx.timeout(), ctx.connect_as(&args.name)).await {
        Ok(client) => within(ctx.timeout(), refuse_if_connected(ctx, &client, &args.name)).await?,
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
    write_env_file(&env_file, &env_file_text(&args.name, settings)?)?;

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
fn env_file_text(name: &str, settings: &[Setting]) -> anyhow::Result<String> {
    let mut text = format!("# teammated@{name} settings, written by `teamctl spawn --systemd`.\n");
    for s in settings.iter().filter(|s| s.to != To::Flag) {
        let key = s.var();
        let value = match &s.value {
            Value::Text(text) => text.clone(),
            Value::Path(path, what) => utf8(path, what)?,
            Value::Switch => "true".to_string(),
            Value::List(items) => serde_json::to_string(items)?,
        };
        text.push_str(&format!("{key}={}\n", env_value(&key, &value)?));
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
pub(crate) fn env_value(key: &str, value: &str) -> anyhow::Result<String> {
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
pub(crate) fn write_env_file(path: &Path, text: &str) -> anyhow::Result<()> {
    let dir = path
        .parent()
        .context("the settings file has no directory")?;
    private_dir(dir)?;
    // The directory may predate teamctl (created by hand with a looser umask); it
    // is teamboard's own, so tighten it.
    fs::set_permissions(dir, fs::Permissions::from_mode(0o700))
        .with_context(|| format!("cannot make {} private", dir.display()))?;
    // A new temporary file is 0600 (tempfile's own mode) and goes away if any
    // step fails.
    let written = (|| -> std::io::Result<()> {
        let mut f = tempfile::Builder::new()
            .prefix(".settings.tmp-")
            .tempfile_in(dir)?;
        f.write_all(text.as_bytes())?;
        f.as_file().sync_all()?;
        f.persist(path)?;
        Ok(())
    })();
    written.with_context(|| format!("cannot write {}", path.display()))?;
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
