//! The sandbox a teammate's commands run in: its tool commands (`bash`), an
//! agent runtime's whole agent process, and its tasks' completion checks.
//!
//! A [`Jail`] holds the policy ([`Sandbox`]: `workspace-write`, `read-only` or
//! `off`, and the network) and the paths it applies to, and turns them into a
//! bubblewrap command line around the program ([`Jail::wrap`]):
//!
//! - **read** the whole system (`--ro-bind / /`), except what is hidden: boardd's
//!   state directory (the database, every task's worktree, teammates'
//!   transcripts and logs), the socket and its directory, the user's runtime
//!   directory (its session bus could start a command outside), and
//!   `~/.config/teamboard` (`keys.env`, `teammates/*.env`). A hidden directory
//!   is an empty `tmpfs`; a hidden file or socket is `/dev/null`
//!   ([`private_paths`] lists teamboard's own).
//! - **write** the working directory (the task's worktree, or the workdir when
//!   the team has no repository; read-only under `read-only`) and a private
//!   temporary directory bound at `/tmp`, with `TMPDIR=/tmp`. Nothing else, but
//!   what a caller keeps writable on purpose (an agent's own home).
//! - **processes**: a PID namespace of its own (`--unshare-pid`, a fresh
//!   `/proc`), so nothing outside can be seen or signalled: not the teammate,
//!   not boardd; and `/proc/PID/root` of an outside process, which would lead
//!   back to the unhidden filesystem, does not exist. `--die-with-parent` and the
//!   namespace's init end everything when the command ends or its guard goes,
//!   background jobs included. `--new-session` keeps the terminal out of reach.
//! - **network**: shared by default, since builds fetch packages;
//!   `--unshare-net` when it is off.
//!
//! # The git trap
//!
//! A task's worktree has a `.git` *file* naming its admin directory inside the
//! main repository (`.git/worktrees/<id>`), which shares the object store and
//! every branch. Both stay read-only ([`git_dirs`] binds them back readable
//! when they lie under a hidden directory): `git status`, `diff` and `log` work,
//! `git add` and `git commit` fail with "Read-only file system". boardd commits
//! the worktree itself at completion, so nothing needs to; and a command can
//! never move the target branch or another task's, which a writable object store
//! or admin directory would allow.
//!
//! # Why bubblewrap
//!
//! - **bubblewrap** (chosen): the mechanism Claude Code uses for its own shell on
//!   Linux and Flatpak uses for its apps, packaged everywhere as `bubblewrap`. One
//!   `execve` gives mount, PID and network namespaces, so it hides paths (a
//!   read rule cannot: it can only refuse them), isolates processes and cuts the
//!   network, all per command, with nothing to clean up. Cost: an extra
//!   program to install and a few milliseconds per command (`docs/benchmarks.md`).
//! - **Landlock** (the `landlock` crate): no extra program and no namespaces, and
//!   its rules survive into every child. But it is allow-lists of paths: hiding
//!   `~/.config/teamboard` while reading the rest of `$HOME` means listing every
//!   other entry of `$HOME` at start, and anything created later is unreadable.
//!   Its network rules (ABI 4) cover TCP only, connecting to a pathname Unix
//!   socket such as boardd's lies outside its filesystem rules on the kernels
//!   teamboard runs on, and signals are scoped only from ABI 6 (Linux 6.12);
//!   without a PID namespace the command still sees other processes. It would also
//!   have to run in a forked child before `exec`, where teammated's threads make
//!   anything but async-signal-safe calls unsafe. Not used: the file tools run in
//!   teammated itself, already confined to the working directory by
//!   `teammated::tools::confine`, which is stricter than the sandbox.
//! - **A home-made namespace setup** (`unshare`, `pivot_root`, mounts by hand in
//!   the guard): the same kernel features as bubblewrap, with every ordering
//!   trap of mount propagation, `/proc` and uid maps ours to find. bubblewrap has
//!   had those reviewed for years; writing them again is not teamboard's own work.
//!
//! # Limits
//!
//! It is not a boundary against the kernel, nor against a local service that
//! starts commands for its callers (the system bus with a policy that lets the
//! user `systemd-run`, a container daemon's socket reachable on the network or
//! under `/run`). Abstract Unix sockets share the network namespace: they are cut
//! only with the network.

mod jail;
mod private;
mod probe;

pub use jail::{Jail, git_dirs};
pub use private::private_paths;
pub use probe::{Missing, bwrap, probe};
pub use teamboard_protocol::{Sandbox, SandboxMode};
