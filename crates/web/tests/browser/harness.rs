//! A real browser on the real binaries: Debian's chromium, driven through
//! chromedriver by fantoccini, against `teamctl web` and a boardd with real
//! teammated processes.
//!
//! One chromedriver per test binary, started on a free port by the first test
//! and stopped with the binary (it is the child of a thread that lives as long
//! as the process, and asks the kernel to end it when that thread ends). Each
//! test has its own browser session, boardd and `teamctl web`.

use fantoccini::{Client as Browser, ClientBuilder, Locator};
use hyper_util::client::legacy::connect::HttpConnector;
use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};
use teamboard_testkit::{Board, workspace_bin};

const CHROMIUM: &str = "/usr/bin/chromium";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
/// How long a page has to show what a scenario waits for.
pub const PATIENCE: Duration = Duration::from_secs(20);

/// Whether the browser is here; without it the test prints `skipped`, unless
/// `TEAMBOARD_REQUIRE_BROWSER` says it must be.
pub fn browser_present() -> bool {
    let present = Path::new(CHROMIUM).exists() && Path::new(CHROMEDRIVER).exists();
    if !present {
        assert!(
            std::env::var_os("TEAMBOARD_REQUIRE_BROWSER").is_none(),
            "TEAMBOARD_REQUIRE_BROWSER is set but {CHROMIUM} or {CHROMEDRIVER} is missing"
        );
        println!("skipped: chromium and chromedriver are not installed");
    }
    present
}

/// The chromedriver of this test binary: its port.
fn chromedriver() -> u16 {
    static PORT: OnceLock<u16> = OnceLock::new();
    *PORT.get_or_init(|| {
        // Failures of an earlier run would be taken for this one's.
        if let Ok(old) = std::fs::read_dir(screenshot_dir()) {
            for entry in old.flatten() {
                if entry.file_name().to_string_lossy().ends_with("-FAILED.png") {
                    let _ = std::fs::remove_file(entry.path());
                }
            }
        }
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let port = free_port();
            let mut cmd = Command::new(CHROMEDRIVER);
            cmd.arg(format!("--port={port}"))
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            teamboard_process::die_with_parent(&mut cmd, libc::SIGKILL);
            let child = cmd.spawn().expect("chromedriver starts");
            tx.send((port, child.id())).expect("send the port");
            // The child dies with this thread, which lives as long as the process.
            let _keep = child;
            loop {
                std::thread::park();
            }
        });
        let (port, _) = rx.recv().expect("chromedriver's port");
        let deadline = Instant::now() + PATIENCE;
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "chromedriver does not listen");
            std::thread::sleep(Duration::from_millis(20));
        }
        port
    })
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// `teamctl web` as a process.
pub struct WebProcess {
    child: Child,
    pub url: String,
    pub base: String,
    pub token: String,
}

impl WebProcess {
    pub fn start(board: &Board, extra: &[&str]) -> WebProcess {
        Self::try_start(board, extra).unwrap_or_else(|e| panic!("teamctl web: {e}"))
    }

    pub fn try_start(board: &Board, extra: &[&str]) -> Result<WebProcess, String> {
        let mut child = Command::new(workspace_bin("teamctl"))
            .arg("--socket")
            .arg(&board.daemon.socket)
            .arg("--state-dir")
            .arg(board.state_dir())
            .arg("web")
            .args(extra)
            .env_remove("TEAMBOARD_SOCKET")
            .env_remove("TEAMBOARD_TEAM")
            .env_remove("TEAMBOARD_WEB_TOKEN")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("teamctl starts");
        let stdout = child.stdout.take().expect("stdout");
        let mut line = String::new();
        BufReader::new(stdout)
            .read_line(&mut line)
            .expect("read the address");
        if line.is_empty() {
            let out = child.wait_with_output().expect("teamctl ends");
            return Err(String::from_utf8_lossy(&out.stderr).into_owned());
        }
        let url = line.trim().to_string();
        let (base, token) = url.split_once("/?token=").expect("an address with a token");
        Ok(WebProcess {
            base: base.to_string(),
            token: token.to_string(),
            url: url.clone(),
            child,
        })
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.base
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .expect("a port")
    }

    /// `kill -9`: the page loses its stream at once.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for WebProcess {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A scenario: a board, `teamctl web` on it, and a browser signed in.
pub struct Scenario {
    pub name: &'static str,
    pub board: Board,
    pub web: WebProcess,
    pub browser: Browser,
}

impl Scenario {
    /// `None` when the browser is not installed (the test then passes as
    /// skipped).
    pub async fn start(name: &'static str) -> Option<Scenario> {
        Self::start_with(name, |_| {}).await
    }

    /// As [`Scenario::start`], with boardd's configuration adjusted by `tune`.
    pub async fn start_with(
        name: &'static str,
        tune: impl FnOnce(&mut teamboard_testkit::boardd::Config),
    ) -> Option<Scenario> {
        if !browser_present() {
            return None;
        }
        let board = Board::start_with(workspace_bin("teammated"), tune).await;
        let web = WebProcess::start(&board, &[]);
        let browser = open_browser(&[]).await;
        browser.goto(&web.url).await.expect("open the page");
        let s = Scenario {
            name,
            board,
            web,
            browser,
        };
        s.wait_for("#team-name", "team").await;
        Some(s)
    }

