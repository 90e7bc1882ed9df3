//! The teammate's sandbox, from its configuration: what its commands write and
//! what they never see (`teamboard_sandbox` holds the policy and its reasons).

use crate::config::Config;
use crate::error::Error;
use crate::session::Session;
use std::path::{Path, PathBuf};
use teamboard_protocol::SandboxMode;
use teamboard_sandbox::{Jail, private_paths};

/// The jail of the teammate's commands in `workdir`: its private `/tmp`, and
/// teamboard's private paths hidden, boardd's state directory among them as
/// boardd itself names it (it may not be the teammate's). Refuses when
/// bubblewrap is missing, unless the sandbox is off.
pub(crate) async fn jail(cfg: &Config, workdir: &Path, session: &Session) -> Result<Jail, Error> {
    if cfg.sandbox.mode == SandboxMode::Off {
        return Ok(Jail::off(workdir));
    }
    teamboard_sandbox::probe()?;
    let boardd = match session.call(|c| async move { c.status().await }).await {
        Ok(status) => Some(PathBuf::from(status.state_dir)),
        Err(e) => {
            tracing::warn!(error = %e, "cannot ask boardd where its state is; hiding the default");
            None
        }
    };
    let states: Vec<PathBuf> = [
        Some(cfg.state_dir.clone()),
        Some(teamboard_protocol::paths::default_state_dir()),
        boardd,
    ]
    .into_iter()
    .flatten()
    .collect();
    let mut hidden = private_paths(states.iter().map(PathBuf::as_path), &cfg.socket);
    hidden.extend(cfg.token_file.clone());
    Jail::new(cfg.sandbox, workdir)
        .hide(hidden)
        .private_tmp()
        .map_err(|e| Error::Workdir {
            path: std::env::temp_dir().display().to_string(),
            message: format!("cannot make the sandbox's private /tmp: {e}"),
        })
}
