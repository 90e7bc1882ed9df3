//! The benches, each a short module on one [`harness`]: `bench` is [`durable`],
//! the others are named for their command.

pub mod cancel;
pub mod durable;
pub mod harness;
pub mod liveness;
pub mod plan;
pub mod runtimes;
pub mod sandbox;
pub mod spend;
pub mod teammates;
pub mod web;
