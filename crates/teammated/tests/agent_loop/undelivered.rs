//! Messages are acknowledged only once the agent took them: one read while the
//! teammate was idle stays in the inbox when the agent cannot start, and
//! reaches the agent once it can.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_for_an_agent_that_cannot_start_waits_until_one_can() {
    let mut board = Board::start(TEAMMATED).await;
    let agent = workspace_bin("fake-acp-agent").display().to_string();
    let home = fake_home(&board).display().to_string();
    let broken = board.dir().join("agent-broken");
    let script = format!(
        "if [ -e {} ]; then echo 'the agent is broken today' >&2; exit 1; fi; exec {agent}",
        broken.display()
    );
    let _alice = board.spawn_with_env(
        "alice",
        "dev",
        &[
            UNSANDBOXED[0],
            UNSANDBOXED[1],
            "--runtime",
            "acp",
            "--agent-cmd",
            "/bin/sh",
            "--agent-arg=-c",
            &format!("--agent-arg={script}"),
        ],
        &[("FAKE_ACP_HOME", home.as_str())],
    );
    board.wait_idle("alice").await;
    std::fs::write(&broken, "").expect("break the agent");
    let sent = board
        .lead
        .send("alice", MessageKind::Message, "KEEP THIS ONE", None)
        .await
        .expect("send");
    eventually(
        "alice's report that her agent did not start",
        PATIENCE,
        || async {
            let inbox = board.lead.inbox().await.ok()?;
            inbox
                .iter()
                .any(|m| m.kind == MessageKind::Error && m.content.contains("could not start"))
                .then_some(())
        },
    )
    .await;
    std::fs::remove_file(&broken).expect("mend the agent");
    until("the message reached the mended agent", || async {
        prompts(&board).iter().any(|p| p.contains("KEEP THIS ONE"))
    })
    .await;
    board
        .wait_for("the message acknowledged", |e| {
            e.kind == EventKind::MessageAcked && e.message == Some(sent.id)
        })
        .await;
    // Taken once: neither lost nor handed over twice.
    let taken = prompts(&board)
        .iter()
        .filter(|p| p.contains("KEEP THIS ONE"))
        .count();
    assert_eq!(taken, 1, "{:#?}", prompts(&board));
}
