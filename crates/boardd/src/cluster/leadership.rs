//! The lease row that says which boardd decides, judged by the database's clock.
//!
//! One row, `leadership (id = 1)`, holds the term, the deciding node, the address
//! followers dial, and when the lease runs out. Taking it bumps the term; the term
//! is the fence: the PostgreSQL store checks it (`FOR SHARE`) in every commit, so a
//! deposed boardd's writes fail however late they arrive. Every time here is the
//! database's `now()`, never a host's clock, so hosts whose clocks disagree still
//! agree on whether a lease is live.
//!
//! Alternatives that lost:
//! - A session advisory lock (`pg_try_advisory_lock`) held by the leader's
//!   connection. A partitioned leader's lock is held until the server notices the
//!   dead connection, which by default (TCP keepalive after two hours) is
//!   unbounded for our purposes; the lease bounds takeover by its length whatever
//!   the connection does, and the term in the same row fences the old leader.
//! - A lease judged by the hosts' clocks (`expires` written by the leader): one
//!   host's skew would let two boardd decide at once.
//!
//! The calls are blocking (`postgres`, the sync client): they run on a dedicated
//! thread or under `spawn_blocking`, never on a runtime worker, where the client
//! panics.

use std::time::Duration;

/// A leadership term: bumped by every successful [`take`]; the fence.
pub type Term = i64;

/// The NOTIFY channel a new or departing leader announces itself on.
pub const CHANNEL: &str = "teamboard_leader";

/// The table, made here as well as by the store's schema so that the lease code
/// stands alone. The row starts expired, with term 0 that no leader ever has.
///
/// Trap: two `CREATE TABLE IF NOT EXISTS` at once can both find no table, and
/// the second fails on the catalog's unique index. Boardd starting together
/// would hit it, so the creation holds the transaction-level advisory lock that
/// the store's migrations take too ("teamboar" in ASCII, plus one).
const SCHEMA: &str = "BEGIN;
SELECT pg_advisory_xact_lock(8387217003478212979);
CREATE TABLE IF NOT EXISTS leadership (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  term BIGINT NOT NULL,
  node TEXT NOT NULL,
  addr TEXT NOT NULL,
  expires TIMESTAMPTZ NOT NULL);
INSERT INTO leadership VALUES (1, 0, '', '', '-infinity') ON CONFLICT DO NOTHING;
COMMIT;";

/// How long a connection attempt may take before it fails.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);
/// How long sent bytes may stay unacknowledged before the kernel drops the
/// connection (`TCP_USER_TIMEOUT`): a cut link fails a query within this.
const TCP_USER_TIMEOUT: Duration = Duration::from_secs(2);
/// Keepalive probes on an idle connection (a follower waiting for a NOTIFY): the
/// first after a second of silence, then one a second, two of them, so a cut
/// link fails an idle connection within about three seconds. Trap: the kernel
/// counts these in whole seconds, and refuses a zero (EINVAL on connect).
const KEEPALIVE_IDLE: Duration = Duration::from_secs(1);
const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(1);
const KEEPALIVE_RETRIES: u32 = 2;

#[derive(Debug, thiserror::Error)]
pub enum LeadershipError {
    #[error(transparent)]
    Connect(#[from] Box<crate::store::pg::connect::ConnectError>),
    #[error("database: {0}")]
    Db(#[from] postgres::Error),
    #[error("the database closed the connection")]
    Closed,
}

/// Who holds the board, as the row says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leader {
    pub term: Term,
    pub node: String,
    /// What followers dial to reach it.
    pub addr: String,
    /// How long its lease has left by the database's clock; `None`: it has run
    /// out (or was released), and the board may be taken.
    pub remaining: Option<Duration>,
}

impl Leader {
    /// Whether its lease is still running.
    pub fn live(&self) -> bool {
        self.remaining.is_some()
    }
}

/// The answer to a [`renew`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Renewal {
    /// The term is still ours, for another lease from the database's now.
    Held,
    /// Another boardd took the board: the row's term is `term_now`.
    Deposed { term_now: Term },
}

