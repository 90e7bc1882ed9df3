//! The server's side of boardd: one shared session for requests, reopened when
//! boardd restarts, and a fresh subscribed session per event stream.

use crate::Config;
use crate::auth::Token;
use std::path::PathBuf;
use std::sync::Arc;
use teamboard_protocol::lead_key::lead_key;
use teamboard_protocol::{Client, ClientError, Credential};
use tokio::sync::Mutex;

/// The client kind in the hello: the page acts as the person at teamctl does.
const CLIENT_KIND: &str = "teamctl";

pub struct Board {
    pub token: Token,
    /// The lead's credential: the page acts as the person.
    key: Credential,
    pub team: String,
    pub state_dir: PathBuf,
    /// Served over TLS: the cookie is then marked `Secure`.
    pub tls: bool,
    socket: PathBuf,
    session: Mutex<Arc<Client>>,
}

impl Board {
    pub async fn connect(config: &Config) -> Result<Board, crate::WebError> {
        let key = lead_key(Some(&config.state_dir))?;
        // Only the first hello may create the team: it is durable before the
        // welcome, so every later one finds it.
        let session = Client::join(
            &config.socket,
            CLIENT_KIND,
            teamboard_protocol::LEAD,
            &config.team,
            config.new_team,
            Some(&key),
        )
        .await?;
        Ok(Board {
            token: config.token.clone().unwrap_or_else(Token::random),
            key,
            team: config.team.clone(),
            state_dir: config.state_dir.clone(),
            tls: config.tls.is_some(),
            socket: config.socket.clone(),
            session: Mutex::new(Arc::new(session)),
        })
    }

    /// The shared session, reopened first if boardd closed it (a restart).
    pub async fn client(&self) -> Result<Arc<Client>, ClientError> {
        let mut session = self.session.lock().await;
        if session.is_closed() {
            *session = Arc::new(open(&self.socket, &self.team, &self.key).await?);
        }
        Ok(session.clone())
    }

    /// A session of its own, for one event stream: events are pushed per
    /// connection, so two streams cannot share one.
    pub async fn subscriber(&self) -> Result<Client, ClientError> {
        let client = open(&self.socket, &self.team, &self.key).await?;
        client.subscribe().await?;
        Ok(client)
    }
}

async fn open(
    socket: &std::path::Path,
    team: &str,
    key: &Credential,
) -> Result<Client, ClientError> {
    Client::join(
        socket,
        CLIENT_KIND,
        teamboard_protocol::LEAD,
        team,
        false,
        Some(key),
    )
    .await
}
