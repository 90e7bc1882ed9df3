//! Several boardd on one PostgreSQL database: one decides, the others forward.
//!
//! `docs/design/cluster.md` weighs this against every boardd deciding with
//! `FOR UPDATE SKIP LOCKED`, and the lease against an advisory lock.
//!
//! - [`leadership`]: the lease row, its term (the fence) and its queries.
//! - [`watch`]: a follower's view of the row: `LISTEN`, and re-reads after every
//!   reconnect and expiry.
//! - [`proxy`]: a follower's socket, piping each client to the leader.
//! - [`role`]: the loop that follows, takes the lease, leads, and gives it up.

pub mod leadership;
pub mod proxy;
pub mod role;
pub mod watch;
