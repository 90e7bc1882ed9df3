use super::*;
use genai_prices::Calculator;
use std::fs;
use tempfile::TempDir;

/// Every kind of token, with counts that leave fractions of a micro-dollar.
const CALL: TokenUsage = TokenUsage {
    input: 1234,
    output: 987,
    cache_read: 56789,
    cache_write: 4321,
};

fn usd(pricing: Pricing) -> MicroUsd {
    match pricing {
        Pricing::Priced { usd } => usd,
        other => panic!("not priced: {other:?}"),
    }
}

fn reason(pricing: Pricing) -> String {
    match pricing {
        Pricing::Unpriced { reason } => reason,
        other => panic!("priced: {other:?}"),
    }
}

/// A prices file in a fresh folder, loaded.
fn with_file(toml: &str) -> (TempDir, PathBuf, Prices) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("prices.toml");
    fs::write(&path, toml).unwrap();
    let prices = Prices::load(Some(&path)).unwrap();
    (dir, path, prices)
}

fn load_error(toml: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("prices.toml");
    fs::write(&path, toml).unwrap();
    let text = Prices::load(Some(&path)).unwrap_err().to_string();
    assert!(text.contains(&path.display().to_string()), "{text}");
    text
}

fn catalog() -> Prices {
    Prices::load_from(None, false).unwrap()
}

#[test]
fn claude_sonnet_4_5_is_priced_to_the_micro_dollar() {
    let prices = catalog();
    // $3 input, $0.30 cache read, $3.75 cache write, $15 output per Mtok:
    // 1234×3 + 56789×0.3 + 4321×3.75 + 987×15 = 51747.45 micro-dollars.
    for label in ["anthropic/claude-sonnet-4-5", "claude-sonnet-4-5-20250929"] {
        assert_eq!(usd(prices.price(label, &CALL)), MicroUsd(51_747), "{label}");
    }
    let rates = prices.rates("anthropic/claude-sonnet-4-5").unwrap();
    assert_eq!(
        rates.per_mtok,
        PerMtok {
            input: 3.0,
            output: 15.0,
            cache_read: 0.3,
            cache_write: 3.75
        }
    );
    assert_eq!(
        rates.source,
        Source::Catalog {
            provider: "anthropic".into(),
            model: "claude-sonnet-4-5".into()
        }
    );
}

#[test]
fn openai_models_are_priced_to_the_micro_dollar() {
    let prices = catalog();
    // gpt-4o-mini: $0.15 input, $0.075 cache read, $0.60 output, and no
    // cache-write price, so writes cost input: 1234×0.15 + 56789×0.075 +
    // 4321×0.15 + 987×0.6 = 5684.625 micro-dollars.
    for label in ["openai/gpt-4o-mini", "gpt-4o-mini"] {
        assert_eq!(usd(prices.price(label, &CALL)), MicroUsd(5_685), "{label}");
    }
    // Codex reports gpt-5-codex, priced as GPT-5: $1.25, $0.125, $10.
    // 1234×1.25 + 56789×0.125 + 4321×1.25 + 987×10 = 23912.375.
    assert_eq!(usd(prices.price("gpt-5-codex", &CALL)), MicroUsd(23_912));
}

#[test]
fn the_file_beats_the_catalog_and_cache_prices_default_to_input() {
    let (_dir, path, prices) = with_file(
        r#"
[models."anthropic/claude-sonnet-4-5"]
input = 1
output = 2

[models."local/llama"]
input = 0.5
output = 0.5
cache_read = 0.25
"#,
    );
    // 1234 + 56789 + 4321 at $1, 987 at $2.
    assert_eq!(
        usd(prices.price("anthropic/claude-sonnet-4-5", &CALL)),
        MicroUsd(64_318)
    );
    let rates = prices.rates("local/llama").unwrap();
    assert_eq!(rates.per_mtok.cache_read, 0.25);
    assert_eq!(rates.per_mtok.cache_write, 0.5);
    assert_eq!(rates.source, Source::File(path));
    // The catalog still answers what the file leaves out.
    assert_eq!(
        usd(prices.price("openai/gpt-4o-mini", &CALL)),
        MicroUsd(5_685)
    );
}

