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

#[cfg(test)]
mod tests {
    use super::*;

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
