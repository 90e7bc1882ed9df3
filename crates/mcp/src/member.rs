//! The member socket's client side: board calls forwarded to the teammate whose
//! agent runs this process (see `teamboard_protocol::member` for the wire).
//!
//! A failed call is never sent again: the teammate may have carried it out and
//! only its answer been lost, and a `complete_task` must not run twice. The
//! connection is dropped instead, and the next call opens a new one. So it is
//! after a call that ran out of time: its answer could still come, and would
//! be read as the next call's.

use crate::board::{Answer, Board, Mode, bounded, no_answer, within};
use std::path::{Path, PathBuf};
use std::time::Duration;
use teamboard_protocol::board_call::BoardCall;
use teamboard_protocol::member::{MAX_MEMBER_LINE, MEMBER_SOCKET_ENV, MemberCall, MemberReply};
use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::net::UnixStream;
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};

/// Why a call did not get the teammate's answer.
#[derive(Debug, thiserror::Error)]
pub enum MemberError {
    #[error(
        "cannot reach the teammate at {path} ({MEMBER_SOCKET_ENV}): {error}; the socket is \
         served while the teammate works with its agent"
    )]
    Connect {
        path: PathBuf,
        error: std::io::Error,
    },
    // The messages name their cause, so it is not also a `source`, which
    // `{:#}` would print twice.
    #[error("the connection to the teammate failed: {0}")]
    Io(std::io::Error),
    #[error("the teammate closed the connection without answering")]
    Closed,
    #[error("the call is {0} bytes; the teammate takes at most {MAX_MEMBER_LINE}")]
    TooLong(usize),
    #[error("the teammate's answer does not parse: {0}")]
    BadReply(serde_json::Error),
}

/// One connection to the member socket, opened at the first call.
pub struct MemberClient {
    path: PathBuf,
    conn: Option<(BufReader<OwnedReadHalf>, OwnedWriteHalf)>,
}

impl MemberClient {
    pub fn new(path: impl Into<PathBuf>) -> MemberClient {
        MemberClient {
            path: path.into(),
            conn: None,
        }
    }

    /// The socket named by [`MEMBER_SOCKET_ENV`], when it is set and not empty.
    pub fn from_env() -> Option<MemberClient> {
        std::env::var_os(MEMBER_SOCKET_ENV)
            .filter(|p| !p.is_empty())
            .map(MemberClient::new)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Sends one call and waits for the teammate's answer, however long it
    /// takes (a completion waits for the task's checks).
    pub async fn call(&mut self, call: &MemberCall) -> Result<MemberReply, MemberError> {
        let mut line = serde_json::to_vec(call).map_err(MemberError::BadReply)?;
        if line.len() > MAX_MEMBER_LINE {
            return Err(MemberError::TooLong(line.len()));
        }
        line.push(b'\n');
        let answer = self.exchange(&line).await;
        if answer.is_err() {
            self.conn = None;
        }
        let answer = answer?;
        serde_json::from_slice(&answer).map_err(MemberError::BadReply)
    }

    async fn exchange(&mut self, line: &[u8]) -> Result<Vec<u8>, MemberError> {
        if self.conn.is_none() {
            let stream =
                UnixStream::connect(&self.path)
                    .await
                    .map_err(|error| MemberError::Connect {
                        path: self.path.clone(),
                        error,
                    })?;
            let (read, write) = stream.into_split();
            self.conn = Some((BufReader::new(read), write));
        }
        let Some((read, write)) = self.conn.as_mut() else {
            return Err(MemberError::Closed);
        };
        write.write_all(line).await.map_err(MemberError::Io)?;
        let mut answer = Vec::new();
        let n = read
            .take(MAX_MEMBER_LINE as u64 + 1)
            .read_until(b'\n', &mut answer)
            .await
            .map_err(MemberError::Io)?;
        if n == 0 || answer.last() != Some(&b'\n') {
            return Err(MemberError::Closed);
        }
        Ok(answer)
    }
}

/// The board of a teammate's agent: every call goes to the teammate.
pub struct MemberBoard {
    client: MemberClient,
    /// `--timeout`: how long a [`bounded`] call waits for the teammate.
    timeout: Option<Duration>,
}

impl MemberBoard {
    /// `timeout` bounds the wait for the answer to the calls that may be
    /// bounded ([`bounded`]); `None` waits for every answer.
    pub fn new(client: MemberClient, timeout: Option<Duration>) -> MemberBoard {
        MemberBoard { client, timeout }
    }
}

impl Board for MemberBoard {
    fn mode(&self) -> Mode {
        Mode::Member
    }

