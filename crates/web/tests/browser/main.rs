//! `teamctl web` in a real browser. Each scenario saves a screenshot as
//! `target/web-screenshots/NAME.png`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "test code: a panic fails the test, and the harness captures what it prints"
)]

mod actions;
mod board;
mod harness;
mod live;
mod review;
mod team;
mod work;

pub use harness::*;
