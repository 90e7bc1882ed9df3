//! A database URL made into a connection: the client's configuration, and
//! whether and how the connection is TLS. The store and the leadership code
//! both connect through [`target`]; each sets its own timeouts and keepalives
//! on [`Target::config`], and the TLS decision is made here alone.
//!
//! `sslmode`, libpq's option, decides; `tokio-postgres` only reads `disable`,
//! `prefer` and `require`, and refuses `sslrootcert`, so both are taken out of
//! the URL before it parses the rest:
//! - absent, `disable`, `allow`, `prefer`: no TLS, as before TLS was supported.
//!   Trap: `prefer` must not start trying TLS. Debian's default server has
//!   `ssl = on` with a self-signed "snakeoil" certificate, which no CA vouches
//!   for: verified, every such existing setup would stop connecting, and
//!   unverified TLS is what teamboard never does.
//! - `require`, `verify-ca`, `verify-full`: TLS, and the server's certificate is
//!   always checked against the CA and the host name (libpq's `verify-full`
//!   for all three). libpq's `require` checks nothing without a root file;
//!   here nothing turns verification off, as for boardd's own TLS.
//! - the CA: `sslrootcert=PATH` (PEM; `system` for the system's roots), else
//!   `PGSSLROOTCERT`, else the system's roots. libpq's default
//!   `~/.postgresql/root.crt` is not read. `sslrootcert` with a mode that
//!   makes no TLS is refused rather than silently ignored.
//! - a Unix socket never does TLS (PostgreSQL does not serve it there): with
//!   only sockets as hosts, the connection is plain whatever the mode, as libpq
//!   ignores `sslmode` for them.
//!
//! Only the URL form (`postgres://…?sslmode=…`) takes these options: it is the
//! only form `--database` accepts.
//!
//! The glue between `tokio-postgres` and rustls is `tokio-postgres-rustls`,
//! over the rustls configuration of `teamboard_protocol::tls` (ring, the CA
//! file or the system's roots). Alternatives that lost:
//! - a hand-written `MakeTlsConnect`/`TlsConnect` over `tokio-rustls`: some 60
//!   lines without channel binding; SCRAM's `tls-server-end-point` binding
//!   needs the hash of the certificate's signature algorithm, which is the
//!   certificate parsing the crate brings (`x509-cert` and `der`, a few
//!   seconds of build, all of its cost);
//! - `postgres-openssl` or `postgres-native-tls`: a second TLS stack, and a C
//!   build, beside the rustls the workspace already has;
//! - `postgres_rustls`: younger and less used, for the same glue.

use postgres::config::{Host, SslMode};
use postgres::{Client, NoTls};
use std::path::{Path, PathBuf};
use teamboard_protocol::tls::TlsError;
use tokio_postgres_rustls::MakeRustlsConnect;
use tokio_rustls::rustls;

/// What the database's connection may go wrong on before a query runs. Each
/// message is whole, the client's causes included, and has no `source`: a
/// log line's `%error` shows all of it, and a chain printed by `anyhow` does
/// not say it twice.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    #[error("{}", with_causes(.0))]
    Postgres(postgres::Error),
    #[error(
        "sslmode={0} is not a mode boardd knows: give disable, allow, prefer, require, \
         verify-ca or verify-full"
    )]
    Mode(String),
    #[error(
        "sslrootcert is given, but sslmode={0} makes no TLS connection: add \
         sslmode=verify-full to the URL"
    )]
    CaWithoutTls(String),
    #[error("{error} (the CA for sslmode={mode}, from {from})")]
    Ca {
        mode: String,
        from: &'static str,
        error: TlsError,
    },
    #[error(
        "sslmode={0}: no trusted root certificates found on this system; name the \
         server's CA with sslrootcert=PATH in the URL (or PGSSLROOTCERT)"
    )]
    NoRoots(String),
    #[error("the TLS certificate of {hosts} does not verify against {ca}: {reason}")]
    Certificate {
        hosts: String,
        ca: String,
        reason: rustls::Error,
    },
}

/// A database to connect to, as a URL names it.
pub struct Target {
    /// The client's configuration, less what [`target`] took out of the URL.
    pub config: postgres::Config,
    tls: Option<Tls>,
}

struct Tls {
    connector: MakeRustlsConnect,
    /// The CA as messages name it.
    ca: String,
}

/// What a URL's mode asks of TLS: present when it asks for TLS.
#[derive(Debug)]
pub(super) struct Verify {
    /// `sslmode`, for messages.
    mode: String,
    /// `sslrootcert`, when given and not empty.
    root_cert: Option<String>,
}

/// The client's configuration of `url`, without the options it cannot read,
/// and what they ask of TLS. Reads no file: [`super::redact`] uses it too.
pub(super) fn parse(url: &str) -> Result<(postgres::Config, Option<Verify>), ConnectError> {
    let (rest, mode, root_cert) = take_options(url);
    let config = rest.parse().map_err(ConnectError::Postgres)?;
    let mode = mode.unwrap_or_else(|| "prefer".to_string());
    match mode.as_str() {
        "disable" | "allow" | "prefer" if root_cert.is_some() => {
            Err(ConnectError::CaWithoutTls(mode))
        }
        "disable" | "allow" | "prefer" => Ok((config, None)),
        "require" | "verify-ca" | "verify-full" => Ok((config, Some(Verify { mode, root_cert }))),
        _ => Err(ConnectError::Mode(mode)),
    }
}

