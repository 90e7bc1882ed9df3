//! What both modes check before a teammate starts (its names, its working
//! directory, that the name is free on boardd), and the helpers they share.

use crate::cli::SpawnArgs;
use crate::commands::Ctx;
use anyhow::{Context as _, bail};
use std::os::unix::fs::DirBuilderExt as _;
use std::path::{Path, PathBuf};
use teamboard_protocol::names::validate_name;
use teamboard_protocol::{Client, ProviderKind};

/// Names that boardd would refuse are refused here, before anything starts; they
/// also end up in file names and a systemd instance name.
pub(super) fn check_names(ctx: &Ctx, args: &SpawnArgs) -> anyhow::Result<()> {
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
    if args.provider == Some(ProviderKind::Scripted) && args.base_url.is_some() {
        bail!("--base-url is for --provider anthropic or openai; the scripted model needs none");
    }
    Ok(())
}

/// The teammate's working directory, absolute (the child starts elsewhere), and
/// checked now rather than by a teammate that fails later.
pub(super) fn workdir(given: Option<&Path>) -> anyhow::Result<PathBuf> {
    let dir = match given {
        Some(d) => absolute(d, "workdir")?,
        None => std::env::current_dir().context("cannot determine the current directory")?,
    };
    if !dir.is_dir() {
        bail!("workdir {} is not a directory", dir.display());
    }
    Ok(dir)
}

pub(super) use crate::commands::find_bin::absolute;

/// Creates `dir` and its parents, private (0700): a teammate's files may hold
/// anything its tools printed.
pub(super) fn private_dir(dir: &Path) -> anyhow::Result<()> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .with_context(|| format!("cannot create {}", dir.display()))
}

pub(super) async fn refuse_if_connected(
    ctx: &Ctx,
    client: &Client,
    name: &str,
) -> anyhow::Result<()> {
    let team = client.team().await?;
    if let Some(m) = team.iter().find(|m| m.name == name && m.connected) {
        let pid = m.pid.map_or_else(String::new, |p| format!(" (pid {p})"));
        bail!(
            "'{name}' is already connected in team '{}'{pid}; stop it first \
             (`teamctl shutdown {name}`) or pick another name",
            ctx.team
        );
    }
    Ok(())
}
