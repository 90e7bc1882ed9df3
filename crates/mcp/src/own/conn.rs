//! The session of a person's member: connected and registered at the first call
//! (or at start), opened again after boardd went away.

use super::OwnConfig;
use super::held::{self, Held, Shared};
use crate::board::within;
use std::sync::Arc;
use teamboard_protocol::{Client, ErrorCode, TaskId};

/// The client's name in the hello, for boardd's logs.
pub(super) const CLIENT_KIND: &str = "teamctl-mcp";

/// A registered session and the keeper of its claim's lease.
pub(super) struct Conn {
    pub client: Arc<Client>,
    lease: tokio::task::JoinHandle<()>,
}

impl Drop for Conn {
    fn drop(&mut self) {
        self.lease.abort();
    }
}

/// Connects as the member and registers it. A claim held from before is kept
/// only if boardd still has it as the member's (it adopts claims on register
/// after a restart); one boardd gives back on register is taken up.
///
/// Connecting, registering and settling the claim wait at most `cfg.timeout`:
/// a boardd that does not answer must not hang the agent's tool call.
pub(super) async fn open(cfg: &OwnConfig, held: &Shared) -> Result<Conn, String> {
    let opening = async {
        let (client, task) = register(cfg).await?;
        let client = Arc::new(client);
        settle(&client, task, held).await;
        Ok::<_, String>(client)
    };
    let client = within(cfg.timeout, opening).await.ok_or_else(|| {
        format!(
            "boardd at {} did not answer within {} s (teamctl mcp --timeout)",
            cfg.endpoint,
            cfg.timeout.unwrap_or_default().as_secs_f64()
        )
    })??;
    let lease = held::keep_lease(client.clone(), held.clone());
    Ok(Conn { client, lease })
}

async fn register(cfg: &OwnConfig) -> Result<(Client, Option<TaskId>), String> {
    let key = cfg.credential.as_ref().ok();
    let client = Client::open(
        &cfg.endpoint,
        CLIENT_KIND,
        &cfg.name,
        &cfg.team,
        Some(cfg.new_team),
        key,
    )
    .await
    .map_err(|e| e.to_string())?;
    let member = client
        .register(&cfg.role, Some(std::process::id()))
        .await
        .map_err(|e| match (e.code(), &cfg.credential) {
            (Some(ErrorCode::PermissionDenied), Err(why)) => why.clone(),
            (Some(ErrorCode::AlreadyConnected), _) => format!(
                "the name {} is taken in team {} by another live session (a teammate, or another \
                 `teamctl mcp --name {}`); start this server with another --name",
                cfg.name, cfg.team, cfg.name
            ),
            (_, _) => format!("boardd refused to register {}: {e}", cfg.name),
        })?;
    tracing::info!(name = %cfg.name, team = %cfg.team, role = %member.role, "registered");
    Ok((client, member.task))
}

/// Lines the held claim up with the task boardd says the member holds.
async fn settle(client: &Client, task: Option<TaskId>, held: &Shared) {
    let before = held::current(held);
    match (before, task) {
        (Some(h), Some(id)) if h.id == id => {}
        (Some(h), _) => held::mark_lost(
            held,
            h.id,
            h.epoch,
            "the connection to boardd closed, and the claim went with it".into(),
        ),
        (None, Some(id)) => match client.get_task(id).await {
            Ok(detail) => {
                let t = detail.task;
                let mut adopted = Held::new(t.id, t.epoch, t.subject);
                if t.worktree.is_some() {
                    adopted.tree = super::tree_of(client, None).await;
                }
                *held::lock(held) = Some(adopted);
            }
            Err(e) => {
                tracing::warn!(task = id, error = %e, "cannot read the task boardd gave back")
            }
        },
        (None, None) => {}
    }
}
