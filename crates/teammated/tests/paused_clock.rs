//! A teammate's idle timeout under tokio's paused clock: boardd and the teammate
//! both run in this test's runtime, so a minute of virtual time passes in
//! milliseconds and nothing depends on a sleep.

use std::time::Duration;
use teamboard_testkit::{InProc, lead};
use teammated::config::{Config, ProviderConfig, ProviderKind};
use teammated::llm::retry::RetryPolicy;
use teammated::{Exit, run};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// A daemon for the paused clock, with a thirty-second lease.
async fn boardd() -> InProc {
    InProc::start_paused(|config| config.board.lease_ttl = Duration::from_secs(30)).await
}

/// alice's configuration against `daemon`, working in its directory.
fn config(daemon: &InProc, provider: ProviderConfig) -> Config {
    Config {
        name: "alice".into(),
        role: "dev".into(),
        team: "default".into(),
        socket: daemon.socket.clone(),
        state_dir: daemon.state_dir.clone(),
        workdir: daemon.dir().to_path_buf(),
        provider,
        idle_timeout: Some(Duration::from_secs(60)),
        poll_interval: Duration::from_secs(30),
        max_rounds: 50,
        context_budget: 100_000,
        carry_context: false,
        shell_timeout: Duration::from_secs(120),
        reconnect_timeout: Duration::from_secs(300),
        require_plan: false,
    }
}

fn scripted() -> ProviderConfig {
    ProviderConfig {
        kind: ProviderKind::Scripted,
        model: None,
        base_url: None,
        api_key: None,
        max_tokens: 1000,
        max_tokens_field: None,
        prompt_cache: true,
        request_timeout: Duration::from_secs(300),
        retry: RetryPolicy::default(),
    }
}

#[tokio::test(start_paused = true)]
async fn an_idle_teammate_leaves_after_the_sixty_second_default() {
    let daemon = boardd().await;
    let started = Instant::now();
    let exit = run(config(&daemon, scripted()), CancellationToken::new())
        .await
        .expect("runs");
    let waited = started.elapsed();
    assert_eq!(exit, Exit::IdleTimeout);
    assert!(
        waited >= Duration::from_secs(60) && waited < Duration::from_secs(61),
        "{waited:?}"
    );
    let lead = lead(&daemon.socket).await;
    let team = lead.team().await.unwrap();
    assert_eq!(team[0].status.as_str(), "shutdown");
    // One idle notification for the one transition, however many waits it took.
    let notices = lead.inbox().await.unwrap();
    assert_eq!(notices.len(), 1, "{notices:#?}");
    daemon.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_teammate_whose_boardd_is_gone_gives_up_after_the_reconnect_timeout() {
    let mut daemon = boardd().await;
    let mut cfg = config(&daemon, scripted());
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
