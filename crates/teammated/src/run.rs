//! A teammate's life: it opens (its work set up, registered with boardd), then
//! alternates IDLE and WORK until it exits.
//!
//! This is the one place that knows both sides: the board side
//! (`crate::teammate`) and the work (`crate::work`), built here and handed to
//! each other for the length of a call.

use crate::config::Config;
use crate::context::Context;
use crate::error::Error;
use crate::llm::Probe;
use crate::model_loop::ModelLoop;
use crate::teammate::{Exit, Teammate};
use crate::tools;
use crate::work::{Worker, agent};
use teamboard_protocol::TaskId;
use tokio_util::sync::CancellationToken;

/// Runs a teammate until it exits: registers, then alternates IDLE and WORK.
pub async fn run(cfg: Config, cancel: CancellationToken) -> Result<Exit, Error> {
    let Some((mut teammate, mut worker, adopted)) = open(cfg, cancel).await? else {
        return Ok(Exit::Terminated);
    };
    // After a boardd restart, the claim our name still holds comes back to us.
    let result = match adopted {
        Some(id) => teammate.resume(id, true, &mut worker).await,
        None => Ok(()),
    };
    let result = match result {
        Ok(()) => lifecycle(&mut teammate, &mut worker).await,
        Err(e) => Err(e),
    };
    // However it ends, nothing the tools started outlives the teammate.
    teammate.stop_tools().await;
    result
}

async fn lifecycle(t: &mut Teammate, worker: &mut Worker) -> Result<Exit, Error> {
    loop {
        if let Some(exit) = t.leave_if_free().await {
            return t.exit(exit).await;
        }
        if t.held().is_none()
            && let Some(exit) = t.idle(worker).await?
        {
            return t.exit(exit).await;
        }
        if let Some(exit) = worker.work(t).await? {
            return t.exit(exit).await;
        }
    }
}

/// Checks the setup, builds the work, registers with boardd, and returns the
/// teammate with the task boardd says its name still holds (after a boardd
/// restart). `None` when it was cancelled first.
pub(crate) async fn open(
    cfg: Config,
    cancel: CancellationToken,
) -> Result<Option<(Teammate, Worker, Option<TaskId>)>, Error> {
    let workdir = std::fs::canonicalize(&cfg.workdir).map_err(|e| Error::Workdir {
        path: cfg.workdir.display().to_string(),
        message: e.to_string(),
    })?;
    if !workdir.is_dir() {
        return Err(Error::Workdir {
            path: workdir.display().to_string(),
            message: "not a directory".into(),
        });
    }
    // Before anything registers: a sandbox that cannot be had stops the
    // teammate with the package to install.
    if cfg.sandbox.mode != teamboard_protocol::SandboxMode::Off {
        teamboard_sandbox::probe()?;
    }
    let (chain, accounts) = crate::accounts::build_chain(&cfg.provider)?;
    let provider = &chain[0];
    // An agent that cannot start stops the teammate here, as a bad model
    // setting does, so `teamctl spawn` fails with the reason.
    let agent = agent::setup(&cfg)?;
    // Before registering: a key the server refuses stops the teammate here (the
    // rest of the check is advice, see `llm::probe`), so `teamctl spawn` (which
    // waits for it to connect) fails with the reason instead of a task failing
    // later. An agent runtime does not use the native model.
    let probe = if agent.is_some() {
        Probe::Skipped
    } else {
        tokio::select! {
            _ = cancel.cancelled() => return Ok(None),
            probe = provider.probe() => probe?,
        }
    };
    let unsure = match &probe {
        Probe::Listed { url } => {
            tracing::info!(%url, "the model API answered");
            None
        }
        Probe::Unsure(why) => {
            tracing::warn!("{why}");
            Some(why.as_str())
        }
        Probe::Skipped => None,
    };
    let started = match &agent {
        Some(a) => format!(
            "started: pid {}, role {}, runtime {}, workdir {}",
            std::process::id(),
            cfg.role,
            a.describe(),
            workdir.display()
        ),
        None => format!(
            "started: pid {}, role {}, provider {}, context budget {} tokens, {}, workdir {}",
            std::process::id(),
            cfg.role,
            provider.describe(),
            cfg.context_budget,
            if cfg.carry_context {
                "carried from task to task"
            } else {
                "fresh for each task"
            },
            workdir.display()
        ),
    };
    let (teammate, adopted) = Teammate::open(cfg, workdir, cancel, &started, unsure).await?;
    let worker = match agent {
        Some(mut run) => {
            run.confine(teammate.jail());
            Worker::Agent(run)
        }
        None => {
            let cfg = teammate.cfg();
            let scripted = cfg.provider.kind == crate::config::ProviderKind::Scripted;
            let line = crate::meter::Line::Session(teammate.session().clone());
            Worker::Native(ModelLoop::new(
                Context::new(&teammate.identity(), cfg.context_budget),
                chain,
                crate::meter::Meter::new(line, accounts, scripted),
                tools::specs::all(),
                cfg.provider.max_tokens,
                teamboard_protocol::transcript::teammate_dir(&cfg.state_dir, &cfg.team, &cfg.name),
            ))
        }
    };
    Ok(Some((teammate, worker, adopted)))
}
