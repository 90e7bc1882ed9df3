//! The `boardd` binary: flags, logging and signals around [`boardd::start`].

use anyhow::Context;
use boardd::server::{TcpListen, TlsFiles};
use boardd::{BoardConfig, CommitMode, Config};
use clap::{CommandFactory as _, Parser};
use std::path::PathBuf;
use std::time::Duration;
use teamboard_protocol::paths;

/// The teamboard daemon: owns the task board, the inboxes and the team roster.
///
/// One boardd runs per user. It serialises every claim, persists every change to
/// SQLite before acknowledging it, and pushes events to the teammates that wait on
/// them. Clients (`teamctl`, `teammated`) find it through the socket path.
#[derive(Debug, Parser)]
#[command(
    version,
    group = clap::ArgGroup::new("tls_or_plain").args(["tls_cert", "plaintext_loopback"]).multiple(true),
    after_help = "Examples:\n  boardd                                  # foreground, default paths\n  systemctl --user enable --now boardd    # as a user service\n  boardd --socket /tmp/tb.sock --state-dir /tmp/tb-state\n\nLogging: set RUST_LOG (e.g. RUST_LOG=boardd=debug)."
)]
struct Args {
    /// Unix socket to listen on [default: $XDG_RUNTIME_DIR/teamboard/boardd.sock]
    #[arg(long, env = "TEAMBOARD_SOCKET")]
    socket: Option<PathBuf>,

    /// Directory for the database and lock file [default: ~/.local/state/teamboard]
    #[arg(long, env = "TEAMBOARD_STATE_DIR")]
    state_dir: Option<PathBuf>,

    /// Keep the board in this PostgreSQL database (`postgres://USER@HOST/DB`)
    /// instead of SQLite in the state directory, which still holds the lock
    /// and `lead.key`
    ///
    /// Over TLS, verified against a CA:
    /// `?sslmode=verify-full&sslrootcert=CA.pem` (`require` verifies too;
    /// without `sslrootcert`, `PGSSLROOTCERT` or the system's roots); without
    /// `sslmode`, plain text (docs/boardd.md)
    // `--help` would print the variable's value, and a URL may hold a password.
    #[arg(
        long,
        env = "TEAMBOARD_DATABASE",
        hide_env_values = true,
        value_name = "URL"
    )]
    database: Option<String>,

    /// Share the --database with other boardd: one decides at a time, and the
    /// others forward their clients to it. ADDR is what they dial to reach this
    /// one when it decides: its --socket's absolute path, for boardd on one host,
    /// or its --listen-tcp as tls://HOST:PORT (tcp://127.0.0.1:PORT on
    /// loopback) (docs/design/cluster.md)
    #[arg(long, value_name = "ADDR", requires = "database")]
    advertise: Option<String>,

    /// The CA (PEM) that a deciding boardd's TLS certificate must chain to,
    /// when this one forwards to it over tls:// [default: the system's roots]
    #[arg(
        long,
        env = "TEAMBOARD_CA_FILE",
        value_name = "CA.pem",
        requires = "database"
    )]
    ca_file: Option<PathBuf>,

    /// Share the --database with other boardd without ever deciding: a host
    /// that does not hold the teams' repositories
    #[arg(long, requires = "database", conflicts_with = "advertise")]
    follower_only: bool,

    /// This boardd's name among those sharing the database [default: the host
    /// name and the process id]
    #[arg(long, value_name = "NAME")]
    node: Option<String>,

    /// Seconds the deciding boardd holds the board without renewing; after
    /// that, another takes over
    #[arg(long, default_value_t = 3.0, value_name = "SECS")]
    leader_lease: f64,

    /// Seconds a claim lives without a heartbeat.
    #[arg(long, default_value_t = 30.0, value_name = "SECS")]
    lease_ttl: f64,

    /// Seconds an owner has to reconnect after a restart before its claim lapses.
    #[arg(long, default_value_t = 30.0, value_name = "SECS")]
    restart_grace: f64,

    /// Claims per task before a failed attempt marks it failed.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
    max_attempts: u32,

    /// The most clients served at once; the rest are refused with a clear reason
    /// [default: the open-file limit, raised to its hard maximum, minus 32]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    max_connections: Option<u32>,

    /// Prices per million tokens that override or add to the bundled catalog
    /// (`[models."openai/gpt-4o-mini"] input = 0.15 output = 0.60`)
    /// [default: ~/.config/teamboard/prices.toml, if it exists]
    #[arg(long, env = "TEAMBOARD_PRICES", value_name = "FILE")]
    prices: Option<PathBuf>,

    /// Also listen on TCP at ADDR (`0.0.0.0:7433`, `[::]:7433`), with TLS, for
    /// teammates on other hosts; they present a token (`teamctl token create`)
    #[arg(
        long,
        env = "TEAMBOARD_LISTEN_TCP",
        value_name = "ADDR",
        requires = "tls_or_plain"
    )]
    listen_tcp: Option<std::net::SocketAddr>,

    /// The TLS certificate chain for --listen-tcp (PEM)
    #[arg(long, value_name = "CERT.pem", requires_all = ["listen_tcp", "tls_key"])]
    tls_cert: Option<PathBuf>,

    /// The TLS certificate's private key for --listen-tcp (PEM)
    #[arg(long, value_name = "KEY.pem", requires_all = ["listen_tcp", "tls_cert"])]
    tls_key: Option<PathBuf>,

    /// Test only: --listen-tcp without TLS, allowed on a loopback address only
    #[arg(long, requires = "listen_tcp", conflicts_with_all = ["tls_cert", "tls_key"])]
    plaintext_loopback: bool,

    /// Commit one transaction per request instead of grouping. Only for
    /// benchmarking against the obvious design; it is much slower under load.
    #[arg(long, hide = true)]
    no_group_commit: bool,
}

