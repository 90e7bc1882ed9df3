//! Latency samples and their percentiles.

use serde::Serialize;
use std::time::Duration;

/// A summary of latency samples, in milliseconds (JSON-friendly).
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Latency {
    pub samples: usize,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
    pub mean_ms: f64,
}

impl Latency {
    pub fn from_samples(mut samples: Vec<Duration>) -> Latency {
        if samples.is_empty() {
            return Latency::default();
        }
        samples.sort_unstable();
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        let total: Duration = samples.iter().sum();
        Latency {
            samples: samples.len(),
            p50_ms: ms(percentile(&samples, 0.50)),
            p99_ms: ms(percentile(&samples, 0.99)),
            max_ms: ms(samples[samples.len() - 1]),
            mean_ms: ms(total) / samples.len() as f64,
        }
    }
}

/// The nearest-rank percentile of sorted samples: the smallest sample that at least
/// `q` of all samples are less than or equal to. With 200 samples, p99 is the 198th.
pub(super) fn percentile(sorted: &[Duration], q: f64) -> Duration {
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank() {
        let s: Vec<Duration> = (1..=200).map(Duration::from_millis).collect();
        let l = Latency::from_samples(s);
        assert_eq!(l.p50_ms, 100.0);
        assert_eq!(l.p99_ms, 198.0);
        assert_eq!(l.max_ms, 200.0);
    }
}
