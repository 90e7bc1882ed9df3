//! One group of batches in one transaction, behind the fence.
//!
//! A commit is round trips to the server, and the writer waits out each one:
//! on a board under load, the time of a commit is its count of statements, not
//! what the server does with them. So the group is first collapsed to the rows
//! it leaves ([`Group`]), and each table is then written by one statement for
//! its upserts and one for its deletes, the rows passed as one array per column
//! (`INSERT … SELECT * FROM UNNEST(…) ON CONFLICT … DO UPDATE`); a table the
//! group leaves alone costs nothing. A commit is then BEGIN (with the fence in
//! the same round trip), a statement per table touched, and COMMIT, however
//! many batches it carries. The alternatives lost:
//! - a statement per row, as SQLite writes them (in process, a row costs SQLite
//!   a function call): a round trip per task, event and member, which held
//!   PostgreSQL to a fraction of SQLite's throughput;
//! - a multi-row `VALUES` list: its text changes with the row count, so each
//!   size is parsed and planned anew, and it meets the 65,535-parameter limit;
//!   `UNNEST` is one prepared statement whatever the size;
//! - `COPY`: no `ON CONFLICT`, so a staging table and a second statement,
//!   for groups that are mostly a handful of rows.
//!
//! `synchronous_commit` stays as the server has it (on by default): an
//! acknowledgement promises that the change is on the server's disk.
//!
//! The statements' order is SQLite's: upserts, then deletes, table by table,
//! the message id counter last and only when it moved. After collapsing, a
//! table's upserted and deleted keys are disjoint, so the order between them
//! carries nothing.
//!
//! The fence: with a term set, the transaction first reads the leadership row
//! `FOR SHARE`, so that a boardd taking over (which updates the row) waits for
//! this commit to end, and this commit sees any takeover that came first. A term
//! that moved means another boardd leads: the batch is refused, unwritten.
//! BEGIN and that read go as one simple query, `BEGIN; SELECT term …`: a
//! `BEGIN` inside a simple query leaves the transaction open after it, and the
//! term comes back as text, in one round trip. Without a fence, BEGIN goes
//! alone, as it always did. The alternatives lost:
//! - BEGIN, then the read on its own: a round trip more as a prepared
//!   statement, two as a `&str` (prepared anew, then executed); under load,
//!   the fence behind BEGIN costs a commit about as much as its rows;
//! - BEGIN pipelined with a prepared read: the extended protocol would bring
//!   the term back typed, but pipelining needs `tokio-postgres`'s futures in
//!   flight together, and the writer's blocking client waits out each call;
//!   a runtime on the writer thread for this one pair buys nothing the simple
//!   query does not (the server parses and plans a one-row read by its key
//!   anew each time, for far less than a round trip);
//! - the term compared by the server, failing the transaction when it moved:
//!   the refusal would lose the term now held, which `Deposed` reports.
//!
//! Trap: `postgres::Transaction` sends its own `BEGIN` and cannot adopt one
//! already sent, so the open transaction is [`Begun`], a guard of our own that
//! sends `ROLLBACK` when dropped uncommitted: after a refused fence, a statement
//! failing half-way, or a panic. Left behind, an open transaction would keep
//! the leadership row `FOR SHARE` and a takeover waiting (until
//! `idle_in_transaction_session_timeout`), and an aborted one would fail every
//! later commit on the connection. Nothing of a rolled-back group is written.

use super::group::Group;
use super::schema::*;
use super::{PgStore, off_runtime};
use crate::store::{CredentialRow, StoreError, TokenChange};
use postgres::types::ToSql;
use postgres::{Client, SimpleQueryMessage, Statement};
use std::collections::HashMap;
use teamboard_board::Changes;