fn secs(value: f64, flag: &str) -> anyhow::Result<Duration> {
    Duration::try_from_secs_f64(value)
        .ok()
        .filter(|d| !d.is_zero())
        .with_context(|| format!("--{flag} must be a positive number of seconds, not {value}"))
}

#[allow(
    clippy::print_stderr,
    reason = "the error that stops boardd, its last word for the person or the journal"
)]
fn main() -> std::process::ExitCode {
    // One line, not anyhow's debug dump with a backtrace: these errors are for the
    // person or the journal reading them ("already running", "disk full").
    match real_main() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("boardd: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn real_main() -> anyhow::Result<()> {
    let man =
        teamboard_protocol::man::generate_if_asked(std::env::args_os(), || vec![Args::command()]);
    if let Some(done) = man {
        return done.context("cannot write the man pages");
    }
    let args = Args::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        // Colour only for a person at a terminal: the journal and redirected logs
        // would keep the escape codes as text.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let state_dir = args.state_dir.unwrap_or_else(paths::default_state_dir);
    let socket = args.socket.unwrap_or_else(paths::default_socket_path);
    let config = Config {
        board: BoardConfig {
            max_attempts: args.max_attempts,
            lease_ttl: secs(args.lease_ttl, "lease-ttl")?,
            restart_grace: secs(args.restart_grace, "restart-grace")?,
            ..BoardConfig::default()
        },
        max_connections: args.max_connections.and_then(|n| usize::try_from(n).ok()),
        commit_mode: if args.no_group_commit {
            CommitMode::PerRequest
        } else {
            CommitMode::Group
        },
        prices: args.prices,
        database: match args.database.as_deref() {
            Some(url) => boardd::store::Database::from_url(url)?,
            None => boardd::store::Database::Sqlite,
        },
        tcp: args.listen_tcp.map(|addr| TcpListen {
            addr,
            tls: args
                .tls_cert
                .zip(args.tls_key)
                .map(|(cert, key)| TlsFiles { cert, key }),
        }),
        ..Config::new(socket, state_dir)
    };
    if let Some(advertise) = &args.advertise {
        boardd::cluster::proxy::Addr::parse(advertise).context("--advertise")?;
    }
    let ca_file = args.ca_file;
    let cluster = match (args.advertise, args.follower_only) {
        (None, false) => None,
        (advertise, follower_only) => Some(boardd::cluster::role::Settings {
            url: args.database.clone().unwrap_or_default(),
            node: args.node.unwrap_or_else(default_node),
            advertise: advertise.unwrap_or_default(),
            lease: secs(args.leader_lease, "leader-lease")?,
            follower_only,
            socket: config.socket.clone(),
            tcp: config.tcp.clone(),
        }),
    };
    // A worker per CPU (two on the machines boardd is measured on), so that the
    // actor and the connections' tasks can run at once. The switch to a single
    // thread is this line (`new_current_thread`); the rest of boardd works with
    // either. docs/design/group-commit.md says why more than one won.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    match cluster {
        Some(cluster) => runtime.block_on(run_shared(config, cluster, ca_file)),
        None => runtime.block_on(run(config)),
    }
}

