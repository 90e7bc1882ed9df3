//! The server's side of boardd: one shared session for requests, reopened when
//! boardd restarts, and a fresh subscribed session per event stream.

use crate::Config;
use crate::auth::Token;
use std::path::PathBuf;
use std::sync::Arc;
use teamboard_protocol::lead_key::lead_key;
use teamboard_protocol::{Client, ClientError, Credential, Endpoint};
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
    endpoint: Endpoint,
    session: Mutex<Arc<Client>>,
}

impl Board {
    pub async fn connect(config: &Config) -> Result<Board, crate::WebError> {
        let key = match &config.credential {
            Some(given) => given.clone(),
            None => lead_key(Some(&config.state_dir))?,
        };
        // Only the first hello may create the team: it is durable before the
        // welcome, so every later one finds it.
        let session = Client::open(
            &config.endpoint,
            CLIENT_KIND,
            teamboard_protocol::LEAD,
            &config.team,
            Some(config.new_team),
            Some(&key),
        )
        .await?;
        Ok(Board {
            token: config.token.clone().unwrap_or_else(Token::random),
            key,
            team: config.team.clone(),
            state_dir: config.state_dir.clone(),
            tls: config.tls.is_some(),
            endpoint: config.endpoint.clone(),
            session: Mutex::new(Arc::new(session)),
        })
    }

    /// The shared session, reopened first if boardd closed it (a restart).
    pub async fn client(&self) -> Result<Arc<Client>, ClientError> {
        let mut session = self.session.lock().await;
        if session.is_closed() {
            *session = Arc::new(open(&self.endpoint, &self.team, &self.key).await?);
        }
        Ok(session.clone())
    }

    /// A session of its own, for one event stream: events are pushed per
    /// connection, so two streams cannot share one.
    pub async fn subscriber(&self) -> Result<Client, ClientError> {
        let client = open(&self.endpoint, &self.team, &self.key).await?;
        client.subscribe().await?;
        Ok(client)
    }
}

async fn open(endpoint: &Endpoint, team: &str, key: &Credential) -> Result<Client, ClientError> {
    let lead = teamboard_protocol::LEAD;
    Client::open(endpoint, CLIENT_KIND, lead, team, Some(false), Some(key)).await
}
