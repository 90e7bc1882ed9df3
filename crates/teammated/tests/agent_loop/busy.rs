//! A busy agent's stream of events does not hold back the messages the
//! runtime must act on at once (a shutdown request) while an ordinary one
//! waits for the agent to take it.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shutdown_request_reaches_a_chatty_agent_while_a_message_waits_for_it() {
    let mut board = Board::start(TEAMMATED).await;
    let mut alice = spawn(&board, "alice", &[]);
    let ran = board.dir().join("ran.txt");
    // About ten seconds of short commands: the agent reports a tool call
    // every few tens of milliseconds, and takes no input until the turn ends.
    let script: String = (0..200)
        .map(|_| format!("RUN: sleep 0.05; echo x >> {}\n", ran.display()))
        .collect();
    let t = board
        .add("chatty", &format!("{script}ANSWER: done"), &[])
        .await;
    board.wait_claimed(t.id).await;
    let ran_count = || {
        std::fs::read_to_string(&ran)
            .map(|s| s.lines().count())
            .unwrap_or(0)
    };
    until("the agent runs its commands", || async { ran_count() > 0 }).await;
    // An ordinary message waits for the turn boundary...
    board
        .lead
        .send("alice", MessageKind::Message, "for later", None)
        .await
        .expect("send");
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    // ...but a shutdown request must not.
    board
        .lead
        .request_shutdown(ShutdownArgs {
            to: "alice".into(),
            ..ShutdownArgs::default()
        })
        .await
        .expect("request");
    let code = tokio::time::timeout(PATIENCE, alice.exit_code())
        .await
        .expect("alice leaves");
    assert_eq!(code, Some(0), "{}", alice.log_text());
    let ran = ran_count();
    assert!(
        ran < 150,
        "the agent ran {ran} of 200 commands before the shutdown request was read"
    );
}
