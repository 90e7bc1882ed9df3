//! A policy and its paths, and the bubblewrap command line they make.

use crate::probe::bwrap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use teamboard_protocol::{Sandbox, SandboxMode};

/// Where a command runs and what it may touch.
#[derive(Debug, Clone)]
pub struct Jail {
    policy: Sandbox,
    workdir: PathBuf,
    /// Bound at `/tmp`; `None`: an empty tmpfs there.
    tmp: Option<PathBuf>,
    /// The private `/tmp` this jail made, removed with its last clone.
    _owned_tmp: Option<Arc<tempfile::TempDir>>,
    hidden: Vec<PathBuf>,
    /// Bound back read-only although under a hidden directory.
    readable: Vec<PathBuf>,
    /// The worktree's git directories ([`git_dirs`]), bound back read-only
    /// unless one is, holds or lies in a hidden path. Trap: they come from the
    /// worktree's `.git` file, which a command could have written; trusted
    /// as they are, they would bind the state directory or the keys back.
    git: Vec<PathBuf>,
    /// Bound writable, whatever the policy (an agent's own home).
    writable: Vec<PathBuf>,
    /// Whether the command inherits this process's variables that look like
    /// secrets ([`secret_vars`]): an agent does, its login may be one.
    keep_secrets: bool,
}

impl Jail {
    /// A command working in `workdir` (writable under `workspace-write`). Under
    /// a repository's worktree its git directories stay readable ([`git_dirs`]).
    pub fn new(policy: Sandbox, workdir: impl Into<PathBuf>) -> Jail {
        let workdir = workdir.into();
        Jail {
            policy,
            readable: Vec::new(),
            git: git_dirs(&workdir),
            workdir,
            tmp: None,
            _owned_tmp: None,
            hidden: Vec::new(),
            writable: Vec::new(),
            keep_secrets: false,
        }
    }

    /// No sandbox: commands run as they are, in `workdir`.
    pub fn off(workdir: impl Into<PathBuf>) -> Jail {
        let off = Sandbox {
            mode: SandboxMode::Off,
            network: true,
        };
        Jail::new(off, workdir)
    }

    pub fn policy(&self) -> Sandbox {
        self.policy
    }

    pub fn workdir(&self) -> &Path {
        &self.workdir
    }

    /// The same jail for another working directory (a task's worktree).
    pub fn in_dir(&self, workdir: impl Into<PathBuf>) -> Jail {
        let workdir = workdir.into();
        Jail {
            git: git_dirs(&workdir),
            workdir,
            ..self.clone()
        }
    }

    /// A private directory of the caller's, seen as `/tmp` inside.
    pub fn tmp(mut self, dir: impl Into<PathBuf>) -> Jail {
        self.tmp = Some(dir.into());
        self
    }

    /// A private `/tmp` of its own: a fresh directory in the system's, shared
    /// by the jail's clones and removed with the last of them. Under `off`
    /// nothing is made.
    pub fn private_tmp(self) -> std::io::Result<Jail> {
        if self.policy.mode == SandboxMode::Off {
            return Ok(self);
        }
        let dir = tempfile::Builder::new()
            .prefix("teamboard-tmp-")
            .tempdir()?;
        Ok(Jail {
            tmp: Some(dir.path().to_path_buf()),
            _owned_tmp: Some(Arc::new(dir)),
            ..self
        })
    }

    /// Whether commands run unconfined.
    pub fn is_off(&self) -> bool {
        self.policy.mode == SandboxMode::Off
    }

    /// Hides `paths`: a directory becomes an empty tmpfs, a file `/dev/null`.
    pub fn hide(mut self, paths: impl IntoIterator<Item = PathBuf>) -> Jail {
        self.hidden.extend(paths);
        self
    }

    /// Keeps `paths` readable even under a hidden directory (a socket the
    /// command must reach, such as the agent's MCP server's).
    pub fn readable(mut self, paths: impl IntoIterator<Item = PathBuf>) -> Jail {
        self.readable.extend(paths);
        self
    }

    /// Lets the command inherit the variables that look like secrets: an
    /// agent's process, whose login may be one.
    pub fn keep_secret_vars(mut self) -> Jail {
        self.keep_secrets = true;
        self
    }

    /// Keeps `paths` writable whatever the policy: an agent's own home.
    pub fn writable(mut self, paths: impl IntoIterator<Item = PathBuf>) -> Jail {
        self.writable.extend(paths);
        self
    }

    /// `program args` as the command to start: bubblewrap around it, or the
    /// program itself under `off`.
    pub fn wrap(
        &self,
        program: impl Into<OsString>,
        args: impl IntoIterator<Item = OsString>,
    ) -> (OsString, Vec<OsString>) {
        let program = program.into();
        if self.is_off() {
            return (program, args.into_iter().collect());
        }
        let mut all = self.bwrap_args();
        all.push(program);
        all.extend(args);
        (bwrap().into_os_string(), all)
    }

