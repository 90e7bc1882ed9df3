//! Tokens the lead issues by name (`create_token`): what a client that cannot
//! read `lead.key` (a teammate on another host) presents as its credential.
//!
//! A token vouches for one name in one team, exactly as that member's own
//! credential does, and for the lead when the name is `lead`. It is kept apart
//! from the members' credentials on purpose: `register` replaces a member's
//! credential, and must not revoke the token the member registered with.

use super::{Digest, KeyError, digest, random_credential};
use crate::store::{TokenChange, TokenRow};
use std::collections::BTreeMap;
use subtle::ConstantTimeEq;
use teamboard_protocol::Credential;
use teamboard_protocol::token::{IssuedToken, TokenEntry};

/// Each name's token, by team and name.
#[derive(Debug, Default)]
pub struct Tokens {
    by_name: BTreeMap<(String, String), (Digest, i64)>,
}

impl Tokens {
    pub fn new(rows: Vec<TokenRow>) -> Tokens {
        let by_name = (rows.into_iter())
            .map(|r| ((r.team, r.name), (r.digest, r.created_ms)))
            .collect();
        Tokens { by_name }
    }

    /// Whether `given` is the current token of `name` in `team`.
    pub fn vouches(&self, team: &str, name: &str, given: &Digest) -> bool {
        let key = (team.to_string(), name.to_string());
        self.by_name
            .get(&key)
            .is_some_and(|(current, _)| bool::from(given.ct_eq(current)))
    }

    /// A fresh token for `name` in `team`, replacing the one before; the
    /// change to persist with the reply.
    pub fn create(
        &mut self,
        team: &str,
        name: &str,
        now_ms: i64,
    ) -> Result<(IssuedToken, TokenChange), KeyError> {
        let token: Credential = random_credential()?;
        let row = TokenRow {
            team: team.to_string(),
            name: name.to_string(),
            digest: digest(token.as_str()),
            created_ms: now_ms,
        };
        self.by_name.insert(
            (row.team.clone(), row.name.clone()),
            (row.digest, row.created_ms),
        );
        let entry = entry(team, name, now_ms);
        Ok((IssuedToken { entry, token }, TokenChange::Put(row)))
    }

    /// Forgets the token of `name` in `team`: what it was, and the change to
    /// persist, or `None` when it had none.
    pub fn revoke(&mut self, team: &str, name: &str) -> Option<(TokenEntry, TokenChange)> {
        let (_, created) = self.by_name.remove(&(team.to_string(), name.to_string()))?;
        let change = TokenChange::Revoke {
            team: team.to_string(),
            name: name.to_string(),
        };
        Some((entry(team, name, created), change))
    }

    /// The tokens of `team`, by name; never their digests.
    pub fn list(&self, team: &str) -> Vec<TokenEntry> {
        (self.by_name.iter())
            .filter(|((t, _), _)| t == team)
            .map(|((t, n), (_, created))| entry(t, n, *created))
            .collect()
    }
}

fn entry(team: &str, name: &str, created_ms: i64) -> TokenEntry {
    TokenEntry {
        team: team.to_string(),
        name: name.to_string(),
        created_ms,
    }
}
