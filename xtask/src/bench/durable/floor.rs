//! The floor under the wake-up figure: the least that any daemon on this machine
//! can do to give a durable answer to a client that was idle.
//!
//! A child process (`xtask bench-floor`) waits on a Unix socket. After the same
//! pause as the wake-up phase, the bench sends it one byte. The child overwrites
//! 4 KiB of a file, fdatasyncs it, and answers with one byte. There is no SQLite,
//! no JSON and no async runtime, only blocking system calls: one wake-up of the
//! child, one fdatasync after idle, one wake-up of the bench. The same exchange
//! without the write shows what the two wake-ups alone cost.
//!
//! A wake-up through boardd cannot be faster than this floor, so the difference
//! between the two is what boardd itself adds. Where the floor alone is above the
//! wake-up target, the target cannot be met on this machine by any design that
//! makes the task durable before it answers.

use super::fsync;
use crate::bench::harness::board::Scratch;
use crate::bench::harness::summary::Summary;
use anyhow::{Context, bail};
use serde::Serialize;
use std::io::{Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The byte that asks the child for a write and an fdatasync before it answers.
const SYNC: u8 = b's';
/// The byte that asks for an answer straight away.
const ECHO: u8 = b'e';
/// How long the bench waits for the child to connect or to answer.
const TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Debug, Clone, Serialize)]
pub struct FloorResult {
    /// One byte to the child and back, with a 4 KiB write and fdatasync between.
    pub durable_rtt: Summary,
    /// One byte to the child and back.
    pub rtt: Summary,
}

/// Kills the child on every way out of [`measure`].
struct Reaper(Child);

impl Drop for Reaper {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Takes `samples` samples of each kind, alternating, each after `pause`.
pub fn measure(
    xtask: &Path,
    run: &Scratch,
    samples: usize,
    pause: Duration,
) -> anyhow::Result<FloorResult> {
    let tmp = tempfile::Builder::new()
        .prefix("floor-")
        .tempdir_in(run.path())?;
    let socket = run.socket("floor.sock");
    let listener =
        UnixListener::bind(&socket).with_context(|| format!("cannot bind {}", socket.display()))?;
    let mut child = Reaper(
        Command::new(xtask)
            .arg("bench-floor")
            .arg("--socket")
            .arg(&socket)
            .arg("--dir")
            .arg(tmp.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .context("cannot start the floor child process")?,
    );
    let mut conn = accept(&listener, &mut child.0)?;
    conn.set_read_timeout(Some(TIMEOUT))?;
    let (mut durable, mut plain) = (Vec::with_capacity(samples), Vec::with_capacity(samples));
    for _ in 0..samples {
        for (byte, out) in [(SYNC, &mut durable), (ECHO, &mut plain)] {
            std::thread::sleep(pause);
            let t = Instant::now();
            conn.write_all(&[byte])?;
            let mut answer = [0u8];
            conn.read_exact(&mut answer)
                .context("the floor child did not answer")?;
            out.push(t.elapsed());
            if answer[0] != byte {
                bail!("the floor child answered {:?} to {:?}", answer[0], byte);
            }
        }
    }
    Ok(FloorResult {
        durable_rtt: Summary::of(durable),
        rtt: Summary::of(plain),
    })
}

/// Waits for the child to connect, or to die trying.
fn accept(listener: &UnixListener, child: &mut Child) -> anyhow::Result<UnixStream> {
    listener.set_nonblocking(true)?;
    let started = Instant::now();
    loop {
        match listener.accept() {
            Ok((conn, _)) => {
                conn.set_nonblocking(false)?;
                return Ok(conn);
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) => return Err(e).context("accepting the floor child"),
        }
        if let Some(status) = child.try_wait()? {
            bail!("the floor child exited before connecting: {status}");
        }
        if started.elapsed() > TIMEOUT {
            bail!("the floor child did not connect within {TIMEOUT:?}");
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// `xtask bench-floor`: the child. Answers each byte until the bench hangs up.
pub fn child(socket: &Path, dir: &Path) -> anyhow::Result<()> {
    let (_tmp, file, block) = fsync::probe_file(dir)?;
    let mut conn = UnixStream::connect(socket)
        .with_context(|| format!("cannot connect to {}", socket.display()))?;
    let mut synced = 0u64;
    loop {
        let mut byte = [0u8];
        match conn.read_exact(&mut byte) {
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(()),
            r => r?,
        }
        if byte[0] == SYNC {
            fsync::write_and_sync(&file, &block, synced)?;
            synced += 1;
        }
        conn.write_all(&byte)?;
    }
}
