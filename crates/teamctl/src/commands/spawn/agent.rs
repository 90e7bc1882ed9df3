//! The runtime flags, checked before anything starts, and the agent's program.
//! Each mode hands the flags on to teammated as they were given, the program
//! found here.
//!
//! The agent's program is looked up here, as teammated would, and passed on as
//! an absolute path: a detached teammated starts in its workdir (where a relative
//! path means something else), and a systemd unit runs with the user manager's
//! PATH, which often lacks the directory a person's shell found `claude` in.

use super::checks::absolute;
use crate::cli::RuntimeArgs;
use crate::commands::find_bin::resolve;
use crate::commands::{flags_are, given};
use anyhow::bail;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};
use teamboard_protocol::RuntimeKind;

/// Checks the flags together and finds the agent's program, absolute; `None` for
/// a native teammate, whose runtime flags are then all unset. `native_only`: the
/// flags given that only the native loop uses (`--model`, `--provider`, ...).
pub(super) fn check(flags: &RuntimeArgs, native_only: &[&str]) -> anyhow::Result<Option<PathBuf>> {
    let runtime = flags.runtime.unwrap_or(RuntimeKind::Native);
    if runtime == RuntimeKind::Native {
        let given = given([
            (flags.agent_cmd.is_some(), "--agent-cmd"),
            (!flags.agent_args.is_empty(), "--agent-arg"),
            (flags.agent_model.is_some(), "--agent-model"),
            (flags.agent_policy.is_some(), "--agent-policy"),
        ]);
        if !given.is_empty() {
            bail!(
                "{} for an agent runtime; add --runtime claude, codex or acp",
                flags_are(&given)
            );
        }
        return Ok(None);
    }
    // The native loop's settings would not reach the agent: said, rather than
    // dropped without a word. `--model` has a twin for agents, so it gets its own
    // pointer.
    if native_only.contains(&"--model") {
        bail!(
            "--model is the native loop's model and does not reach the {} agent; name the \
             agent's with --agent-model MODEL, or leave it to the agent's own settings",
            runtime
        );
    }
    if !native_only.is_empty() {
        bail!(
            "{} for the native loop and would not reach the {} agent, which uses its own \
             settings; leave {} out",
            flags_are(native_only),
            runtime,
            if native_only.len() == 1 { "it" } else { "them" },
        );
    }
    if let Some(model) = &flags.agent_model {
        if runtime == RuntimeKind::Acp {
            bail!(
                "--agent-model is for claude and codex: ACP has no standard way to choose a \
                 model; give the agent's own flag, e.g. `--agent-arg=-m --agent-arg=gemini-2.5-flash`"
            );
        }
        if model.trim().is_empty() || model.chars().any(char::is_control) {
            bail!("--agent-model {model:?} is empty or contains control characters");
        }
    }
    let program = match (&flags.agent_cmd, runtime.default_cmd()) {
        (Some(cmd), _) => resolve(cmd).ok_or_else(|| {
            let what = not_runnable(cmd);
            anyhow::anyhow!("--agent-cmd: {what}")
        })?,
        (None, Some(cmd)) => resolve(Path::new(cmd))
            .ok_or_else(|| not_found("--runtime", runtime, Path::new(cmd)))?,
        (None, None) => bail!(
            "--runtime {} needs the agent's program: --agent-cmd CMD, e.g. \
             `--agent-cmd gemini --agent-arg=--acp`",
            runtime
        ),
    };
    Ok(Some(absolute(&program, "--agent-cmd")?))
}

/// How long the agent's `--version` may take before the lead gives up on it. A
/// Node program's first start after install takes a few seconds; one that hangs
/// for longer would hang every teammate too.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// The agent `teamctl lead --teammate-runtime RUNTIME` will have its teammates
/// run, found as `teamctl spawn --runtime` finds it and started once
/// (`--version`), so that a missing or broken agent stops the lead before it
/// plans anything rather than after it created tasks no teammate can take.
///
/// Starting it costs a process; the lead is started rarely and its teammates
/// would start the same program anyway. `teamctl spawn` only looks the program
/// up: a teammate that cannot start it says so in its own log at once.
pub(crate) fn check_lead_teammates(runtime: RuntimeKind) -> anyhow::Result<()> {
    let Some(cmd) = runtime.default_cmd() else {
        return Ok(());
    };
    let flag = "--teammate-runtime";
    let program =
        resolve(Path::new(cmd)).ok_or_else(|| not_found(flag, runtime, Path::new(cmd)))?;
    starts(&program).map_err(|why| {
        anyhow::anyhow!(
            "{flag} {runtime} runs {}, which does not start ({why}); {}",
            program.display(),
            install_hint(runtime),
        )
    })
}

/// Runs `program --version` and says why it failed, if it did.
fn starts(program: &Path) -> Result<(), String> {
    let mut child = std::process::Command::new(program)
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| e.to_string())?;
    let began = Instant::now();
    // Polled: std has no wait with a timeout, and this runs once, before the
    // lead starts, in a command that has no async runtime of its own.
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if began.elapsed() < START_TIMEOUT => {
                std::thread::sleep(Duration::from_millis(20));
            }
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "`--version` did not finish within {} s",
                    START_TIMEOUT.as_secs()
                ));
            }
            Err(e) => return Err(e.to_string()),
        }
    };
    if status.success() {
        return Ok(());
    }
    let mut stderr = String::new();
    if let Some(mut pipe) = child.stderr.take() {
        let _ = std::io::Read::read_to_string(&mut pipe, &mut stderr);
    }
    let last = stderr.lines().rev().find(|l| !l.trim().is_empty());
    Err(match last {
        Some(line) => format!("`--version` {status}: {}", line.trim()),
        None => format!("`--version` {status}"),
    })
}