    /// bubblewrap's arguments up to and including `--`. Order matters: a later
    /// mount covers an earlier one, so hiding comes before what is bound back,
    /// and a hidden path under something bound back is hidden again after it.
    pub fn bwrap_args(&self) -> Vec<OsString> {
        let mut a = Args::default();
        a.flags(&["--die-with-parent", "--new-session", "--unshare-pid"]);
        if !self.policy.network {
            a.flags(&["--unshare-net"]);
        }
        a.pair("--ro-bind", "/", "/");
        a.one("--dev", "/dev");
        a.one("--proc", "/proc");
        match &self.tmp {
            Some(dir) => a.pair("--bind", dir, "/tmp"),
            None => a.one("--tmpfs", "/tmp"),
        }
        let (dirs, files) = self.hidden();
        for dir in &dirs {
            a.one("--tmpfs", dir);
        }
        let binds = self.binds(dirs.iter().chain(&files));
        for (flag, path) in &binds {
            a.pair(flag, path, path);
        }
        // A hidden directory inside something bound back (a workdir that holds
        // the state directory) is hidden again, and what lies in it bound again.
        let again: Vec<&PathBuf> = dirs
            .iter()
            .filter(|d| binds.iter().any(|(_, b)| d.starts_with(b) && *d != b))
            .collect();
        for dir in &again {
            a.one("--tmpfs", dir);
        }
        for (flag, path) in &binds {
            if again.iter().any(|d| path.starts_with(d)) {
                a.pair(flag, path, path);
            }
        }
        for file in &files {
            a.pair("--ro-bind", "/dev/null", file);
        }
        // The worktree's `.git` file stays as boardd made it: it names where
        // the next command's git directories are bound from (see `git`), and
        // where the person's and boardd's git look.
        let dot_git = self.workdir.join(".git");
        if self.policy.mode == SandboxMode::WorkspaceWrite && dot_git.is_file() {
            a.pair("--ro-bind", &dot_git, &dot_git);
        }
        if !self.keep_secrets {
            for name in secret_vars() {
                a.one("--unsetenv", name);
            }
        }
        a.pair("--setenv", "TMPDIR", "/tmp");
        a.one("--chdir", &self.workdir);
        a.flags(&["--"]);
        a.0
    }

    /// The hidden directories (outermost first) and files, of those that
    /// exist: bubblewrap cannot create a mount point on the read-only root.
    fn hidden(&self) -> (Vec<PathBuf>, Vec<PathBuf>) {
        let mut dirs = Vec::new();
        let mut files = Vec::new();
        for path in &self.hidden {
            // Mounts follow symlinks; comparing paths needs the real ones.
            let Ok(path) = path.canonicalize() else {
                continue;
            };
            if path.parent().is_none() {
                continue;
            }
            match std::fs::metadata(&path) {
                Ok(m) if m.is_dir() => dirs.push(path),
                Ok(_) => files.push(path),
                Err(_) => {}
            }
        }
        dirs.sort_by_key(|d| d.components().count());
        dirs.dedup();
        (dirs, files)
    }

    /// What is bound back over the hidden paths, outermost first: the git
    /// directories and sockets read-only, the workdir by the policy, the kept
    /// homes writable.
    fn binds<'a>(
        &self,
        hidden: impl Iterator<Item = &'a PathBuf> + Clone,
    ) -> Vec<(&'static str, PathBuf)> {
        let workdir = match self.policy.mode {
            SandboxMode::WorkspaceWrite => "--bind",
            SandboxMode::ReadOnly | SandboxMode::Off => "--ro-bind",
        };
        // `git_dirs` made them canonical, as `hidden` made the hidden paths.
        let overlaps = |p: &&PathBuf| hidden.clone().any(|h| p.starts_with(h) || h.starts_with(p));
        let git = self.git.iter().filter(|p| !overlaps(p)).cloned();
        let mut binds: Vec<(&'static str, PathBuf)> = self
            .readable
            .iter()
            .cloned()
            .chain(git)
            .map(|p| ("--ro-bind", p))
            .chain([(workdir, self.workdir.clone())])
            .chain(self.writable.iter().map(|p| ("--bind", p.clone())))
            .filter_map(|(flag, p)| Some((flag, p.canonicalize().ok()?)))
            .collect();
        binds.sort_by_key(|(_, p)| p.components().count());
        binds
    }
}

