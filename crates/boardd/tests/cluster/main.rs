//! Several boardd on one PostgreSQL database, in this process: the lease row
//! (`lease`), a follower's watch on it (`following`), a follower's socket
//! forwarding to the leader (`forward`), and the loop that follows, leads and
//! hands over (`leading`). Skipped (saying so) without PostgreSQL, unless
//! `TEAMBOARD_REQUIRE_PG=1`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "test code: a panic fails the test, and the harness captures what it prints"
)]

use boardd::cluster::leadership::{self, Leader, Renewal};
use boardd::cluster::{proxy, role, watch};
use std::path::Path;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};
use teamboard_protocol::{Client, ClientError, ErrorCode};
use teamboard_testkit::{
    InProc, PATIENCE, TEAM, code_of, eventually, eventually_blocking, lead_key, short_tempdir, task,
};
use tokio_util::sync::CancellationToken;

mod following;
mod forward;
mod leading;
mod lease;

/// A fresh database, or `None` after saying why the test is skipped.
fn database() -> Option<String> {
    match teamboard_testkit::pg::fresh_database() {
        Ok(url) => Some(url),
        Err(e) if std::env::var_os("TEAMBOARD_REQUIRE_PG").is_none() => {
            eprintln!("skipped: {e}");
            None
        }
        Err(e) => panic!("TEAMBOARD_REQUIRE_PG=1 but {e}"),
    }
}

fn connect(url: &str) -> postgres::Client {
    leadership::connect(url, "test").expect("connect")
}

const LONG: Duration = Duration::from_secs(60);

/// Runs a blocking leadership call off the runtime's workers.
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    tokio::task::spawn_blocking(f).await.expect("blocking call")
}

/// A follower's refusal of a client: `shutting_down`, saying `why`; `if_not`
/// is the failure when it let the client through.
fn assert_refused(connected: Result<Client, ClientError>, why: &str, if_not: &str) {
    match connected {
        Err(ClientError::Server(body)) => {
            assert_eq!(body.code, ErrorCode::ShuttingDown);
            assert!(body.message.contains(why), "{}", body.message);
        }
        Err(other) => panic!("expected a refusal, got {other}"),
        Ok(_) => panic!("{if_not}"),
    }
}
