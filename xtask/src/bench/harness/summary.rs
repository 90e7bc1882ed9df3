//! The one summary of timed samples every bench reports: nearest-rank
//! percentiles, the mean and the maximum, in milliseconds.

use serde::Serialize;
use std::time::Duration;

/// A summary of samples in milliseconds (JSON-friendly). Every bench reports
/// the same fields, whichever of them its table shows.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Summary {
    pub samples: usize,
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
    pub mean_ms: f64,
}

/// A column of a summary's line: its name and its figure.
#[derive(Clone, Copy)]
pub struct Col(&'static str, fn(&Summary) -> f64);

impl Col {
    pub const P50: Col = Col("p50", |s| s.p50_ms);
    pub const P90: Col = Col("p90", |s| s.p90_ms);
    pub const P95: Col = Col("p95", |s| s.p95_ms);
    pub const P99: Col = Col("p99", |s| s.p99_ms);
    pub const MAX: Col = Col("max", |s| s.max_ms);
}

impl Summary {
    pub fn of(mut samples: Vec<Duration>) -> Summary {
        if samples.is_empty() {
            return Summary::default();
        }
        samples.sort_unstable();
        let at = |q| ms(percentile(&samples, q));
        Summary {
            samples: samples.len(),
            p50_ms: at(0.50),
            p90_ms: at(0.90),
            p95_ms: at(0.95),
            p99_ms: at(0.99),
            max_ms: at(1.0),
            mean_ms: samples.iter().map(|d| ms(*d)).sum::<f64>() / samples.len() as f64,
        }
    }

    /// `p50 1.234 ms  p99 5.678 ms`, the figures in `cols`.
    pub fn cells(&self, cols: &[Col]) -> String {
        let cell = |Col(name, figure): &Col| format!("{name} {:>8.3} ms", figure(self));
        cols.iter().map(cell).collect::<Vec<_>>().join("  ")
    }

    /// One indented line of a bench's table: the label, then [`Summary::cells`].
    pub fn line(&self, label: &str, width: usize, cols: &[Col]) -> String {
        format!("  {label:<width$} {}", self.cells(cols))
    }
}

pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// The nearest-rank percentile of sorted samples: the smallest sample that at least
/// `q` of all samples are less than or equal to. With 200 samples, p99 is the 198th.
fn percentile(sorted: &[Duration], q: f64) -> Duration {
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// `a / b`, or `None` when there is no baseline to divide by.
pub fn ratio(a: f64, b: f64) -> Option<f64> {
    (b > 0.0).then(|| a / b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank() {
        let s = Summary::of((1..=200).rev().map(Duration::from_millis).collect());
        assert_eq!(
            (s.p50_ms, s.p90_ms, s.p99_ms, s.max_ms),
            (100.0, 180.0, 198.0, 200.0)
        );
        let s = Summary::of((1..=20).map(Duration::from_millis).collect());
        assert_eq!((s.p50_ms, s.p95_ms, s.mean_ms), (10.0, 19.0, 10.5));
        let s = Summary::of((1..=30).map(Duration::from_millis).collect());
        assert_eq!((s.p50_ms, s.p90_ms), (15.0, 27.0));
        assert_eq!(Summary::of(Vec::new()).samples, 0);
        assert_eq!(ratio(3.0, 2.0), Some(1.5));
        assert_eq!(ratio(3.0, 0.0), None);
        assert_eq!(
            s.cells(&[Col::P50, Col::MAX]),
            "p50   15.000 ms  max   30.000 ms"
        );
    }
}
