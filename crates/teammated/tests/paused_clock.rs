//! A teammate's idle timeout under tokio's paused clock: boardd and the teammate
//! both run in this test's runtime, so a minute of virtual time passes in
//! milliseconds and nothing depends on a sleep.

use std::path::Path;
use std::time::Duration;
use teamboard_protocol::Client;
use teammated::config::{Config, ProviderConfig, ProviderKind};
use teammated::llm::retry::RetryPolicy;
use teammated::{Exit, run};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

async fn boardd(dir: &Path, lease: Duration) -> boardd::Running {
    let mut config = boardd::Config::new(dir.join("s"), dir.join("state"));
    // Commits on the actor itself: a writer thread would make the paused runtime
    // look idle while a commit is still in flight.
    config.inline_commits = true;
    config.board.lease_ttl = lease;
    boardd::start(config).await.expect("boardd starts")
}

fn config(dir: &Path, provider: ProviderConfig) -> Config {
    Config {
        name: "alice".into(),
        role: "dev".into(),
        team: "default".into(),
        socket: dir.join("s"),
        state_dir: dir.join("state"),
        workdir: dir.to_path_buf(),
        provider,
        idle_timeout: Some(Duration::from_secs(60)),
        poll_interval: Duration::from_secs(30),
        max_rounds: 50,
        context_budget: 100_000,
        shell_timeout: Duration::from_secs(120),
        reconnect_timeout: Duration::from_secs(300),
    }
}

fn scripted() -> ProviderConfig {
    ProviderConfig {
        kind: ProviderKind::Scripted,
        model: None,
        base_url: None,
        api_key: None,
        max_tokens: 1000,
        request_timeout: Duration::from_secs(300),
        retry: RetryPolicy::default(),
    }
}

#[tokio::test(start_paused = true)]
async fn an_idle_teammate_leaves_after_the_sixty_second_default() {
    let dir = tempfile::Builder::new()
        .prefix("pc")
        .tempdir_in("/tmp")
        .unwrap();
    let daemon = boardd(dir.path(), Duration::from_secs(30)).await;
    let started = Instant::now();
    let exit = run(config(dir.path(), scripted()), CancellationToken::new())
        .await
        .expect("runs");
    let waited = started.elapsed();
    assert_eq!(exit, Exit::IdleTimeout);
    assert!(
        waited >= Duration::from_secs(60) && waited < Duration::from_secs(61),
        "{waited:?}"
    );
    let lead = Client::connect(&dir.path().join("s"), "test", "lead", "default")
        .await
        .unwrap();
    let team = lead.team().await.unwrap();
    assert_eq!(team[0].status.as_str(), "shutdown");
    // One idle notification for the one transition, however many waits it took.
    let notices = lead.inbox().await.unwrap();
    assert_eq!(notices.len(), 1, "{notices:#?}");
    daemon.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_teammate_whose_boardd_is_gone_gives_up_after_the_reconnect_timeout() {
    let dir = tempfile::Builder::new()
        .prefix("pc")
        .tempdir_in("/tmp")
        .unwrap();
    let daemon = boardd(dir.path(), Duration::from_secs(30)).await;
    let mut cfg = config(dir.path(), scripted());
    cfg.idle_timeout = None;
    cfg.reconnect_timeout = Duration::from_secs(120);
    let teammate = tokio::spawn(run(cfg, CancellationToken::new()));
    // Let it register and park, then take the board away for good.
    tokio::time::sleep(Duration::from_secs(5)).await;
    daemon.shutdown().await;
    let gone = Instant::now();
    let result = teammate.await.expect("no panic");
    let waited = gone.elapsed();
    let err = result.expect_err("it gives up");
    assert!(err.to_string().contains("not running"), "{err}");
    assert!(
        waited >= Duration::from_secs(120) && waited < Duration::from_secs(130),
        "{waited:?}"
    );
}
