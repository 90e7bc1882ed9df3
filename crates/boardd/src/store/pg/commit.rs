//! One group of batches in one transaction, behind the fence.
//!
//! The rows and their order are the SQLite engine's: upserts by natural key,
//! deletes after the puts of the same batch, the message id counter last and
//! only when it moved. A failed statement leaves the transaction to roll back
//! when it is dropped: nothing of the group is written.
//!
//! The fence: with a term set, the transaction first reads the leadership row
//! `FOR SHARE`, so that a boardd taking over (which updates the row) waits for
//! this commit to end, and this commit sees any takeover that came first. A term
//! that moved means another boardd leads: the batch is refused, unwritten.

use super::schema::*;
use super::{PgStore, off_runtime};
use crate::store::rows::BudgetRow;
use crate::store::{CredentialRow, StoreError, TokenChange, to_json};
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
        let mut next_message_id = None;
        for batch in batches {
            w.batch(batch).map_err(|e| e.into_store(&database))?;
            next_message_id = Some(batch.next_message_id);
        }
        for row in credentials {
            w.run(
                PUT_CREDENTIAL,
                &[&row.team, &row.name, &row.digest.as_slice()],
            )
            .map_err(err)?;
        }
        // In order: a token made and revoked in one group ends revoked.
        for change in tokens {
            match change {
                TokenChange::Put(row) => w.run(
                    PUT_TOKEN,
                    &[
                        &row.team,
                        &row.name,
                        &row.digest.as_slice(),
                        &row.created_ms,
                    ],
                ),
                TokenChange::Revoke { team, name } => w.run(DEL_TOKEN, &[team, name]),
            }
            .map_err(err)?;
        }
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

/// Why a statement of a batch failed: the server, or a body that would not
/// encode.
enum WriteError {
    Pg(postgres::Error),
    Store(StoreError),
}

impl From<postgres::Error> for WriteError {
    fn from(e: postgres::Error) -> WriteError {
        WriteError::Pg(e)
    }
}

impl From<StoreError> for WriteError {
    fn from(e: StoreError) -> WriteError {
        WriteError::Store(e)
    }
}

impl WriteError {
    fn into_store(self, database: &str) -> StoreError {
        match self {
            WriteError::Pg(source) => StoreError::Postgres {
                database: database.to_string(),
                source,
            },
            WriteError::Store(e) => e,
        }
    }
}

/// The statements of one transaction, prepared once per connection.
struct Writes<'t, 'c> {
    tx: &'t mut Transaction<'c>,
    prepared: &'t mut HashMap<&'static str, Statement>,
}

impl Writes<'_, '_> {
    fn run(
        &mut self,
        sql: &'static str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<(), postgres::Error> {
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

    fn batch(&mut self, batch: &Changes) -> Result<(), WriteError> {
        for (team, task) in &batch.tasks {
            self.run(
                PUT_TASK,
                &[team, &(task.id as i64), &to_json(task, "task")?],
            )?;
        }
        for (team, id) in &batch.tasks_deleted {
            self.run(DEL_TASK, &[team, &(*id as i64)])?;
        }
        for (team, member) in &batch.members {
            self.run(
                PUT_MEMBER,
                &[team, &member.name, &to_json(member, "member")?],
            )?;
        }
        for (team, msg) in &batch.messages_added {
            self.run(
                PUT_MESSAGE,
                &[&(msg.id as i64), team, &to_json(msg, "message")?],
            )?;
        }
        for id in &batch.messages_acked {
            self.run(DEL_MESSAGE, &[&(*id as i64)])?;
        }
        for (team, req) in &batch.requests {
            self.run(
                PUT_REQUEST,
                &[&(req.id as i64), team, &to_json(req, "request")?],
            )?;
        }
        for (team, repo) in &batch.repos {
            self.run(PUT_REPO, &[team, &to_json(repo, "repo")?])?;
        }
        for name in &batch.teams {
            self.run(PUT_TEAM, &[name])?;
        }
        for ev in &batch.events {
            let task = ev.task.map(|t| t as i64);
            self.run(
                PUT_EVENT,
                &[&(ev.seq as i64), &ev.team, &task, &to_json(ev, "event")?],
            )?;
        }
        self.spend(batch)
    }

    /// The ledger's rows (see the SQLite engine's `spend`).
    fn spend(&mut self, batch: &Changes) -> Result<(), WriteError> {
        for (team, scope, per, budget) in &batch.budgets {
            let key = to_json(&(scope, per), "budget key")?;
            match budget {
                Some((b, marks)) => {
                    let row = to_json(&BudgetRow::new(b, marks), "budget")?;
                    self.run(PUT_BUDGET, &[team, &key, &row])?
                }
                None => self.run(DEL_BUDGET, &[team, &key])?,
            }
        }
        for (team, rec) in &batch.usage {
            self.run(PUT_USAGE, &[team, &to_json(rec, "usage record")?])?;
        }
        for (team, member, id, call) in &batch.held {
            // Ids are the client's; stored signed, as SQLite stores them.
            let id = *id as i64;
            match call {
                Some(c) => self.run(PUT_HELD, &[team, member, &id, &to_json(c, "held call")?])?,
                None => self.run(DEL_HELD, &[team, member, &id])?,
            }
        }
        for b in &batch.account_blocks {
            self.run(
                PUT_ACCOUNT_BLOCK,
                &[&b.account, &to_json(b, "account block")?],
            )?;
        }
        Ok(())
    }
}