impl PgStore {
    /// Writes a group of batches, and the credentials and tokens issued or
    /// revoked with them, in one transaction. When this returns `Ok`, the
    /// server has committed it.
    pub fn commit<'a>(
        &mut self,
        batches: impl IntoIterator<Item = &'a Changes>,
        credentials: impl IntoIterator<Item = &'a CredentialRow>,
        tokens: impl IntoIterator<Item = &'a TokenChange>,
    ) -> Result<(), StoreError> {
        let batches: Vec<&Changes> = batches.into_iter().collect();
        let credentials: Vec<&CredentialRow> = credentials.into_iter().collect();
        let tokens: Vec<&TokenChange> = tokens.into_iter().collect();
        off_runtime(|| self.commit_here(&batches, &credentials, &tokens))
    }

    fn commit_here(
        &mut self,
        batches: &[&Changes],
        credentials: &[&CredentialRow],
        tokens: &[&TokenChange],
    ) -> Result<(), StoreError> {
        // Encoded before the transaction opens: a body that will not encode
        // costs the server nothing.
        let group = Group::new(batches, credentials, tokens)?;
        let database = self.database.clone();
        let err = |error| StoreError::Postgres {
            database: database.clone(),
            error,
        };
        let fence = self.fence;
        let stored_next = self.stored_next_message_id;
        let client = self.client.as_mut().ok_or_else(|| StoreError::InUse {
            database: database.clone(),
        })?;
        let tx = Begun { client, open: true };
        if let Some(held) = fence {
            let messages = tx.client.simple_query(BEGIN_FENCED).map_err(err)?;
            let now = term(&messages, &database)?;
            if now != held {
                // Dropping `tx` rolls back, letting the row go; nothing was
                // written yet anyway.
                return Err(StoreError::Deposed {
                    database: database.clone(),
                    held,
                    now,
                });
            }
        } else {
            tx.client.batch_execute("BEGIN").map_err(err)?;
        }
        let mut w = Writes {
            client: &mut *tx.client,
            prepared: &mut self.prepared,
        };
        w.group(&group).map_err(err)?;
        let next_message_id = group.next_message_id;
        if let Some(next) = next_message_id.filter(|n| *n != stored_next) {
            w.run(PUT_NEXT_MESSAGE_ID, &[&(next as i64)]).map_err(err)?;
        }
        tx.commit().map_err(err)?;
        if let Some(next) = next_message_id {
            self.stored_next_message_id = next;
        }
        Ok(())
    }
}

/// BEGIN and the fence's read, in one round trip (see the module doc).
const BEGIN_FENCED: &str = "BEGIN; SELECT term FROM leadership WHERE id = 1 FOR SHARE";

/// The term [`BEGIN_FENCED`] read, from its text. A missing row reads as
/// `null`, and so fails as a term that cannot be read, never as a term.
fn term(messages: &[SimpleQueryMessage], database: &str) -> Result<i64, StoreError> {
    let row = messages.iter().find_map(|m| match m {
        SimpleQueryMessage::Row(row) => Some(row),
        _ => None,
    });
    let text = (row.map(|r| r.try_get(0)).transpose()).map_err(|error| StoreError::Postgres {
        database: database.to_string(),
        error,
    })?;
    // An integer's text is its JSON.
    serde_json::from_str(text.flatten().unwrap_or("null")).map_err(|source| StoreError::Corrupt {
        database: database.to_string(),
        what: "leadership term",
        source,
    })
}

/// A transaction begun on the plain client: `ROLLBACK` when dropped unless
/// committed, on every path out (see the module doc's trap).
struct Begun<'c> {
    client: &'c mut Client,
    open: bool,
}

impl Begun<'_> {
    fn commit(mut self) -> Result<(), postgres::Error> {
        self.client.batch_execute("COMMIT")?;
        self.open = false;
        Ok(())
    }
}

impl Drop for Begun<'_> {
    fn drop(&mut self) {
        if self.open {
            // Its failure changes nothing: outside a transaction (BEGIN never
            // ran, or a failed COMMIT ended it) ROLLBACK is a warning, and on
            // a lost connection the commit has failed already.
            let _ = self.client.batch_execute("ROLLBACK");
        }
    }
}

/// The statements of one transaction, prepared once per connection.
struct Writes<'t> {
    client: &'t mut Client,
    prepared: &'t mut HashMap<&'static str, Statement>,
}

/// One array parameter per column.
type Column<'a> = &'a (dyn ToSql + Sync);

