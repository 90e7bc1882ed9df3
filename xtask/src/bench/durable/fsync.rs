//! (a) How fast this disk makes a small write durable: write 4 KiB, `fdatasync`,
//! repeat. Every durable acknowledgement boardd gives costs at least one of these,
//! so this rate F is the yardstick for everything else.

use crate::bench::harness::summary::Summary;
use anyhow::{Context, bail};
use serde::Serialize;
use std::fs::OpenOptions;
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::time::{Duration, Instant};

const BLOCK: usize = 4096;
/// The probe file cycles over this many blocks. SQLite's WAL is likewise a file of
/// fixed size that is overwritten from the start after each checkpoint, so the
/// steady state is overwriting allocated blocks, not growing the file.
const BLOCKS: u64 = 1024;
/// A bound on the loop besides time, in case the "disk" is memory.
const MAX_OPS: usize = 5_000_000;

#[derive(Debug, Clone, Serialize)]
pub struct FsyncResult {
    /// The filesystem the probe ran on (`ext4`, `tmpfs`, ...).
    pub filesystem: String,
    /// Write + fdatasync cycles per second, one after another.
    pub ops_per_s: f64,
    /// Summary of one fdatasync.
    pub latency: Summary,
    /// One fdatasync after each idle pause, as the wake-up phase does it; see
    /// [`measure_after_pauses`] for why it differs from `latency`.
    pub after_pause: Option<Summary>,
}

/// A probe file of `BLOCKS` allocated blocks in a fresh directory under `dir`.
///
/// Every block is written and made durable first, so the timed syncs measure data
/// syncs rather than block allocation and size updates.
pub(super) fn probe_file(
    dir: &Path,
) -> anyhow::Result<(tempfile::TempDir, std::fs::File, Vec<u8>)> {
    let tmp = tempfile::Builder::new()
        .prefix("fsync-")
        .tempdir_in(dir)
        .with_context(|| format!("cannot create a temporary directory in {}", dir.display()))?;
    let path = tmp.path().join("probe");
    let file = OpenOptions::new()
        .create_new(true)
        .read(true)
        .write(true)
        .open(&path)
        .with_context(|| format!("cannot create {}", path.display()))?;
    let block = vec![0xA5u8; BLOCK];
    for i in 0..BLOCKS {
        file.write_all_at(&block, i * BLOCK as u64)?;
    }
    file.sync_all()?;
    Ok((tmp, file, block))
}

/// Overwrites block `i` (modulo the file) and times its fdatasync.
pub(super) fn write_and_sync(
    file: &std::fs::File,
    block: &[u8],
    i: u64,
) -> anyhow::Result<Duration> {
    file.write_all_at(block, (i % BLOCKS) * BLOCK as u64)?;
    let t = Instant::now();
    // SAFETY: the descriptor belongs to `file`, which is alive for the call.
    let rc = unsafe { libc::fdatasync(file.as_raw_fd()) };
    let took = t.elapsed();
    if rc != 0 {
        bail!("fdatasync failed: {}", std::io::Error::last_os_error());
    }
    Ok(took)
}

/// fdatasync latency when the machine was idle just before: `samples` times, sleep
/// `pause`, overwrite a 4 KiB block, fdatasync.
///
/// The wake-up phase measures exactly this situation (a parked waiter, an idle
/// daemon, then one task). On virtual machines a sync issued from idle is slower and
/// far more variable than one in a tight loop (figures in `docs/benchmarks.md`).
/// Printed next to the wake-up figure, it shows how much of that figure is the disk
/// alone.
pub fn measure_after_pauses(
    dir: &Path,
    samples: usize,
    pause: Duration,
) -> anyhow::Result<Summary> {
    let (_tmp, file, block) = probe_file(dir)?;
    let mut out = Vec::with_capacity(samples);
    for i in 0..samples as u64 {
        std::thread::sleep(pause);
        out.push(write_and_sync(&file, &block, i)?);
    }
    Ok(Summary::of(out))
}

/// Runs the probe in `dir` for about `duration`.
pub fn measure(dir: &Path, duration: Duration) -> anyhow::Result<FsyncResult> {
    let (_tmp, file, block) = probe_file(dir)?;
    let mut samples = Vec::with_capacity(64 * 1024);
    let start = Instant::now();
    let mut i = 0u64;
    while start.elapsed() < duration && samples.len() < MAX_OPS {
        samples.push(write_and_sync(&file, &block, i)?);
        i += 1;
    }
    let elapsed = start.elapsed().as_secs_f64();
    Ok(FsyncResult {
        filesystem: filesystem_name(dir),
        ops_per_s: samples.len() as f64 / elapsed,
        latency: Summary::of(samples),
        after_pause: None,
    })
}

/// The filesystem type of `dir`, by its statfs magic number.
pub fn filesystem_name(dir: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(dir.as_os_str().as_bytes()) else {
        return "unknown".into();
    };
    // SAFETY: statfs is plain data, for which all zeroes is a valid value.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: statfs only writes into the struct we pass; `c` is a valid C string.
    if unsafe { libc::statfs(c.as_ptr(), &mut st) } != 0 {
        return "unknown".into();
    }
    // f_type's width differs between platforms; the magic numbers fit in 32 bits.
    match st.f_type as u64 & 0xffff_ffff {
        0xEF53 => "ext4".into(),
        0x5846_5342 => "xfs".into(),
        0x9123_683E => "btrfs".into(),
        0x0102_1994 => "tmpfs".into(),
        0x794C_7630 => "overlayfs".into(),
        0x2FC1_2FC1 => "zfs".into(),
        0xF2F5_2010 => "f2fs".into(),
        0x6969 => "nfs".into(),
        other => format!("0x{other:x}"),
    }
}
