//! The one place that starts `git`: a fixed, predictable environment for every
//! invocation, and failures turned into [`GitError`]s that read well.

use crate::error::GitError;
use crate::tail::bounded;
use std::ffi::{OsStr, OsString};
use std::path::Path;
use std::process::{Command, Stdio};

/// One git invocation, built up and then run once.
pub(crate) struct Git {
    dir: Option<OsString>,
    args: Vec<OsString>,
    optional_locks: bool,
    /// What git reads on its standard input (nothing when `None`).
    input: Option<Vec<u8>>,
}

/// What a finished git printed and how it ended.
#[derive(Debug)]
pub(crate) struct Output {
    /// `None` when git was killed by a signal.
    pub code: Option<i32>,
    pub stdout: String,
    stderr: Vec<u8>,
    stdout_raw: Vec<u8>,
}

impl Output {
    pub(crate) fn success(&self) -> bool {
        self.code == Some(0)
    }

    /// Whether git printed `needle` on either stream.
    pub(crate) fn mentions(&self, needle: &str) -> bool {
        self.stdout.contains(needle) || String::from_utf8_lossy(&self.stderr).contains(needle)
    }
}

/// `git -C dir …`.
pub(crate) fn git(dir: &Path) -> Git {
    Git {
        // `-C`, not `Command::current_dir`: a missing directory must read as git's
        // "cannot change to", not as a spawn failure indistinguishable from a
        // missing git binary.
        dir: Some(dir.as_os_str().to_owned()),
        ..git_anywhere()
    }
}

/// `git …` in the current directory (only `git --version` needs it).
pub(crate) fn git_anywhere() -> Git {
    Git {
        dir: None,
        args: Vec::new(),
        optional_locks: true,
        input: None,
    }
}

impl Git {
    pub(crate) fn arg(mut self, arg: impl AsRef<OsStr>) -> Self {
        self.args.push(arg.as_ref().to_owned());
        self
    }

    pub(crate) fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.args
            .extend(args.into_iter().map(|a| a.as_ref().to_owned()));
        self
    }

    /// For read-only commands (`status`) that would otherwise refresh the index
    /// and so take `index.lock`, making a concurrent git in the same worktree
    /// (a teammate's own `git add`) fail.
    pub(crate) fn without_optional_locks(mut self) -> Self {
        self.optional_locks = false;
        self
    }

    /// Feeds `input` to git's standard input. For commit messages (`-F -`):
    /// a task's result may be longer than the 128 KiB Linux allows one
    /// command-line argument.
    pub(crate) fn input(mut self, input: impl Into<Vec<u8>>) -> Self {
        self.input = Some(input.into());
        self
    }

    /// Runs git and returns how it ended, whatever that was.
    pub(crate) fn output(&self) -> Result<Output, GitError> {
        let mut cmd = Command::new("git");
        if let Some(dir) = &self.dir {
            cmd.arg("-C").arg(dir);
        }
        cmd.args(&self.args)
            // Messages in English, so conflict reports can be recognised.
            .env("LC_ALL", "C")
            // Never wait for a person: no credential prompt, no editor.
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("GIT_EDITOR", "true")
            .env("GIT_MERGE_AUTOEDIT", "no")
            // Inherited repository overrides would point every command at some
            // other repository than the one asked for.
            .env_remove("GIT_DIR")
            .env_remove("GIT_WORK_TREE")
            .env_remove("GIT_INDEX_FILE")
            .stdin(if self.input.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if !self.optional_locks {
            cmd.env("GIT_OPTIONAL_LOCKS", "0");
        }
        let failed = |e: std::io::Error| match e.kind() {
            std::io::ErrorKind::NotFound => GitError::Missing,
            _ => GitError::io("could not run git", e),
        };
        let mut child = cmd.spawn().map_err(failed)?;
        let out = match (&self.input, child.stdin.take()) {
            // Written from a thread of its own. Trap: git may fill its output
            // pipes (a chatty hook) before it reads its input, and a writer
            // that waited for git to read would then wait for ever.
            (Some(input), Some(mut stdin)) => std::thread::scope(|s| {
                s.spawn(move || {
                    use std::io::Write as _;
                    // Git that exits without reading all of it says why itself.
                    let _ = stdin.write_all(input);
                });
                child.wait_with_output()
            }),
            _ => child.wait_with_output(),
        }
        .map_err(failed)?;
        Ok(Output {
            code: out.status.code(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: out.stderr,
            stdout_raw: out.stdout,
        })
    }

    /// Runs git and returns its standard output; a non-zero exit is an error.
    pub(crate) fn run(&self) -> Result<String, GitError> {
        let out = self.output()?;
        if out.success() {
            Ok(out.stdout)
        } else {
            Err(self.failed(&out))
        }
    }

    /// Like [`Git::run`], with the output's surrounding whitespace trimmed.
    pub(crate) fn line(&self) -> Result<String, GitError> {
        Ok(self.run()?.trim().to_string())
    }

    /// The error for a finished git that did not succeed. Git writes most
    /// failures to stderr; some (rebase conflicts, fsck) only to stdout, so both
    /// are kept, stderr last because it holds the final word.
    pub(crate) fn failed(&self, out: &Output) -> GitError {
        let mut text = out.stdout_raw.trim_ascii().to_vec();
        let stderr = out.stderr.trim_ascii();
        if !text.is_empty() && !stderr.is_empty() {
            text.push(b'\n');
        }
        text.extend_from_slice(stderr);
        GitError::Command {
            args: self
                .args
                .iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect(),
            code: out.code,
            stderr: bounded(&text),
        }
    }
}
