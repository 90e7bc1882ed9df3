//! One group of batches in one transaction, behind the fence.
//!
//! A commit is round trips to the server, and the writer waits out each one:
//! on a board under load, the time of a commit is its count of statements, not
//! what the server does with them. So the group is first collapsed to the rows
//! it leaves ([`Group`]), and each table is then written by one statement for
//! its upserts and one for its deletes, the rows passed as one array per column
//! (`INSERT … SELECT * FROM UNNEST(…) ON CONFLICT … DO UPDATE`); a table the
//! group leaves alone costs nothing. A commit is then BEGIN, the fence, a
//! statement per table touched, and COMMIT, however many batches it carries.
//! The alternatives lost:
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
//! carries nothing. A failed statement leaves the transaction to roll back
//! when it is dropped: nothing of the group is written.
//!
//! The fence: with a term set, the transaction first reads the leadership row
//! `FOR SHARE`, so that a boardd taking over (which updates the row) waits for
//! this commit to end, and this commit sees any takeover that came first. A term
//! that moved means another boardd leads: the batch is refused, unwritten.

use super::group::Group;
use super::schema::*;
use super::{PgStore, off_runtime};
use crate::store::{CredentialRow, StoreError, TokenChange};
use postgres::types::ToSql;
use postgres::{Statement, Transaction};
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
        let err = |source| StoreError::Postgres {
            database: database.clone(),
            source,
        };
        let fence = self.fence;
        let stored_next = self.stored_next_message_id;
        let client = self.client.as_mut().ok_or_else(|| StoreError::InUse {
            database: database.clone(),
        })?;
        let mut tx = client.transaction().map_err(err)?;
        if let Some(held) = fence {
            let now: i64 = tx
                .query_one("SELECT term FROM leadership WHERE id = 1 FOR SHARE", &[])
                .and_then(|r| r.try_get(0))
                .map_err(err)?;
            if now != held {
                // Dropping `tx` rolls back; nothing was written yet anyway.
                return Err(StoreError::Deposed {
                    database: database.clone(),
                    held,
                    now,
                });
            }
        }
        let mut w = Writes {
            tx: &mut tx,
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

/// The statements of one transaction, prepared once per connection.
struct Writes<'t, 'c> {
    tx: &'t mut Transaction<'c>,
    prepared: &'t mut HashMap<&'static str, Statement>,
}

/// One array parameter per column.
type Column<'a> = &'a (dyn ToSql + Sync);

impl Writes<'_, '_> {
    fn run(&mut self, sql: &'static str, params: &[Column]) -> Result<(), postgres::Error> {
        let statement = match self.prepared.get(sql) {
            Some(s) => s.clone(),
            None => {
                let s = self.tx.prepare(sql)?;
                self.prepared.insert(sql, s.clone());
                s
            }
        };
        self.tx.execute(&statement, params).map(drop)
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
