//! `teamctl web`: the board in a browser, served to the person.
//!
//! The server is a client of boardd like any other: it connects as the team's
//! lead, the way teamctl does, and every action on the page is one protocol op
//! ([`ops`]), so boardd refuses what it would refuse teamctl, in the same words.
//!
//! ## Shape
//! - `GET /` and three assets, embedded in the binary ([`assets`]);
//! - `GET /api/board`: one snapshot (tasks, team, open requests, repository) and
//!   the `seq` of the last event it includes;
//! - `GET /api/task/ID`, `/api/task/ID/diff`, `/api/member/NAME/transcript`: what
//!   the page re-reads when an event names a task or a member;
//! - `POST /api/op`: an action, `{"op": …, "args": …}` ([`ops`]);
//! - `GET /api/events`: server-sent events from boardd's `subscribe` ([`stream`]).
//!
//! ## Why server-sent events, not a WebSocket
//! Updates flow one way; actions are plain POSTs. `EventSource` reconnects by
//! itself and sends `Last-Event-ID`, which is exactly the catch-up the event log
//! gives (`events since`), so the page needs no reconnection code of its own.
//!
//! ## Why no tower-http
//! Three embedded assets and one auth check are a few lines on axum's own
//! routing and `middleware::from_fn`; tower-http would add a crate for them.
//!
//! ## Security
//! A random token per run ([`auth`]); loopback only unless TLS is given ([`tls`]).

mod api;
mod assets;
mod auth;
mod board;
mod ops;
mod stream;
pub mod task_diff;
mod tls;
mod transcript;

use axum::Router;
use axum::routing::{get, post};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

pub use auth::Token;
pub use tls::TlsFiles;

/// What the server needs to know.
#[derive(Debug, Clone)]
pub struct Config {
    /// boardd's socket, or its TLS listener (`teamctl --connect`).
    pub endpoint: teamboard_protocol::Endpoint,
    /// What vouches for the page as the lead: a token over the network;
    /// `None`, the lead's key in `state_dir`.
    pub credential: Option<teamboard_protocol::Credential>,
    pub team: String,
    /// Where teammates keep their transcripts.
    pub state_dir: PathBuf,
    pub listen: SocketAddr,
    pub tls: Option<TlsFiles>,
    /// The token to require; a fresh random one when `None`.
    pub token: Option<Token>,
    /// Create `team` if no team has that name (`teamctl --new-team`); otherwise
    /// a mistyped team is refused, naming the teams there are.
    pub new_team: bool,
}

/// Why the server cannot start.
#[derive(Debug, thiserror::Error)]
pub enum WebError {
    #[error(
        "refusing to listen on {0}: it is not a loopback address, and the page would be \
         open to the network in clear text. Give --tls-cert and --tls-key to serve HTTPS \
         there, or listen on 127.0.0.1"
    )]
    NotLoopback(SocketAddr),
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("{0}")]
    Tls(String),
    #[error(transparent)]
    Board(#[from] teamboard_protocol::ClientError),
    #[error(transparent)]
    LeadKey(#[from] teamboard_protocol::lead_key::LeadKeyError),
    #[error("the server stopped: {0}")]
    Serve(std::io::Error),
}

/// A bound server, not serving yet: its address is known.
pub struct Web {
    listener: tokio::net::TcpListener,
    tls: Option<tokio_rustls::TlsAcceptor>,
    addr: SocketAddr,
    state: Arc<board::Board>,
}

impl Web {
    /// Checks the configuration, connects to boardd and binds the listener.
    pub async fn bind(config: Config) -> Result<Web, WebError> {
        if !config.listen.ip().is_loopback() && config.tls.is_none() {
            return Err(WebError::NotLoopback(config.listen));
        }
        let tls = config.tls.as_ref().map(tls::acceptor).transpose()?;
        let state = board::Board::connect(&config).await?;
        let listener = tokio::net::TcpListener::bind(config.listen)
            .await
            .map_err(|source| WebError::Bind {
                addr: config.listen,
                source,
            })?;
        let addr = listener.local_addr().map_err(|source| WebError::Bind {
            addr: config.listen,
            source,
        })?;
        Ok(Web {
            listener,
            tls,
            addr,
            state: Arc::new(state),
        })
    }

    /// The address the page is at, with its token: what the person opens.
    pub fn url(&self) -> String {
        let scheme = if self.tls.is_some() { "https" } else { "http" };
        format!(
            "{scheme}://{}/?token={}",
            self.addr,
            self.state.token.as_str()
        )
    }

    /// Serves until the process ends.
    pub async fn serve(self) -> Result<(), WebError> {
        let app = router(self.state);
        match self.tls {
            None => axum::serve(self.listener, app).await,
            Some(acceptor) => axum::serve(tls::Listener::new(self.listener, acceptor), app).await,
        }
        .map_err(WebError::Serve)
    }
}

fn router(state: Arc<board::Board>) -> Router {
    Router::new()
        .route("/", get(assets::index))
        .route("/app.js", get(assets::script))
        .route("/app.css", get(assets::style))
        .route("/api/board", get(api::board))
        .route("/api/team", get(api::team))
        .route("/api/requests", get(api::requests))
        .route("/api/task/{id}", get(api::task))
        .route("/api/task/{id}/diff", get(api::diff))
        .route("/api/member/{name}/transcript", get(api::transcript))
        .route("/api/op", post(api::op))
        .route("/api/events", get(stream::events))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            auth::require,
        ))
        .with_state(state)
}
