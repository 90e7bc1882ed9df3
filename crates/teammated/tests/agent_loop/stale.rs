//! What is left over from one phase must not act in the next: a board call
//! that reached the member socket while no agent phase ran belongs to no task.

use super::*;
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_left_on_the_member_socket_between_phases_does_not_end_the_next_task() {
    let mut board = Board::start(TEAMMATED).await;
    let _alice = spawn(&board, "alice", &[]);
    // The first task's agent tells us where the member socket is.
    let sock_file = board.dir().join("member-socket.txt");
    let first = board
        .add(
            "where",
            &format!(
                "RUN: printf %s \"$TEAMBOARD_MEMBER_SOCKET\" > {}\nANSWER: told",
                sock_file.display()
            ),
            &[],
        )
        .await;
    board.wait_done(&[first.id]).await;
    board.wait_idle("alice").await;
    let path = std::fs::read_to_string(&sock_file).expect("the socket's path");
    // A call that comes while alice is idle: from a process her last agent left
    // running, or anyone else who found the socket. It names no task.
    let stream = tokio::net::UnixStream::connect(path.trim())
        .await
        .expect("the member socket");
    let (read, mut write) = stream.into_split();
    write
        .write_all(b"{\"tool\":\"complete_task\",\"arguments\":{\"result\":\"STALE RESULT\"}}\n")
        .await
        .expect("written");
    let reply = tokio::spawn(async move {
        tokio::io::BufReader::new(read)
            .lines()
            .next_line()
            .await
            .ok()
            .flatten()
    });
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let next = board
        .add("next", "SLEEP: 1\nANSWER: the real result", &[])
        .await;
    board.wait_done(&[next.id]).await;
    let done = board.task(next.id).await;
    assert_eq!(done.status, TaskStatus::Completed, "{done:#?}");
    assert_eq!(done.result.as_deref(), Some("the real result"), "{done:#?}");
    // The stale call is answered, with a refusal, not left hanging.
    let reply = tokio::time::timeout(PATIENCE, reply)
        .await
        .expect("an answer")
        .expect("the reader")
        .expect("a line");
    assert!(reply.contains("\"status\":\"error\""), "{reply}");
}
