//! A full disk: boardd refuses the write it cannot persist with a `storage` error,
//! stops (fail-stop) with one clear line, and after space is freed restarts with
//! every change it had acknowledged.
//!
//! Needs root to mount a tiny tmpfs; elsewhere the test says so and passes.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "test code: a panic fails the test, and the harness captures what it prints"
)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;
use teamboard_protocol::ErrorCode;
use teamboard_testkit::{Daemon, lead, short_tempdir, task};

/// Unmounts on drop, so a failing test leaves no mount behind.
struct Mount(PathBuf);

impl Mount {
    fn tmpfs(at: &Path, size: &str) -> Option<Mount> {
        std::fs::create_dir_all(at).ok()?;
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(at)
            .status()
            .is_ok_and(|s| s.success());
        ok.then(|| Mount(at.to_path_buf()))
    }

    fn resize(&self, size: &str) {
        let status = Command::new("mount")
            .args(["-o", &format!("remount,size={size}")])
            .arg(&self.0)
            .status()
            .expect("run mount");
        assert!(status.success(), "remount failed");
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn full_disk_refuses_stops_and_loses_nothing_acknowledged() {
    if teamboard_testkit::pg::sqlite_only("a full disk under SQLite's own file") {
        return;
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: mounting a small filesystem needs root");
        return;
    }
    let dir = short_tempdir();
    let Some(mount) = Mount::tmpfs(&dir.path().join("disk"), "600k") else {
        eprintln!("skipped: cannot mount a tmpfs here");
        return;
    };
    let socket = dir.path().join("s");
    let state = mount.0.join("state");
    let mut d = Daemon::start(&socket, &state, &[]).await;

    let lead_client = lead(&socket).await;
    let mut acked = Vec::new();
    let error = loop {
        let mut t = task(format!("task {}", acked.len()));
        t.description = "x".repeat(20_000);
        match lead_client.add_task(t).await {
            Ok(t) => acked.push((t.id, t.subject)),
            Err(e) => break e,
        }
        assert!(acked.len() < 1000, "a 600 KiB disk never filled up");
    };
    assert!(!acked.is_empty(), "nothing fitted at all");
    assert_eq!(error.code(), Some(ErrorCode::Storage), "{error}");
    assert!(error.to_string().contains("full"), "{error}");

    // Fail-stop: the daemon exits non-zero and says why in one line.
    let status = d.wait_exit(Duration::from_secs(10)).await;
    assert!(
        !status.success(),
        "boardd kept running after a failed commit"
    );
    let log = d.log();
    let last = log.lines().last().unwrap_or_default();
    assert!(last.starts_with("boardd: "), "last line: {last}");
    assert!(last.contains("storage failure"), "last line: {last}");
    assert!(!log.contains("Stack backtrace"), "{log}");

    // With space again, everything that was acknowledged is there.
    mount.resize("20m");
    let d = Daemon::start(&socket, &state, &[]).await;
    let lead_client = lead(&d.socket).await;
    let tasks = lead_client.list_tasks(None).await.unwrap();
    for (id, subject) in &acked {
        assert!(
            tasks.iter().any(|t| t.id == *id && &t.subject == subject),
            "acknowledged task #{id} is missing after the restart"
        );
    }
    // And the board takes new work.
    lead_client.add_task(task("after")).await.unwrap();
}
