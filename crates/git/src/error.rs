//! The one error type of the crate. Its messages reach people and models verbatim,
//! so each says what went wrong and, where there is one, what to do about it.

use std::path::PathBuf;

/// Why a git operation could not be done.
#[derive(Debug, thiserror::Error)]
pub enum GitError {
    #[error("git was not found on PATH; install git 2.25 or newer")]
    Missing,

    #[error("git {found} is too old; teamboard needs git {need} or newer")]
    TooOld { found: String, need: &'static str },

    #[error("{} cannot be used as a repository: {why}", path.display())]
    NotARepo { path: PathBuf, why: String },

    #[error("`git {}` failed ({}){}", show_args(args), show_code(*code), show_stderr(stderr))]
    Command {
        args: Vec<String>,
        /// `None` when git was killed by a signal; `Some(0)` when it succeeded
        /// but its output could not be read.
        code: Option<i32>,
        /// What git (or a hook it ran) printed, trimmed and bounded to its last 4 KiB.
        stderr: String,
    },

    #[error("a {what} is in progress in this worktree; finish it or abort it first")]
    InProgress { what: &'static str },

    #[error("the worktree has uncommitted changes: {}", show_paths(paths))]
    Dirty { paths: Vec<String> },

    /// Conflicted files that still hold git's conflict markers.
    #[error(
        "conflicts are not resolved yet in {}: resolve them (remove the <<<<<<< ======= >>>>>>> markers), then try again",
        show_paths(paths)
    )]
    Unresolved { paths: Vec<String> },

    /// A branch or revision name that git would read as an option, or that is empty.
    #[error("'{name}' is not a usable name: {why}")]
    BadName { name: String, why: &'static str },

    #[error("no commit named '{rev}' in this repository")]
    UnknownRev { rev: String },

    #[error("there is no branch named '{branch}' in this repository")]
    NoBranch { branch: String },

    /// A path that is not (or is not the expected kind of) worktree of this repository.
    #[error("worktree {}: {why}", path.display())]
    Worktree { path: PathBuf, why: String },

    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
}

impl GitError {
    pub(crate) fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        GitError::Io {
            context: context.into(),
            source,
        }
    }
}

/// Arguments as a person would type them; long ones (commit messages) shortened.
fn show_args(args: &[String]) -> String {
    const LONGEST: usize = 60;
    let shown: Vec<String> = args
        .iter()
        .map(|a| {
            let mut a = a.replace('\n', " ");
            if a.chars().count() > LONGEST {
                a = a.chars().take(LONGEST).collect::<String>() + "…";
            }
            if a.is_empty() || a.contains(' ') {
                format!("'{a}'")
            } else {
                a
            }
        })
        .collect();
    shown.join(" ")
}

fn show_code(code: Option<i32>) -> String {
    match code {
        // Git succeeded but said something this crate cannot read.
        Some(0) => "unexpected output".to_string(),
        Some(code) => format!("exit code {code}"),
        None => "killed by a signal".to_string(),
    }
}

fn show_stderr(stderr: &str) -> String {
    if stderr.is_empty() {
        String::new()
    } else {
        format!(": {stderr}")
    }
}

fn show_paths(paths: &[String]) -> String {
    const SHOWN: usize = 10;
    let mut text = paths
        .iter()
        .take(SHOWN)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if paths.len() > SHOWN {
        text.push_str(&format!(" and {} more", paths.len() - SHOWN));
    }
    text
}
