//! The one place where the soak's clients connect to boardd: the hello, the
//! registration of a member, and a new connection whenever boardd has been
//! killed under the old one. It is also the one that presents credentials:
//! the lead's for the lead and for a member's first registration, then the
//! member's own, which boardd answered the registration with.

use std::path::PathBuf;
use std::time::{Duration, Instant};
use teamboard_protocol::request::RegisterArgs;
use teamboard_protocol::{Client, ClientError, Credential, ErrorCode};

/// How long a client keeps trying to reach boardd before the run gives up:
/// far beyond a restart, so only a boardd that stays down ends a run.
const PATIENCE: Duration = Duration::from_secs(60);
/// Between two attempts while boardd restarts.
const RETRY: Duration = Duration::from_millis(20);

/// The client kind every soak connection names in its hello.
const CLIENT_KIND: &str = "xtask-soak";

/// A client's identity and its current connection.
pub struct Conn {
    socket: PathBuf,
    team: String,
    pub name: String,
    /// The role a member registers with; `None` for the lead.
    role: Option<String>,
    client: Option<Client>,
    /// A member's own credential, once a registration answered with one.
    own: Option<Credential>,
    /// Connections made so far: the session number in the ack log.
    pub sessions: u64,
}

impl Conn {
    pub fn lead(socket: PathBuf, team: &str) -> Conn {
        Conn::new(socket, team, "lead", None)
    }

    pub fn member(socket: PathBuf, team: &str, name: &str, role: &str) -> Conn {
        Conn::new(socket, team, name, Some(role.to_string()))
    }

    fn new(socket: PathBuf, team: &str, name: &str, role: Option<String>) -> Conn {
        Conn {
            socket,
            team: team.to_string(),
            name: name.to_string(),
            role,
            client: None,
            own: None,
            sessions: 0,
        }
    }

    /// A live connection, made (and the member registered) if the last one is
    /// gone. Errors only when boardd has not answered for [`PATIENCE`].
    pub async fn client(&mut self) -> anyhow::Result<&Client> {
        let start = Instant::now();
        while self.client.as_ref().is_none_or(Client::is_closed) {
            self.client = None;
            match self.open().await {
                Ok(c) => {
                    self.sessions += 1;
                    self.client = Some(c);
                }
                Err(e) if start.elapsed() > PATIENCE => {
                    anyhow::bail!("{} cannot reach boardd for {PATIENCE:?}: {e}", self.name)
                }
                Err(_) => tokio::time::sleep(RETRY).await,
            }
        }
        self.client
            .as_ref()
            .ok_or_else(|| anyhow::anyhow!("{} has no connection", self.name))
    }

    /// Forgets the connection after an error that was not boardd's answer.
    pub fn drop_connection(&mut self) {
        self.client = None;
    }

    async fn open(&mut self) -> anyhow::Result<Client> {
        match self.open_with(self.own.clone()).await {
            // A credential the member never learnt was replaced (boardd was
            // killed after committing a registration, before answering it):
            // the lead's registers it again.
            Err(ClientError::Server(e))
                if self.own.is_some() && e.code == ErrorCode::PermissionDenied =>
            {
                self.own = None;
                Ok(self.open_with(None).await?)
            }
            other => Ok(other?),
        }
    }

    async fn open_with(&mut self, own: Option<Credential>) -> Result<Client, ClientError> {
        let credential = match own {
            Some(own) => own,
            None => teamboard_process::lead_key(&self.socket)
                .map_err(|e| ClientError::Protocol(e.to_string()))?,
        };
        let c = Client::connect(
            &self.socket,
            CLIENT_KIND,
            &self.name,
            &self.team,
            Some(&credential),
        )
        .await?;
        if let Some(role) = &self.role {
            // No pid: boardd would stop the driver's own process on a shutdown.
            let args = RegisterArgs {
                role: role.clone(),
                ..RegisterArgs::default()
            };
            let registered = c.register_with(args).await?;
            if registered.credential.is_some() {
                self.own = registered.credential;
            }
        }
        Ok(c)
    }
}
