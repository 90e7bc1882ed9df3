//! What every local tool gets and gives: the environment it runs in, readers for
//! its arguments, and its output.

use super::guards::Guards;
use serde_json::Value;
use std::path::PathBuf;
use std::time::Duration;
use teamboard_sandbox::Jail;

/// What a tool answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOutput {
    pub content: String,
    pub is_error: bool,
}

impl ToolOutput {
    pub fn ok(content: impl Into<String>) -> ToolOutput {
        ToolOutput {
            content: content.into(),
            is_error: false,
        }
    }

    pub fn error(content: impl Into<String>) -> ToolOutput {
        ToolOutput {
            content: content.into(),
            is_error: true,
        }
    }
}

/// What the local tools need.
#[derive(Debug, Clone)]
pub struct LocalEnv {
    /// The working directory: the shell's cwd and the root file tools are confined to.
    pub workdir: PathBuf,
    /// The `bash` timeout when the model names none.
    pub shell_timeout: Duration,
    /// The program that supervises each `bash` command ([`super::guard`]); `None`
    /// runs `bash` directly, where a `kill -9` of teammated leaves grandchildren
    /// running.
    pub guard: Option<PathBuf>,
    /// The guards of commands whose background jobs may still run.
    pub guards: Guards,
    /// The sandbox `bash` runs in; its workdir is `workdir`.
    pub jail: Jail,
}

impl LocalEnv {
    /// Tools in `workdir`, with commands supervised whenever this process can
    /// serve as their guard (the teammated binary), and unconfined until
    /// [`LocalEnv::sandboxed`].
    pub fn new(workdir: PathBuf, shell_timeout: Duration) -> LocalEnv {
        LocalEnv {
            jail: Jail::off(&workdir),
            workdir,
            shell_timeout,
            guard: super::guard::program(),
            guards: Guards::default(),
        }
    }

    /// The same tools with `bash` in `jail`, moved to this workdir.
    pub fn sandboxed(self, jail: &Jail) -> LocalEnv {
        LocalEnv {
            jail: jail.in_dir(&self.workdir),
            ..self
        }
    }

    /// The same tools in `workdir` instead: a task's worktree. The guards are
    /// shared, so ending a claim still ends every background job its commands
    /// left, wherever they ran.
    pub fn in_dir(&self, workdir: PathBuf) -> LocalEnv {
        LocalEnv {
            jail: self.jail.in_dir(&workdir),
            workdir,
            ..self.clone()
        }
    }
}

/// Reads a required string argument, or explains what is missing.
pub fn str_arg<'a>(input: &'a Value, key: &str) -> Result<&'a str, ToolOutput> {
    input.get(key).and_then(Value::as_str).ok_or_else(|| {
        ToolOutput::error(format!(
            "missing or non-string argument '{key}'; got {input}"
        ))
    })
}

/// Reads an optional non-negative integer argument. Numbers sent as strings (`"20"`)
/// are accepted too: models do that now and then, and refusing would only cost a turn.
pub fn opt_int_arg(input: &Value, key: &str) -> Result<Option<u64>, ToolOutput> {
    let bad = |v: &Value| {
        ToolOutput::error(format!(
            "argument '{key}' must be a non-negative integer; got {v}"
        ))
    };
    match input.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v @ Value::Number(n)) => n.as_u64().map(Some).ok_or_else(|| bad(v)),
        Some(v @ Value::String(s)) => s.trim().parse().map(Some).map_err(|_| bad(v)),
        Some(v) => Err(bad(v)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn int_args() {
        assert_eq!(opt_int_arg(&json!({}), "n").unwrap(), None);
        assert_eq!(opt_int_arg(&json!({"n": null}), "n").unwrap(), None);
        assert_eq!(opt_int_arg(&json!({"n": 5}), "n").unwrap(), Some(5));
        assert_eq!(opt_int_arg(&json!({"n": " 7 "}), "n").unwrap(), Some(7));
        assert!(opt_int_arg(&json!({"n": 1.5}), "n").is_err());
        assert!(opt_int_arg(&json!({"n": true}), "n").is_err());
    }
}
