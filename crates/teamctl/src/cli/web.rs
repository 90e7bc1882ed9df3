//! Command-line definitions for `teamctl web`.

use clap::Args;
use std::net::SocketAddr;
use std::path::PathBuf;

pub const WEB_ABOUT: &str = "Serve the board as a live page in your browser";

pub const WEB_LONG: &str = "\
Serve the board as a live page for your browser: tasks by status with their \
dependencies, the team and each teammate's state, a task's history, checks and diff, \
a teammate's transcript, and the plans and shutdown requests that wait. From the page \
you add, edit and cancel tasks, approve or reject plans, message a teammate and ask one \
to shut down, through the same boardd operations as teamctl.

The first line of output is the page's address with a token: \
http://127.0.0.1:PORT/?token=... Open it once; the browser then keeps a cookie. A \
request without the token or the cookie is refused (401). A new run makes a new \
token unless --token gives one.

It listens on loopback only. Another address is refused unless --tls-cert and \
--tls-key are given, and then it serves HTTPS. See docs/web.md.";

pub const WEB_EXAMPLES: &str = "\
Examples:
  teamctl web                                  a free port on 127.0.0.1
  teamctl web --listen 127.0.0.1:8080
  teamctl web --listen 0.0.0.0:8443 --tls-cert cert.pem --tls-key key.pem
  teamctl web --systemd --listen 127.0.0.1:8080  run it as the user unit teamctl-web
";

#[derive(Debug, Args)]
pub struct WebArgs {
    /// Where to listen; port 0 picks a free one
    #[arg(
        long,
        env = "TEAMBOARD_WEB_LISTEN",
        default_value = "127.0.0.1:0",
        value_name = "ADDR:PORT"
    )]
    pub listen: SocketAddr,

    /// A PEM certificate chain: serve HTTPS (needed off loopback)
    #[arg(
        long,
        env = "TEAMBOARD_WEB_TLS_CERT",
        value_name = "FILE",
        requires = "tls_key"
    )]
    pub tls_cert: Option<PathBuf>,

    /// The PEM private key of --tls-cert
    #[arg(
        long,
        env = "TEAMBOARD_WEB_TLS_KEY",
        value_name = "FILE",
        requires = "tls_cert"
    )]
    pub tls_key: Option<PathBuf>,

    /// The token to require instead of a fresh one, so that the same address
    /// works after a restart (at least 16 letters and digits)
    #[arg(
        long,
        env = "TEAMBOARD_WEB_TOKEN",
        value_name = "TOKEN",
        hide_env_values = true
    )]
    pub token: Option<String>,

    /// Run it as the user unit teamctl-web beside boardd, with these settings
    /// (a free port is picked now when none is given, so the address stays)
    #[arg(long)]
    pub systemd: bool,
}
