//! Getting in, and the board as it is.

use crate::{Scenario, WebProcess, open_browser};
use std::io::{Read as _, Write as _};
use teamboard_protocol::request::NewTask;

/// The status line of a plain GET of `path` on `base`, with `headers`.
fn status_of(base: &str, path: &str, headers: &str) -> String {
    let addr = base.trim_start_matches("http://");
    let mut s = std::net::TcpStream::connect(addr).expect("connect");
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\n{headers}Connection: close\r\n\r\n"
    )
    .expect("write");
    let mut answer = String::new();
    s.read_to_string(&mut answer).expect("read");
    answer.lines().next().unwrap_or_default().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_token_or_its_cookie_the_answer_is_401() {
    let Some(s) = Scenario::start("token_refused").await else {
        return;
    };
    let base = &s.web.base;
    for path in ["/", "/api/board", "/api/events", "/app.js"] {
        assert!(status_of(base, path, "").contains(" 401 "), "{path}");
    }
    let wrong = format!("/?token={}", "0".repeat(32));
    assert!(status_of(base, &wrong, "").contains(" 401 "));
    let bad_cookie = "Cookie: teamboard_token=nope\r\n";
    assert!(status_of(base, "/api/board", bad_cookie).contains(" 401 "));
    let cookie = format!("Cookie: teamboard_token={}\r\n", s.web.token);
    assert!(status_of(base, "/api/board", &cookie).contains(" 200 "));
    // A fresh browser without the cookie sees the refusal page, in words.
    let stranger = open_browser(&[]).await;
    stranger.goto(&format!("{base}/")).await.expect("goto");
    let text = stranger
        .find(fantoccini::Locator::Css("body"))
        .await
        .expect("body")
        .text()
        .await
        .expect("text");
    assert!(text.contains("Not signed in"), "{text}");
    assert!(text.contains("?token="), "{text}");
    std::fs::create_dir_all(crate::screenshot_dir()).expect("dir");
    let png = stranger.screenshot().await.expect("screenshot");
    std::fs::write(crate::screenshot_dir().join("token_refused.png"), png).expect("png");
    let _ = stranger.close().await;
    s.browser.close().await.expect("close");
    s.board.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_visit_sets_a_cookie_and_drops_the_token_from_the_address() {
    let Some(s) = Scenario::start("cookie_login").await else {
        return;
    };
    let url = s.browser.current_url().await.expect("url");
    assert_eq!(url.query(), None, "{url}");
    // The cookie is HttpOnly: the page's scripts cannot read it.
    let cookies = s.js("return document.cookie;").await;
    assert_eq!(cookies, serde_json::json!(""));
    // Back without the token: still in.
    s.browser
        .goto(&format!("{}/", s.web.base))
        .await
        .expect("goto");
    s.wait_for("#team-name", "team default").await;
    s.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_board_shows_tasks_by_status_with_their_blockers() {
    let Some(s) = Scenario::start("board_by_status").await else {
        return;
    };
    let lead = &s.board.lead;
    let design = s.board.add("Design the API", "", &[]).await;
    let build = s.board.add("Build it", "", &[design.id]).await;
    let _test = s.board.add("Test it", "", &[build.id]).await;
    let gone = s.board.add("Old idea", "", &[]).await;
    lead.cancel_task(gone.id).await.expect("cancel");
    lead.add_task(NewTask {
        subject: "Docs".into(),
        role: Some("writer".into()),
        ..Default::default()
    })
    .await
    .expect("add");
    let pending = r#".column[data-status="pending"]"#;
    s.wait_for(&format!("{pending} #task-2"), "blocked by #1")
        .await;
    s.wait_for(&format!("{pending} #task-3"), "blocked by #2")
        .await;
    s.wait_for(&format!("{pending} #task-1"), "ready").await;
    s.wait_for(&format!("{pending} #task-5"), "writer").await;
    s.wait_for(r#".column[data-status="cancelled"] #task-4"#, "Old idea")
        .await;
    s.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_added_with_teamctl_shows_up_live() {
    let Some(s) = Scenario::start("live_add_from_teamctl").await else {
        return;
    };
    let id = s.teamctl(&["task", "add", "Added from the terminal"]);
    s.wait_for(
        &format!(r#".column[data-status="pending"] #task-{id}"#),
        "Added from the terminal",
    )
    .await;
    s.wait_for("#activity", "Added from the terminal").await;
    s.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn off_loopback_without_tls_it_refuses_and_says_why() {
    if !crate::browser_present() {
        return;
    }
    let board =
        teamboard_testkit::Board::start(teamboard_testkit::workspace_bin("teammated")).await;
    let refused = WebProcess::try_start(&board, &["--listen", "0.0.0.0:0"])
        .err()
        .expect("refused");
    assert!(refused.contains("not a loopback address"), "{refused}");
    assert!(refused.contains("--tls-cert"), "{refused}");
    board.stop().await;
}

/// Off loopback with a certificate: HTTPS, and the same token and cookie.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_a_certificate_it_serves_https_off_loopback() {
    if !crate::browser_present() {
        return;
    }
    let board =
        teamboard_testkit::Board::start(teamboard_testkit::workspace_bin("teammated")).await;
    let (cert, key) = (board.dir().join("cert.pem"), board.dir().join("key.pem"));
    let made = std::process::Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
        ])
        .args(["-nodes", "-days", "1", "-subj", "/CN=localhost"])
        .args(["-addext", "subjectAltName=IP:127.0.0.1"])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status();
    if !made.is_ok_and(|s| s.success()) {
        println!("skipped: openssl cannot make a test certificate");
        return;
    }
    board.add("Served over TLS", "", &[]).await;
    let web = WebProcess::start(
        &board,
        &[
            "--listen",
            "0.0.0.0:0",
            "--tls-cert",
            cert.to_str().expect("utf-8"),
            "--tls-key",
            key.to_str().expect("utf-8"),
        ],
    );
    assert!(web.url.starts_with("https://0.0.0.0:"), "{}", web.url);
    let url = web.url.replace("0.0.0.0", "127.0.0.1");
    let browser = open_browser(&["--ignore-certificate-errors"]).await;
    browser.goto(&url).await.expect("goto");
    let s = Scenario {
        name: "https_off_loopback",
        board,
        web,
        browser,
    };
    s.wait_for("#task-1", "Served over TLS").await;
    s.wait_js("connected", "window.teamboard.connected").await;
    s.finish().await;
}
