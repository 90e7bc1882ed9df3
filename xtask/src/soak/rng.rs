//! The soak's random choices come from its seed (`fastrand`, seeded), so a
//! failing run can be repeated with the same task graph, edits and kill order.
//! (Timing still varies from run to run.)

pub use fastrand::Rng;

/// A generator for one purpose, derived from the run's seed and a few numbers
/// that name the purpose (a task, an epoch, a worker).
pub fn derive(seed: u64, parts: &[u64]) -> Rng {
    let mut r = Rng::with_seed(seed);
    for p in parts {
        r = Rng::with_seed(r.u64(..) ^ p.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    }
    r
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
    fn the_same_seed_gives_the_same_choices_and_another_purpose_others() {
        assert_eq!(derive(7, &[1, 2]).u64(..), derive(7, &[1, 2]).u64(..));
        assert_ne!(derive(7, &[1, 2]).u64(..), derive(7, &[1, 3]).u64(..));
        assert_ne!(hash_str("w1"), hash_str("w2"));
    }
}
