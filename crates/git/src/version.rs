//! Which git is installed, and whether it is new enough.

use crate::cmd::git_anywhere;
use crate::error::GitError;

/// The oldest git this crate supports: every command and flag it uses exists
/// there, and it is what the oldest still-maintained distributions ship.
pub const MIN_VERSION: (u32, u32) = (2, 25);
const MIN_TEXT: &str = "2.25";

/// A git version as `git --version` reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Version {
    pub major: u32,
    pub minor: u32,
    pub patch: u32,
    /// What git printed, e.g. "git version 2.39.2 (Apple Git-143)".
    pub text: String,
}

/// Runs `git --version`: [`GitError::Missing`] if there is no git on PATH,
/// [`GitError::TooOld`] if it is older than 2.25.
pub fn version() -> Result<Version, GitError> {
    let text = git_anywhere().arg("--version").line()?;
    let version = parse_version(&text).ok_or_else(|| GitError::Command {
        args: vec!["--version".into()],
        code: Some(0),
        stderr: format!("could not read a version number in {text:?}"),
    })?;
    if (version.major, version.minor) < MIN_VERSION {
        return Err(GitError::TooOld {
            found: format!("{}.{}.{}", version.major, version.minor, version.patch),
            need: MIN_TEXT,
        });
    }
    Ok(version)
}

/// Reads a version out of `git --version` output, or out of a bare version
/// string. Vendor suffixes are ignored: "git version 2.39.2 (Apple Git-143)",
/// "2.47.3.windows.1", "git version 2.45.GIT". A missing patch level reads as 0.
pub fn parse_version(text: &str) -> Option<Version> {
    let trimmed = text.trim();
    let number = trimmed
        .strip_prefix("git version ")
        .unwrap_or(trimmed)
        .split_whitespace()
        .next()?;
    let mut parts = number.split('.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    let patch = parts.next().and_then(leading_number).unwrap_or(0);
    Some(Version {
        major,
        minor,
        patch,
        text: trimmed.to_string(),
    })
}

/// "3" → 3, "3rc1" → 3, "GIT" → None.
fn leading_number(part: &str) -> Option<u32> {
    let digits: String = part.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}
