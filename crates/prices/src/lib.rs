//! What a model call costs, for boardd, the one program that prices: teammates
//! send the tokens and the model's label, and boardd asks [`Prices::price`].
//!
//! A price is looked up by the label as given, first match wins:
//! 1. the person's prices file (`~/.config/teamboard/prices.toml`, or the file
//!    boardd is told to read), its own `[models."LABEL"]` tables;
//! 2. the LiteLLM price file that file names (`litellm = "PATH"`);
//! 3. the catalog bundled with the `genai-prices` crate.
//!
//! ```toml
//! litellm = "model_prices_and_context_window.json"   # optional, relative to this file
//!
//! [models."openai/gpt-4o-mini"]   # dollars per million tokens
//! input = 0.15
//! output = 0.60
//! cache_read = 0.075              # optional, defaults to input
//! cache_write = 0.15              # optional, defaults to input
//! ```
//!
//! Labels are `provider/model` as teammated registers them
//! (`anthropic/claude-sonnet-4-5`), or the bare name an agent reports
//! (`claude-sonnet-4-5-20250929`, `gpt-5-codex`), each tried as given: the
//! files' names must match it exactly, while the catalog's rules also read
//! dated names. `scripted`, the offline stand-in, has no price.
//!
//! **A model with no price counts tokens only and says so; it is never priced
//! as another model.** The catalog answers a provider's label only from that
//! provider's own entries: not through its provider aliases (they match by
//! substring, so `azure-openai` would read as `openai`), and not through its
//! fallbacks (`azure/claude-sonnet-4-5` would get Anthropic's price).
//!
//! Where the prices come from, and why not elsewhere:
//! - **Typed in**, a table in this crate: prices change and models appear
//!   faster than anyone edits a table here, and a stale table prices wrong
//!   without a sign of it. Only the person's own prices are typed in, in their
//!   file, where they can see and fix them.
//! - **LiteLLM's JSON alone**: the common format and the widest list, but no
//!   crate ships it, so boardd would fetch it over the network or the project
//!   would vendor a large file and keep it current. Its keys are LiteLLM's
//!   routing names, with no rules for the dated names agents report. It stays
//!   as an import for a person who already keeps one.
//! - **genai-prices** (chosen): a maintained catalog inside a crate, no network,
//!   with matching rules for dated names, long-context tiers and price history.
//!   What it costs: a regex engine in the build, a decode of its data when
//!   boardd starts, and the provider rules above that must be held back.
//!
//! The catalog is decoded when a model is first looked up in it, not in
//! [`Prices::load`]: decoding costs a moment of CPU, and most boardd runs
//! (a scripted team, every test that starts a daemon) never price a catalog
//! model. The first priced call pays for it once. The bundled data is fixed
//! at build time and a test decodes it, so the decode cannot fail later than
//! it would at start. The prices file, which the person edits, is still read
//! in `load`, so that its mistakes stop boardd at start.

mod catalog;
mod error;
mod file;
mod rates;

#[cfg(test)]
mod tests;

use catalog::Catalog;
use file::{Origin, Table};
use std::path::{Path, PathBuf};
use teamboard_protocol::names::SCRIPTED_MODEL;
use teamboard_protocol::spend::{MicroUsd, Pricing};
use teamboard_protocol::types::TokenUsage;

pub use error::PricesError;
pub use rates::{PerMtok, Rates, Source};

/// The prices file boardd reads when it is named none:
/// `<config dir>/prices.toml` (`~/.config/teamboard/prices.toml`).
pub fn default_path() -> Option<PathBuf> {
    teamboard_protocol::paths::config_dir().map(|dir| dir.join("prices.toml"))
}

/// Every price boardd knows, loaded once.
#[derive(Debug)]
pub struct Prices {
    /// The prices file, whether or not it exists: the place unpriced models
    /// are told to be added to.
    file: Option<PathBuf>,
    table: Table,
    /// Decoded at the first call it prices, not at load: decoding takes a
    /// noticeable moment, and most boardd runs price nothing (a scripted
    /// team, a test) or only models of the file.
    catalog: std::sync::OnceLock<Catalog>,
}

impl Prices {
    /// Reads the prices file at `path`, or at [`default_path`] when `None`,
    /// and decodes the bundled catalog. A missing default file means no
    /// overrides; a missing file that was named is an error.
    pub fn load(path: Option<&Path>) -> Result<Prices, PricesError> {
        match path {
            Some(path) => Prices::load_from(Some(path.to_path_buf()), true),
            None => Prices::load_from(default_path(), false),
        }
    }

    fn load_from(file: Option<PathBuf>, required: bool) -> Result<Prices, PricesError> {
        let table = match &file {
            Some(path) => Table::read(path, required)?,
            None => Table::default(),
        };
        Ok(Prices {
            file,
            table,
            catalog: std::sync::OnceLock::new(),
        })
    }

    /// What one call to `model` cost, rounded to the micro-dollar once.
    pub fn price(&self, model: &str, tokens: &TokenUsage) -> Pricing {
        if model == SCRIPTED_MODEL {
            return Pricing::Unpriced {
                reason: "scripted is the offline stand-in, not a model: it has no price".into(),
            };
        }
        if let Some((rates, _)) = self.table.get(model) {
            return Pricing::Priced {
                usd: rates.cost(tokens),
            };
        }
        let found = match self.catalog().price(model, &catalog::usage(tokens)) {
            Ok(found) => found,
            Err(why) => {
                return Pricing::Unpriced {
                    reason: format!("no price for {model} ({why}); {}", self.add_hint(model)),
                };
            }
        };
        match MicroUsd::from_usd(found.total_price) {
            Some(usd) => Pricing::Priced { usd },
            None => Pricing::Unpriced {
                reason: format!(
                    "the bundled catalog prices {model} at {} dollars, which is no amount; {}",
                    found.total_price,
                    self.add_hint(model)
                ),
            },
        }
    }

    /// The rates `model` is priced at and where they come from, for display;
    /// `None` when it has no price ([`Prices::price`] says why). For the
    /// catalog, the rates of a call below any long-context tier.
    pub fn rates(&self, model: &str) -> Option<Rates> {
        if model == SCRIPTED_MODEL {
            return None;
        }
        if let Some((per_mtok, origin)) = self.table.get(model) {
            let source = match origin {
                Origin::File => Source::File(self.file.clone().unwrap_or_default()),
                Origin::LiteLlm => Source::LiteLlm(self.table.litellm.clone().unwrap_or_default()),
            };
            return Some(Rates {
                per_mtok: *per_mtok,
                source,
            });
        }
        self.catalog().rates(model)
    }

    fn catalog(&self) -> &Catalog {
        self.catalog.get_or_init(Catalog::bundled)
    }

    fn add_hint(&self, model: &str) -> String {
        match &self.file {
            Some(file) => format!("add [models.\"{model}\"] to {}", file.display()),
            None => format!("add [models.\"{model}\"] to a prices file"),
        }
    }
}
