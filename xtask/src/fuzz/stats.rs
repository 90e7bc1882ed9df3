//! What a libFuzzer run printed, read back: its final figures and the crash
//! it wrote, if any.

use std::path::PathBuf;

/// The figures of one run.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Stats {
    /// Inputs run (`stat::number_of_executed_units`, else the last `#N`).
    pub executions: Option<u64>,
    pub exec_per_sec: Option<u64>,
    /// Edges covered (`cov:`) and features (`ft:`) at the last status line.
    pub coverage: Option<u64>,
    pub features: Option<u64>,
    /// The input that crashed it, as libFuzzer wrote it.
    pub crash: Option<PathBuf>,
    /// The panic's message, when it was one.
    pub panic: Option<String>,
}

/// Reads libFuzzer's stderr: its status lines (`#N ... cov: C ft: F ...
/// exec/s: E`), the `-print_final_stats=1` lines and the crash's file.
pub fn read(output: &str) -> Stats {
    let mut s = Stats::default();
    for line in output.lines() {
        let line = line.trim();
        if let Some(rest) = line.strip_prefix('#') {
            let mut words = rest.split_whitespace();
            if let Some(n) = words.next().and_then(|n| n.parse().ok()) {
                s.executions = Some(n);
            }
            s.coverage = field(line, "cov:").or(s.coverage);
            s.features = field(line, "ft:").or(s.features);
            s.exec_per_sec = field(line, "exec/s:").or(s.exec_per_sec);
        } else if let Some(n) = stat(line, "stat::number_of_executed_units:") {
            s.executions = Some(n);
        } else if let Some(n) = stat(line, "stat::average_exec_per_sec:") {
            s.exec_per_sec = Some(n);
        } else if let Some(path) = line
            .split_once("Test unit written to ")
            .map(|(_, p)| p.trim())
        {
            s.crash = Some(PathBuf::from(path));
        } else if line.starts_with("thread '") && line.contains("panicked at") {
            s.panic = Some(line.to_string());
        }
    }
    s
}

/// The number after `key` on a status line.
fn field(line: &str, key: &str) -> Option<u64> {
    let mut words = line.split_whitespace();
    words.find(|w| *w == key)?;
    words.next()?.parse().ok()
}

fn stat(line: &str, key: &str) -> Option<u64> {
    line.strip_prefix(key)?.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clean_run_gives_its_final_figures() {
        let out = "INFO: Seed: 1\n\
            #2\tINITED cov: 120 ft: 130 corp: 5/1024b exec/s: 0 rss: 40Mb\n\
            #65536\tpulse  cov: 410 ft: 900 corp: 60/9Kb lim: 200 exec/s: 21845 rss: 60Mb\n\
            #1234567\tDONE   cov: 432 ft: 1001 corp: 77/12Kb lim: 4096 exec/s: 4115 rss: 71Mb\n\
            Done 1234567 runs in 300 second(s)\n\
            stat::number_of_executed_units: 1234568\n\
            stat::average_exec_per_sec:     4115\n\
            stat::new_units_added:          72\n\
            stat::slowest_unit_time_sec:    0\n\
            stat::peak_rss_mb:              71\n";
        let s = read(out);
        assert_eq!(s.executions, Some(1_234_568));
        assert_eq!(s.exec_per_sec, Some(4115));
        assert_eq!((s.coverage, s.features), (Some(432), Some(1001)));
        assert_eq!((s.crash, s.panic), (None, None));
    }

    #[test]
    fn a_crash_names_its_input_and_its_panic() {
        let out = "#512\tNEW    cov: 90 ft: 95 corp: 7/70b lim: 4 exec/s: 0 rss: 30Mb L: 3/4 MS: 1 ChangeBit-\n\
            thread '<unnamed>' panicked at crates/x/src/lib.rs:3:5:\n\
            index out of bounds\n\
            ==4242== ERROR: libFuzzer: deadly signal\n\
            artifact_prefix='/w/fuzz/artifacts/acp/'; Test unit written to /w/fuzz/artifacts/acp/crash-0a1b\n";
        let s = read(out);
        assert_eq!(s.executions, Some(512));
        assert_eq!(
            s.crash,
            Some(PathBuf::from("/w/fuzz/artifacts/acp/crash-0a1b"))
        );
        assert_eq!(
            s.panic.as_deref(),
            Some("thread '<unnamed>' panicked at crates/x/src/lib.rs:3:5:")
        );
    }
}
