//! Where a client finds the lead's credential, and how it reads it.
//!
//! boardd writes the credential to `<state dir>/lead.key` (0600, in a 0700
//! directory) at its first start. Whoever can read that file is the lead: the
//! person, and the programs they run (`teamctl`, `teamctl lead`, `teamctl mcp`,
//! `teamctl web`, and `teammated`, which registers its member with it). A
//! teammate's sandboxed commands cannot, since the sandbox hides the state
//! directory. The file holds the credential as text (hex digits), exactly as
//! a hello presents it, so that any language's client can read it.
//!
//! `TEAMBOARD_LEAD_KEY` names the file outright, for a boardd whose state
//! directory a client cannot work out (one started with `--state-dir`).

use crate::frame::Credential;
use std::path::{Path, PathBuf};

/// The file in boardd's state directory that holds the lead's credential.
pub const LEAD_KEY_FILE: &str = "lead.key";
/// The environment variable that names the lead's credential file.
pub const LEAD_KEY_ENV: &str = "TEAMBOARD_LEAD_KEY";

#[derive(Debug, thiserror::Error)]
#[error(
    "cannot read the lead's credential at {path}: {reason}; run this as the user that runs \
     boardd, or point {LEAD_KEY_ENV} at boardd's {LEAD_KEY_FILE}"
)]
pub struct LeadKeyError {
    pub path: PathBuf,
    pub reason: String,
}

/// The lead's credential file: `$TEAMBOARD_LEAD_KEY` if set, else `lead.key`
/// in `state_dir` (or in the default state directory when `None`).
pub fn lead_key_path(state_dir: Option<&Path>) -> PathBuf {
    if let Some(path) = std::env::var_os(LEAD_KEY_ENV).filter(|v| !v.is_empty()) {
        return PathBuf::from(path);
    }
    match state_dir {
        Some(dir) => dir.join(LEAD_KEY_FILE),
        None => crate::paths::default_state_dir().join(LEAD_KEY_FILE),
    }
}

/// Reads the credential in `path` (surrounding whitespace aside).
pub fn read_lead_key(path: &Path) -> Result<Credential, LeadKeyError> {
    let error = |reason: String| LeadKeyError {
        path: path.to_path_buf(),
        reason,
    };
    let text = std::fs::read_to_string(path).map_err(|e| error(e.to_string()))?;
    let secret = text.trim();
    if secret.is_empty() {
        return Err(error("the file is empty".into()));
    }
    Ok(Credential::new(secret))
}

/// [`lead_key_path`], read.
pub fn lead_key(state_dir: Option<&Path>) -> Result<Credential, LeadKeyError> {
    read_lead_key(&lead_key_path(state_dir))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_file_reads_without_its_newline_and_a_missing_one_says_where_and_what_to_do() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join(LEAD_KEY_FILE);
        let err = read_lead_key(&path).expect_err("missing");
        let text = err.to_string();
        assert!(text.contains(&path.display().to_string()), "{text}");
        assert!(text.contains(LEAD_KEY_ENV), "{text}");
        std::fs::write(&path, "abc123\n").expect("write");
        assert_eq!(read_lead_key(&path).expect("read").as_str(), "abc123");
        std::fs::write(&path, "\n").expect("write");
        assert!(read_lead_key(&path).is_err());
    }
}
