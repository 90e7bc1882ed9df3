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

/// The warning for a native model an agent leaves out: `--model` is refused
/// for an agent runtime, so a model here came from `TEAMMATE_MODEL` (a unit
/// written before `TEAMMATE_AGENT_MODEL`, or a shell that sets it for native
/// teammates), and the agent runs its own default instead.
fn model_left_out(cfg: &Config) -> Option<String> {
    use crate::runtime::RuntimeKind;
    let rt = &cfg.runtime;
    if !matches!(rt.kind, RuntimeKind::Claude | RuntimeKind::Codex) || rt.agent_model.is_some() {
        return None;
    }
    let model = cfg.provider.model.as_deref()?;
    Some(format!(
        "TEAMMATE_MODEL={model} is the native loop's model and does not reach the {} \
         agent, which runs its own default; to choose the agent's model, set \
         TEAMMATE_AGENT_MODEL (--agent-model) instead",
        rt.kind
    ))
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
    let left_out = model_left_out(&cfg);
    let unsure = match &probe {
        Probe::Listed { url } => {
            tracing::info!(%url, "the model API answered");
            None
        }
        Probe::Unsure(why) => Some(why.as_str()),
        Probe::Skipped => left_out.as_deref(),
    };
    if let Some(why) = unsure {
        tracing::warn!("{why}");
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::RuntimeKind;
    use teamboard_protocol::transcript::transcript_path;
    use teamboard_testkit::InProc;

    /// A unit written before `TEAMMATE_AGENT_MODEL` gives a claude or codex
    /// teammate the native loop's `TEAMMATE_MODEL`: it starts with the agent's
    /// own default, and says so in its log and its transcript.
    #[tokio::test]
    async fn an_agent_given_the_native_model_says_it_runs_its_own() {
        let daemon = InProc::start().await;
        for (kind, agent_model, warned) in [
            (RuntimeKind::Claude, None, true),
            (RuntimeKind::Codex, None, true),
            (RuntimeKind::Claude, Some("sonnet"), false),
        ] {
            let mut cfg = Config::for_tests(&daemon);
            cfg.name = format!("{kind}-{warned}");
            cfg.provider.model = Some("native-loop-model".into());
            cfg.runtime.kind = kind;
            cfg.runtime.agent_cmd = Some("/bin/true".into());
            cfg.runtime.agent_model = agent_model.map(str::to_string);
            let path = transcript_path(&cfg.state_dir, &cfg.team, &cfg.name);
            let opened = open(cfg, CancellationToken::new()).await.expect("opens");
            let transcript = std::fs::read_to_string(&path).expect("a transcript");
            let said = transcript.contains(
                "TEAMMATE_MODEL=native-loop-model is the native loop's model and does not \
                 reach the",
            );
            assert_eq!(said, warned, "{kind} {agent_model:?}:\n{transcript}");
            drop(opened);
        }
        daemon.stop().await;
    }
}
