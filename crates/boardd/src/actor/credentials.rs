//! What the actor does with credentials: issues a member's at its
//! registration by the lead, carries out the lead's token requests, and ends
//! the subscriptions of sessions that a changed credential no longer vouches
//! for.

use super::Actor;
use crate::handlers::TokenOp;
use crate::reply::Reply;
use teamboard_protocol::{ErrorBody, ErrorCode, Registered};

impl Actor {
    /// A registration made with the lead's credential: the member gets a fresh
    /// credential of its own, persisted with the registration, and every one
    /// before it is revoked. One who registers with its own credential keeps
    /// it: were it replaced, a reply lost to a crash of boardd after the
    /// commit would leave the member with a credential that no longer works.
    pub(super) fn issue(
        &mut self,
        team: &str,
        name: &str,
        reply: Reply,
    ) -> Result<Reply, ErrorBody> {
        let Reply::Member(member) = reply else {
            return Ok(reply);
        };
        let (credential, row) = self.keys.issue(team, name).map_err(|e| {
            tracing::error!(error = %e, "cannot issue a credential");
            ErrorBody::new(ErrorCode::Internal, e.to_string())
        })?;
        self.job.credentials.push(row);
        Ok(Reply::Registered(Box::new(Registered {
            member: *member,
            credential: Some(credential),
        })))
    }

    /// Carries out a lead's token request; a change goes to disk with the
    /// batch, before the reply.
    pub(super) fn token(&mut self, op: TokenOp) -> Result<Reply, ErrorBody> {
        let tokens = &mut self.keys.tokens;
        match op {
            TokenOp::Create { team, name } => {
                let (issued, change) = (tokens.create(&team, &name, Self::now().wall_ms))
                    .map_err(|e| ErrorBody::new(ErrorCode::Internal, e.to_string()))?;
                tracing::info!(%team, %name, "token issued");
                self.job.tokens.push(change);
                Ok(Reply::from(issued))
            }
            TokenOp::Revoke { team, name } => {
                let Some((entry, change)) = tokens.revoke(&team, &name) else {
                    let why = format!("'{name}' has no token in team '{team}'");
                    return Err(ErrorBody::new(ErrorCode::NotFound, why));
                };
                tracing::info!(%team, %name, "token revoked");
                self.job.tokens.push(change);
                Ok(Reply::from(entry))
            }
            TokenOp::List { team } => Ok(Reply::Tokens(tokens.list(&team))),
        }
    }

    /// Ends the subscriptions of sessions that their credential no longer
    /// vouches for (a token revoked or replaced, a member's credential
    /// replaced by a registration): their requests are refused, and the
    /// team's events stop with them.
    pub(super) fn unsubscribe_unvouched(&mut self) {
        let (sessions, keys) = (&self.sessions, &self.keys);
        self.subscribers.retain(|_, subscribed| {
            subscribed.retain(|id| {
                sessions
                    .get(id)
                    .is_some_and(|s| keys.check(&s.authority, &s.team, &s.name).is_ok())
            });
            !subscribed.is_empty()
        });
    }
}
