//! Teammates over the network, through the real binaries on real sockets:
//! boardd's TLS listener, the tokens `teamctl token` issues, and the clients
//! (`teamctl --connect`, `teammated --connect`, the protocol client) that
//! present them.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "test code: a panic fails the test, and the harness captures what it prints"
)]

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;
use teamboard_protocol::request::{NewTask, RegisterArgs};
use teamboard_protocol::{Client, ClientError, Credential, Endpoint, ErrorCode, TaskStatus};
use teamboard_testkit::{
    Daemon, PATIENCE, Teamctl, Teammated, TestCerts, code_of, eventually, lead, short_tempdir,
    task, workspace_bin,
};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio_util::sync::CancellationToken;

/// A real boardd listening on the socket and on TLS at 127.0.0.1 (a port the
/// system chose), with the certificates it was given.
struct Host {
    dir: tempfile::TempDir,
    daemon: Daemon,
    addr: SocketAddr,
    certs: TestCerts,
    /// The CA a client must trust: the signing CA, or the self-signed
    /// certificate itself.
    trust: PathBuf,
}

impl Host {
    async fn start(self_signed: bool, extra: &[&str]) -> Host {
        let dir = short_tempdir();
        let certs = TestCerts::make(&dir.path().join("certs"));
        let (cert, key, trust) = if self_signed {
            let c = &certs.self_signed;
            (c.clone(), certs.self_signed_key.clone(), c.clone())
        } else {
            (certs.cert.clone(), certs.key.clone(), certs.ca.clone())
        };
        let mut args = vec![
            "--listen-tcp",
            "127.0.0.1:0",
            "--tls-cert",
            cert.to_str().unwrap(),
            "--tls-key",
            key.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        let (socket, state) = (dir.path().join("s"), dir.path().join("state"));
        let daemon = Daemon::start(&socket, &state, &args).await;
        let addr = tcp_addr(&daemon.log());
        Host {
            dir,
            daemon,
            addr,
            certs,
            trust,
        }
    }

    fn socket(&self) -> &Path {
        &self.daemon.socket
    }

    fn url(&self) -> String {
        format!("tls://{}", self.addr)
    }

    fn endpoint(&self, ca: &Path) -> Endpoint {
        Endpoint::parse(&self.url())
            .unwrap()
            .with_ca_file(Some(ca.to_path_buf()))
    }

    /// teamctl on this host's socket, as its lead.
    fn local(&self) -> Teamctl {
        Teamctl::new(workspace_bin("teamctl"), self.socket()).with_state_dir(&self.daemon.state_dir)
    }

    /// `teamctl token create NAME`, its token written to a file.
    fn token(&self, name: &str) -> PathBuf {
        let out = self.local().ok(&["token", "create", name]);
        let token = out.trim();
        assert_eq!(token.len(), 64, "{out}");
        assert!(token.chars().all(|c| c.is_ascii_hexdigit()), "{out}");
        let path = self.dir.path().join(format!("{name}.token"));
        std::fs::write(&path, format!("{token}\n")).unwrap();
        path
    }

    /// teamctl on another host: no socket, no lead key, only the endpoint,
    /// the token and the CA.
    fn remote(&self, token: &Path, ca: &Path, args: &[&str]) -> Output {
        let elsewhere = self.dir.path().join("elsewhere");
        std::fs::create_dir_all(&elsewhere).unwrap();
        Command::new(workspace_bin("teamctl"))
            .arg("--connect")
            .arg(self.url())
            .arg("--token-file")
            .arg(token)
            .arg("--ca-file")
            .arg(ca)
            .args(args)
            .env("TEAMBOARD_STATE_DIR", &elsewhere)
            .env("TEAMBOARD_SOCKET", elsewhere.join("no.sock"))
            .env_remove("TEAMBOARD_LEAD_KEY")
            .env_remove("TEAMBOARD_TEAM")
            .stdin(Stdio::null())
            .output()
            .expect("teamctl runs")
    }

    /// A protocol client over TLS, as `name`, presenting the token in `file`.
    async fn client(&self, name: &str, file: &Path) -> Result<Client, ClientError> {
        let token = read_token(file);
        let endpoint = self.endpoint(&self.trust);
        Client::open(
            &endpoint,
            "test",
            name,
            "default",
            Some(false),
            Some(&token),
        )
        .await
    }
}

/// The reason of a connection refused at the hello.
fn rejected(opened: Result<Client, ClientError>) -> String {
    match opened {
        Err(ClientError::Rejected(why)) => why,
        Err(other) => panic!("refused otherwise: {other}"),
        Ok(_) => panic!("welcomed"),
    }
}

fn read_token(file: &Path) -> Credential {
    Credential::new(std::fs::read_to_string(file).unwrap().trim())
}

/// The TCP address boardd bound, from its "boardd ready" line.
fn tcp_addr(log: &str) -> SocketAddr {
    let at = log
        .find("tcp=Some(")
        .unwrap_or_else(|| panic!("no TCP address in boardd's log:\n{log}"));
    let rest = &log[at + "tcp=Some(".len()..];
    rest[..rest.find(')').unwrap()].parse().unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn stdout(out: &Output) -> String {
    assert!(out.status.success(), "failed: {}", stderr(out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn teamctl_with_a_token_works_over_tls_and_only_with_the_right_ca() {
    let host = Host::start(false, &[]).await;
    let token = host.token("lead");
    let ca = host.certs.ca.clone();
    let added = stdout(&host.remote(&token, &ca, &["task", "add", "Sent over TLS"]));
    assert_eq!(added.trim(), "1");
    let tasks = stdout(&host.remote(&token, &ca, &["tasks", "--json"]));
    assert!(tasks.contains("Sent over TLS"), "{tasks}");
    // The same board as the socket's.
    let local = host.local().json(&["tasks"]);
    assert_eq!(local[0]["subject"], "Sent over TLS", "{local}");
    // Names and dates, never the secret.
    let list = stdout(&host.remote(&token, &ca, &["token", "list", "--json"]));
    let secret = std::fs::read_to_string(&token).unwrap();
    assert!(!list.contains(secret.trim()), "{list}");
    let list: serde_json::Value = serde_json::from_str(&list).unwrap();
    assert_eq!(list[0]["name"], "lead", "{list}");
    assert!(list[0]["created_ms"].as_i64().unwrap() > 0, "{list}");

    // A CA that did not sign boardd's certificate: refused, naming the CA
    // file and the server name.
    let wrong = host.remote(&token, &host.certs.other_ca, &["tasks"]);
    assert!(!wrong.status.success());
    let why = stderr(&wrong);
    assert!(why.contains("certificate"), "{why}");
    assert!(why.contains("other-ca.pem"), "{why}");
    assert!(why.contains("'127.0.0.1'"), "{why}");
    // No token file, a token that vouches for nobody, nothing listening.
    let missing = host.remote(&host.dir.path().join("nope"), &ca, &["tasks"]);
    let why = stderr(&missing);
    assert!(why.contains("cannot read the token file"), "{why}");
    let bad = host.dir.path().join("bad.token");
    std::fs::write(&bad, "0".repeat(64)).unwrap();
    let refused = host.remote(&bad, &ca, &["tasks"]);
    assert!(!refused.status.success());
    assert!(stderr(&refused).contains("lead"), "{}", stderr(&refused));
    let endpoint = Endpoint::parse("tls://127.0.0.1:1").unwrap();
    let unreachable = Client::open(&endpoint, "test", "lead", "default", None, None).await;
    let why = unreachable
        .err()
        .expect("nothing listens on port 1")
        .to_string();
    assert!(why.contains("cannot reach boardd at 127.0.0.1:1"), "{why}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_teammate_over_tls_registers_with_its_token_and_completes_a_task() {
    let host = Host::start(true, &[]).await;
    let token = host.token("alice");
    let work = host.dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let teammated = Teammated::new(
        workspace_bin("teammated"),
        host.socket(),
        &host.daemon.state_dir,
    );
    // A list, its first address dead (nothing listens on port 1): the
    // teammate goes on to the next.
    let url = format!("tls://127.0.0.1:1,{}", host.url());
    let args = [
        "--connect",
        &url,
        "--token-file",
        token.to_str().unwrap(),
        "--ca-file",
        host.trust.to_str().unwrap(),
    ];
    let alice = teammated.spawn(
        "alice",
        "dev",
        &work,
        &host.dir.path().join("alice.log"),
        &args,
        &[],
    );
    let boss = lead(host.socket()).await;
    let desc = "```sh\necho over-tls | tee done.txt\n```";
    let id = boss
        .add_task(NewTask {
            description: desc.into(),
            ..task("Over the network")
        })
        .await
        .unwrap()
        .id;
    let done = eventually("alice to complete the task", PATIENCE, || async {
        let t = boss.get_task(id).await.ok()?.task;
        (t.status == TaskStatus::Completed).then_some(t)
    })
    .await;
    assert_eq!(done.owner.as_deref(), Some("alice"), "{}", alice.log_text());
    assert_eq!(
        std::fs::read_to_string(work.join("done.txt")).unwrap(),
        "over-tls\n"
    );
    let team = boss.team().await.unwrap();
    assert!(
        team.iter().any(|m| m.name == "alice" && m.connected),
        "{team:?}"
    );
    // Registering did not revoke the token: it still opens a session.
    let again = host.client("alice", &token).await.unwrap();
    again.team().await.unwrap();
    let tokens = host.local().json(&["token", "list"]);
    assert_eq!(tokens[0]["name"], "alice", "{tokens}");

    // `teamctl spawn` on another host hands its endpoint, token and CA on.
    let bob_token = host.token("bob");
    let args = [
        "spawn",
        "bob",
        "--role",
        "dev",
        "--workdir",
        work.to_str().unwrap(),
        "--json",
    ];
    let spawned = stdout(&host.remote(&bob_token, &host.trust, &args));
    let spawned: serde_json::Value = serde_json::from_str(&spawned).unwrap();
    let _bob = KillOnDrop(spawned["pid"].as_i64().expect("pid") as i32);
    let team = boss.team().await.unwrap();
    assert!(
        team.iter().any(|m| m.name == "bob" && m.connected),
        "{team:?}"
    );
}

/// A detached teammate `teamctl spawn` started, killed when the test ends.
struct KillOnDrop(i32);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        // SAFETY: kill(2) only sends a signal; the pid is the spawned
        // teammate's, which `spawn` reported as running.
        unsafe { libc::kill(self.0, libc::SIGKILL) };
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revoked_token_is_refused_on_its_open_session_and_on_a_new_one() {
    let host = Host::start(false, &[]).await;
    let token = host.token("bob");
    let bob = host.client("bob", &token).await.unwrap();
    bob.register_with(RegisterArgs {
        role: "dev".into(),
        ..RegisterArgs::default()
    })
    .await
    .unwrap();
    bob.team().await.unwrap();
    // A token vouches for its own name only. Over the network, a hello that
    // nothing vouches for is refused with the reason, and no session is
    // kept open for it.
    let local = lead(host.socket()).await;
    let sessions = local.status().await.unwrap().sessions;
    let posing = host.client("lead", &token).await;
    let why = rejected(posing);
    assert!(why.contains("says it is the lead"), "{why}");
    let anonymous = Client::open(
        &host.endpoint(&host.trust),
        "test",
        "bob",
        "default",
        None,
        None,
    )
    .await;
    let why = rejected(anonymous);
    assert!(why.contains("did not present"), "{why}");
    assert_eq!(local.status().await.unwrap().sessions, sessions);

    // bob hears the team's events until the revoke, and nothing after.
    bob.subscribe().await.unwrap();
    local.subscribe().await.unwrap();
    local.add_task(task("heard")).await.unwrap();
    let heard = tokio::time::timeout(PATIENCE, bob.next_event()).await;
    assert!(matches!(heard, Ok(Some(_))), "{heard:?}");
    while let Ok(Some(_)) = tokio::time::timeout(Duration::ZERO, bob.next_event()).await {}

    let out = host.local().ok(&["token", "revoke", "bob"]);
    assert!(out.contains("revoked"), "{out}");
    assert_eq!(code_of(bob.team().await), ErrorCode::PermissionDenied);
    local.add_task(task("unheard")).await.unwrap();
    while let Ok(Some(e)) = tokio::time::timeout(PATIENCE, local.next_event()).await {
        if e.detail.contains("unheard") {
            break;
        }
    }
    // A request's answer follows any event queued before it on the
    // connection: whatever bob was sent is in by now.
    assert_eq!(code_of(bob.team().await), ErrorCode::PermissionDenied);
    let after = tokio::time::timeout(Duration::ZERO, bob.next_event()).await;
    assert!(after.is_err(), "a revoked session heard {after:?}");
    let why = rejected(host.client("bob", &token).await);
    assert!(why.contains("'bob'"), "{why}");
    // Gone, and it stays gone over a restart of nothing: a second revoke
    // finds no token.
    let again = host.local().run(&["token", "revoke", "bob"]);
    assert!(!again.status.success());
    assert!(stderr(&again).contains("no token"), "{}", stderr(&again));
    // Only the lead issues tokens.
    let other = host.token("carol");
    let carol = host.client("carol", &other).await.unwrap();
    let args = teamboard_protocol::token::CreateTokenArgs {
        name: "carol".into(),
        team: None,
    };
    let made = carol
        .call::<serde_json::Value>(teamboard_protocol::Request::CreateToken(args))
        .await;
    assert_eq!(code_of(made), ErrorCode::PermissionDenied);
}

/// A lead token vouches for the lead of its own team only: it manages that
/// team's tokens, and no other team's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lead_token_cannot_touch_another_teams_tokens() {
    let host = Host::start(false, &[]).await;
    host.local().ok(&["--new-team", "ops", "team"]);
    let token = host.token("lead");
    let lead = host.client("lead", &token).await.unwrap();
    let call = |request| {
        let lead = &lead;
        async move { lead.call::<serde_json::Value>(request).await }
    };
    use teamboard_protocol::Request::{CreateToken, ListTokens, RevokeToken};
    use teamboard_protocol::token::{CreateTokenArgs, ListTokensArgs, TokenRef};
    let ops = || Some("ops".to_string());
    let made = call(CreateToken(CreateTokenArgs {
        name: "lead".into(),
        team: ops(),
    }))
    .await;
    assert_eq!(code_of(made), ErrorCode::PermissionDenied);
    let listed = call(ListTokens(ListTokensArgs { team: ops() })).await;
    assert_eq!(code_of(listed), ErrorCode::PermissionDenied);
    let revoked = call(RevokeToken(TokenRef {
        name: "lead".into(),
        team: ops(),
    }))
    .await;
    assert_eq!(code_of(revoked), ErrorCode::PermissionDenied);
    // Its own team's, it may.
    let own = call(CreateToken(CreateTokenArgs {
        name: "ann".into(),
        team: None,
    }))
    .await;
    assert!(own.is_ok(), "{own:?}");
    // The lead's own key may reach every team.
    let out = host
        .local()
        .ok(&["--team", "ops", "token", "create", "lead"]);
    assert_eq!(out.trim().len(), 64, "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_tcp_is_refused_off_loopback_by_boardd_and_by_clients() {
    let dir = short_tempdir();
    let (socket, state) = (dir.path().join("s"), dir.path().join("state"));
    let args = ["--listen-tcp", "0.0.0.0:0", "--plaintext-loopback"];
    let mut wide = Daemon::spawn(&socket, &state, &args, &[]);
    let status = wide.wait_exit(PATIENCE).await;
    assert!(!status.success());
    assert!(wide.log().contains("only for loopback"), "{}", wide.log());
    let mut bare = Daemon::spawn(&socket, &state, &["--listen-tcp", "127.0.0.1:0"], &[]);
    assert!(!bare.wait_exit(PATIENCE).await.success());
    assert!(
        bare.log().contains("--plaintext-loopback"),
        "{}",
        bare.log()
    );

    let refused = Endpoint::parse("tcp://192.0.2.7:7433")
        .unwrap_err()
        .to_string();
    assert!(refused.contains("use tls://192.0.2.7:7433"), "{refused}");
    let token = dir.path().join("t");
    std::fs::write(&token, "x").unwrap();
    let out = Command::new(workspace_bin("teamctl"))
        .args(["--connect", "tcp://192.0.2.7:7433", "--token-file"])
        .arg(&token)
        .arg("tasks")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("only for loopback"),
        "{}",
        stderr(&out)
    );

    // On loopback, for tests: the same protocol in clear.
    let args = ["--listen-tcp", "127.0.0.1:0", "--plaintext-loopback"];
    let daemon = Daemon::start(&socket, &state, &args).await;
    let addr = tcp_addr(&daemon.log());
    let key = teamboard_testkit::lead_key(&socket);
    let endpoint = Endpoint::parse(&format!("tcp://{addr}")).unwrap();
    let client = Client::open(&endpoint, "test", "lead", "default", None, Some(&key))
        .await
        .unwrap();
    client.add_task(task("In clear on loopback")).await.unwrap();
    let local = lead(&socket).await.list_tasks(None).await.unwrap();
    assert_eq!(local[0].subject, "In clear on loopback");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_and_plain_text_on_the_tls_port_do_not_disturb_an_open_session() {
    let host = Host::start(false, &[]).await;
    let token = host.token("lead");
    let open = host.client("lead", &token).await.unwrap();
    open.add_task(task("before")).await.unwrap();

    // Noise, a plain-text hello, and a client that says nothing at all.
    let mut noise = tokio::net::TcpStream::connect(host.addr).await.unwrap();
    let junk: Vec<u8> = (0..4096u32).map(|i| (i * 7919 % 251) as u8).collect();
    noise.write_all(&junk).await.unwrap();
    let mut plain = tokio::net::TcpStream::connect(host.addr).await.unwrap();
    let hello = br#"{"type":"hello","protocol":1,"client":"plain","name":"lead"}"#;
    plain
        .write_all(&(hello.len() as u32).to_be_bytes())
        .await
        .unwrap();
    plain.write_all(hello).await.unwrap();
    let _silent = tokio::net::TcpStream::connect(host.addr).await.unwrap();

    // boardd ends the bad ones, and the open session goes on meanwhile.
    for (what, mut stream) in [("noise", noise), ("plain text", plain)] {
        let mut got = Vec::new();
        let ended = tokio::time::timeout(PATIENCE, stream.read_to_end(&mut got)).await;
        assert!(ended.is_ok(), "boardd left the {what} connection open");
        assert!(
            !String::from_utf8_lossy(&got).contains("welcome"),
            "{what} was welcomed"
        );
    }
    open.add_task(task("after")).await.unwrap();
    let fresh = host.client("lead", &token).await.unwrap();
    assert_eq!(fresh.list_tasks(None).await.unwrap().len(), 2);
    let local = lead(host.socket()).await;
    assert_eq!(local.list_tasks(None).await.unwrap().len(), 2);
}

/// A TCP relay the test can cut as a lost network does: no FIN, no reset,
/// the bytes just stop.
struct Proxy {
    addr: SocketAddr,
    cut: CancellationToken,
}

impl Proxy {
    async fn start(to: SocketAddr) -> Proxy {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let cut = CancellationToken::new();
        let cutting = cut.clone();
        tokio::spawn(async move {
            loop {
                let Ok((mut client, _)) = listener.accept().await else {
                    return;
                };
                let cut = cutting.clone();
                tokio::spawn(async move {
                    let Ok(mut server) = tokio::net::TcpStream::connect(to).await else {
                        return;
                    };
                    let relayed = tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut client, &mut server) => true,
                        _ = cut.cancelled() => false,
                    };
                    if !relayed {
                        // Both ends stay open, and silent, for good.
                        std::future::pending::<()>().await;
                    }
                });
            }
        });
        Proxy { addr, cut }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_held_over_a_lost_network_is_reclaimable_after_its_lease() {
    let host = Host::start(true, &["--lease-ttl", "3"]).await;
    let proxy = Proxy::start(host.addr).await;
    let alice_token = host.token("alice");
    let work = host.dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let teammated = Teammated::new(
        workspace_bin("teammated"),
        host.socket(),
        &host.daemon.state_dir,
    );
    let url = format!("tls://{}", proxy.addr);
    let args = [
        "--connect",
        &url,
        "--token-file",
        alice_token.to_str().unwrap(),
        "--ca-file",
        host.trust.to_str().unwrap(),
    ];
    let log = host.dir.path().join("alice.log");
    let alice = teammated.spawn("alice", "dev", &work, &log, &args, &[]);
    let boss = lead(host.socket()).await;
    let desc = "```sh\nsleep 120\n```";
    let id = boss
        .add_task(NewTask {
            description: desc.into(),
            ..task("Long work")
        })
        .await
        .unwrap()
        .id;
    eventually("alice to claim the task", PATIENCE, || async {
        let t = boss.get_task(id).await.ok()?.task;
        (t.owner.as_deref() == Some("alice")).then_some(())
    })
    .await;

    // alice's host drops off the network. Its claim lives on until the
    // lease runs out, and no longer.
    let bob_token = host.token("bob");
    let bob = host.client("bob", &bob_token).await.unwrap();
    bob.register_with(RegisterArgs {
        role: "dev".into(),
        ..RegisterArgs::default()
    })
    .await
    .unwrap();
    proxy.cut.cancel();
    let claim = eventually("bob to claim the task", PATIENCE, || async {
        bob.claim_next().await.ok().flatten()
    })
    .await;
    assert_eq!(claim.task.id, id, "{}", alice.log_text());
    // Taken from alice by her lease running out, not by a closed connection:
    // boardd never heard from her host again.
    let history = boss.get_task(id).await.unwrap().history;
    let lapsed = history
        .iter()
        .find(|e| e.detail.contains("back to pending"))
        .expect("alice's claim ended");
    assert!(
        lapsed.detail.contains("lease expired, alice"),
        "{}",
        lapsed.detail
    );
    let t = boss.get_task(id).await.unwrap().task;
    assert_eq!(t.owner.as_deref(), Some("bob"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lead_on_another_host_spawns_teammates_that_connect_with_tokens_it_issued() {
    let host = Host::start(false, &[]).await;
    let token = host.token("lead");
    let work = host.dir.path().join("lead-work");
    std::fs::create_dir_all(&work).unwrap();
    let goal = "Over the network.\n\n````plan\nteammate ada\ntask good\n    ```sh\n    echo fine\n    ```\n````";
    let args = [
        "lead",
        "--goal",
        goal,
        "--yes",
        "--teammate-idle-timeout",
        "0",
        "--workdir",
        work.to_str().unwrap(),
    ];
    let mut cmd = Command::new(workspace_bin("teamctl"));
    let elsewhere = host.dir.path().join("laptop");
    cmd.arg("--connect")
        .arg(host.url())
        .arg("--token-file")
        .arg(&token)
        .arg("--ca-file")
        .arg(&host.certs.ca)
        .arg("--state-dir")
        .arg(&elsewhere)
        .args(args)
        .env("TEAMMATED_BIN", workspace_bin("teammated"))
        .env("TEAMBOARD_SOCKET", elsewhere.join("no.sock"))
        .env_remove("TEAMBOARD_LEAD_KEY")
        .env_remove("TEAMBOARD_TEAM")
        .env_remove("TEAMMATE_PROVIDER")
        .stdin(Stdio::null());
    let out = tokio::task::spawn_blocking(move || cmd.output().expect("teamctl lead runs"))
        .await
        .unwrap();
    let boss = lead(host.socket()).await;
    let team = boss.team().await.unwrap();
    // The teammate outlives the lead: stopped here, by the pid it registered.
    let _ada = team
        .iter()
        .filter_map(|m| m.pid)
        .map(|pid| KillOnDrop(pid as i32))
        .collect::<Vec<_>>();
    assert!(
        out.status.success(),
        "{}\n{}",
        stdout_of(&out),
        stderr(&out)
    );
    let tasks = boss.list_tasks(Some(TaskStatus::Completed)).await.unwrap();
    assert_eq!(tasks.len(), 1, "{}", stdout_of(&out));
    assert_eq!(tasks[0].owner.as_deref(), Some("ada"));
    // ada connected with a token of her own, kept 0600 on the lead's host.
    let tokens = host.local().json(&["token", "list"]);
    let names: Vec<&str> = (tokens.as_array().unwrap().iter())
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(names, ["ada", "lead"], "{tokens}");
    let file =
        teamboard_protocol::transcript::teammate_dir(&elsewhere, "default", "ada").join("token");
    let mode =
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&file).unwrap().permissions());
    assert_eq!(mode & 0o777, 0o600);
}

fn stdout_of(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}
