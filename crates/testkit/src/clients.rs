//! Protocol clients on a daemon's real socket, and helpers for their calls.

use std::future::Future;
use std::path::Path;
use std::task::Poll;
use teamboard_protocol::request::NewTask;
use teamboard_protocol::{Client, ClientError, ErrorCode, Work};

/// The team every test works in.
pub const TEAM: &str = teamboard_protocol::DEFAULT_TEAM;

/// Connects as `lead` (the person at teamctl), with the lead's credential.
pub async fn lead(socket: &Path) -> Client {
    let key = crate::lead_key(socket);
    Client::connect(socket, "test", teamboard_protocol::LEAD, TEAM, Some(&key))
        .await
        .expect("connect as lead")
}

/// Connects as `name` without registering, with the lead's credential (as
/// teammated registers its member).
pub async fn connect(socket: &Path, name: &str) -> Client {
    let key = crate::lead_key(socket);
    Client::connect(socket, "test", name, TEAM, Some(&key))
        .await
        .unwrap_or_else(|e| panic!("connect as {name}: {e}"))
}

/// Connects as `name` and registers with `role`, which makes it a claimant.
pub async fn teammate(socket: &Path, name: &str, role: &str) -> Client {
    teammate_with_pid(socket, name, role, None).await
}

/// Like [`teammate`], reporting `pid` as its process, as a real teammated does.
pub async fn teammate_with_pid(socket: &Path, name: &str, role: &str, pid: Option<u32>) -> Client {
    let client = connect(socket, name).await;
    client
        .register(role, pid)
        .await
        .unwrap_or_else(|e| panic!("register {name}: {e}"));
    client
}

/// Like [`teammate`], registered with its sandbox `off`: boardd runs the
/// checks of its tasks unconfined, as before the sandbox, so that they may
/// share files and pids with the test outside the worktree.
pub async fn unsandboxed_teammate(socket: &Path, name: &str, role: &str) -> Client {
    let client = connect(socket, name).await;
    register_unsandboxed(&client, role)
        .await
        .unwrap_or_else(|e| panic!("register {name}: {e}"));
    client
}

/// Registers `client` (again) as `role`, with its sandbox `off`.
pub async fn register_unsandboxed(
    client: &Client,
    role: &str,
) -> Result<teamboard_protocol::Member, ClientError> {
    let off = teamboard_protocol::Sandbox {
        mode: teamboard_protocol::SandboxMode::Off,
        network: true,
    };
    client
        .register_with(teamboard_protocol::request::RegisterArgs {
            role: role.to_string(),
            sandbox: Some(off),
            ..Default::default()
        })
        .await
        .map(|r| r.member)
}

/// A plain task with only a subject.
pub fn task(subject: impl Into<String>) -> NewTask {
    NewTask {
        subject: subject.into(),
        ..Default::default()
    }
}

/// The error a call is expected to fail with.
pub fn code_of<T: std::fmt::Debug>(r: Result<T, ClientError>) -> ErrorCode {
    match r {
        Ok(v) => panic!("expected an error, got {v:?}"),
        Err(e) => e
            .code()
            .unwrap_or_else(|| panic!("expected a server error, got {e}")),
    }
}

/// A `wait_for_work` call in flight.
pub type Parked<'a> =
    std::pin::Pin<Box<dyn Future<Output = Result<Work, ClientError>> + Send + 'a>>;

/// Sends `wait_for_work` and returns once the daemon has parked it (or answered it).
///
/// Frames of one connection reach the actor in order, so once a `status` sent after
/// the wait is answered, the wait has been processed. The wait is polled first so
/// that its frame is written first.
pub async fn park<'a>(client: &'a Client) -> Parked<'a> {
    let mut wait = Box::pin(client.wait_for_work(None));
    let first = std::future::poll_fn(|cx| Poll::Ready(wait.as_mut().poll(cx))).await;
    if let Poll::Ready(r) = first {
        return Box::pin(async move { r });
    }
    tokio::select! {
        biased;
        r = &mut wait => Box::pin(async move { r }),
        s = client.status() => {
            s.expect("status while parked");
            wait
        }
    }
}
