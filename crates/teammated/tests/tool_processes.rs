//! Every process a teammate's tools start dies with the teammate: real `teammated`
//! processes run `sh` blocks (scripted model) that leave children and grandchildren
//! behind, and the teammate is then killed, stopped or loses its claim.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "test code: a panic fails the test, and the harness captures what it prints"
)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use teamboard_protocol::{EventKind, TaskStatus};
use teamboard_testkit::{Board, PATIENCE, alive, eventually};

/// The binary under test, built by cargo for this package's tests.
const TEAMMATED: &str = env!("CARGO_BIN_EXE_teammated");

/// These tests follow the guard by the pids the commands write, which in the
/// sandbox are those of its own PID namespace: they run unsandboxed.
/// `tests/sandbox.rs` shows a sandboxed command dying with its teammate.
const UNSANDBOXED: [&str; 2] = ["--sandbox", "off"];

/// How long the tool processes may take to go once their teammate is gone. The
/// guard kills them within milliseconds; the margin is for a loaded CI machine.
const GONE_WITHIN: Duration = Duration::from_secs(1);

fn script(lines: &str) -> String {
    format!("Run this.\n```sh\n{lines}\n```\n")
}

/// The pid files a long block writes: the shell itself, a `sleep` it runs in the
/// background, and a grandchild (`sh -c` that execs `sleep`).
struct Pids {
    files: [PathBuf; 3],
}

impl Pids {
    fn new(dir: &Path, tag: &str) -> Pids {
        Pids {
            files: ["shell", "child", "grandchild"].map(|f| dir.join(format!("{tag}-{f}.pid"))),
        }
    }

    /// A block that writes the three pids and then runs for 30 s, unless `done`
    /// exists: then it finishes at once (the second attempt).
    fn block(&self, done: &Path) -> String {
        let [shell, child, grand] = &self.files;
        script(&format!(
            "if [ -e {done} ]; then echo second-attempt; exit 0; fi\n\
             touch {done}\n\
             echo $$ > {shell}.tmp && mv {shell}.tmp {shell}\n\
             sh -c 'echo $$ > {grand}.tmp && mv {grand}.tmp {grand}; exec sleep 30' &\n\
             sleep 30 &\n\
             echo $! > {child}.tmp && mv {child}.tmp {child}\n\
             wait",
            done = done.display(),
            shell = shell.display(),
            child = child.display(),
            grand = grand.display(),
        ))
    }

    /// Waits until all three pids are written, and returns them.
    async fn read(&self) -> Vec<u32> {
        eventually("the block to write its pids", PATIENCE, || async {
            self.files
                .iter()
                .map(|f| std::fs::read_to_string(f).ok()?.trim().parse().ok())
                .collect::<Option<Vec<u32>>>()
        })
        .await
    }
}

