//! Shared harness for the workspace-level integration tests.
//!
//! - [`short_tempdir`]: a private directory under `/tmp` with a short name, because
//!   Linux socket paths must stay under 108 bytes.
//! - [`InProc`]: a daemon running inside the test's tokio runtime.
//! - [`Daemon`]: the real `boardd` binary as a child process, killed on drop.
//! - [`eventually`]: poll a condition until a bounded deadline (no fixed sleeps).
//! - [`raw`]: hand-made frames on a plain `UnixStream`, for malformed input.
//!
//! Every test binary compiles this module and uses only part of it.
#![allow(dead_code)]

use std::future::Future;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::Poll;
use std::time::{Duration, Instant};
use teamboard_protocol::{Client, ClientError, Work};
use tempfile::TempDir;

/// The team every test works in.
pub const TEAM: &str = "default";

/// A fresh private directory like `/tmp/tbXXXXXX`, removed on drop.
pub fn short_tempdir() -> TempDir {
    tempfile::Builder::new()
        .prefix("tb")
        .tempdir_in("/tmp")
        .expect("create a temporary directory in /tmp")
}

/// Polls `check` every few milliseconds until it returns `Some`, or panics with
/// `what` once `timeout` has passed.
pub async fn eventually<T, F, Fut>(what: &str, timeout: Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(value) = check().await {
            return value;
        }
        if Instant::now() >= deadline {
            panic!("timed out after {timeout:?} waiting for {what}");
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Connects as `lead` (the person at teamctl).
pub async fn lead(socket: &Path) -> Client {
    Client::connect(socket, "test", teamboard_protocol::LEAD, TEAM)
        .await
        .expect("connect as lead")
}

/// Connects as `name` without registering.
pub async fn connect(socket: &Path, name: &str) -> Client {
    Client::connect(socket, "test", name, TEAM)
        .await
        .unwrap_or_else(|e| panic!("connect as {name}: {e}"))
}

/// Connects as `name` and registers with `role`, which makes it a claimant.
pub async fn teammate(socket: &Path, name: &str, role: &str) -> Client {
    let client = connect(socket, name).await;
    client
        .register(role, None)
        .await
        .unwrap_or_else(|e| panic!("register {name}: {e}"));
    client
}

/// A plain task with only a subject.
pub fn task(subject: impl Into<String>) -> teamboard_protocol::request::NewTask {
    teamboard_protocol::request::NewTask {
        subject: subject.into(),
        ..Default::default()
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

// ---------------------------------------------------------------------------------
// In-process daemon
// ---------------------------------------------------------------------------------

/// A daemon running in the test's own runtime, with its own socket and state dir.
pub struct InProc {
    pub socket: PathBuf,
    pub state_dir: PathBuf,
    running: Option<boardd::Running>,
    _dir: TempDir,
}

impl InProc {
    /// Starts a daemon with the default configuration.
    pub async fn start() -> InProc {
        InProc::start_with(|_| {}).await
    }

    /// Starts a daemon after `tweak` has adjusted its configuration.
    pub async fn start_with(tweak: impl FnOnce(&mut boardd::Config)) -> InProc {
        let dir = short_tempdir();
        let socket = dir.path().join("s");
        let state_dir = dir.path().join("state");
        let mut config = boardd::Config::new(socket.clone(), state_dir.clone());
        tweak(&mut config);
        let running = boardd::start(config)
            .await
            .expect("start boardd in-process");
        InProc {
            socket,
            state_dir,
            running: Some(running),
            _dir: dir,
        }
    }

    /// Stops the daemon gracefully and waits until it has.
    pub async fn stop(mut self) {
        if let Some(running) = self.running.take() {
            running.shutdown().await;
        }
    }
}

impl Drop for InProc {
    fn drop(&mut self) {
        if let Some(running) = self.running.take() {
            running.shutdown_token().cancel();
        }
    }
}

// ---------------------------------------------------------------------------------
// The real binary
// ---------------------------------------------------------------------------------

/// The `boardd` binary next to this test's executable (`target/<profile>/boardd`).
/// `TEAMBOARD_TEST_BOARDD` overrides the path.
pub fn boardd_bin() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| match std::env::var_os("TEAMBOARD_TEST_BOARDD") {
        Some(path) => PathBuf::from(path),
        None => workspace_bin("boardd"),
    })
}

/// A binary of the workspace (`boardd`, `teamctl`, `teammated`), built for this
/// test's profile.
///
/// `CARGO_BIN_EXE_<name>` only exists inside a binary's own package, so the
/// binaries are built here once per test process with `cargo build`. That is a
/// no-op when they are up to date, and it keeps the tests from running a stale
/// binary after the sources changed.
pub fn workspace_bin(name: &str) -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    let profile_dir = BUILT.get_or_init(build_workspace_bins);
    let bin = profile_dir.join(name);
    assert!(bin.exists(), "{} missing after the build", bin.display());
    bin
}

fn build_workspace_bins() -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    // target/<profile>/deps/<test>-<hash>
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("the test executable lives in target/<profile>/deps")
        .to_path_buf();
    let profile = profile_dir
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("debug")
        .to_string();
    let cargo = option_env!("CARGO").unwrap_or("cargo");
    let mut cmd = Command::new(cargo);
    cmd.current_dir(env!("CARGO_MANIFEST_DIR")).args([
        "build",
        "--quiet",
        "-p",
        "boardd",
        "-p",
        "teamctl",
        "-p",
        "teammated",
        "--bins",
    ]);
    match profile.as_str() {
        "debug" => {}
        "release" => {
            cmd.arg("--release");
        }
        other => {
            cmd.args(["--profile", other]);
        }
    }
    if let Some(target_dir) = profile_dir.parent() {
        cmd.env("CARGO_TARGET_DIR", target_dir);
    }
    let out = match cmd.output() {
        Ok(out) => out,
        // No cargo here (the test binary was run by hand): use what was built.
        Err(e) if profile_dir.join("boardd").exists() => {
            eprintln!(
                "cannot run `{cargo} build` ({e}); using the binaries in {}",
                profile_dir.display()
            );
            return profile_dir;
        }
        Err(e) => panic!("cannot run `{cargo} build`: {e}"),
    };
    assert!(
        out.status.success(),
        "`cargo build` of the binaries failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    profile_dir
}

/// A real `boardd` process. Killed (SIGKILL) and reaped on drop.
pub struct Daemon {
    child: Option<Child>,
    pub socket: PathBuf,
    pub state_dir: PathBuf,
    pub log: PathBuf,
}

static LOGS: AtomicUsize = AtomicUsize::new(0);

impl Daemon {
    /// Spawns `boardd --socket S --state-dir D <extra>` with `env` added. Its stderr
    /// goes to a log file next to the socket, so it can never block on a full pipe.
    pub fn spawn(socket: &Path, state_dir: &Path, extra: &[&str], env: &[(&str, &str)]) -> Daemon {
        let dir = socket.parent().expect("socket has a parent directory");
        let log = dir.join(format!(
            "boardd-{}.log",
            LOGS.fetch_add(1, Ordering::Relaxed)
        ));
        let stderr = std::fs::File::create(&log).expect("create log file");
        let mut cmd = Command::new(boardd_bin());
        cmd.arg("--socket")
            .arg(socket)
            .arg("--state-dir")
            .arg(state_dir)
            .args(extra)
            .env_remove("TEAMBOARD_SOCKET")
            .env_remove("TEAMBOARD_STATE_DIR")
            .env_remove("NOTIFY_SOCKET")
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let child = cmd.spawn().expect("spawn boardd");
        Daemon {
            child: Some(child),
            socket: socket.to_path_buf(),
            state_dir: state_dir.to_path_buf(),
            log,
        }
    }

    /// Spawns and waits until it answers `status`.
    pub async fn start(socket: &Path, state_dir: &Path, extra: &[&str]) -> Daemon {
        let mut d = Daemon::spawn(socket, state_dir, extra, &[]);
        d.wait_ready().await;
        d
    }

    pub fn pid(&self) -> i32 {
        self.child.as_ref().expect("daemon already reaped").id() as i32
    }

    /// What the daemon wrote to stderr so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Polls until a client can connect and get a `status`, or panics (with the
    /// daemon's log) if it exits or takes more than 20 s.
    pub async fn wait_ready(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(status) = self.try_wait() {
                panic!(
                    "boardd exited with {status} before it was ready; log:\n{}",
                    self.log()
                );
            }
            if let Ok(client) = Client::connect(&self.socket, "test", "probe", TEAM).await
                && client.status().await.is_ok()
            {
                return;
            }
            if Instant::now() >= deadline {
                panic!("boardd not ready after 20 s; log:\n{}", self.log());
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// The exit status, if it has exited.
    pub fn try_wait(&mut self) -> Option<ExitStatus> {
        self.child
            .as_mut()
            .and_then(|c| c.try_wait().expect("try_wait"))
    }

    /// Sends a signal.
    pub fn signal(&self, sig: i32) {
        // SAFETY: kill(2) has no memory-safety preconditions; the pid is our own
        // unreaped child, so it cannot have been recycled.
        let rc = unsafe { libc::kill(self.pid(), sig) };
        assert_eq!(rc, 0, "kill({}, {sig}) failed", self.pid());
    }

    /// `kill -9`, and reap it.
    pub fn kill9(&mut self) -> ExitStatus {
        self.signal(libc::SIGKILL);
        let mut child = self.child.take().expect("daemon already reaped");
        child.wait().expect("wait for boardd")
    }

    /// Waits (polling, bounded) for the process to exit and reaps it.
    pub async fn wait_exit(&mut self, timeout: Duration) -> ExitStatus {
        let status = eventually("boardd to exit", timeout, || {
            let s = self.try_wait();
            async move { s }
        })
        .await;
        self.child = None;
        status
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The error a call is expected to fail with.
pub fn code_of<T: std::fmt::Debug>(r: Result<T, ClientError>) -> teamboard_protocol::ErrorCode {
    match r {
        Ok(v) => panic!("expected an error, got {v:?}"),
        Err(e) => e
            .code()
            .unwrap_or_else(|| panic!("expected a server error, got {e}")),
    }
}

// ---------------------------------------------------------------------------------
// Raw frames
// ---------------------------------------------------------------------------------

pub mod raw {
    use serde_json::Value;
    use std::path::Path;
    use std::time::Duration;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::UnixStream;

    /// How long a raw read waits before the test fails.
    const READ_TIMEOUT: Duration = Duration::from_secs(5);

    pub async fn connect(socket: &Path) -> UnixStream {
        UnixStream::connect(socket).await.expect("raw connect")
    }

    /// Writes one frame: a 4-byte big-endian length, then `payload`.
    pub async fn send(stream: &mut UnixStream, payload: &[u8]) {
        let len = u32::try_from(payload.len()).expect("frame fits u32");
        stream
            .write_all(&len.to_be_bytes())
            .await
            .expect("write length");
        stream.write_all(payload).await.expect("write payload");
    }

    pub async fn send_json(stream: &mut UnixStream, value: &Value) {
        send(stream, &serde_json::to_vec(value).unwrap()).await;
    }

    pub fn hello(name: &str, protocol: u32) -> Value {
        serde_json::json!({
            "type": "hello",
            "protocol": protocol,
            "client": "raw-test",
            "name": name,
            "team": super::TEAM,
        })
    }

    pub fn request(id: u64, op: &str, args: Value) -> Value {
        serde_json::json!({ "type": "request", "id": id, "op": op, "args": args })
    }

    /// Connects and completes the handshake as `name`.
    pub async fn connect_hello(socket: &Path, name: &str) -> UnixStream {
        let mut s = connect(socket).await;
        send_json(&mut s, &hello(name, teamboard_protocol::PROTOCOL_VERSION)).await;
        let welcome = read(&mut s).await.expect("a welcome frame");
        assert_eq!(welcome["type"], "welcome", "{welcome}");
        s
    }

    /// Reads one frame as JSON; `None` on a clean end of stream. Panics after
    /// [`READ_TIMEOUT`] or on a torn frame.
    pub async fn read(stream: &mut UnixStream) -> Option<Value> {
        tokio::time::timeout(READ_TIMEOUT, async {
            let mut len = [0u8; 4];
            match stream.read_exact(&mut len).await {
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return None,
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return None,
                Err(e) => panic!("read frame length: {e}"),
            }
            let mut body = vec![0u8; u32::from_be_bytes(len) as usize];
            stream.read_exact(&mut body).await.expect("read frame body");
            Some(serde_json::from_slice(&body).expect("server frames are JSON"))
        })
        .await
        .expect("no frame from boardd within 5 s")
    }

    /// Asserts the server closes the connection (after any frames it still sends).
    pub async fn expect_closed(stream: &mut UnixStream) {
        if let Some(frame) = read(stream).await {
            panic!("expected the connection to close, got {frame}");
        }
    }

    /// Reads the next frame and checks it is a connection-level `error` with `code`.
    pub async fn expect_error_frame(stream: &mut UnixStream, code: &str) -> Value {
        let frame = read(stream).await.expect("an error frame before the close");
        assert_eq!(frame["type"], "error", "{frame}");
        assert_eq!(frame["error"]["code"], code, "{frame}");
        frame
    }
}
