//! A group of batches as the rows it leaves behind: for each table, the final
//! state of every key across the group, a body to upsert or a key to delete.
//!
//! The batches are applied in order, and within a batch each table's deletes
//! after its puts, as SQLite applies them row by row: a task put then deleted
//! in one group ends deleted, deleted then put ends present, and of two puts of
//! one member the later wins. Collapsing first is what lets a commit write a
//! table in one statement: `ON CONFLICT DO UPDATE` refuses to touch a row twice
//! in one statement, and a put and a delete of one key in two statements would
//! otherwise need the group's order between them. After collapsing, a table's
//! upserted and deleted keys are disjoint, so their order no longer matters.
//!
//! Keys are kept sorted, so two writers touching the same rows lock them in
//! the same order.

use crate::store::rows::BudgetRow;
use crate::store::{CredentialRow, StoreError, TokenChange, to_json};
use std::collections::{BTreeMap, BTreeSet};
use teamboard_board::Changes;

/// The final state of each key of one table: `Some` to upsert, `None` to
/// delete.
pub struct Table<K, V>(BTreeMap<K, Option<V>>);

impl<K: Ord, V> Default for Table<K, V> {
    fn default() -> Self {
        Table(BTreeMap::new())
    }
}

impl<K: Ord, V> Table<K, V> {
    fn put(&mut self, key: K, value: V) {
        self.0.insert(key, Some(value));
    }

    fn delete(&mut self, key: K) {
        self.0.insert(key, None);
    }

    pub fn puts(&self) -> impl Iterator<Item = (&K, &V)> {
        self.0.iter().filter_map(|(k, v)| Some((k, v.as_ref()?)))
    }

    pub fn deletes(&self) -> impl Iterator<Item = &K> {
        self.0.iter().filter(|(_, v)| v.is_none()).map(|(k, _)| k)
    }
}

/// Every row a group writes, encoded. Ids are stored signed, as SQLite stores
/// them.
#[derive(Default)]
pub struct Group {
    pub tasks: Table<(String, i64), String>,
    pub members: Table<(String, String), String>,
    /// By id: (team, body).
    pub messages: Table<i64, (String, String)>,
    pub requests: Table<i64, (String, String)>,
    pub repos: Table<String, String>,
    pub teams: BTreeSet<String>,
    /// By seq: (team, task, body).
    pub events: Table<i64, (String, Option<i64>, String)>,
    /// By (team, scope and period as JSON).
    pub budgets: Table<(String, String), String>,
    /// Appended in group order: (team, body).
    pub usage: Vec<(String, String)>,
    pub held: Table<(String, String, i64), String>,
    pub account_blocks: Table<String, String>,
    pub credentials: Table<(String, String), Vec<u8>>,
    /// By (team, name): (digest, created).
    pub tokens: Table<(String, String), (Vec<u8>, i64)>,
    /// The message id counter after the group's last batch.
    pub next_message_id: Option<u64>,
}

impl Group {
    pub fn new<'a>(
        batches: &[&'a Changes],
        credentials: &[&'a CredentialRow],
        tokens: &[&'a TokenChange],
    ) -> Result<Group, StoreError> {
        let mut g = Group::default();
        for batch in batches {
            g.batch(batch)?;
        }
        for row in credentials {
            let key = (row.team.clone(), row.name.clone());
            g.credentials.put(key, row.digest.to_vec());
        }
        for change in tokens {
            match change {
                TokenChange::Put(row) => {
                    let key = (row.team.clone(), row.name.clone());
                    g.tokens.put(key, (row.digest.to_vec(), row.created_ms));
                }
                TokenChange::Revoke { team, name } => g.tokens.delete((team.clone(), name.clone())),
            }
        }
        Ok(g)
    }

    fn batch(&mut self, b: &Changes) -> Result<(), StoreError> {
        for (team, task) in &b.tasks {
            let key = (team.clone(), task.id as i64);
            self.tasks.put(key, to_json(task, "task")?);
        }
        for (team, id) in &b.tasks_deleted {
            self.tasks.delete((team.clone(), *id as i64));
        }
        for (team, member) in &b.members {
            let key = (team.clone(), member.name.clone());
            self.members.put(key, to_json(member, "member")?);
        }
        for (team, msg) in &b.messages_added {
            let row = (team.clone(), to_json(msg, "message")?);
            self.messages.put(msg.id as i64, row);
        }
        for id in &b.messages_acked {
            self.messages.delete(*id as i64);
        }
        for (team, req) in &b.requests {
            let row = (team.clone(), to_json(req, "request")?);
            self.requests.put(req.id as i64, row);
        }
        for (team, repo) in &b.repos {
            self.repos.put(team.clone(), to_json(repo, "repo")?);
        }
        self.teams.extend(b.teams.iter().cloned());
        for ev in &b.events {
            let row = (
                ev.team.clone(),
                ev.task.map(|t| t as i64),
                to_json(ev, "event")?,
            );
            self.events.put(ev.seq as i64, row);
        }
        for (team, scope, per, budget) in &b.budgets {
            let key = (team.clone(), to_json(&(scope, per), "budget key")?);
            match budget {
                Some((budget, marks)) => {
                    let row = to_json(&BudgetRow::new(budget, marks), "budget")?;
                    self.budgets.put(key, row)
                }
                None => self.budgets.delete(key),
            }
        }
        for (team, rec) in &b.usage {
            self.usage
                .push((team.clone(), to_json(rec, "usage record")?));
        }
        for (team, member, id, call) in &b.held {
            let key = (team.clone(), member.clone(), *id as i64);
            match call {
                Some(c) => self.held.put(key, to_json(c, "held call")?),
                None => self.held.delete(key),
            }
        }
        for block in &b.account_blocks {
            let row = to_json(block, "account block")?;
            self.account_blocks.put(block.account.clone(), row);
        }
        self.next_message_id = Some(b.next_message_id);
        Ok(())
    }
}
