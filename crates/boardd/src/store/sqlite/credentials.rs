//! Members' credentials: the digest of each member's current one (see
//! [`CredentialRow`]).

use crate::store::{CredentialRow, StoreError};
use rusqlite::{Transaction, params};

/// Created with the others by `Store::open`.
pub(super) const SCHEMA: &str = "
    CREATE TABLE IF NOT EXISTS credentials (
        team TEXT NOT NULL, name TEXT NOT NULL, digest BLOB NOT NULL,
        PRIMARY KEY (team, name)) WITHOUT ROWID;";

/// Writes issued credentials inside the commit's transaction.
pub(super) fn write<'a>(
    tx: &Transaction,
    rows: impl IntoIterator<Item = &'a CredentialRow>,
    err: &impl Fn(rusqlite::Error) -> StoreError,
) -> Result<(), StoreError> {
    let mut rows = rows.into_iter().peekable();
    if rows.peek().is_none() {
        return Ok(());
    }
    let mut put = tx
        .prepare_cached(
            "INSERT OR REPLACE INTO credentials (team, name, digest) VALUES (?1, ?2, ?3)",
        )
        .map_err(err)?;
    for row in rows {
        put.execute(params![row.team, row.name, row.digest.as_slice()])
            .map_err(err)?;
    }
    Ok(())
}
