use std::path::PathBuf;

/// Why the prices could not be loaded. Each names the file, and the parsers'
/// errors say where in it (line and column) and what is wrong.
#[derive(Debug, thiserror::Error)]
pub enum PricesError {
    #[error("cannot read the prices file {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("in the prices file {}: {source}", path.display())]
    Toml {
        path: PathBuf,
        source: toml::de::Error,
    },
    #[error("cannot read the LiteLLM file {} (litellm in {}): {source}", path.display(), named_in.display())]
    LiteLlmRead {
        path: PathBuf,
        named_in: PathBuf,
        source: std::io::Error,
    },
    #[error("in the LiteLLM file {}: {source}", path.display())]
    LiteLlm {
        path: PathBuf,
        source: serde_json::Error,
    },
}
