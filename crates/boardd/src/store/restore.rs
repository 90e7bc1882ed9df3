//! What a restore reads, in which order, and how it becomes a [`Snapshot`]:
//! one description for both engines. Each engine only runs the queries
//! ([`Source`]); the tables, their orders and the assembly are here, so that a
//! table added to the board is restored from both or from neither.
//!
//! The orders matter: the board rebuilds its indexes in the order it is given
//! rows, and both engines must give the same board. Text sorts by its bytes in
//! both: SQLite's default collation does so, PostgreSQL sorts by the locale
//! unless told `COLLATE "C"` ([`Source::BYTEWISE`]).

use super::StoreError;
use super::rows::BudgetRow;
use teamboard_board::Snapshot;

/// The queries a restore needs, run by one engine. Each returns the rows or
/// the engine's error; a table changed by hand is an error, never a panic.
pub(super) trait Source {
    /// What follows a text column in `ORDER BY` for it to sort by its bytes.
    const BYTEWISE: &'static str;

    /// The rows of a query of two text columns: a key and a JSON body.
    fn bodies(&mut self, sql: &str) -> Result<Vec<(String, String)>, StoreError>;
    /// The rows of a query of a text column and a number.
    fn numbered(&mut self, sql: &str) -> Result<Vec<(String, i64)>, StoreError>;
    /// The rows of a query of one text column.
    fn texts(&mut self, sql: &str) -> Result<Vec<String>, StoreError>;
    /// The first column of the first row, if there is a row and it is not NULL.
    fn number(&mut self, sql: &str) -> Result<Option<i64>, StoreError>;
    /// A body that does not decode as `what`.
    fn corrupt(&self, what: &'static str, source: serde_json::Error) -> StoreError;
}

/// The board as `source` holds it, and the message id counter as stored
/// (`None`: never stored).
pub(super) fn load<S: Source>(source: &mut S) -> Result<(Snapshot, Option<i64>), StoreError> {
    let c = S::BYTEWISE;
    let mut snap = Snapshot {
        tasks: rows(source, &format!("tasks ORDER BY team{c}, id"), "task")?,
        members: rows(source, "members", "member")?,
        messages: rows(source, "messages ORDER BY id", "message")?,
        requests: rows(source, "requests ORDER BY id", "request")?,
        repos: rows(source, &format!("repos ORDER BY team{c}"), "repo")?,
        usage: rows(source, "usage ORDER BY seq", "usage record")?,
        held: rows(source, "held", "held call")?,
        ..Default::default()
    };
    let budgets: Vec<(String, BudgetRow)> = rows(
        source,
        &format!("budgets ORDER BY team{c}, key{c}"),
        "budget",
    )?;
    snap.budgets = (budgets.into_iter())
        .map(|(team, row)| {
            let (budget, marks) = row.into_parts();
            (team, budget, marks)
        })
        .collect();
    let blocks = source.bodies("SELECT account, body FROM account_blocks")?;
    snap.account_blocks = (blocks.iter())
        .map(|(_, body)| serde_json::from_str(body).map_err(|e| source.corrupt("account block", e)))
        .collect::<Result<_, _>>()?;
    let next_msg = source.number("SELECT value FROM meta WHERE key = 'next_message_id'")?;
    let max_seq = source.number("SELECT MAX(seq) FROM events")?;
    let last = source
        .numbered("SELECT team, MAX(task) FROM events WHERE task IS NOT NULL GROUP BY team")?;
    snap.last_task_ids = (last.into_iter())
        .map(|(team, id)| (team, id as u64))
        .collect();
    snap.teams = source.texts(&format!("SELECT name FROM teams ORDER BY name{c}"))?;
    snap.next_message_id = next_msg.unwrap_or(1).max(1) as u64;
    snap.next_event_seq = max_seq.unwrap_or(0) as u64 + 1;
    Ok((snap, next_msg))
}

/// The rows of `from` (a table, and what follows it in the query), keyed by
/// team, their bodies decoded as `what`.
fn rows<T: serde::de::DeserializeOwned>(
    source: &mut impl Source,
    from: &str,
    what: &'static str,
) -> Result<Vec<(String, T)>, StoreError> {
    let bodies = source.bodies(&format!("SELECT team, body FROM {from}"))?;
    (bodies.into_iter())
        .map(|(team, body)| match serde_json::from_str(&body) {
            Ok(row) => Ok((team, row)),
            Err(e) => Err(source.corrupt(what, e)),
        })
        .collect()
}
