//! Who a session speaks for: the lead's credential and the members'.
//!
//! The hello names a session; its `credential` vouches for the name. The lead's
//! credential (in `<state dir>/lead.key`, which only boardd's user can read and
//! a teammate's sandbox hides) vouches for any name, so that teammated can
//! register its member with it. A member's credential, issued by `register`,
//! vouches for that member's name in its team only. A session that nobody
//! vouches for is welcomed, so that it hears why, and every request of it is
//! answered `permission_denied`.
//!
//! The board's own rules stay name-based ("only the lead may ..."; a member
//! acts for its session's name), and this check makes the name true: a session
//! named `lead` reaches the board only with the lead's credential, one named
//! `alice` only with alice's or the lead's.
//!
//! Alternatives that lost:
//! - Peer credentials (`SO_PEERCRED`) alone: every teammate's commands run as the
//!   person's own user, so the uid tells nobody apart.
//! - Authenticating at the hello only: a credential that a later registration
//!   replaced would go on working on a session opened before. The session keeps
//!   the digest it presented, and each request checks it is still current.
//! - Rejecting the hello: a `reject` frame has no error code, and the protocol
//!   promises `permission_denied` for what a session may not do.
//!
//! Tokens (`auth/tokens.rs`) are a third kind: issued by the lead for a name,
//! they vouch for it as its member's credential does, until revoked.
//!
//! Credentials are compared as SHA-256 digests, in constant time (`subtle`):
//! the member table keeps digests only, and the lead's is held the same way.
//! `ring` (already built for teammated's TLS) gives the digest and the
//! operating system's randomness.
//!
//! On SQLite the lead's credential is made in the state directory and lives
//! there. On PostgreSQL every boardd on the database must vouch for the same
//! lead, so the database holds it (`secrets`, [`LEAD_SECRET`]) and each boardd
//! writes it to its own `lead.key`, for the local clients that read the file.

mod tokens;

use crate::store::{CredentialRow, TokenRow};
use ring::rand::SecureRandom;
use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use subtle::ConstantTimeEq;
use teamboard_protocol::lead_key::LEAD_KEY_FILE;
use teamboard_protocol::{Credential, ErrorBody, ErrorCode, LEAD};
pub use tokens::Tokens;

type Digest = [u8; 32];

/// The lead's credential's name among the database's shared secrets.
pub const LEAD_SECRET: &str = "lead_key";

/// What a session's hello proved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Authority {
    /// The lead's credential: the session may speak as any name.
    Lead,
    /// The member's credential, by its digest: good while it is the member's
    /// current one.
    Member(Digest),
    /// A token the lead issued for the session's name, by its digest: good
    /// until it is revoked or replaced.
    Token(Digest),
    //// Nobody vouches for the name. `presented`: a credential came, and it was
    /// not good for this name.
    Nobody { presented: bool },
}

#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("cannot read the lead's credential {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot write the lead's credential {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the lead's credential {path} is empty; remove it and boardd makes a new one")]
    Empty { path: PathBuf },
    #[error("the operating system gave no randomness for a credential")]
    Random,
    #[error(transparent)]
    Private(#[from] crate::private::PrivateError),
}

/// The credentials boardd knows: the lead's, and each member's current one.
pub struct Keys {
    lead: Digest,
    members: HashMap<(Arc<str>, Arc<str>), Digest>,
    /// The tokens the lead issued.
    pub tokens: Tokens,
    /// Where the lead's credential is, for the reason a refused session hears.
    lead_path: PathBuf,
}

impl Keys {
    /// The lead's credential, and the members' as the store has them. The
    /// lead's is `shared` when the database keeps it, written to the state
    /// directory; otherwise the state directory's own (made at the first start).
    pub fn load(
        state_dir: &Path,
        members: Vec<CredentialRow>,
        shared: Option<&str>,
    ) -> Result<Keys, KeyError> {
        let lead_path = state_dir.join(LEAD_KEY_FILE);
        let lead = match shared {
            Some(secret) => {
                let credential = Credential::new(secret);
                write_key(&lead_path, &credential)?;
                credential
            }
            None => lead_key(&lead_path)?,
        };
        let members = members
            .into_iter()
            .map(|r| ((Arc::from(r.team), Arc::from(r.name)), r.digest))
            .collect();
        Ok(Keys {
            lead: digest(lead.as_str()),
            members,
            tokens: Tokens::default(),
            lead_path,
        })
    }

    /// The same keys, with the tokens the store holds.
    pub fn with_tokens(self, rows: Vec<TokenRow>) -> Keys {
        Keys {
            tokens: Tokens::new(rows),
            ..self
        }
    }

    /// What `credential` proves for `name` in `team`.
    pub fn authority(&self, team: &str, name: &str, credential: Option<&Credential>) -> Authority {
        let Some(credential) = credential else {
            return Authority::Nobody { presented: false };
        };
        let given = digest(credential.as_str());
        if bool::from(given.ct_eq(&self.lead)) {
            return Authority::Lead;
        }
        if self.tokens.vouches(team, name, &given) {
            return Authority::Token(given);
        }
        match self.members.get(&(Arc::from(team), Arc::from(name))) {
            Some(current) if bool::from(given.ct_eq(current)) => Authority::Member(given),
            _ => Authority::Nobody { presented: true },
        }
    }