/// Reads `url`, and makes the TLS configuration when its mode asks for one:
/// a CA that does not load fails here, before any connection.
pub fn target(url: &str) -> Result<Target, ConnectError> {
    let (mut config, verify) = parse(url)?;
    let hosts = config.get_hosts();
    let sockets_only = !hosts.is_empty()
        && hosts.iter().all(|h| matches!(h, Host::Unix(_)))
        && config.get_hostaddrs().is_empty();
    let Some(Verify { mode, root_cert }) = verify.filter(|_| !sockets_only) else {
        config.ssl_mode(SslMode::Disable);
        return Ok(Target { config, tls: None });
    };
    let (root, from) = match root_cert {
        Some(path) => (Some(path), "sslrootcert"),
        None => (
            std::env::var("PGSSLROOTCERT")
                .ok()
                .filter(|p| !p.is_empty()),
            "PGSSLROOTCERT",
        ),
    };
    let ca_file = root.filter(|r| r != "system").map(PathBuf::from);
    let rustls_config = client_config(ca_file.as_deref()).map_err(|e| match e {
        TlsError::NoRoots => ConnectError::NoRoots(mode.clone()),
        error => ConnectError::Ca {
            mode: mode.clone(),
            from,
            error,
        },
    })?;
    config.ssl_mode(SslMode::Require);
    let ca = match &ca_file {
        Some(path) => format!("the CA file {}", path.display()),
        None => "the system's root certificates".to_string(),
    };
    let connector = MakeRustlsConnect::new(rustls_config);
    Ok(Target {
        config,
        tls: Some(Tls { connector, ca }),
    })
}

/// teamboard's client configuration, announcing the protocol PostgreSQL 17
/// asks of a client that starts with TLS (`sslnegotiation=direct`); older
/// servers ignore it.
fn client_config(ca: Option<&Path>) -> Result<rustls::ClientConfig, TlsError> {
    let mut config = (*teamboard_protocol::tls::client_config(ca)?).clone();
    config.alpn_protocols = vec![b"postgresql".to_vec()];
    Ok(config)
}

impl Target {
    /// Connects, blocking: not on a thread that drives a tokio runtime (see
    /// the module doc of [`super`]).
    pub fn connect(&self) -> Result<Client, ConnectError> {
        let Some(tls) = &self.tls else {
            return self.config.connect(NoTls).map_err(ConnectError::Postgres);
        };
        self.config
            .connect(tls.connector.clone())
            .map_err(|e| match refused_certificate(&e) {
                Some(reason) => ConnectError::Certificate {
                    hosts: hosts(&self.config),
                    ca: tls.ca.clone(),
                    reason,
                },
                None => ConnectError::Postgres(e),
            })
    }
}

/// The reason rustls refused the server's certificate, if that is why the
/// handshake failed: `tokio-rustls` reports it as an I/O error around the
/// `rustls::Error`, which the client keeps as its cause.
fn refused_certificate(e: &postgres::Error) -> Option<rustls::Error> {
    causes(e).find_map(|cause| {
        let io = cause.downcast_ref::<std::io::Error>()?;
        match io.get_ref()?.downcast_ref::<rustls::Error>()? {
            tls @ rustls::Error::InvalidCertificate(_) => Some(tls.clone()),
            _ => None,
        }
    })
}

/// `e`'s message followed by its causes', in one line: the client's says
/// only "error performing TLS handshake" (or "db error") and keeps why in its
/// cause. A cause that already begins with what is said so far
/// (tokio-postgres's "invalid connection string: …" under its own "invalid
/// connection string") replaces it rather than repeat it.
pub(crate) fn with_causes(e: &postgres::Error) -> String {
    causes(e).fold(e.to_string(), |message, cause| {
        let cause = cause.to_string();
        if cause.starts_with(&message) {
            cause
        } else {
            format!("{message}: {cause}")
        }
    })
}

fn causes(e: &postgres::Error) -> impl Iterator<Item = &(dyn std::error::Error + 'static)> {
    std::iter::successors(std::error::Error::source(e), |cause| cause.source())
}

/// The hosts a configuration names (those whose certificates it checks), for
/// messages: its host names, or its addresses without any.
pub(super) fn hosts(config: &postgres::Config) -> String {
    let names: Vec<String> = match config.get_hosts() {
        [] => (config.get_hostaddrs().iter())
            .map(|a| a.to_string())
            .collect(),
        hosts => (hosts.iter())
            .map(|h| match h {
                Host::Tcp(name) => name.clone(),
                Host::Unix(path) => path.display().to_string(),
            })
            .collect(),
    };
    names.join(",")
}

/// `url` without `sslmode` and `sslrootcert`, and their values (the last of
/// each, as the client reads a repeated option). The query is found, and its
/// pairs split, as `tokio-postgres` does: it starts at the first `?` after the
/// credentials (up to the first `@`), and each pair is `KEY=VALUE` up to `&`,
/// both percent-encoded.
fn take_options(url: &str) -> (String, Option<String>, Option<String>) {
    let after_credentials = url.find('@').map_or(0, |at| at + 1);
    let Some(query) = url[after_credentials..]
        .find('?')
        .map(|q| after_credentials + q)
    else {
        return (url.to_string(), None, None);
    };
    let decode = |s: &str| {
        percent_encoding::percent_decode_str(s)
            .decode_utf8_lossy()
            .into_owned()
    };
    let (mut mode, mut root_cert, mut kept) = (None, None, Vec::new());
    for pair in url[query + 1..].split('&') {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        match decode(key).as_str() {
            "sslmode" => mode = Some(decode(value)),
            "sslrootcert" => root_cert = Some(decode(value)).filter(|v| !v.is_empty()),
            _ => kept.push(pair),
        }
    }
    let head = &url[..query];
    let rest = match kept.is_empty() {
        true => head.to_string(),
        false => format!("{head}?{}", kept.join("&")),
    };
    (rest, mode, root_cert)
}

#[cfg(test)]
mod tests;
