//! The runtimes `bench-runtimes` measures, and what each speaks to the mock.

use teamboard_agent_clis::Cli;
use teamboard_mock_llm::cache::Api;

/// A runtime as measured: the native loop once per API format its baseline
/// needs, and each agent runtime with its CLI.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, strum::IntoStaticStr)]
#[strum(serialize_all = "kebab-case")]
pub enum Runtime {
    /// teammated's own loop, `--provider anthropic`: the baseline of claude and acp.
    Native,
    /// teammated's own loop, `--provider openai`: the baseline of codex, whose
    /// API is OpenAI's too.
    NativeOpenai,
    Claude,
    Codex,
    /// `gemini --acp`.
    Acp,
}

impl Runtime {
    /// What `--runtimes` may name (the OpenAI baseline comes with codex).
    pub const NAMED: [Runtime; 4] = [
        Runtime::Native,
        Runtime::Claude,
        Runtime::Codex,
        Runtime::Acp,
    ];

    pub fn name(self) -> &'static str {
        self.into()
    }

    pub fn parse(name: &str) -> Option<Runtime> {
        Runtime::NAMED.into_iter().find(|r| r.name() == name)
    }

    /// The API it calls the mock in.
    pub fn api(self) -> Api {
        match self {
            Runtime::Native | Runtime::Claude => Api::Anthropic,
            Runtime::NativeOpenai => Api::OpenAi,
            Runtime::Codex => Api::Responses,
            Runtime::Acp => Api::Gemini,
        }
    }

    /// The agent CLI it drives; `None` for the native loop.
    pub fn cli(self) -> Option<Cli> {
        match self {
            Runtime::Native | Runtime::NativeOpenai => None,
            Runtime::Claude => Some(Cli::Claude),
            Runtime::Codex => Some(Cli::Codex),
            Runtime::Acp => Some(Cli::Gemini),
        }
    }

    pub fn is_agent(self) -> bool {
        self.cli().is_some()
    }

    /// The native run its figures are divided by: the one in the nearest API
    /// format (the native loop has no Gemini provider; acp is held against the
    /// Anthropic one).
    pub fn baseline(self) -> Runtime {
        match self {
            Runtime::Codex | Runtime::NativeOpenai => Runtime::NativeOpenai,
            _ => Runtime::Native,
        }
    }

    /// teammated's flags that pick the native loop's provider; empty for an
    /// agent runtime.
    pub fn provider(self) -> Option<&'static str> {
        match self {
            Runtime::Native => Some("anthropic"),
            Runtime::NativeOpenai => Some("openai"),
            _ => None,
        }
    }

    /// How a message reaches it while it is busy.
    pub fn delivery(self) -> &'static str {
        match self {
            Runtime::Native | Runtime::NativeOpenai => {
                "before the next model call (the inbox is read every round)"
            }
            Runtime::Claude => "with the next command's result (steered into the turn)",
            Runtime::Codex => {
                "turn/steer: a model call in flight is made again with it, else the next call"
            }
            Runtime::Acp => "as the next prompt, after the turn's end (no steering in ACP)",
        }
    }
}

/// The runtimes to measure, in order, from `--runtimes`: the native baselines
/// always, the OpenAI one when codex is measured.
pub fn selected(names: &str) -> anyhow::Result<Vec<Runtime>> {
    let mut out = vec![Runtime::Native];
    for name in names.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        let Some(r) = Runtime::parse(name) else {
            anyhow::bail!(
                "--runtimes: unknown runtime '{name}' (known: native, claude, codex, acp)"
            );
        };
        out.push(r);
        if r == Runtime::Codex {
            out.push(Runtime::NativeOpenai);
        }
    }
    out.sort();
    out.dedup();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_native_baselines_always_come_and_unknown_names_are_refused() {
        assert_eq!(
            selected("claude").unwrap(),
            [Runtime::Native, Runtime::Claude]
        );
        assert_eq!(
            selected("codex,native").unwrap(),
            [Runtime::Native, Runtime::NativeOpenai, Runtime::Codex]
        );
        assert_eq!(
            selected("native,claude,codex,acp").unwrap().len(),
            5,
            "all four and the OpenAI baseline"
        );
        let err = selected("claude,gemini").unwrap_err().to_string();
        assert!(err.contains("unknown runtime 'gemini'"), "{err}");
        assert_eq!(Runtime::Acp.baseline(), Runtime::Native);
        assert_eq!(Runtime::Codex.baseline(), Runtime::NativeOpenai);
    }
}