/// Why `program` cannot be run, in words.
fn not_runnable(program: &Path) -> String {
    if program.components().count() > 1 {
        format!("{} is not an executable file", program.display())
    } else {
        format!("`{}` is not on PATH", program.display())
    }
}

/// The agent's default program is missing. `flag` names the runtime flag given:
/// `--runtime` of `teamctl spawn`, which can name the program instead, or
/// `--teammate-runtime` of `teamctl lead`, which cannot.
fn not_found(flag: &str, runtime: RuntimeKind, program: &Path) -> anyhow::Error {
    let what = not_runnable(program).replacen(" is not", ", which is not", 1);
    let hint = install_hint(runtime);
    if flag == "--runtime" {
        anyhow::anyhow!("{flag} {runtime} runs {what}; {hint} or name its program with --agent-cmd")
    } else {
        anyhow::anyhow!("{flag} {runtime} runs {what}; {hint}")
    }
}

/// How to install the agent of `runtime`.
fn install_hint(runtime: RuntimeKind) -> &'static str {
    match runtime {
        RuntimeKind::Claude => {
            "install Claude Code (`npm install -g @anthropic-ai/claude-code`, or the pinned \
             version with `cargo xtask install-agents`; see docs/runtimes.md)"
        }
        RuntimeKind::Codex => {
            "install Codex (`npm install -g @openai/codex`, or the pinned version with \
             `cargo xtask install-agents`; see docs/runtimes.md)"
        }
        RuntimeKind::Acp | RuntimeKind::Native => "see docs/runtimes.md",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use teamboard_protocol::AgentPolicy;

    fn flags(runtime: Option<RuntimeKind>, cmd: Option<&str>, args: &[&str]) -> RuntimeArgs {
        RuntimeArgs {
            runtime,
            agent_cmd: cmd.map(PathBuf::from),
            agent_args: args.iter().map(|a| a.to_string()).collect(),
            agent_model: None,
            agent_policy: None,
        }
    }

    fn err(f: RuntimeArgs) -> String {
        format!("{:#}", check(&f, &[]).expect_err("refused"))
    }

    #[test]
    fn agent_flags_need_an_agent_runtime() {
        let e = err(flags(None, Some("/bin/sh"), &["-x"]));
        assert_eq!(
            e,
            "--agent-cmd and --agent-arg are for an agent runtime; add --runtime claude, codex or acp"
        );
        let mut f = flags(Some(RuntimeKind::Native), None, &[]);
        f.agent_policy = Some(AgentPolicy::ReadOnly);
        assert!(err(f).starts_with("--agent-policy is for an agent runtime"));
        let plain = check(&flags(None, None, &[]), &[]).expect("native");
        assert!(plain.is_none());
    }

    #[test]
    fn the_agent_has_its_own_model_flag_and_the_native_model_is_refused() {
        let mut f = flags(Some(RuntimeKind::Claude), Some("sh"), &[]);
        f.agent_model = Some("sonnet".into());
        assert!(check(&f, &[]).is_ok(), "claude with a model");
        let e = format!("{:#}", check(&f, &["--model"]).expect_err("--model too"));
        assert!(
            e.starts_with("--model is the native loop's model and does not reach the claude agent"),
            "{e}"
        );
        let mut native = flags(None, None, &[]);
        native.agent_model = Some("sonnet".into());
        assert!(err(native).starts_with("--agent-model is for an agent runtime"));
        let mut acp = flags(Some(RuntimeKind::Acp), Some("sh"), &["--acp"]);
        acp.agent_model = Some("gemini-2.5-flash".into());
        assert!(err(acp).contains("ACP has no standard way to choose a model"));
        let mut blank = flags(Some(RuntimeKind::Codex), Some("sh"), &[]);
        blank.agent_model = Some(" ".into());
        assert!(err(blank).contains("is empty"));
        assert!(
            check(&flags(None, None, &[]), &["--model", "--provider"]).is_ok(),
            "native --model"
        );
    }

    #[test]
    fn the_native_loops_other_settings_are_refused_for_an_agent() {
        let f = flags(Some(RuntimeKind::Codex), Some("sh"), &[]);
        let e = format!(
            "{:#}",
            check(&f, &["--provider", "--base-url"]).expect_err("refused")
        );
        assert_eq!(
            e,
            "--provider and --base-url are for the native loop and would not reach the codex \
             agent, which uses its own settings; leave them out"
        );
        let e = format!(
            "{:#}",
            check(&f, &["--carry-context"]).expect_err("refused")
        );
        assert!(
            e.starts_with("--carry-context is for the native loop"),
            "{e}"
        );
        assert!(check(&f, &[]).is_ok());
    }

    #[test]
    fn acp_needs_a_program_and_the_program_must_exist() {
        assert!(
            err(flags(Some(RuntimeKind::Acp), None, &[])).contains("needs the agent's program")
        );
        assert_eq!(
            err(flags(Some(RuntimeKind::Acp), Some("/no/such/agent"), &[])),
            "--agent-cmd: /no/such/agent is not an executable file"
        );
        assert_eq!(
            err(flags(
                Some(RuntimeKind::Codex),
                Some("no-such-agent-xyz"),
                &[]
            )),
            "--agent-cmd: `no-such-agent-xyz` is not on PATH"
        );
        // A directory is not a program.
        assert!(err(flags(Some(RuntimeKind::Acp), Some("/"), &[])).starts_with("--agent-cmd:"));
    }

    #[test]
    fn a_program_on_path_is_passed_on_absolute() {
        let program = check(&flags(Some(RuntimeKind::Acp), Some("sh"), &["--acp"]), &[])
            .expect("sh is on PATH")
            .expect("a program");
        assert!(program.is_absolute(), "{}", program.display());
        assert!(program.ends_with("sh"));
    }
}
