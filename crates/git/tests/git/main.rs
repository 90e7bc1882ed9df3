//! The crate against real git in temporary repositories. One test binary, one
//! module per part of the API.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "test code: a panic fails the test, and the harness captures what it prints"
)]

mod support;

mod checkout;
mod commit;
mod land;
mod repo;
mod state;
mod update;
mod version;
mod worktree;