/// Opens a connection with the short timeouts above, TLS as the URL says (as
/// the store's), and makes the table. `purpose` names it in
/// `pg_stat_activity` (`application_name`).
pub fn connect(url: &str, purpose: &str) -> Result<postgres::Client, LeadershipError> {
    let mut target = crate::store::pg::connect::target(url).map_err(Box::new)?;
    target
        .config
        .application_name(purpose)
        .connect_timeout(CONNECT_TIMEOUT)
        .tcp_user_timeout(TCP_USER_TIMEOUT)
        .keepalives(true)
        .keepalives_idle(KEEPALIVE_IDLE)
        .keepalives_interval(KEEPALIVE_INTERVAL)
        .keepalives_retries(KEEPALIVE_RETRIES);
    let mut client = target.connect().map_err(Box::new)?;
    client.batch_execute(SCHEMA)?;
    Ok(client)
}

/// Takes the board if its lease has run out: the new term, or `None` when a live
/// leader holds it. The NOTIFY is sent with the change, in its transaction.
pub fn take(
    client: &mut postgres::Client,
    node: &str,
    addr: &str,
    lease: Duration,
) -> Result<Option<Term>, LeadershipError> {
    let mut tx = client.transaction()?;
    // A leader's commit holds the row `FOR SHARE` while it checks its term: wait
    // for it, but never longer than a lease, so that a dead one's open
    // transaction cannot hold a follower here; the next attempt tries again.
    tx.batch_execute(&format!("SET LOCAL lock_timeout = {}", lease.as_millis()))?;
    let row = tx.query_opt(
        "UPDATE leadership SET term = term + 1, node = $1, addr = $2,
                expires = now() + $3 * interval '1 millisecond'
          WHERE id = 1 AND expires < now() RETURNING term",
        &[&node, &addr, &millis(lease)],
    )?;
    let Some(row) = row else {
        return Ok(None);
    };
    let term: Term = row.try_get(0)?;
    tx.execute("SELECT pg_notify($1, $2)", &[&CHANNEL, &term.to_string()])?;
    tx.commit()?;
    Ok(Some(term))
}

/// Extends the lease of `term` by `lease` from the database's now, unless another
/// boardd took the board.
pub fn renew(
    client: &mut postgres::Client,
    term: Term,
    lease: Duration,
) -> Result<Renewal, LeadershipError> {
    let held = client.execute(
        "UPDATE leadership SET expires = now() + $2 * interval '1 millisecond'
          WHERE id = 1 AND term = $1",
        &[&term, &millis(lease)],
    )?;
    if held == 1 {
        return Ok(Renewal::Held);
    }
    let term_now = current(client)?.term;
    Ok(Renewal::Deposed { term_now })
}

/// Gives the board up at once (a clean shutdown), so that a follower takes it
/// without waiting for the lease; nothing happens if `term` was already deposed.
pub fn release(client: &mut postgres::Client, term: Term) -> Result<(), LeadershipError> {
    let mut tx = client.transaction()?;
    let released = tx.execute(
        "UPDATE leadership SET expires = '-infinity' WHERE id = 1 AND term = $1",
        &[&term],
    )?;
    if released == 1 {
        tx.execute("SELECT pg_notify($1, $2)", &[&CHANNEL, &term.to_string()])?;
    }
    tx.commit()?;
    Ok(())
}

/// The row as it stands.
pub fn current(client: &mut postgres::Client) -> Result<Leader, LeadershipError> {
    let row = client.query_one(
        "SELECT term, node, addr,
                CASE WHEN expires > now()
                     THEN EXTRACT(EPOCH FROM expires - now())::float8 ELSE 0 END
           FROM leadership WHERE id = 1",
        &[],
    )?;
    let left: f64 = row.try_get(3)?;
    Ok(Leader {
        term: row.try_get(0)?,
        node: row.try_get(1)?,
        addr: row.try_get(2)?,
        // An `infinity` expiry (a row changed by hand) is a lease that never
        // runs out, not a panic.
        remaining: (left > 0.0).then(|| Duration::try_from_secs_f64(left).unwrap_or(Duration::MAX)),
    })
}

/// A lease in milliseconds, as the queries' `float8` parameter.
fn millis(lease: Duration) -> f64 {
    lease.as_secs_f64() * 1000.0
}
