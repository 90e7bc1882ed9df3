//! A small deterministic random generator (SplitMix64): the soak's choices come
//! from its seed, so a failing run can be repeated with the same task graph,
//! edits and kill order. (Timing still varies from run to run.)

/// SplitMix64: fast, tiny, and good enough to pick tasks, lines and victims.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// A generator for one purpose, derived from the run's seed and a few
    /// numbers that name the purpose (a task, an epoch, a worker).
    pub fn derive(seed: u64, parts: &[u64]) -> Rng {
        let mut r = Rng::new(seed);
        for p in parts {
            let x = r.next_u64();
            r = Rng(x ^ p.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        }
        r
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }

    /// Uniform in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }

    /// Uniform in `lo..=hi`.
    pub fn between(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next_u64() % (hi.saturating_sub(lo) + 1)
    }
}

/// A name for a string, for deriving generators from names.
pub fn hash_str(s: &str) -> u64 {
    // FNV-1a: stable across builds, unlike `DefaultHasher`.
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_gives_the_same_choices_and_another_seed_others() {
        let a: Vec<u64> = (0..5).map(|_| Rng::new(7).next_u64()).collect();
        assert!(a.windows(2).all(|w| w[0] == w[1]));
        let mut x = Rng::derive(7, &[1, 2]);
        let mut y = Rng::derive(7, &[1, 3]);
        assert_ne!(x.next_u64(), y.next_u64());
        let mut r = Rng::new(1);
        for _ in 0..1000 {
            assert!(r.below(3) < 3);
            let u = r.unit();
            assert!((0.0..1.0).contains(&u));
            assert!((2..=4).contains(&r.between(2, 4)));
        }
    }
}