#[test]
fn a_litellm_file_is_imported_below_the_file_and_above_the_catalog() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(
        dir.path().join("litellm.json"),
        r#"{
    "sample_spec": {"input_cost_per_token": 0.0, "output_cost_per_token": 0.0,
                    "litellm_provider": "one of https://docs.litellm.ai/docs/providers",
                    "max_tokens": "LEGACY parameter"},
    "gpt-4o-mini": {"input_cost_per_token": 2e-07, "output_cost_per_token": 9e-07,
                    "cache_read_input_token_cost": 1e-07, "litellm_provider": "openai",
                    "mode": "chat", "max_tokens": 16384},
    "claude-sonnet-4-5": {"input_cost_per_token": 3e-06, "output_cost_per_token": 1.5e-05,
                    "cache_read_input_token_cost": 3e-07,
                    "cache_creation_input_token_cost": 3.75e-06,
                    "litellm_provider": "anthropic"},
    "gemini/gemini-2.5-pro": {"input_cost_per_token": 1.25e-06, "output_cost_per_token": 1e-05,
                    "litellm_provider": "gemini"},
    "dall-e-3": {"output_cost_per_image": 0.04, "litellm_provider": "openai"}
}"#,
    )
    .unwrap();
    let path = dir.path().join("prices.toml");
    fs::write(
        &path,
        r#"
litellm = "litellm.json"

[models."anthropic/claude-sonnet-4-5"]
input = 1
output = 1
"#,
    )
    .unwrap();
    let prices = Prices::load(Some(&path)).unwrap();
    let litellm = Source::LiteLlm(dir.path().join("litellm.json"));

    // LiteLLM's gpt-4o-mini, not the catalog's: 1234×0.2 + 56789×0.1 +
    // 4321×0.2 (no cache-write price: input's) + 987×0.9 = 7678.2.
    for label in ["openai/gpt-4o-mini", "gpt-4o-mini"] {
        assert_eq!(usd(prices.price(label, &CALL)), MicroUsd(7_678), "{label}");
        assert_eq!(prices.rates(label).unwrap().source, litellm);
    }
    let rates = prices.rates("gemini/gemini-2.5-pro").unwrap();
    assert_eq!(rates.per_mtok.input, 1.25);
    assert_eq!(rates.per_mtok.output, 10.0);
    assert_eq!(rates.source, litellm);
    // LiteLLM's price for the bare name, the file's for the label it names.
    assert_eq!(
        prices.rates("claude-sonnet-4-5").unwrap().per_mtok,
        PerMtok {
            input: 3.0,
            output: 15.0,
            cache_read: 0.3,
            cache_write: 3.75
        }
    );
    assert_eq!(
        prices.rates("anthropic/claude-sonnet-4-5").unwrap().source,
        Source::File(path)
    );
    // A model of one provider is not another's, and neither is the sample.
    assert!(matches!(
        prices.price("anthropic/gpt-4o-mini", &CALL),
        Pricing::Unpriced { .. }
    ));
    assert!(prices.rates("sample_spec").is_none());
    assert!(prices.rates("dall-e-3").is_none());
}

#[test]
fn a_model_without_a_price_counts_tokens_and_says_how_to_price_it() {
    let (_dir, path, prices) = with_file("");
    let why = reason(prices.price("openai/gpt-9", &CALL));
    assert_eq!(
        why,
        format!(
            "no price for openai/gpt-9 (the bundled catalog does not have it); \
             add [models.\"openai/gpt-9\"] to {}",
            path.display()
        )
    );
    assert_eq!(
        prices.price("openai/gpt-9", &CALL).cost(CALL.total()),
        teamboard_protocol::spend::Cost {
            usd: MicroUsd::ZERO,
            unpriced_tokens: CALL.total()
        }
    );
    assert!(prices.rates("openai/gpt-9").is_none());
    let why = reason(prices.price("ollama/llama3", &CALL));
    assert!(why.contains("no provider ollama"), "{why}");
    let why = reason(prices.price("some-unknown-model", &CALL));
    assert!(why.starts_with("no price for some-unknown-model"), "{why}");
    let why = reason(prices.price(SCRIPTED_MODEL, &CALL));
    assert!(why.contains("offline stand-in"), "{why}");
    assert!(prices.rates(SCRIPTED_MODEL).is_none());
}

