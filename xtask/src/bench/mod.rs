//! The benches, each a short module on one [`harness`]:
//!
//! - `bench` ([`durable`]): fdatasync, wake-up latency and durable throughput,
//!   against the targets the docs state;
//! - `bench-teammates` ([`teammates`]): how fast an idle teammate picks up work,
//!   and what idle teammates cost;
//! - `bench-cancel` ([`cancel`]): how fast a cancel stops a working teammate;
//! - `bench-plan` ([`plan`]): how soon an approved plan gets its teammate going;
//! - `bench-runtimes` ([`runtimes`]): the agent runtimes against the native loop.

pub mod cancel;
pub mod durable;
pub mod harness;
pub mod plan;
pub mod runtimes;
pub mod teammates;
