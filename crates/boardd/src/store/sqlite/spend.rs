//! The ledger's tables: budgets, every settled call, the calls in flight and
//! the accounts' blocks.
//!
//! Settled calls are appended and never rewritten: the ledger is the record
//! of what was spent, and boardd sums it again at start. A budget's row is a
//! [`BudgetRow`].

use crate::store::rows::BudgetRow;
use crate::store::{StoreError, to_json};
use rusqlite::{Transaction, params};
use teamboard_board::Changes;

/// Created with the others by `Store::open`.
pub(super) const SCHEMA: &str = "
    CREATE TABLE IF NOT EXISTS budgets (
        team TEXT NOT NULL, key TEXT NOT NULL, body TEXT NOT NULL,
        PRIMARY KEY (team, key)) WITHOUT ROWID;
    CREATE TABLE IF NOT EXISTS usage (
        seq INTEGER PRIMARY KEY, team TEXT NOT NULL, body TEXT NOT NULL);
    CREATE TABLE IF NOT EXISTS held (
        team TEXT NOT NULL, member TEXT NOT NULL, id INTEGER NOT NULL, body TEXT NOT NULL,
        PRIMARY KEY (team, member, id)) WITHOUT ROWID;
    CREATE TABLE IF NOT EXISTS account_blocks (account TEXT PRIMARY KEY, body TEXT NOT NULL);";

/// Writes one batch's spend rows inside the commit's transaction.
pub(super) fn write(
    tx: &Transaction,
    batch: &Changes,
    err: &impl Fn(rusqlite::Error) -> StoreError,
) -> Result<(), StoreError> {
    let prepare = |sql| tx.prepare_cached(sql).map_err(err);
    if !batch.budgets.is_empty() {
        let mut put =
            prepare("INSERT OR REPLACE INTO budgets (team, key, body) VALUES (?1, ?2, ?3)")?;
        let mut del = prepare("DELETE FROM budgets WHERE team = ?1 AND key = ?2")?;
        for (team, scope, per, budget) in &batch.budgets {
            let key = to_json(&(scope, per), "budget key")?;
            match budget {
                Some((b, marks)) => {
                    let row = BudgetRow::new(b, marks);
                    put.execute(params![team, key, to_json(&row, "budget")?])
                }
                None => del.execute(params![team, key]),
            }
            .map_err(err)?;
        }
    }
    if !batch.usage.is_empty() {
        let mut put = prepare("INSERT INTO usage (team, body) VALUES (?1, ?2)")?;
        for (team, rec) in &batch.usage {
            put.execute(params![team, to_json(rec, "usage record")?])
                .map_err(err)?;
        }
    }
    if !batch.held.is_empty() {
        let mut put = prepare(
            "INSERT OR REPLACE INTO held (team, member, id, body) VALUES (?1, ?2, ?3, ?4)",
        )?;
        let mut del = prepare("DELETE FROM held WHERE team = ?1 AND member = ?2 AND id = ?3")?;
        for (team, member, id, call) in &batch.held {
            // Ids are the client's; SQLite's integers are signed.
            let id = *id as i64;
            match call {
                Some(c) => put.execute(params![team, member, id, to_json(c, "held call")?]),
                None => del.execute(params![team, member, id]),
            }
            .map_err(err)?;
        }
    }
    if !batch.account_blocks.is_empty() {
        let mut put =
            prepare("INSERT OR REPLACE INTO account_blocks (account, body) VALUES (?1, ?2)")?;
        for b in &batch.account_blocks {
            put.execute(params![b.account, to_json(b, "account block")?])
                .map_err(err)?;
        }
    }
    Ok(())
}
