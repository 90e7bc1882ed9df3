//! File descriptors: boardd raises its limit at start and serves only as many
//! connections as leave it room for its own, so that a client past the limit is
//! refused with a `reject` instead of left in the listen queue with no answer.
//!
//! Should `accept` still fail for lack of descriptors (another process's files
//! count against a system-wide limit too), the accept loop gives up a spare
//! descriptor for a moment ([`Spare`]) to take the waiting client and refuse it.

use std::fs::File;

/// Descriptors kept below the limit for boardd's own use: standard streams, the
/// database, its WAL and the lock file, the listener, the runtime's and the
/// signal handler's descriptors, the [`Spare`], and room for SQLite's temporary
/// files. About 15 are open at rest; the rest is headroom.
pub const RESERVED: usize = 32;

/// The descriptor limit after raising the soft limit as far as the hard one
/// allows (common practice for daemons: the soft limit is often a low default
/// kept for old `select()` users, which boardd is not). `None` when there is no
/// limit.
pub fn raise_limit() -> Option<u64> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes the struct it is given, which lives on this stack.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        let error = std::io::Error::last_os_error();
        tracing::debug!(%error, "cannot read the descriptor limit");
        return None;
    }
    let soft = limit.rlim_cur;
    if soft < limit.rlim_max {
        let raised = libc::rlimit {
            rlim_cur: limit.rlim_max,
            rlim_max: limit.rlim_max,
        };
        // SAFETY: setrlimit only reads the struct it is given.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
            limit.rlim_cur = limit.rlim_max;
        } else {
            // An unlimited hard limit is above what the kernel allows
            // (`fs.nr_open`): the soft limit stays.
            let error = std::io::Error::last_os_error();
            tracing::debug!(%error, soft, hard = limit.rlim_max, "cannot raise the descriptor limit");
        }
    }
    tracing::debug!(
        was = soft,
        now = limit.rlim_cur,
        hard = limit.rlim_max,
        "descriptor limit"
    );
    (limit.rlim_cur != libc::RLIM_INFINITY).then_some(limit.rlim_cur)
}

/// How many connections boardd serves at once under a descriptor `limit`: all
/// but [`RESERVED`], and at least one.
pub fn capacity(limit: Option<u64>) -> usize {
    limit.map_or(usize::MAX, |l| {
        usize::try_from(l)
            .unwrap_or(usize::MAX)
            .saturating_sub(RESERVED)
            .max(1)
    })
}

/// A descriptor held in reserve, on `/dev/null`.
#[derive(Debug)]
pub struct Spare(Option<File>);

impl Spare {
    pub fn open() -> Spare {
        Spare(File::open("/dev/null").ok())
    }

    /// Closes the spare so that one descriptor is free. False if there was none
    /// to close (it could not be opened again last time).
    pub fn release(&mut self) -> bool {
        self.0.take().is_some()
    }

    /// Opens the spare again, if it is not open.
    pub fn restore(&mut self) {
        if self.0.is_none() {
            self.0 = File::open("/dev/null").ok();
        }
    }
}

#[cfg(test)]
mod tests;
