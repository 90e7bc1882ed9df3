//! A teammate that claims a task, opens its worktree, leaves uncommitted work
//! there and then waits to be killed: the stand-in for a teammated that dies
//! in the middle of a task, for the tests that the next owner finds the work.
//!
//! Usage: `worktree-teammate SOCKET NAME TASK [PATH=CONTENT]...`. Registers as
//! NAME, claims TASK, opens its worktree, writes each PATH (relative to the
//! worktree, parent directories created) with CONTENT, prints
//! `opened EPOCH WORKTREE` on stdout and then holds its session open, reading
//! nothing, until it is killed.

#![allow(
    clippy::print_stderr,
    reason = "a stand-in for tests: stderr is its log"
)]

use std::io::Write as _;
use std::path::Path;
use std::process::ExitCode;
use teamboard_protocol::Client;

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let [_, socket, name, task, files @ ..] = args.as_slice() else {
        eprintln!("usage: worktree-teammate SOCKET NAME TASK [PATH=CONTENT]...");
        return ExitCode::from(2);
    };
    match run(socket, name, task, files).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("worktree-teammate {name}: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(socket: &str, name: &str, task: &str, files: &[String]) -> Result<(), String> {
    let task: u64 = task
        .parse()
        .map_err(|_| format!("TASK must be a task id, not {task:?}"))?;
    let client = Client::connect(
        Path::new(socket),
        "worktree-teammate",
        name,
        teamboard_protocol::DEFAULT_TEAM,
        teamboard_protocol::lead_key::lead_key(None).ok().as_ref(),
    )
    .await
    .map_err(|e| format!("cannot connect: {e}"))?;
    client
        .register("coder", Some(std::process::id()))
        .await
        .map_err(|e| format!("cannot register: {e}"))?;
    let claim = client
        .claim_task(task)
        .await
        .map_err(|e| format!("cannot claim #{task}: {e}"))?;
    let opened = client
        .open_worktree(task, claim.epoch)
        .await
        .map_err(|e| format!("cannot open the worktree of #{task}: {e}"))?;
    let root = Path::new(&opened.worktree.path);
    for file in files {
        let (path, content) = file
            .split_once('=')
            .ok_or_else(|| format!("expected PATH=CONTENT, got {file:?}"))?;
        let path = root.join(path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
        }
        std::fs::write(&path, content)
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    let mut out = std::io::stdout();
    writeln!(out, "opened {} {}", claim.epoch, root.display())
        .and_then(|()| out.flush())
        .map_err(|e| format!("cannot write to stdout: {e}"))?;
    // Holds the claim (and its connection) until it is killed.
    std::future::pending::<()>().await;
    Ok(())
}