    /// Whether a session with `authority`, named `name` in `team`, may make a
    /// request: the refusal, in words that say what to present.
    pub fn check(&self, authority: &Authority, team: &str, name: &str) -> Result<(), ErrorBody> {
        let denied = |reason: String| Err(ErrorBody::new(ErrorCode::PermissionDenied, reason));
        let lead_path = self.lead_path.display();
        let how = format!(
            "teamctl reads the lead's credential from {lead_path}; a raw client puts that file's \
             text in hello's `credential`; a client on another host presents a token from \
             `teamctl token create {name}`"
        );
        match authority {
            Authority::Lead => Ok(()),
            Authority::Member(given) => match self.members.get(&(Arc::from(team), Arc::from(name)))
            {
                Some(current) if bool::from(given.ct_eq(current)) => Ok(()),
                _ => denied(format!(
                    "the credential of member '{name}' that this session presented was replaced \
                     by a later registration of '{name}'; connect again with the new one, or \
                     with the lead's ({how})"
                )),
            },
            Authority::Token(given) if self.tokens.vouches(team, name, given) => Ok(()),
            Authority::Token(_) => denied(format!(
                "the token of '{name}' that this session presented was revoked or replaced; \
                 ask the lead for a new one (`teamctl token create {name}`)"
            )),
            Authority::Nobody { presented } if name == LEAD => denied(format!(
                "this session says it is the lead but {} the lead's credential; {how}",
                if *presented {
                    "presented a credential that is not"
                } else {
                    "did not present"
                }
            )),
            Authority::Nobody { presented } => denied(format!(
                "this session says it is '{name}' but {} neither the credential `register` gave \
                 '{name}' (held by its teammated) nor the lead's; {how}",
                if *presented {
                    "presented"
                } else {
                    "did not present"
                }
            )),
        }
    }

    /// A fresh credential for `name` in `team`, which replaces (revokes) the one
    /// before; the row to persist with the registration.
    pub fn issue(
        &mut self,
        team: &str,
        name: &str,
    ) -> Result<(Credential, CredentialRow), KeyError> {
        let credential = random_credential()?;
        let row = CredentialRow {
            team: team.to_string(),
            name: name.to_string(),
            digest: digest(credential.as_str()),
        };
        self.members
            .insert((Arc::from(team), Arc::from(name)), row.digest);
        Ok((credential, row))
    }
}

fn digest(secret: &str) -> Digest {
    let d = ring::digest::digest(&ring::digest::SHA256, secret.as_bytes());
    let mut out = [0; 32];
    out.copy_from_slice(d.as_ref());
    out
}

/// 32 random bytes as 64 hex digits: text that any client can put in JSON
/// as it reads it from the file. Written out by hand: four lines do not
/// warrant a hex crate.
pub fn random_credential() -> Result<Credential, KeyError> {
    let mut bytes = [0u8; 32];
    ring::rand::SystemRandom::new()
        .fill(&mut bytes)
        .map_err(|_| KeyError::Random)?;
    let text: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    Ok(Credential::new(text))
}

/// The lead's credential in `path`, made first if there is none: written to a
/// 0600 temporary file beside it, synced, and renamed into place, so that a
/// crash leaves either no file or a whole one. A file with looser modes is
/// made 0600.
fn lead_key(path: &Path) -> Result<Credential, KeyError> {
    let read = |source| KeyError::Read {
        path: path.to_path_buf(),
        source,
    };
    match std::fs::read_to_string(path) {
        Ok(text) => {
            crate::private::existing_file(path)?;
            let secret = text.trim();
            if secret.is_empty() {
                return Err(KeyError::Empty {
                    path: path.to_path_buf(),
                });
            }
            Ok(Credential::new(secret))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => create(path),
        Err(e) => Err(read(e)),
    }
}

fn create(path: &Path) -> Result<Credential, KeyError> {
    let credential = random_credential()?;
    persist(path, &credential, false)?;
    tracing::info!(path = %path.display(), "made the lead's credential");
    Ok(credential)
}

/// Writes the database's lead credential over whatever `path` held: the
/// database is the truth, and a file from an earlier database is stale.
fn write_key(path: &Path, credential: &Credential) -> Result<(), KeyError> {
    persist(path, credential, true)
}

/// Writes `credential` to a 0600 temporary file beside `path`, syncs it, and
/// renames it into place (over an existing file only if `replace`).
fn persist(path: &Path, credential: &Credential, replace: bool) -> Result<(), KeyError> {
    let write = |source| KeyError::Write {
        path: path.to_path_buf(),
        source,
    };
    let dir = path.parent().unwrap_or(Path::new("."));
    // tempfile makes its files 0600.
    let mut file = tempfile::NamedTempFile::new_in(dir).map_err(write)?;
    writeln!(file, "{}", credential.as_str()).map_err(write)?;
    file.as_file().sync_all().map_err(write)?;
    if replace {
        file.persist(path).map_err(|e| write(e.error))?;
    } else {
        file.persist_noclobber(path).map_err(|e| write(e.error))?;
    }
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(write)?;
    Ok(())
}

#[cfg(test)]
mod tests;