/// The git directories a worktree needs to be read as one: its admin directory
/// and the main repository's (the object store, the refs), named by its `.git`
/// file. Empty for a plain directory or a repository's own top level, whose
/// `.git` lies inside it.
pub fn git_dirs(workdir: &Path) -> Vec<PathBuf> {
    let Ok(text) = std::fs::read_to_string(workdir.join(".git")) else {
        return Vec::new();
    };
    let Some(admin) = text.trim().strip_prefix("gitdir:").map(str::trim) else {
        return Vec::new();
    };
    let admin = workdir.join(admin);
    let common = std::fs::read_to_string(admin.join("commondir"))
        .map(|c| admin.join(c.trim()))
        .unwrap_or_else(|_| admin.clone());
    [common, admin]
        .into_iter()
        .filter_map(|p| p.canonicalize().ok())
        .collect()
}

/// The variables of this process that look like secrets, which a sandboxed
/// command does not inherit: names ending in `API_KEY`, `_KEY`, `_TOKEN`,
/// `_SECRET` or `_PASSWORD` (any case). A heuristic, and said so in
/// SECURITY.md: teammated already takes the providers' keys out of its own
/// environment, and this catches what it cannot know of (a `GITHUB_TOKEN` in
/// the shell that started boardd, which then runs a check). An allow-list
/// (`--clearenv`) would be stricter but breaks builds that read their own
/// variables (`CARGO_HOME`, `RUSTUP_TOOLCHAIN`, proxies).
fn secret_vars() -> Vec<OsString> {
    secret_names(std::env::vars_os().map(|(name, _)| name))
}

fn secret_names(names: impl Iterator<Item = OsString>) -> Vec<OsString> {
    const ENDINGS: [&str; 5] = ["API_KEY", "_KEY", "_TOKEN", "_SECRET", "_PASSWORD"];
    names
        .filter(|name| {
            let upper = name.to_string_lossy().to_ascii_uppercase();
            ENDINGS.iter().any(|e| upper.ends_with(e))
        })
        .collect()
}

/// bubblewrap's argument list, built in order.
#[derive(Default)]
struct Args(Vec<OsString>);

impl Args {
    fn flags(&mut self, flags: &[&str]) {
        self.0.extend(flags.iter().map(OsString::from));
    }

    fn one(&mut self, flag: &str, value: impl AsRef<std::ffi::OsStr>) {
        self.0.push(flag.into());
        self.0.push(value.as_ref().to_owned());
    }

