//! What a teammate is launched with: the runtime that does its work, how its
//! agent's permission requests are answered, and the model provider of the native
//! loop with the request field of its output limit.
//!
//! teamctl takes these on its command line and hands them to teammated as flags,
//! or as a systemd unit's environment (`TEAMMATE_RUNTIME=claude`); `teammated lead`
//! passes them on to the teammates it spawns. One definition keeps the spellings
//! of the two programs the same. They live here, not in a crate of their own: the
//! protocol crate is already the vocabulary both programs share, and a crate for
//! four enums would only add a name. `clap::ValueEnum` comes with the `cli`
//! feature, so that boardd and the board crate do not build clap for them.
//!
//! Each name is spelled twice, once for clap and once for strum (`Display`, what
//! teamctl writes into a command line or a unit); `tests::clap_reads_what_strum_writes`
//! holds them together.

/// Which model family the native loop talks to (`--provider`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
#[derive(strum::Display, strum::IntoStaticStr)]
#[strum(serialize_all = "lowercase")]
pub enum ProviderKind {
    /// Anthropic's Messages API
    Anthropic,
    /// An OpenAI-compatible Chat Completions API (OpenAI, ollama, llama.cpp, vLLM...)
    Openai,
    /// An offline, deterministic stand-in that runs the task's ```sh blocks (for
    /// trying things out)
    Scripted,
}

/// The field of an OpenAI-compatible request that carries the output limit
/// (`--max-tokens-field`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
#[derive(strum::Display, strum::IntoStaticStr)]
#[strum(serialize_all = "snake_case")]
pub enum MaxTokensField {
    /// What ollama, llama.cpp, vLLM, LM Studio and other compatible servers know
    #[cfg_attr(feature = "cli", value(name = "max_tokens", alias = "max-tokens"))]
    MaxTokens,
    /// What OpenAI's own API wants (its reasoning models refuse max_tokens)
    #[cfg_attr(
        feature = "cli",
        value(name = "max_completion_tokens", alias = "max-completion-tokens")
    )]
    MaxCompletionTokens,
}

/// What carries out a teammate's work (`--runtime`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
#[derive(strum::Display, strum::IntoStaticStr)]
#[strum(serialize_all = "lowercase")]
pub enum RuntimeKind {
    /// teammated's own model loop with its tools (the default)
    #[default]
    Native,
    /// Claude Code, in its JSON stream mode (`claude` on PATH, or --agent-cmd)
    Claude,
    /// Codex, through `codex app-server` (`codex` on PATH, or --agent-cmd)
    Codex,
    /// Any Agent Client Protocol agent over stdio; needs --agent-cmd
    Acp,
}

impl RuntimeKind {
    /// The program run when `--agent-cmd` names none: `None` for acp (any agent)
    /// and native (no agent).
    pub fn default_cmd(self) -> Option<&'static str> {
        match self {
            RuntimeKind::Claude => Some("claude"),
            RuntimeKind::Codex => Some("codex"),
            RuntimeKind::Native | RuntimeKind::Acp => None,
        }
    }
}

/// How an agent's permission requests are answered (`--agent-policy`), once the
/// plan gate, if any, is open.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
#[derive(strum::Display, strum::IntoStaticStr)]
#[strum(serialize_all = "kebab-case")]
pub enum AgentPolicy {
    /// Allow what the agent asks for, in the task's worktree (the default)
    #[default]
    Workspace,
    /// Allow reads; refuse every command and every change
    ReadOnly,
}

/// What a teammate's commands may touch (`--sandbox`): its tool commands, its
/// agent's whole process and its tasks' checks run under this policy. The crate
/// `teamboard-sandbox` turns it into a bubblewrap command line.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
#[derive(strum::Display, strum::IntoStaticStr, serde::Serialize, serde::Deserialize)]
#[strum(serialize_all = "kebab-case")]
#[serde(rename_all = "kebab-case")]
pub enum SandboxMode {
    /// Write the task's worktree (or the workdir) and a private /tmp; read the
    /// rest of the system, but not boardd's state, its socket or the key files
    /// (the default)
    #[default]
    WorkspaceWrite,
    /// The same, with the worktree read-only too
    ReadOnly,
    /// No sandbox: commands run with the person's full rights
    Off,
}

/// A teammate's sandbox as it registered: the policy, and whether its commands
/// reach the network (`--no-network` turns it off).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Sandbox {
    pub mode: SandboxMode,
    #[serde(default = "network_default")]
    pub network: bool,
}

fn network_default() -> bool {
    true
}

impl Default for Sandbox {
    fn default() -> Self {
        Sandbox {
            mode: SandboxMode::default(),
            network: true,
        }
    }
}

impl std::fmt::Display for Sandbox {
    /// How `teamctl team` says it: `off` plainly, the network only when cut.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.mode, self.network) {
            (SandboxMode::Off, _) => f.write_str("sandbox OFF: commands run with your full rights"),
            (mode, true) => write!(f, "sandbox {mode}"),
            (mode, false) => write!(f, "sandbox {mode}, no network"),
        }
    }
}

/// The least context budget a teammate (or the lead) works with: the system
/// prompt, the identity and a summary must fit with room to spare.
pub const MIN_CONTEXT_BUDGET: u64 = 1000;

/// `tokens` as a context budget, or why not. teamctl's `--context-budget`,
/// teammated's and `TEAMMATE_CONTEXT_BUDGET` all say it in these words: a budget
/// too small is refused, never raised, wherever it comes from.
pub fn check_context_budget(tokens: u64) -> Result<u64, String> {
    if tokens < MIN_CONTEXT_BUDGET {
        return Err(format!(
            "{tokens} is too small: the budget must be at least {MIN_CONTEXT_BUDGET} tokens"
        ));
    }
    Ok(tokens)
}

/// An http(s) URL with a host and nothing a settings file or a command line would
/// mangle. Whether it leads to the API is for the teammate to find out at start:
/// that needs the provider's answer.
pub fn parse_base_url(s: &str) -> Result<String, String> {
    let url = s.trim();
    let Some(rest) = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))
    else {
        return Err(format!(
            "'{url}' is not an http(s) URL; give it with http:// or https:// \
             (e.g. http://localhost:11434/v1)"
        ));
    };
    if url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!("'{url}' has spaces or control characters"));
    }
    if rest
        .split(['/', '?', '#'])
        .next()
        .unwrap_or_default()
        .is_empty()
    {
        return Err(format!(
            "'{url}' has no host (e.g. http://localhost:11434/v1)"
        ));
    }
    Ok(url.to_string())
}

#[cfg(test)]
mod tests {
    // The test reads clap's names, which only the cli feature derives.
    #[cfg(feature = "cli")]
    #[test]
    fn clap_reads_what_strum_writes() {
        use super::*;
        use clap::ValueEnum;
        fn same_names<T: ValueEnum + std::fmt::Display>() {
            for v in T::value_variants() {
                let clap = v.to_possible_value().expect("no variant is skipped");
                assert_eq!(clap.get_name(), v.to_string());
            }
        }
        same_names::<ProviderKind>();
        same_names::<MaxTokensField>();
        same_names::<RuntimeKind>();
        same_names::<AgentPolicy>();
        same_names::<SandboxMode>();
        assert_eq!(AgentPolicy::ReadOnly.to_string(), "read-only");
        assert_eq!(MaxTokensField::MaxTokens.to_string(), "max_tokens");
    }
}