    pub fn teamctl(&self, args: &[&str]) -> String {
        let (key_var, key) = teamboard_testkit::lead_key_env(&self.board.daemon.socket);
        let out = Command::new(workspace_bin("teamctl"))
            .arg("--socket")
            .arg(&self.board.daemon.socket)
            .args(args)
            .env(key_var, key)
            .env_remove("TEAMBOARD_SOCKET")
            .env_remove("TEAMBOARD_TEAM")
            .stdin(Stdio::null())
            .output()
            .expect("teamctl runs");
        assert!(
            out.status.success(),
            "teamctl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// The text of the first element matching `css`, once it contains `text`.
    pub async fn wait_for(&self, css: &str, text: &str) -> String {
        let deadline = Instant::now() + PATIENCE;
        let mut last = String::new();
        loop {
            if let Ok(el) = self.browser.find(Locator::Css(css)).await
                && let Ok(t) = el.text().await
            {
                if t.contains(text) {
                    return t;
                }
                last = t;
            }
            if Instant::now() > deadline {
                self.screenshot_as(&format!("{}-FAILED", self.name)).await;
                panic!("{css} never showed {text:?}; it shows {last:?}");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Waits until nothing matches `css`.
    pub async fn wait_gone(&self, css: &str) {
        let deadline = Instant::now() + PATIENCE;
        while !self
            .browser
            .find_all(Locator::Css(css))
            .await
            .expect("find")
            .is_empty()
        {
            if Instant::now() > deadline {
                self.screenshot_as(&format!("{}-FAILED", self.name)).await;
                panic!("{css} is still on the page");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Waits until `script` (a JavaScript expression) is true.
    pub async fn wait_js(&self, what: &str, script: &str) {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let v = self
                .browser
                .execute(&format!("return !!({script});"), vec![])
                .await
                .expect("execute");
            if v.as_bool() == Some(true) {
                return;
            }
            if Instant::now() > deadline {
                self.screenshot_as(&format!("{}-FAILED", self.name)).await;
                panic!("never true: {what} ({script})");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    pub async fn js(&self, script: &str) -> serde_json::Value {
        self.browser.execute(script, vec![]).await.expect("execute")
    }

    /// Clicks the element matching `css`, found afresh until the click lands:
    /// the page rebuilds parts of itself on every event, so an element found a
    /// moment ago may have been replaced by its newer copy.
    pub async fn click(&self, css: &str) {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let clicked = match self.browser.find(Locator::Css(css)).await {
                Ok(el) => el.click().await.map_err(|e| e.to_string()),
                Err(e) => Err(e.to_string()),
            };
            match clicked {
                Ok(()) => return,
                Err(e) if Instant::now() > deadline => {
                    self.screenshot_as(&format!("{}-FAILED", self.name)).await;
                    panic!("click {css}: {e}");
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        }
    }

    /// Replaces the value of the field matching `css` with `text`.
    /// Found afresh until the typing lands, as [`Scenario::click`].
    pub async fn fill(&self, css: &str, text: &str) {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let typed = match self.browser.find(Locator::Css(css)).await {
                Ok(el) => match el.clear().await {
                    Ok(()) => el.send_keys(text).await.map_err(|e| e.to_string()),
                    Err(e) => Err(e.to_string()),
                },
                Err(e) => Err(e.to_string()),
            };
            match typed {
                Ok(()) => return,
                Err(e) if Instant::now() > deadline => {
                    self.screenshot_as(&format!("{}-FAILED", self.name)).await;
                    panic!("type into {css}: {e}");
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        }
    }

    pub async fn screenshot_as(&self, name: &str) {
        if let Ok(png) = self.browser.screenshot().await {
            let dir = screenshot_dir();
            let _ = std::fs::create_dir_all(&dir);
            let _ = std::fs::write(dir.join(format!("{name}.png")), png);
        }
    }

    /// Saves the screenshot of the scenario and closes everything.
    pub async fn finish(self) {
        self.screenshot_as(self.name).await;
        let _ = self.browser.close().await;
        self.board.stop().await;
    }
}

/// A browser session; `args` are extra chromium flags.
pub async fn open_browser(args: &[&str]) -> Browser {
    let port = chromedriver();
    let mut chrome_args = vec![
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1400,1000",
    ];
    chrome_args.extend_from_slice(args);
    let mut caps = serde_json::Map::new();
    caps.insert(
        "goog:chromeOptions".into(),
        serde_json::json!({ "binary": CHROMIUM, "args": chrome_args }),
    );
    ClientBuilder::new(HttpConnector::new())
        .capabilities(caps)
        .connect(&format!("http://127.0.0.1:{port}"))
        .await
        .expect("a chromium session")
}

/// `target/web-screenshots`, beside the test binary's profile directory.
pub fn screenshot_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    // target/<profile>/deps/<test>-<hash>
    exe.ancestors()
        .nth(3)
        .map(|target| target.join("web-screenshots"))
        .expect("target directory")
}
