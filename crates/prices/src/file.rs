//! The person's prices file, and the LiteLLM file it may name, read into one
//! table by model label. The file's own models are put in last, so that they
//! win over the LiteLLM file's.
//!
//! Both files are checked as they are parsed ([`Dollars`]), so that a bad
//! price is reported by the parser, with its line and column, rather than
//! after it by a check that no longer knows where the value was.

use crate::error::PricesError;
use crate::rates::{PerMtok, per_mtok};
use serde::{Deserialize, Deserializer};
use std::collections::HashMap;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

/// Where a row of the table was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Origin {
    File,
    LiteLlm,
}

#[derive(Debug, Default)]
pub(crate) struct Table {
    rows: HashMap<String, (PerMtok, Origin)>,
    /// The LiteLLM file the prices file names, resolved against its folder.
    pub(crate) litellm: Option<PathBuf>,
}

impl Table {
    /// Reads the prices file at `path`. A missing file is an empty table
    /// unless `required`.
    pub(crate) fn read(path: &Path, required: bool) -> Result<Table, PricesError> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if !required && e.kind() == ErrorKind::NotFound => return Ok(Table::default()),
            Err(source) => {
                return Err(PricesError::Read {
                    path: path.into(),
                    source,
                });
            }
        };
        let file: PricesFile = toml::from_str(&text).map_err(|source| PricesError::Toml {
            path: path.into(),
            source,
        })?;
        let mut table = Table::default();
        if let Some(litellm) = file.litellm {
            // An absolute path replaces the folder in `join`.
            let litellm = path.parent().unwrap_or(Path::new("")).join(litellm);
            table.import_litellm(&litellm, path)?;
            table.litellm = Some(litellm);
        }
        for (label, model) in file.models {
            let input = model.input.0;
            let rates = PerMtok {
                input,
                output: model.output.0,
                cache_read: model.cache_read.map_or(input, |d| d.0),
                cache_write: model.cache_write.map_or(input, |d| d.0),
            };
            table.rows.insert(label, (rates, Origin::File));
        }
        Ok(table)
    }

    pub(crate) fn get(&self, label: &str) -> Option<&(PerMtok, Origin)> {
        self.rows.get(label)
    }

    fn import_litellm(&mut self, path: &Path, named_in: &Path) -> Result<(), PricesError> {
        let bytes = std::fs::read(path).map_err(|source| PricesError::LiteLlmRead {
            path: path.into(),
            named_in: named_in.into(),
            source,
        })?;
        let entries: HashMap<String, LiteLlmEntry> =
            serde_json::from_slice(&bytes).map_err(|source| PricesError::LiteLlm {
                path: path.into(),
                source,
            })?;
        for (key, entry) in entries {
            // Models priced by the image, the second or the call have no
            // token prices; `sample_spec` documents the format with zeros.
            let (Some(input), Some(output)) =
                (entry.input_cost_per_token, entry.output_cost_per_token)
            else {
                continue;
            };
            if key == "sample_spec" {
                continue;
            }
            let input = per_mtok(input.0);
            let rates = PerMtok {
                input,
                output: per_mtok(output.0),
                cache_read: entry
                    .cache_read_input_token_cost
                    .map_or(input, |d| per_mtok(d.0)),
                cache_write: entry
                    .cache_creation_input_token_cost
                    .map_or(input, |d| per_mtok(d.0)),
            };
            // LiteLLM keys the big providers' models by their bare names
            // (`gpt-4o-mini`, provider `openai`), which teammated labels
            // `openai/gpt-4o-mini`. The key as written wins over one made so.
            if let Some(provider) = entry.litellm_provider
                && !key.starts_with(&format!("{provider}/"))
            {
                self.rows
                    .entry(format!("{provider}/{key}"))
                    .or_insert((rates, Origin::LiteLlm));
            }
            self.rows.insert(key, (rates, Origin::LiteLlm));
        }
        Ok(())
    }
}

/// `prices.toml`. Unknown keys are refused, so that a misspelt `cache_raed`
/// is an error and not a price silently left at its default.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PricesFile {
    #[serde(default)]
    models: HashMap<String, ModelPrices>,
    litellm: Option<PathBuf>,
}

/// One model's prices, in dollars per million tokens.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ModelPrices {
    input: Dollars,
    output: Dollars,
    cache_read: Option<Dollars>,
    cache_write: Option<Dollars>,
}

/// One model in LiteLLM's `model_prices_and_context_window.json`, in dollars
/// per token; the many other fields are left unread, long-context prices
/// (`*_above_200k_tokens`) among them, so a call is priced at the base rates.
#[derive(Deserialize)]
struct LiteLlmEntry {
    input_cost_per_token: Option<Dollars>,
    output_cost_per_token: Option<Dollars>,
    cache_read_input_token_cost: Option<Dollars>,
    cache_creation_input_token_cost: Option<Dollars>,
    litellm_provider: Option<String>,
}

/// An amount of dollars: finite and not negative.
struct Dollars(f64);

impl<'de> Deserialize<'de> for Dollars {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let usd = f64::deserialize(deserializer)?;
        if usd.is_finite() && usd >= 0.0 {
            Ok(Dollars(usd))
        } else {
            Err(serde::de::Error::custom(format!(
                "a price is a number of dollars, 0 or more, not {usd}"
            )))
        }
    }
}