#[test]
fn a_model_is_never_priced_under_another_provider() {
    let prices = catalog();
    // Azure falls back to Anthropic's models in the catalog.
    let why = reason(prices.price("azure/claude-sonnet-4-5", &CALL));
    assert!(
        why.contains("has claude-sonnet-4-5 only under anthropic, google, not under azure"),
        "{why}"
    );
    assert!(prices.rates("azure/claude-sonnet-4-5").is_none());
    // The catalog's OpenAI alias rule matches any id with "openai" in it.
    let why = reason(prices.price("azure-openai/gpt-4o-mini", &CALL));
    assert!(why.contains("no provider azure-openai"), "{why}");
    // An OpenAI model under Anthropic's name.
    assert!(matches!(
        prices.price("anthropic/gpt-4o-mini", &CALL),
        Pricing::Unpriced { .. }
    ));
    // Azure's own `ada` does not match this name, OpenAI's `ada` does, and
    // their prices differ.
    let why = reason(prices.price("azure/text-ada-001", &CALL));
    assert!(why.contains("another provider's ada, not azure's"), "{why}");
    // Only OpenAI's rules read o3-mini-high as o3-mini; Azure has an o3-mini
    // of its own, and its price is Azure's.
    assert_eq!(
        prices.rates("azure/o3-mini-high").unwrap().source,
        Source::Catalog {
            provider: "azure".into(),
            model: "o3-mini".into()
        }
    );
    // Google has its own entry for Claude models: its own price stands.
    assert!(matches!(
        prices.price("google/claude-sonnet-4-5", &CALL),
        Pricing::Priced { .. }
    ));
}

#[test]
fn catalog_models_of_a_fallback_provider_match_their_own_ids() {
    // The confirmation in catalog.rs rests on this: a model of a provider
    // that falls back to others is found by its own id, under its provider.
    for provider in Calculator::bundled().providers() {
        // The providers with fallbacks in the bundled data.
        if !["azure", "google"].contains(&provider.id()) {
            continue;
        }
        for model in provider.models() {
            let usage = catalog::usage(&CALL);
            let request =
                genai_prices::PriceRequest::new(model.id(), &usage).with_provider_id(provider.id());
            let found = Calculator::bundled().calculate(&request).unwrap();
            assert_eq!(found.model_id, model.id(), "{}", provider.id());
        }
    }
}

#[test]
fn a_malformed_file_is_refused_naming_the_file_line_and_key() {
    let text = load_error("[models.\"openai/gpt-4o-mini\"]\ninput = \"cheap\"\noutput = 0.6\n");
    assert!(text.contains("line 2"), "{text}");
    assert!(text.contains("invalid type: string \"cheap\""), "{text}");

    let text = load_error("[models.\"a/b\"]\ninput = 1\noutput = -0.5\n");
    assert!(text.contains("line 3"), "{text}");
    assert!(
        text.contains("a price is a number of dollars, 0 or more, not -0.5"),
        "{text}"
    );

    let text = load_error("[models.\"a/b\"]\ninput = 1\noutput = 1\ncache_raed = 1\n");
    assert!(text.contains("unknown field `cache_raed`"), "{text}");

    let text = load_error("[models.\"a/b\"]\ninput = 1\n");
    assert!(text.contains("missing field `output`"), "{text}");

    let text = load_error("[models.\"a/b\"\ninput = 1\n");
    assert!(text.contains("line 1"), "{text}");

    let text = load_error("litellm = \"absent.json\"\n");
    assert!(text.contains("cannot read the LiteLLM file"), "{text}");
    assert!(text.contains("absent.json"), "{text}");
}

#[test]
fn a_malformed_litellm_file_is_refused_naming_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("litellm.json");
    fs::write(
        &json,
        "{\n  \"m\": {\n    \"input_cost_per_token\": -1e-06,\n    \"output_cost_per_token\": 0\n  }\n}\n",
    )
    .unwrap();
    let path = dir.path().join("prices.toml");
    fs::write(
        &path,
        format!("litellm = {:?}\n", json.display().to_string()),
    )
    .unwrap();
    let text = Prices::load(Some(&path)).unwrap_err().to_string();
    assert!(text.contains(&json.display().to_string()), "{text}");
    assert!(text.contains("not -0.000001"), "{text}");
    assert!(text.contains("line 3"), "{text}");
}

#[test]
fn only_a_named_file_must_exist() {
    let dir = tempfile::tempdir().unwrap();
    let absent = dir.path().join("prices.toml");
    let text = Prices::load(Some(&absent)).unwrap_err().to_string();
    assert!(text.starts_with("cannot read the prices file"), "{text}");
    assert!(text.contains(&absent.display().to_string()), "{text}");
    // The default file may be absent: the catalog alone answers, and the
    // default file is where an unpriced model is told to go.
    let prices = Prices::load_from(Some(absent.clone()), false).unwrap();
    assert_eq!(
        usd(prices.price("openai/gpt-4o-mini", &CALL)),
        MicroUsd(5_685)
    );
    assert!(reason(prices.price("openai/gpt-9", &CALL)).ends_with(&absent.display().to_string()));
}
