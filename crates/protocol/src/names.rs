//! Names of teammates and teams.

/// The longest name boardd accepts.
pub const MAX_NAME_LEN: usize = 64;

/// Checks a teammate or team name against `^[A-Za-z0-9_-]{1,64}$`.
///
/// The rule keeps names safe to use as file names, systemd instance names and
/// command-line arguments without quoting.
pub fn validate_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("a name cannot be empty".into());
    }
    if name.len() > MAX_NAME_LEN {
        return Err(format!(
            "name '{}…' is {} characters long; the limit is {MAX_NAME_LEN}",
            &name[..name.char_indices().nth(16).map_or(name.len(), |(i, _)| i)],
            name.chars().count()
        ));
    }
    if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '-'))
    {
        return Err(format!(
            "name '{name}' contains {bad:?}; use only letters, digits, '_' and '-'"
        ));
    }
    Ok(())
}

/// The longest runtime name boardd accepts.
pub const MAX_RUNTIME_LEN: usize = 32;

/// The runtime a member registers with when it names none: teammated's own loop.
/// The roster leaves it out (`Member.runtime` is `None`).
pub const NATIVE_RUNTIME: &str = "native";

/// The model a native teammate on the scripted provider registers (the offline
/// stand-in, whose token counts are estimates).
pub const SCRIPTED_MODEL: &str = "scripted";

/// Checks a runtime name (`claude`, `codex`, `acp`, ...) against
/// `^[a-z][a-z0-9_-]{0,31}$`.
///
/// boardd does not keep a list of runtimes: it only carries the name for the
/// roster, so a newer teammated may bring one this boardd has never heard of.
/// The rule keeps the name short and safe to print in one roster column.
pub fn validate_runtime(runtime: &str) -> Result<(), String> {
    let mut chars = runtime.chars();
    let Some(first) = chars.next() else {
        return Err("a runtime name cannot be empty".into());
    };
    if runtime.len() > MAX_RUNTIME_LEN {
        return Err(format!(
            "runtime name '{}…' is too long; the limit is {MAX_RUNTIME_LEN} characters",
            &runtime[..runtime
                .char_indices()
                .nth(16)
                .map_or(runtime.len(), |(i, _)| i)],
        ));
    }
    if !first.is_ascii_lowercase() {
        return Err(format!(
            "runtime name '{runtime}' must start with a lowercase letter (e.g. native, claude, codex, acp)"
        ));
    }
    if let Some(bad) =
        chars.find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_' || *c == '-'))
    {
        return Err(format!(
            "runtime name '{runtime}' contains {bad:?}; use only lowercase letters, digits, '_' and '-'"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_runtime_names() {
        for ok in [
            "native",
            "claude",
            "codex",
            "acp",
            "my-agent_2",
            &"a".repeat(32),
        ] {
            assert!(validate_runtime(ok).is_ok(), "{ok}");
        }
    }

    #[test]
    fn refuses_bad_runtime_names() {
        for bad in [
            "",
            "Claude",
            "2x",
            "-a",
            "a b",
            "claude\n",
            "ä",
            &"a".repeat(33),
        ] {
            assert!(validate_runtime(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn accepts_plain_names() {
        for ok in ["a", "alice", "web-dev_2", &"x".repeat(64)] {
            assert!(validate_name(ok).is_ok(), "{ok}");
        }
    }

    #[test]
    fn refuses_bad_names() {
        for bad in ["", "a b", "ä", "../etc", "a/b", &"x".repeat(65)] {
            assert!(validate_name(bad).is_err(), "{bad}");
        }
    }
}
