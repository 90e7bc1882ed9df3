//! The member socket's teammated side: a private Unix socket that the agent's
//! board tools (`teamctl mcp`, `teamctl task complete`, ...) reach the teammate
//! through. See `teamboard_protocol::member` for why it exists and its wire.
//!
//! [`server`] accepts connections and turns each line into a [`Incoming`] call
//! on one channel; the agent's work loop (`work::agent`) takes the calls one at a
//! time, in the order they came, and answers each with the teammate's
//! `member_call` (`crate::teammate`), which acts with its session and claim.
//! Data flows one way: the server never touches the teammate.

mod server;

pub use server::{Incoming, MemberServer};
