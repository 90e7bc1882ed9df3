//! Names that go on git's command line as positional arguments.

use crate::error::GitError;

/// Refuses a branch or revision name that git would take for an option (a
/// leading '-') or that cannot name anything. Everything else is left to git,
/// whose own error is clearer than a second set of rules here.
pub(crate) fn check(name: &str) -> Result<(), GitError> {
    let why = if name.is_empty() {
        "it is empty"
    } else if name.starts_with('-') {
        "it starts with '-', which git would read as an option"
    } else if name.chars().any(|c| c.is_control() || c == ' ') {
        "it contains a space or a control character"
    } else {
        return Ok(());
    };
    Err(GitError::BadName {
        name: name.to_string(),
        why,
    })
}

#[cfg(test)]
mod tests {
    use super::check;

    #[test]
    fn option_like_and_empty_names_are_refused() {
        assert!(check("teamboard/task-1").is_ok());
        assert!(check("0123abc").is_ok());
        for bad in ["", "-f", "--force", "a b", "a\nb"] {
            let err = check(bad).expect_err(bad);
            assert!(err.to_string().contains("is not a usable name"), "{err}");
        }
    }
}
