//! Tokens the lead issued by name: the digest of each, and when it was made.
//!
//! As for members' credentials, only a SHA-256 digest is kept. A name has at
//! most one token per team: creating another replaces (revokes) it, and
//! `revoke_token` deletes the row.

use crate::store::{StoreError, TokenChange, TokenRow};
use rusqlite::{Connection, Transaction, params};

/// Created with the others by `SqliteStore::open`.
pub(super) const SCHEMA: &str = "
    CREATE TABLE IF NOT EXISTS tokens (
        team TEXT NOT NULL, name TEXT NOT NULL, digest BLOB NOT NULL,
        created INTEGER NOT NULL,
        PRIMARY KEY (team, name)) WITHOUT ROWID;";

/// Writes token changes inside the commit's transaction, in order.
pub(super) fn write<'a>(
    tx: &Transaction,
    changes: impl IntoIterator<Item = &'a TokenChange>,
    err: &impl Fn(rusqlite::Error) -> StoreError,
) -> Result<(), StoreError> {
    for change in changes {
        match change {
            TokenChange::Put(row) => tx
                .prepare_cached(
                    "INSERT OR REPLACE INTO tokens (team, name, digest, created)
                     VALUES (?1, ?2, ?3, ?4)",
                )
                .and_then(|mut put| {
                    put.execute(params![
                        row.team,
                        row.name,
                        row.digest.as_slice(),
                        row.created_ms
                    ])
                }),
            TokenChange::Revoke { team, name } => tx
                .prepare_cached("DELETE FROM tokens WHERE team = ?1 AND name = ?2")
                .and_then(|mut del| del.execute(params![team, name])),
        }
        .map_err(err)?;
    }
    Ok(())
}

/// Every token, as its digest. A row whose digest is not 32 bytes cannot have
/// been written by boardd: it vouches for nobody.
pub(super) fn load(conn: &Connection) -> rusqlite::Result<Vec<TokenRow>> {
    let mut stmt = conn.prepare("SELECT team, name, digest, created FROM tokens")?;
    let rows = stmt.query_map([], |r| {
        Ok((
            r.get::<_, String>(0)?,
            r.get::<_, String>(1)?,
            r.get::<_, Vec<u8>>(2)?,
            r.get::<_, i64>(3)?,
        ))
    })?;
    let mut out = Vec::new();
    for row in rows {
        let (team, name, digest, created_ms) = row?;
        match <[u8; 32]>::try_from(digest.as_slice()) {
            Ok(digest) => out.push(TokenRow {
                team,
                name,
                digest,
                created_ms,
            }),
            Err(_) => tracing::warn!(%team, %name, "ignoring a malformed token row"),
        }
    }
    Ok(out)
}
