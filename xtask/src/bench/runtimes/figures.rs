//! Samples of a time and their summary, and ratios against a baseline.

use crate::bench::stats::percentile;
use serde::Serialize;
use std::time::Duration;

/// Times in milliseconds (nearest-rank percentiles).
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Summary {
    pub samples: usize,
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub mean_ms: f64,
    pub max_ms: f64,
}

impl Summary {
    pub fn of(mut samples: Vec<Duration>) -> Summary {
        if samples.is_empty() {
            return Summary::default();
        }
        samples.sort_unstable();
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        Summary {
            samples: samples.len(),
            p50_ms: ms(percentile(&samples, 0.50)),
            p95_ms: ms(percentile(&samples, 0.95)),
            mean_ms: samples.iter().map(|d| ms(*d)).sum::<f64>() / samples.len() as f64,
            max_ms: ms(samples[samples.len() - 1]),
        }
    }
}

/// `a / b`, or `None` when there is no baseline to divide by.
pub fn ratio(a: f64, b: f64) -> Option<f64> {
    (b > 0.0).then(|| a / b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_nearest_rank() {
        let s = Summary::of((1..=20).map(Duration::from_millis).collect());
        assert_eq!((s.p50_ms, s.p95_ms, s.max_ms), (10.0, 19.0, 20.0));
        assert_eq!(s.mean_ms, 10.5);
        assert_eq!(Summary::of(Vec::new()).samples, 0);
        assert_eq!(ratio(3.0, 2.0), Some(1.5));
        assert_eq!(ratio(3.0, 0.0), None);
    }
}