/// The host name and the process id: unique among boardd on one database
/// unless two hosts share a name.
fn default_node() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_default();
    let host = if host.is_empty() {
        "boardd".to_string()
    } else {
        host
    };
    format!("{host}-{}", std::process::id())
}

/// One of several boardd on a database: [`boardd::cluster::role::run`] until
/// SIGTERM or SIGINT.
async fn run_shared(
    config: Config,
    cluster: boardd::cluster::role::Settings,
    ca_file: Option<PathBuf>,
) -> anyhow::Result<()> {
    use boardd::cluster::{proxy, role};
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate()).context("cannot handle SIGTERM")?;
    let mut int = signal(SignalKind::interrupt()).context("cannot handle SIGINT")?;
    let lease = cluster.lease;
    let (url, state_dir) = (cluster.url.clone(), config.state_dir.clone());
    let start: role::StartCore = std::sync::Arc::new(move |term| {
        let config = Config {
            fence: Some(boardd::store::Fence { term, lease }),
            ..config.clone()
        };
        Box::pin(boardd::start(config))
    });
    let stop = tokio_util::sync::CancellationToken::new();
    let stopping = stop.clone();
    tokio::spawn(async move {
        tokio::select! {
            _ = term.recv() => tracing::info!("SIGTERM: stopping"),
            _ = int.recv() => tracing::info!("SIGINT: stopping"),
        }
        boardd::notify("STOPPING=1");
        stopping.cancel();
    });
    tokio::task::spawn_blocking(move || boardd::share_lead_key(&url, &state_dir))
        .await
        .context("cannot read the lead's credential")??;
    boardd::notify("READY=1\nSTATUS=following");
    role::run(cluster, start, proxy::dialler(ca_file), stop).await?;
    Ok(())
}

async fn run(config: Config) -> anyhow::Result<()> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate()).context("cannot handle SIGTERM")?;
    let mut int = signal(SignalKind::interrupt()).context("cannot handle SIGINT")?;
    let running = boardd::start(config).await?;
    boardd::notify("READY=1\nSTATUS=serving");
    let stop = running.shutdown_token();
    let fatal = running.fatal_token();
    tokio::spawn(async move {
        tokio::select! {
            _ = term.recv() => tracing::info!("SIGTERM: stopping"),
            _ = int.recv() => tracing::info!("SIGINT: stopping"),
            _ = fatal.cancelled() => {}
        }
        boardd::notify("STOPPING=1");
        stop.cancel();
    });
    if running.wait().await {
        anyhow::bail!(
            "stopped after a storage failure; nothing unpersisted was acknowledged. Free disk space and start boardd again"
        );
    }
    Ok(())
}