/// Waits until none of `pids` runs any more; returns how long that took.
async fn gone(pids: &[u32], since: Instant) -> Duration {
    let what = format!("the tool processes {pids:?} to die");
    eventually(what, GONE_WITHIN, || async {
        pids.iter().all(|p| !alive(*p)).then_some(())
    })
    .await;
    since.elapsed()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_teammates_commands_die_with_it_so_the_task_never_runs_twice_at_once() {
    let mut board = Board::start(TEAMMATED).await;
    let alice = board.spawn("alice", "dev", &UNSANDBOXED);
    board.wait_idle("alice").await;
    let pids = Pids::new(board.dir(), "t");
    let done = board.dir().join("first-attempt-started");
    let t = board.add("long job", &pids.block(&done), &[]).await;
    assert_eq!(board.wait_claimed(t.id).await, "alice");
    let running = pids.read().await;
    assert!(running.iter().all(|p| alive(*p)), "{running:?}");
    let _bob = board.spawn("bob", "dev", &UNSANDBOXED);
    board.wait_idle("bob").await;

    let killed = Instant::now();
    alice.kill9();
    let took = gone(&running, killed).await;
    eprintln!("tool processes gone {took:?} after kill -9 of their teammate");

    // The task goes to bob, and nothing of alice's attempt is left running.
    assert_eq!(board.wait_claimed(t.id).await, "bob");
    assert!(running.iter().all(|p| !alive(*p)), "{running:?}");
    board.wait_done(&[t.id]).await;
    let task = board.task(t.id).await;
    assert_eq!(task.status, TaskStatus::Completed, "{task:#?}");
    assert_eq!(task.result.as_deref(), Some("second-attempt"), "{task:#?}");
    board.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_teammate_stopped_by_sigterm_takes_its_commands_with_it() {
    let mut board = Board::start(TEAMMATED).await;
    let mut alice = board.spawn("alice", "dev", &UNSANDBOXED);
    board.wait_idle("alice").await;
    // First a finished command that left a background job behind...
    let server_pid = board.dir().join("server.pid");
    let server = board
        .add("start a server", &server_block(&server_pid), &[])
        .await;
    board.wait_done(&[server.id]).await;
    let server = read_pid(&server_pid).await;
    // ...then a command still running when the signal comes.
    let pids = Pids::new(board.dir(), "t");
    let t = board
        .add("long job", &pids.block(&board.dir().join("started")), &[])
        .await;
    board.wait_claimed(t.id).await;
    let mut running = pids.read().await;
    running.push(server);
    assert!(running.iter().all(|p| alive(*p)), "{running:?}");
    // SAFETY: kill(2) on our own unreaped child.
    unsafe {
        libc::kill(alice.pid() as i32, libc::SIGTERM);
    }
    board
        .wait_for("the task to be given back", |e| {
            e.kind == EventKind::TaskReleased && e.task == Some(t.id)
        })
        .await;
    // Gone by the time boardd hears the task is given back (someone else may
    // claim it then), not merely some time later.
    let left: Vec<u32> = running.iter().copied().filter(|p| alive(*p)).collect();
    assert!(left.is_empty(), "still running at the release: {left:?}");
    assert_eq!(alice.exit_code().await, Some(0), "{}", alice.log_text());
    board.stop().await;
}

/// A block that starts a background "server" (writing its pid) and ends at once.
fn server_block(pid_file: &Path) -> String {
    script(&format!(
        "sh -c 'echo $$ > {p}.tmp && mv {p}.tmp {p}; exec sleep 30' > /dev/null 2>&1 &\necho started",
        p = pid_file.display()
    ))
}

async fn read_pid(file: &Path) -> u32 {
    eventually("a pid file", PATIENCE, || async {
        std::fs::read_to_string(file).ok()?.trim().parse().ok()
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn background_jobs_of_a_finished_command_die_when_the_teammate_is_killed() {
    let mut board = Board::start(TEAMMATED).await;
    let alice = board.spawn("alice", "dev", &UNSANDBOXED);
    board.wait_idle("alice").await;
    let pid_file = board.dir().join("server.pid");
    // The block ends at once; its background job (a "server") stays behind, as
    // it should while its teammate lives.
    let t = board
        .add("start a server", &server_block(&pid_file), &[])
        .await;
    board.wait_done(&[t.id]).await;
    assert_eq!(board.task(t.id).await.status, TaskStatus::Completed);
    let server = read_pid(&pid_file).await;
    assert!(alive(server), "the background job ended with its command");
    let killed = Instant::now();
    alice.kill9();
    let took = gone(&[server], killed).await;
    eprintln!("background job gone {took:?} after kill -9 of its teammate");
    board.stop().await;
}

/// A failed attempt may be claimed by someone else the moment boardd records it:
/// the background jobs of its commands are gone before that.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_attempts_background_jobs_are_gone_before_the_failure_is_recorded() {
    let mut board = Board::start(TEAMMATED).await;
    let _alice = board.spawn("alice", "dev", &UNSANDBOXED);
    board.wait_idle("alice").await;
    let pid_file = board.dir().join("server.pid");
    // The server starts, and the block then fails: the attempt ends failed.
    let block = script(&format!(
        "sh -c 'echo $$ > {p}.tmp && mv {p}.tmp {p}; exec sleep 30' > /dev/null 2>&1 &\n\
         while [ ! -e {p} ]; do sleep 0.01; done\n\
         exit 3",
        p = pid_file.display()
    ));
    let t = board
        .add("fails after starting a server", &block, &[])
        .await;
    board
        .wait_for("the failed attempt", |e| {
            e.task == Some(t.id)
                && matches!(e.kind, EventKind::TaskReleased | EventKind::TaskFailed)
        })
        .await;
    let server = read_pid(&pid_file).await;
    assert!(
        !alive(server),
        "the failed attempt's server still runs when boardd records the failure"
    );
    board.stop().await;
}