impl Writes<'_> {
    fn run(&mut self, sql: &'static str, params: &[Column]) -> Result<(), postgres::Error> {
        let statement = match self.prepared.get(sql) {
            Some(s) => s.clone(),
            None => {
                let s = self.client.prepare(sql)?;
                self.prepared.insert(sql, s.clone());
                s
            }
        };
        self.client.execute(&statement, params).map(drop)
    }

    /// Each table in one statement for its upserts and one for its deletes,
    /// none for a table the group leaves alone.
    fn group(&mut self, g: &Group) -> Result<(), postgres::Error> {
        let (a, b, c) = unzip3(g.tasks.puts().map(|((t, i), body)| (t, *i, body)));
        self.put(PUT_TASKS, a.len(), &[&a, &b, &c])?;
        let (a, b): (Vec<_>, Vec<_>) = g.tasks.deletes().map(|(t, i)| (t, *i)).unzip();
        self.put(DEL_TASKS, a.len(), &[&a, &b])?;
        let (a, b, c) = unzip3(g.members.puts().map(|((t, n), body)| (t, n, body)));
        self.put(PUT_MEMBERS, a.len(), &[&a, &b, &c])?;
        let (a, b, c) = unzip3(g.messages.puts().map(|(i, (t, body))| (*i, t, body)));
        self.put(PUT_MESSAGES, a.len(), &[&a, &b, &c])?;
        let a: Vec<i64> = g.messages.deletes().copied().collect();
        self.put(DEL_MESSAGES, a.len(), &[&a])?;
        let (a, b, c) = unzip3(g.requests.puts().map(|(i, (t, body))| (*i, t, body)));
        self.put(PUT_REQUESTS, a.len(), &[&a, &b, &c])?;
        let (a, b): (Vec<_>, Vec<_>) = g.repos.puts().unzip();
        self.put(PUT_REPOS, a.len(), &[&a, &b])?;
        let a: Vec<&String> = g.teams.iter().collect();
        self.put(PUT_TEAMS, a.len(), &[&a])?;
        let (a, rest): (Vec<i64>, Vec<_>) = g.events.puts().map(|(s, r)| (*s, r)).unzip();
        let (b, c, d) = unzip3(rest.into_iter().map(|(t, task, body)| (t, *task, body)));
        self.put(PUT_EVENTS, a.len(), &[&a, &b, &c, &d])?;
        let (a, b, c) = unzip3(g.budgets.puts().map(|((t, k), body)| (t, k, body)));
        self.put(PUT_BUDGETS, a.len(), &[&a, &b, &c])?;
        let (a, b): (Vec<_>, Vec<_>) = g.budgets.deletes().map(|(t, k)| (t, k)).unzip();
        self.put(DEL_BUDGETS, a.len(), &[&a, &b])?;
        let (a, b): (Vec<_>, Vec<_>) = g.usage.iter().map(|(t, body)| (t, body)).unzip();
        self.put(PUT_USAGE, a.len(), &[&a, &b])?;
        let (ab, d): (Vec<_>, Vec<_>) = g
            .held
            .puts()
            .map(|((t, m, i), body)| ((t, m, *i), body))
            .unzip();
        let (a, b, c) = unzip3(ab.into_iter());
        self.put(PUT_HELD, a.len(), &[&a, &b, &c, &d])?;
        let (a, b, c) = unzip3(g.held.deletes().map(|(t, m, i)| (t, m, *i)));
        self.put(DEL_HELD, a.len(), &[&a, &b, &c])?;
        let (a, b): (Vec<_>, Vec<_>) = g.account_blocks.puts().unzip();
        self.put(PUT_ACCOUNT_BLOCKS, a.len(), &[&a, &b])?;
        let (a, b, c) = unzip3(g.credentials.puts().map(|((t, n), d)| (t, n, d)));
        self.put(PUT_CREDENTIALS, a.len(), &[&a, &b, &c])?;
        let (ab, cd): (Vec<_>, Vec<_>) = g
            .tokens
            .puts()
            .map(|((t, n), (d, at))| ((t, n), (d, *at)))
            .unzip();
        let (a, b): (Vec<_>, Vec<_>) = ab.into_iter().unzip();
        let (c, d): (Vec<_>, Vec<_>) = cd.into_iter().unzip();
        self.put(PUT_TOKENS, a.len(), &[&a, &b, &c, &d])?;
        let (a, b): (Vec<_>, Vec<_>) = g.tokens.deletes().map(|(t, n)| (t, n)).unzip();
        self.put(DEL_TOKENS, a.len(), &[&a, &b])
    }

    /// Runs one table's statement, unless it has no rows.
    fn put(
        &mut self,
        sql: &'static str,
        rows: usize,
        columns: &[Column],
    ) -> Result<(), postgres::Error> {
        if rows == 0 {
            return Ok(());
        }
        self.run(sql, columns)
    }
}

fn unzip3<A, B, C>(rows: impl Iterator<Item = (A, B, C)>) -> (Vec<A>, Vec<B>, Vec<C>) {
    let mut out = (Vec::new(), Vec::new(), Vec::new());
    for (a, b, c) in rows {
        out.0.push(a);
        out.1.push(b);
        out.2.push(c);
    }
    out
}
