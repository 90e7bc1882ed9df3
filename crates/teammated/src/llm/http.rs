//! The HTTP client shared by the real providers.
