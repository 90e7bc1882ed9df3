//! The lead's connection, which outlives boardd's restarts: a call that finds
//! the connection gone reconnects and asks again.

use anyhow::bail;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::time::{Duration, Instant};
use teamboard_protocol::{Client, ClientError};

/// How long a call keeps trying while boardd restarts.
const PATIENCE: Duration = Duration::from_secs(60);

pub struct Lead {
    socket: PathBuf,
    team: String,
    client: Option<Client>,
}

pub type Call<'a, T> = Pin<Box<dyn Future<Output = Result<T, ClientError>> + 'a>>;

impl Lead {
    pub fn new(socket: PathBuf, team: &str) -> Lead {
        Lead {
            socket,
            team: team.to_string(),
            client: None,
        }
    }

    /// Runs `f` on a live connection. Only calls that are safe to repeat go
    /// through here: reads, and changes whose repetition the caller checks.
    pub async fn call<T>(
        &mut self,
        f: impl for<'a> Fn(&'a Client) -> Call<'a, T>,
    ) -> anyhow::Result<T> {
        let start = Instant::now();
        loop {
            if self.client.as_ref().is_none_or(Client::is_closed) {
                let key = teamboard_process::lead_key(&self.socket).ok();
                let (socket, team) = (&self.socket, &self.team);
                self.client = Client::connect(socket, "xtask-soak", "lead", team, key.as_ref())
                    .await
                    .ok();
            }
            if let Some(c) = &self.client {
                match f(c).await {
                    Ok(v) => return Ok(v),
                    Err(e) if e.code().is_some() => return Err(e.into()),
                    Err(_) => self.client = None,
                }
            }
            if start.elapsed() > PATIENCE {
                bail!("boardd did not answer the lead for {PATIENCE:?}");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Drops the connection (boardd is about to be killed).
    pub fn reset(&mut self) {
        self.client = None;
    }
}
