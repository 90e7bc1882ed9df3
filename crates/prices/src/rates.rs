//! A model's rates, and what a call costs at them.

use std::fmt;
use std::path::PathBuf;
use teamboard_protocol::spend::MicroUsd;
use teamboard_protocol::types::TokenUsage;

/// Dollars per million tokens of each kind.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PerMtok {
    /// Fresh input.
    pub input: f64,
    pub output: f64,
    /// Input read from the prompt cache.
    pub cache_read: f64,
    /// Input written to the prompt cache.
    pub cache_write: f64,
}

impl PerMtok {
    /// What `tokens` cost at these rates, rounded once. The rates are never
    /// negative nor infinite (the files are checked as they are read).
    pub fn cost(&self, tokens: &TokenUsage) -> MicroUsd {
        // A dollar per million tokens is a micro-dollar per token: the sum is
        // in micro-dollars already, and rounding it is the only rounding.
        let micros = tokens.input as f64 * self.input
            + tokens.output as f64 * self.output
            + tokens.cache_read as f64 * self.cache_read
            + tokens.cache_write as f64 * self.cache_write;
        MicroUsd(micros.round() as u64)
    }
}

/// Dollars per million tokens from a price per token, to the micro-dollar:
/// `3e-6` is `3.0`, not `3.0000000000000004`.
pub(crate) fn per_mtok(usd_per_token: f64) -> f64 {
    (usd_per_token * 1e12).round() / 1e6
}

/// A model's rates and where they come from.
#[derive(Debug, Clone, PartialEq)]
pub struct Rates {
    pub per_mtok: PerMtok,
    pub source: Source,
}

/// Where a model's rates come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// The person's prices file.
    File(PathBuf),
    /// The LiteLLM price file the prices file names.
    LiteLlm(PathBuf),
    /// The catalog bundled with genai-prices: this provider's entry for this model.
    Catalog { provider: String, model: String },
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::File(path) => write!(f, "{}", path.display()),
            Source::LiteLlm(path) => write!(f, "LiteLLM file {}", path.display()),
            Source::Catalog { provider, model } => {
                write!(f, "genai-prices catalog ({provider} {model})")
            }
        }
    }
}