    fn pair(&mut self, flag: &str, a: impl AsRef<std::ffi::OsStr>, b: impl AsRef<std::ffi::OsStr>) {
        self.0.push(flag.into());
        self.0.push(a.as_ref().to_owned());
        self.0.push(b.as_ref().to_owned());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(args: &[OsString]) -> String {
        args.iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join(" ")
    }

    fn policy(mode: SandboxMode, network: bool) -> Sandbox {
        Sandbox { mode, network }
    }

    #[test]
    fn off_runs_the_program_itself() {
        let jail = Jail::new(policy(SandboxMode::Off, true), "/w");
        let (program, args) = jail.wrap("bash", ["-c".into(), "true".into()]);
        assert_eq!(program, "bash");
        assert_eq!(text(&args), "-c true");
    }

    #[test]
    fn hidden_then_bound_back_then_hidden_again() {
        let dir = tempfile::tempdir().unwrap();
        let root = tempfile::tempdir().unwrap();
        let root = root.path();
        let state = root.join("state");
        let tree = state.join("worktrees/t/task-1");
        let inner = tree.join("private");
        std::fs::create_dir_all(&inner).unwrap();
        std::fs::write(root.join("keys.env"), "").unwrap();
        let jail = Jail::new(policy(SandboxMode::WorkspaceWrite, false), &tree)
            .tmp(dir.path())
            .keep_secret_vars()
            .hide([
                state.clone(),
                inner.clone(),
                root.join("keys.env"),
                "/nope".into(),
            ]);
        let args = text(&jail.bwrap_args());
        let s = |p: &Path| p.display().to_string();
        let expected = format!(
            "--die-with-parent --new-session --unshare-pid --unshare-net --ro-bind / / \
             --dev /dev --proc /proc --bind {tmp} /tmp --tmpfs {state} --tmpfs {inner} \
             --bind {tree} {tree} --tmpfs {inner} --ro-bind /dev/null {keys} \
             --setenv TMPDIR /tmp --chdir {tree} --",
            tmp = s(dir.path()),
            state = s(&state),
            inner = s(&inner),
            tree = s(&tree),
            keys = s(&root.join("keys.env")),
        );
        assert_eq!(args, expected);
    }

    #[test]
    fn read_only_binds_the_workdir_read_only_and_keeps_homes_writable() {
        let home = Path::new(env!("CARGO_MANIFEST_DIR"));
        let jail =
            Jail::new(policy(SandboxMode::ReadOnly, true), "/").writable([home.to_path_buf()]);
        let args = text(&jail.bwrap_args());
        assert!(args.contains("--ro-bind / / "), "{args}");
        assert!(
            args.contains(&format!("--bind {0} {0}", home.display())),
            "{args}"
        );
        assert!(!args.contains("--unshare-net"), "{args}");
        assert!(args.contains("--tmpfs /tmp"), "{args}");
    }

    #[test]
    fn a_forged_git_file_binds_nothing_hidden_back_and_cannot_be_rewritten() {
        crate::probe().unwrap();
        // Not under /tmp, which the sandbox replaces with its private one.
        let root = tempfile::tempdir_in(env!("CARGO_MANIFEST_DIR")).unwrap();
        let (work, secret) = (root.path().join("work"), root.path().join("secret"));
        for d in [&work, &secret] {
            std::fs::create_dir_all(d).unwrap();
        }
        std::fs::write(secret.join("keys.env"), "KEY=1").unwrap();
        // What a command (or a file tool) could have written into the worktree:
        // the hidden directory as the worktree's git directory.
        std::fs::write(work.join(".git"), format!("gitdir: {}\n", secret.display())).unwrap();
        let jail = Jail::new(policy(SandboxMode::WorkspaceWrite, true), &work).hide([
            secret.clone(),
            // Nor a directory that holds a hidden one.
            root.path().to_path_buf(),
        ]);
        let args = text(&jail.bwrap_args());
        assert!(
            !args.contains(&format!("--ro-bind {0} {0}", secret.display())),
            "{args}"
        );
        let script = format!(
            "! cat {s}/keys.env 2>/dev/null && ! echo x 2>/dev/null > .git && echo ok",
            s = secret.display(),
        );
        let (program, args) = jail.wrap("sh", ["-c".into(), script.into()]);
        let out = std::process::Command::new(program)
            .args(args)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            stdout.trim(),
            "ok",
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    #[test]
    fn variables_that_look_like_secrets_are_not_inherited() {
        let names = [
            "ANTHROPIC_API_KEY",
            "github_token",
            "DB_PASSWORD",
            "AWS_SECRET",
            "PATH",
            "KEYBOARD",
            "TEAMBOARD_LEAD_KEY",
        ];
        let secret = secret_names(names.iter().map(OsString::from));
        assert_eq!(
            secret,
            [
                "ANTHROPIC_API_KEY",
                "github_token",
                "DB_PASSWORD",
                "AWS_SECRET",
                "TEAMBOARD_LEAD_KEY"
            ]
            .map(OsString::from)
        );
    }

    #[test]
    fn a_worktrees_git_dirs_are_its_admin_dir_and_the_common_dir() {
        let dir = tempfile::tempdir().unwrap();
        let common = dir.path().join("repo/.git");
        let admin = common.join("worktrees/task-1");
        std::fs::create_dir_all(&admin).unwrap();
        std::fs::write(admin.join("commondir"), "../..\n").unwrap();
        let tree = dir.path().join("tree");
        std::fs::create_dir_all(&tree).unwrap();
        std::fs::write(tree.join(".git"), format!("gitdir: {}\n", admin.display())).unwrap();
        assert_eq!(
            git_dirs(&tree),
            [
                common.canonicalize().unwrap(),
                admin.canonicalize().unwrap()
            ]
        );
        assert!(git_dirs(dir.path()).is_empty());
    }

    #[test]
    fn under_bubblewrap_only_the_workdir_and_tmp_are_written_and_hidden_is_empty() {
        crate::probe().unwrap();
        // Not under /tmp, which the sandbox replaces with its private one.
        let root = tempfile::tempdir_in(env!("CARGO_MANIFEST_DIR")).unwrap();
        let (work, secret, tmp) = (
            root.path().join("work"),
            root.path().join("secret"),
            root.path().join("tmp"),
        );
        for d in [&work, &secret, &tmp] {
            std::fs::create_dir_all(d).unwrap();
        }
        std::fs::write(secret.join("keys.env"), "KEY=1").unwrap();
        let jail = Jail::new(policy(SandboxMode::WorkspaceWrite, true), &work)
            .tmp(&tmp)
            .hide([secret.clone()]);
        let script = format!(
            "echo w > out && echo t > $TMPDIR/t && ! ls {s}/keys.env 2>/dev/null \\
             && ! echo x 2>/dev/null > {r}/x && ! kill -0 {pid} 2>/dev/null && echo ok",
            s = secret.display(),
            r = root.path().display(),
            pid = std::process::id(),
        );
        let (program, args) = jail.wrap("sh", ["-c".into(), script.into()]);
        let out = std::process::Command::new(program)
            .args(args)
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout), "ok\n", "{out:?}");
        assert_eq!(std::fs::read_to_string(work.join("out")).unwrap(), "w\n");
        assert_eq!(std::fs::read_to_string(tmp.join("t")).unwrap(), "t\n");
        assert!(!root.path().join("x").exists());
    }
}
