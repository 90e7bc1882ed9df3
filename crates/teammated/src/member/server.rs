//! Accepting connections on the member socket and reading their calls.
//!
//! The socket lives in a directory of its own, created 0700 under the system's
//! temporary directory, so that only this user reaches it, and its path stays
//! short: a Unix socket's path may not exceed 107 bytes, which a state directory
//! deep in a home or a test's temporary directory can. The directory goes when the
//! server is dropped; after a `kill -9` an empty directory with a dead socket is
//! left behind, which nothing reads again.

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use teamboard_protocol::member::{MAX_MEMBER_LINE, MemberCall, MemberReply};
use tempfile::TempDir;
use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::{mpsc, oneshot};

/// One call from an agent's tool, and where its answer goes.
pub struct Incoming {
    pub call: MemberCall,
    pub reply: oneshot::Sender<MemberReply>,
}

/// The listening socket. Calls queue in a channel until the work loop takes them.
pub struct MemberServer {
    /// Removed, with the socket in it, when the server is dropped.
    _dir: TempDir,
    path: PathBuf,
    calls: mpsc::Receiver<Incoming>,
    accept: tokio::task::JoinHandle<()>,
}

impl MemberServer {
    /// Binds the socket. `name` goes into the directory's name, for people
    /// reading `/tmp`.
    pub fn bind(name: &str) -> std::io::Result<MemberServer> {
        let short: String = name.chars().take(24).collect();
        let dir = tempfile::Builder::new()
            .prefix(&format!("teamboard-member-{short}-"))
            .permissions(std::fs::Permissions::from_mode(0o700))
            .tempdir()?;
        let path = dir.path().join("member.sock");
        let listener = UnixListener::bind(&path)?;
        let (tx, calls) = mpsc::channel(64);
        let accept = tokio::spawn(accept_loop(listener, tx));
        Ok(MemberServer {
            _dir: dir,
            path,
            calls,
            accept,
        })
    }

    /// The socket's path, for [`teamboard_protocol::member::MEMBER_SOCKET_ENV`].
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Answers every call waiting in the queue with an error saying `why`, and
    /// returns how many there were.
    ///
    /// Trap: calls queue for as long as no agent phase takes them, and a call
    /// names its task only if its caller chose to. One left over from a phase
    /// (the agent was stopped while its call was on the way) or sent while the
    /// teammate was idle would otherwise be carried out in the next phase,
    /// against whatever task is held then: a `complete_task` without an id
    /// would end the wrong task with the wrong result.
    pub fn refuse_queued(&mut self, why: &str) -> usize {
        let mut refused = 0;
        while let Ok(call) = self.calls.try_recv() {
            tracing::warn!(tool = %call.call.tool, "a board call came outside its agent's phase; refused");
            let _ = call.reply.send(MemberReply::error(why));
            refused += 1;
        }
        refused
    }

    /// The next call. Cancel-safe. Never ends while the server lives.
    pub async fn next(&mut self) -> Incoming {
        match self.calls.recv().await {
            Some(call) => call,
            // The accept loop holds the sender for as long as we live.
            None => std::future::pending().await,
        }
    }
}

impl Drop for MemberServer {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

async fn accept_loop(listener: UnixListener, tx: mpsc::Sender<Incoming>) {
    loop {
        match listener.accept().await {
            Ok((stream, _)) => {
                tokio::spawn(serve(stream, tx.clone()));
            }
            Err(e) => {
                tracing::warn!(error = %e, "member socket: cannot accept");
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
        }
    }
}

/// One connection: a call per line, answered in order. A line that is too long
/// or does not parse is answered with an error, and the connection goes on.
async fn serve(stream: UnixStream, tx: mpsc::Sender<Incoming>) {
    let (read, mut write) = stream.into_split();
    let mut reader = tokio::io::BufReader::new(read);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        let mut limited = (&mut reader).take(MAX_MEMBER_LINE as u64 + 1);
        match limited.read_until(b'\n', &mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let reply = if buf.last() != Some(&b'\n') && buf.len() > MAX_MEMBER_LINE {
            // Skip the rest of the line; answer once.
            let mut rest = Vec::new();
            if reader.read_until(b'\n', &mut rest).await.is_err() {
                return;
            }
            MemberReply::error(format!("the call is longer than {} bytes", MAX_MEMBER_LINE))
        } else {
            match serde_json::from_slice::<MemberCall>(&buf) {
                Ok(call) => {
                    let (reply, answer) = oneshot::channel();
                    if tx.send(Incoming { call, reply }).await.is_err() {
                        return;
                    }
                    answer.await.unwrap_or_else(|_| {
                        MemberReply::error(
                            "the teammate is not working on a task with an agent right now",
                        )
                    })
                }
                Err(e) => MemberReply::error(format!("the call does not parse: {e}")),
            }
        };
        let Ok(mut line) = serde_json::to_vec(&reply) else {
            return;
        };
        line.push(b'\n');
        if write.write_all(&line).await.is_err() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn calls_arrive_in_order_and_bad_lines_get_an_error() {
        let mut server = MemberServer::bind("alice").unwrap();
        let path = server.path().to_path_buf();
        assert!(path.as_os_str().len() < 100, "{}", path.display());
        let client = tokio::spawn(async move {
            let stream = UnixStream::connect(&path).await.unwrap();
            let (r, mut w) = stream.into_split();
            let mut lines = tokio::io::BufReader::new(r).lines();
            w.write_all(b"{not json\n").await.unwrap();
            let bad = lines.next_line().await.unwrap().unwrap();
            w.write_all(b"{\"tool\":\"list_tasks\",\"arguments\":{}}\n")
                .await
                .unwrap();
            let good = lines.next_line().await.unwrap().unwrap();
            (bad, good)
        });
        let call = server.next().await;
        assert_eq!(call.call.tool, "list_tasks");
        call.reply
            .send(MemberReply::Ok {
                value: serde_json::json!([]),
            })
            .unwrap();
        let (bad, good) = client.await.unwrap();
        assert!(bad.contains("does not parse"), "{bad}");
        assert_eq!(good, r#"{"status":"ok","value":[]}"#);
        let dir = server.path().parent().unwrap().to_path_buf();
        drop(server);
        assert!(!dir.exists());
    }
}
