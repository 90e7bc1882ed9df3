//! The catalog bundled with genai-prices, held to the provider a label names.
//!
//! genai-prices answers more than teamboard may take. Given a provider, it
//! finds it by id or by an alias rule that matches by substring, and when none
//! of the provider's models match it tries the models of its "fallback"
//! providers (Azure falls back to OpenAI and Anthropic, Google to Anthropic),
//! and reports the price under the provider that was asked. So a label's
//! provider is looked up by its exact id here, and an answer counts only when
//! the model it matched is one of that provider's own. A bare name (an
//! agent's `claude-sonnet-4-5-20250929`) goes to the provider the catalog's
//! rules choose for it, and is held to that provider the same way.
//!
//! The model's id alone does not tell a fallback apart when both providers
//! have a model of that id (`ada` is Azure's and OpenAI's, with different
//! rules and prices). For such an id the answer is confirmed by pricing the id
//! itself under the provider: it must be the same model at the same price. So
//! the price is always the named provider's own entry's, though the name may
//! have been read by another provider's rule (`azure/o3-mini-high` is priced
//! as Azure's `o3-mini`, which only OpenAI's rules say it is). This rests on
//! every model of a provider that has fallbacks matching its own id, which
//! holds for the bundled data; the test
//! `catalog_models_of_a_fallback_provider_match_their_own_ids` keeps it.

use crate::rates::{PerMtok, Rates, Source, per_mtok};
use genai_prices::{Calculator, ErrorKind, PriceCalculation, PriceRequest, Usage, UsageKey};
use std::collections::HashMap;
use std::fmt;
use std::time::SystemTime;
use teamboard_protocol::types::TokenUsage;

pub(crate) struct Catalog {
    calculator: &'static Calculator,
    /// The providers that have a model of each id.
    owners: HashMap<&'static str, Vec<&'static str>>,
}

impl fmt::Debug for Catalog {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.calculator.fmt(f)
    }
}

/// genai-prices' usage for `tokens`.
///
/// Its `input_tokens` is every input token, cached ones included: cache reads
/// and writes are kinds of input, priced apart from what is left. teamboard's
/// `input` is the fresh part only, so the catalog is given `all_input()`.
pub(crate) fn usage(tokens: &TokenUsage) -> Usage {
    Usage::from([
        (UsageKey::INPUT_TOKENS, tokens.all_input() as f64),
        (UsageKey::CACHE_READ_TOKENS, tokens.cache_read as f64),
        (UsageKey::CACHE_WRITE_TOKENS, tokens.cache_write as f64),
        (UsageKey::OUTPUT_TOKENS, tokens.output as f64),
    ])
}

impl Catalog {
    /// Decodes the bundled data (once per process).
    pub(crate) fn bundled() -> Catalog {
        let calculator = Calculator::bundled();
        let mut owners: HashMap<&str, Vec<&str>> = HashMap::new();
        for provider in calculator.providers() {
            for model in provider.models() {
                owners.entry(model.id()).or_default().push(provider.id());
            }
        }
        Catalog { calculator, owners }
    }

    /// What `usage` of `label` costs by its provider's own entry, or why the
    /// catalog has none, in words to put after "no price for LABEL".
    pub(crate) fn price(&self, label: &str, usage: &Usage) -> Result<PriceCalculation, String> {
        let (provider, model) = match label.split_once('/') {
            Some((provider, model)) => (Some(provider.to_ascii_lowercase()), model),
            None => (None, label),
        };
        let now = SystemTime::now();
        let mut request = PriceRequest::new(model, usage).with_timestamp(now);
        if let Some(provider) = &provider {
            if !self.calculator.providers().any(|p| p.id() == provider) {
                return Err(format!("the bundled catalog has no provider {provider}"));
            }
            request = request.with_provider_id(provider);
        }
        let found = self
            .calculator
            .calculate(&request)
            .map_err(|e| match e.kind() {
                ErrorKind::ModelNotFound | ErrorKind::ProviderNotFound => {
                    "the bundled catalog does not have it".to_string()
                }
                _ => format!("the bundled catalog cannot price it: {e}"),
            })?;
        let owners = self
            .owners
            .get(found.model_id.as_str())
            .map_or(&[][..], Vec::as_slice);
        if !owners.contains(&found.provider_id.as_str()) {
            return Err(format!(
                "the bundled catalog has {} only under {}, not under {}",
                found.model_id,
                owners.join(", "),
                found.provider_id
            ));
        }
        if owners.len() > 1 {
            let own = PriceRequest::new(&found.model_id, usage)
                .with_timestamp(now)
                .with_provider_id(&found.provider_id);
            let confirmed = self.calculator.calculate(&own).is_ok_and(|own| {
                own.model_id == found.model_id && own.total_price == found.total_price
            });
            if !confirmed {
                return Err(format!(
                    "the bundled catalog matches it to another provider's {}, not {}'s",
                    found.model_id, found.provider_id
                ));
            }
        }
        Ok(found)
    }

    /// The rates of a call of `label` below any long-context tier: each kind
    /// priced for one token.
    pub(crate) fn rates(&self, label: &str) -> Option<Rates> {
        let one = |keys: &[UsageKey]| {
            let usage: Usage = keys.iter().map(|k| (k.clone(), 1.0)).collect();
            self.price(label, &usage).ok()
        };
        let input = one(&[UsageKey::INPUT_TOKENS])?;
        let cache_read = one(&[UsageKey::INPUT_TOKENS, UsageKey::CACHE_READ_TOKENS])?;
        let cache_write = one(&[UsageKey::INPUT_TOKENS, UsageKey::CACHE_WRITE_TOKENS])?;
        let output = one(&[UsageKey::OUTPUT_TOKENS])?;
        Some(Rates {
            per_mtok: PerMtok {
                input: per_mtok(input.input_price),
                output: per_mtok(output.output_price),
                cache_read: per_mtok(cache_read.input_price),
                cache_write: per_mtok(cache_write.input_price),
            },
            source: Source::Catalog {
                provider: input.provider_id,
                model: input.model_id,
            },
        })
    }
}
