//! `teamctl web --systemd`: the page as the user unit `teamctl-web`
//! (`systemd/teamctl-web.service`, installed by `cargo xtask install`), which
//! reads its settings from `$XDG_CONFIG_HOME/teamboard/web.env`.
//!
//! The address must outlive restarts of the unit, so the port and the token are
//! fixed here, once: a free port is picked now when none was given, and the
//! token is written to the settings file (mode 0600), which only this user can
//! read. `restart` rather than `start`, so that new settings take effect on a
//! unit that is already running.

use crate::commands::Ctx;
use crate::commands::spawn::systemd::{SYSTEMCTL_ENV, env_value, write_env_file};
use crate::render;
use anyhow::{Context as _, bail};
use std::net::SocketAddr;
use std::path::Path;
use std::process::Stdio;
use teamboard_web::{TlsFiles, Token, WebError};

const UNIT: &str = "teamctl-web";

pub async fn install(
    ctx: &Ctx,
    listen: SocketAddr,
    tls: Option<TlsFiles>,
    token: Option<Token>,
) -> anyhow::Result<()> {
    if !listen.ip().is_loopback() && tls.is_none() {
        return Err(WebError::NotLoopback(listen).into());
    }
    let listen = if listen.port() == 0 {
        let free = std::net::TcpListener::bind(listen)
            .and_then(|l| l.local_addr())
            .with_context(|| format!("cannot find a free port on {}", listen.ip()))?;
        SocketAddr::new(listen.ip(), free.port())
    } else {
        listen
    };
    let token = token.unwrap_or_else(Token::random);
    let mut settings = vec![
        ("TEAMBOARD_WEB_LISTEN", listen.to_string()),
        ("TEAMBOARD_WEB_TOKEN", token.as_str().to_string()),
        ("TEAMBOARD_TEAM", ctx.team.clone()),
    ];
    if ctx.socket_given {
        settings.push(("TEAMBOARD_SOCKET", utf8(&absolute(&ctx.socket)?)?));
    }
    if let Some(dir) = &ctx.state_dir_given {
        settings.push(("TEAMBOARD_STATE_DIR", utf8(&absolute(dir)?)?));
    }
    if let Some(files) = &tls {
        settings.push(("TEAMBOARD_WEB_TLS_CERT", utf8(&absolute(&files.cert)?)?));
        settings.push(("TEAMBOARD_WEB_TLS_KEY", utf8(&absolute(&files.key)?)?));
    }
    let mut text = String::from("# teamctl-web settings, written by `teamctl web --systemd`.\n");
    for (key, value) in &settings {
        text.push_str(&format!("{key}={}\n", env_value(key, value)?));
    }
    let env_file = teamboard_protocol::paths::config_dir()
        .context("neither $XDG_CONFIG_HOME nor $HOME is set: nowhere to put the settings")?
        .join("web.env");
    write_env_file(&env_file, &text)?;
    systemctl(ctx, &["restart", UNIT]).await?;
    let scheme = if tls.is_some() { "https" } else { "http" };
    render::line(&format!("{scheme}://{listen}/?token={}", token.as_str()))?;
    render::note(format_args!(
        "teamctl: started the user unit {UNIT}, settings: {}; `systemctl --user enable {UNIT}` \
         starts it at login",
        env_file.display()
    ));
    Ok(())
}

async fn systemctl(ctx: &Ctx, args: &[&str]) -> anyhow::Result<()> {
    let program = std::env::var_os(SYSTEMCTL_ENV)
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| "systemctl".into());
    let run = tokio::process::Command::new(&program)
        .arg("--user")
        .args(args)
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let output = crate::commands::within(ctx.timeout(), async {
        run.await.with_context(|| {
            format!(
                "cannot run {} (--systemd needs a systemd user session)",
                Path::new(&program).display()
            )
        })
    })
    .await?;
    if !output.status.success() {
        let said = String::from_utf8_lossy(&output.stderr);
        let hint = if said.contains("not found") {
            " Install the unit with `cargo xtask install`."
        } else {
            ""
        };
        bail!(
            "`systemctl --user {}` failed ({}): {}{hint} See `journalctl --user -u {UNIT}`.",
            args.join(" "),
            output.status,
            said.trim()
        );
    }
    Ok(())
}

fn absolute(path: &Path) -> anyhow::Result<std::path::PathBuf> {
    std::path::absolute(path).with_context(|| format!("cannot resolve {}", path.display()))
}

fn utf8(path: &Path) -> anyhow::Result<String> {
    path.to_str().map(str::to_string).with_context(|| {
        format!(
            "{} is not valid UTF-8; a settings file needs it",
            path.display()
        )
    })
}
