//! What `/proc` says of a process: its state, parent and group, and its CPU time.

use std::time::Duration;

/// The fields of `/proc/PID/stat` that teamboard's tools look at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stat {
    pub pid: u32,
    /// The command name, at most 15 bytes (`teammated`, `sh`).
    pub comm: String,
    /// `R`, `S`, `D`, `Z` (a zombie: exited, not yet reaped), ...
    pub state: char,
    pub ppid: u32,
    /// The process group.
    pub pgrp: u32,
    /// When it started, in clock ticks after boot (field 22): with the pid, a
    /// process's identity, since a pid is reused once its process is reaped.
    pub start: u64,
    /// A zombie's exit status, as `waitpid` reports it (field 52, Linux 3.5+):
    /// read by anyone, where `waitpid` is its parent's alone.
    pub exit_code: Option<i32>,
}

impl Stat {
    /// The process `pid`, if it exists (zombies included).
    pub fn of(pid: u32) -> Option<Stat> {
        Stat::parse(
            pid,
            &std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?,
        )
    }

    /// Trap: the command name may hold spaces and parentheses, so the fields
    /// are counted from the *last* `)`.
    fn parse(pid: u32, line: &str) -> Option<Stat> {
        let (open, close) = (line.find('(')?, line.rfind(')')?);
        // Field N of the man page is `rest[N - 3]`.
        let rest: Vec<&str> = line.get(close + 1..)?.split_whitespace().collect();
        let state = rest.first()?.chars().next()?;
        Some(Stat {
            pid,
            comm: line.get(open + 1..close)?.to_string(),
            state,
            ppid: rest.get(1)?.parse().ok()?,
            pgrp: rest.get(2)?.parse().ok()?,
            start: rest.get(19)?.parse().ok()?,
            exit_code: rest
                .get(49)
                .and_then(|c| c.parse().ok())
                .filter(|_| state == 'Z'),
        })
    }

    /// How a zombie ended, in words: "killed by SIGKILL", "exited with status 1".
    pub fn exit(&self) -> Option<String> {
        let status = self.exit_code?;
        let signal = status & 0x7f;
        Some(if signal == 0 {
            format!("exited with status {}", (status >> 8) & 0xff)
        } else {
            format!("killed by {}", signal_name(signal))
        })
    }

    /// Whether it still runs: a zombie has stopped, though `kill -0` finds it.
    pub fn running(&self) -> bool {
        self.state != 'Z' && self.state != 'X'
    }
}

/// Every process there is now, zombies included.
pub fn processes() -> Vec<Stat> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(Stat::of)
        .collect()
}

/// Whether `pid` is a live process: not gone, and not a zombie.
pub fn alive(pid: u32) -> bool {
    Stat::of(pid).is_some_and(|s| s.running())
}

/// The CPU time (user + system, every thread, those that exited included) of a
/// live process, from its CPU-time clock (`clock_getcpuclockid`): nanoseconds,
/// where `/proc/PID/stat` counts 10 ms ticks, too coarse for processes that are
/// idle by design.
pub fn cpu_time(pid: u32) -> Option<Duration> {
    let pid = libc::pid_t::try_from(pid).ok()?;
    let mut clock: libc::clockid_t = 0;
    // SAFETY: both calls only write to the out-parameters passed.
    unsafe {
        if libc::clock_getcpuclockid(pid, &mut clock) != 0 {
            return None;
        }
        let mut ts: libc::timespec = std::mem::zeroed();
        if libc::clock_gettime(clock, &mut ts) != 0 {
            return None;
        }
        Some(Duration::new(
            u64::try_from(ts.tv_sec).ok()?,
            u32::try_from(ts.tv_nsec).ok()?,
        ))
    }
}

/// `SIGKILL` for the signals a process commonly dies of, the number otherwise.
pub fn signal_name(signal: i32) -> String {
    let name = match signal {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        _ => return format!("signal {signal}"),
    };
    name.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_with_spaces_and_parentheses_is_read_to_its_last_parenthesis() {
        let line = "7 (a) b (c) Z 1 7 7 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 2222120 0 0 \
                    0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 256";
        let s = Stat::parse(7, line).unwrap();
        assert_eq!(
            (s.comm.as_str(), s.state, s.ppid, s.pgrp, s.start),
            ("a) b (c", 'Z', 1, 7, 2222120)
        );
        assert_eq!(s.exit().as_deref(), Some("exited with status 1"));
        assert!(Stat::parse(7, "7 (cut").is_none());
    }

    #[test]
    fn this_process_is_alive_and_its_child_is_found_under_it() {
        let me = std::process::id();
        assert!(alive(me));
        assert!(cpu_time(me).is_some_and(|t| t > Duration::ZERO));
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        let found = processes().into_iter().find(|s| s.pid == child.id());
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(found.map(|s| (s.ppid, s.comm)), Some((me, "sleep".into())));
        assert!(!alive(child.id()));
    }

    #[test]
    fn a_zombie_says_how_it_ended_until_it_is_reaped() {
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        let before = Stat::of(child.id()).unwrap();
        assert_eq!((before.exit_code, before.exit()), (None, None));
        // SAFETY: our own unreaped child, so the pid is still its.
        unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
        let mut zombie = Stat::of(child.id()).unwrap();
        for _ in 0..500 {
            if !zombie.running() {
                break;
            }
            std::thread::sleep(Duration::from_millis(2));
            zombie = Stat::of(child.id()).unwrap();
        }
        assert_eq!(zombie.start, before.start);
        assert_eq!(zombie.exit().as_deref(), Some("killed by SIGKILL"));
        let _ = child.wait();
        assert!(Stat::of(child.id()).is_none());
    }
}