    async fn call(&mut self, call: MemberCall) -> Answer {
        // A call that does not parse is the teammate's to refuse, at once.
        let limit = match BoardCall::parse(&call) {
            Ok(parsed) if !bounded(&parsed) => None,
            _ => self.timeout,
        };
        let Some(answer) = within(limit, self.client.call(&call)).await else {
            self.client.conn = None;
            let limit = limit.unwrap_or_default();
            tracing::warn!(tool = %call.tool, ?limit, "the teammate did not answer in time");
            return Answer::from(no_answer("the teammate", limit));
        };
        match answer {
            Ok(reply) => Answer::from(reply),
            Err(e) => {
                tracing::warn!(error = %e, "a board call did not reach the teammate");
                Answer::from(MemberReply::error(e.to_string()))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use tokio::net::UnixListener;

    /// A teammate that answers each call with its tool name, then closes the
    /// connection after `answers` calls.
    fn fake_teammate(listener: UnixListener, answers: usize) -> tokio::task::JoinHandle<()> {
        tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let (r, mut w) = stream.into_split();
                let mut lines = BufReader::new(r).lines();
                for _ in 0..answers {
                    let Ok(Some(line)) = lines.next_line().await else {
                        break;
                    };
                    let call: MemberCall = serde_json::from_str(&line).expect("a call");
                    let reply = MemberReply::Ok {
                        value: json!(call.tool),
                    };
                    let mut out = serde_json::to_vec(&reply).expect("JSON");
                    out.push(b'\n');
                    w.write_all(&out).await.expect("written");
                }
            }
        })
    }

    fn list() -> MemberCall {
        MemberCall {
            tool: "list_tasks".into(),
            arguments: json!({}),
        }
    }

    #[tokio::test]
    async fn calls_go_to_the_teammate_and_a_lost_connection_is_not_retried() {
        let dir = teamboard_testkit::short_tempdir();
        let path = dir.path().join("m.sock");
        let server = fake_teammate(UnixListener::bind(&path).expect("bound"), 1);
        let mut client = MemberClient::new(&path);
        let ok = client.call(&list()).await.expect("an answer");
        assert_eq!(
            ok,
            MemberReply::Ok {
                value: json!("list_tasks")
            }
        );
        // The teammate closed after one answer: this call fails, and is not sent
        // again on a new connection.
        let lost = client.call(&list()).await.expect_err("closed");
        assert!(
            matches!(lost, MemberError::Closed | MemberError::Io(_)),
            "{lost}"
        );
        // The next call connects afresh.
        let again = client.call(&list()).await.expect("a new connection");
        assert_eq!(again, ok);
        server.abort();
    }

    /// A teammate that reads calls and never answers, counting them.
    fn silent_teammate(listener: UnixListener) -> tokio::task::JoinHandle<()> {
        tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((stream, _)) = listener.accept().await {
                held.push(stream);
            }
        })
    }

    #[tokio::test(start_paused = true)]
    async fn a_bounded_call_gives_up_after_the_timeout_and_the_next_starts_afresh() {
        let dir = teamboard_testkit::short_tempdir();
        let path = dir.path().join("m.sock");
        let silent = silent_teammate(UnixListener::bind(&path).expect("bound"));
        let mut board = MemberBoard::new(MemberClient::new(&path), Some(Duration::from_secs(5)));
        let started = tokio::time::Instant::now();
        let answer = board.call(list()).await;
        assert_eq!(started.elapsed(), Duration::from_secs(5));
        let MemberReply::Error { message, .. } = answer.reply else {
            panic!("an error");
        };
        assert!(
            message.starts_with("the teammate did not answer within 5 s (teamctl mcp --timeout)"),
            "{message}"
        );
        assert!(board.client.conn.is_none(), "a late answer is never read");
        // A call on the held task waits for its answer, however long it takes.
        let complete = MemberCall {
            tool: "complete_task".into(),
            arguments: json!({"result": "done"}),
        };
        let waited = tokio::time::timeout(Duration::from_secs(3600), board.call(complete)).await;
        assert!(
            waited.is_err(),
            "complete_task gave up: {:?}",
            waited.map(|a| a.reply)
        );
        silent.abort();
    }

    #[tokio::test]
    async fn no_teammate_says_where_it_looked() {
        let dir = teamboard_testkit::short_tempdir();
        let mut board = MemberBoard::new(MemberClient::new(dir.path().join("none.sock")), None);
        let answer = board.call(list()).await;
        let MemberReply::Error { message, .. } = answer.reply else {
            panic!("an error");
        };
        assert!(message.contains("none.sock"), "{message}");
        assert!(message.contains(MEMBER_SOCKET_ENV), "{message}");
    }
}
