//! Where a client finds boardd: its Unix socket, or its TCP listener over TLS.
//!
//! `tls://HOST:PORT` is the network form. `tcp://127.0.0.1:PORT` (plain TCP)
//! is for tests and benchmarks on one machine, and is refused for any address
//! that is not loopback, as boardd refuses to listen so. Anything else is a
//! socket path.
//!
//! Several network addresses, separated by commas
//! (`tls://a:7433,tls://b:7433`), name several boardd serving one board (on a
//! shared database, `docs/multi-host.md`): a client tries them in turn and
//! keeps the first that lets it in, so a teammate whose boardd's host died
//! carries on through another.

use crate::client::ClientError;
use crate::tls;
use std::net::{SocketAddr, ToSocketAddrs as _};
use std::path::{Path, PathBuf};
use std::pin::Pin;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpStream, UnixStream};

/// Where boardd listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    Unix(PathBuf),
    Tls {
        host: String,
        port: u16,
        /// The CA (PEM) the server's certificate must chain to; the platform's
        /// roots when absent.
        ca_file: Option<PathBuf>,
    },
    /// Plain TCP, loopback only.
    Tcp(SocketAddr),
    /// Several network endpoints serving one board, tried in turn: two or more,
    /// each `Tls` or `Tcp`.
    AnyOf(Vec<Endpoint>),
}

#[derive(Debug, thiserror::Error)]
pub enum EndpointError {
    #[error("'{0}' is not HOST:PORT (a port is required)")]
    NoPort(String),
    #[error("'{0}': plain tcp:// is only for loopback addresses (tests); use tls://{1}")]
    PlaintextOffLoopback(String, String),
    #[error("'{0}': tcp:// takes a loopback IP address and a port, like tcp://127.0.0.1:7433")]
    BadTcp(String),
    #[error(
        "'{0}': a list of addresses takes only tls:// and tcp:// ones, separated by commas, \
         like tls://a.example:7433,tls://b.example:7433"
    )]
    BadList(String),
}

impl Endpoint {
    /// Parses `tls://HOST:PORT`, `tcp://127.0.0.1:PORT`, several of those
    /// separated by commas, or a socket path.
    pub fn parse(text: &str) -> Result<Endpoint, EndpointError> {
        let network = text.starts_with("tls://") || text.starts_with("tcp://");
        if network && text.contains(',') {
            let all = text
                .split(',')
                .map(|one| match Self::parse_one(one.trim())? {
                    Endpoint::Unix(_) => Err(EndpointError::BadList(text.to_string())),
                    one => Ok(one),
                })
                .collect::<Result<Vec<_>, _>>()?;
            return Ok(Endpoint::AnyOf(all));
        }
        Self::parse_one(text)
    }

    fn parse_one(text: &str) -> Result<Endpoint, EndpointError> {
        if let Some(rest) = text.strip_prefix("tls://") {
            let rest = rest.trim_end_matches('/');
            let (host, port) = rest
                .rsplit_once(':')
                .and_then(|(h, p)| Some((h, p.parse::<u16>().ok()?)))
                .filter(|(h, _)| !h.is_empty())
                .ok_or_else(|| EndpointError::NoPort(text.to_string()))?;
            return Ok(Endpoint::Tls {
                host: host.to_string(),
                port,
                ca_file: None,
            });
        }
        if let Some(rest) = text.strip_prefix("tcp://") {
            let rest = rest.trim_end_matches('/');
            let addr: SocketAddr = rest
                .parse()
                .map_err(|_| EndpointError::BadTcp(text.to_string()))?;
            if !addr.ip().is_loopback() {
                return Err(EndpointError::PlaintextOffLoopback(
                    text.to_string(),
                    rest.to_string(),
                ));
            }
            return Ok(Endpoint::Tcp(addr));
        }
        Ok(Endpoint::Unix(PathBuf::from(text)))
    }

    /// The same endpoint, trusting `ca` for TLS (no change to the others).
    pub fn with_ca_file(self, ca: Option<PathBuf>) -> Endpoint {
        match self {
            Endpoint::Tls { host, port, .. } => Endpoint::Tls {
                host,
                port,
                ca_file: ca,
            },
            Endpoint::AnyOf(all) => Endpoint::AnyOf(
                all.into_iter()
                    .map(|one| one.with_ca_file(ca.clone()))
                    .collect(),
            ),
            other => other,
        }
    }

    /// The CA that TLS is checked against, when one was given.
    pub fn ca_file(&self) -> Option<&Path> {
        match self {
            Endpoint::Tls { ca_file, .. } => ca_file.as_deref(),
            Endpoint::AnyOf(all) => all.iter().find_map(Endpoint::ca_file),
            _ => None,
        }
    }

    /// The endpoints to try, in order: this one, or each of a list.
    pub fn alternatives(&self) -> &[Endpoint] {
        match self {
            Endpoint::AnyOf(all) => all,
            one => std::slice::from_ref(one),
        }
    }

    /// The socket path, for a Unix endpoint.
    pub fn socket(&self) -> Option<&Path> {
        match self {
            Endpoint::Unix(path) => Some(path),
            _ => None,
        }
    }

    /// Whether it crosses a network: the credential is then a token, never a
    /// local `lead.key`.
    pub fn is_network(&self) -> bool {
        !matches!(self, Endpoint::Unix(_))
    }
}

impl std::fmt::Display for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Endpoint::Unix(path) => write!(f, "{}", path.display()),
            Endpoint::Tls { host, port, .. } => write!(f, "tls://{host}:{port}"),
            Endpoint::Tcp(addr) => write!(f, "tcp://{addr}"),
            Endpoint::AnyOf(all) => {
                for (i, one) in all.iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    write!(f, "{one}")?;
                }
                Ok(())
            }
        }
    }
}

/// A connection's byte stream, whichever way it goes.
pub(crate) trait Io: AsyncRead + AsyncWrite + Send + Unpin {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin> Io for T {}
pub(crate) type Stream = Pin<Box<dyn Io>>;

/// Opens a connection to `endpoint`, TLS handshake included. A list is
/// `Client::open`'s to try one by one: each of its endpoints gets its own
/// hello, since a boardd may let the client in only after it said hello.
pub(crate) async fn open(endpoint: &Endpoint) -> Result<Stream, ClientError> {
    match endpoint {
        Endpoint::AnyOf(_) => Err(ClientError::Protocol(format!(
            "{endpoint} is a list: its endpoints are opened one by one"
        ))),
        Endpoint::Unix(path) => Ok(Box::pin(unix(path).await?)),
        Endpoint::Tcp(addr) => Ok(Box::pin(tcp(&addr.to_string(), *addr).await?)),
        Endpoint::Tls {
            host,
            port,
            ca_file,
        } => {
            let server = format!("{host}:{port}");
            let config = tls::client_config(ca_file.as_deref()).map_err(ClientError::TlsSetup)?;
            let name = tls::server_name(host).map_err(ClientError::TlsSetup)?;
            let addr = resolve(&server).await?;
            let tcp = tcp(&server, addr).await?;
            let connector = tokio_rustls::TlsConnector::from(config);
            let stream = connector
                .connect(name, tcp)
                .await
                .map_err(|error| ClientError::Tls {
                    server: server.clone(),
                    trusted: match ca_file {
                        Some(ca) => format!("the CA file {}", ca.display()),
                        None => "the system's root certificates (no --ca-file)".to_string(),
                    },
                    host: host.clone(),
                    error,
                })?;
            Ok(Box::pin(stream))
        }
    }
}

/// The error of a list none of whose endpoints let the client in: each
/// one's, in words.
pub(crate) fn none_reachable(endpoint: &Endpoint, failed: Vec<ClientError>) -> ClientError {
    let why: Vec<String> = failed.iter().map(ToString::to_string).collect();
    ClientError::Unreachable {
        server: format!("any of {endpoint}"),
        error: std::io::Error::other(why.join("; ")),
    }
}

async fn resolve(server: &str) -> Result<SocketAddr, ClientError> {
    let lookup = server.to_string();
    let found =
        tokio::task::spawn_blocking(move || lookup.to_socket_addrs().map(|mut addrs| addrs.next()))
            .await
            .map_err(|e| std::io::Error::other(e.to_string()))
            .and_then(|r| r);
    match found {
        Ok(Some(addr)) => Ok(addr),
        Ok(None) => Err(ClientError::Unreachable {
            server: server.to_string(),
            error: std::io::Error::other("the name resolves to no address"),
        }),
        Err(error) => Err(ClientError::Unreachable {
            server: server.to_string(),
            error,
        }),
    }
}

async fn tcp(server: &str, addr: SocketAddr) -> Result<TcpStream, ClientError> {
    let stream = TcpStream::connect(addr)
        .await
        .map_err(|error| ClientError::Unreachable {
            server: server.to_string(),
            error,
        })?;
    // Small frames that each wait for an answer: no Nagle delay.
    let _ = stream.set_nodelay(true);
    Ok(stream)
}

async fn unix(socket: &Path) -> Result<UnixStream, ClientError> {
    UnixStream::connect(socket)
        .await
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound | std::io::ErrorKind::ConnectionRefused => {
                let path = socket.to_path_buf();
                let is_other_file = std::fs::metadata(socket)
                    .is_ok_and(|m| !std::os::unix::fs::FileTypeExt::is_socket(&m.file_type()));
                if is_other_file {
                    ClientError::NotASocket { path }
                } else {
                    ClientError::NotRunning { path }
                }
            }
            // Queued, then reset: boardd stopped before the connect returned
            // (a child forked just then holds its listener until it execs). The
            // same reset a moment later hits the hello below as `Closed`.
            std::io::ErrorKind::ConnectionReset => ClientError::Closed(format!(": {e}")),
            _ => ClientError::Connect {
                path: socket.to_path_buf(),
                source: e,
            },
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_parse_and_plain_tcp_is_loopback_only() {
        assert_eq!(
            Endpoint::parse("tls://board.example:7433").expect("tls"),
            Endpoint::Tls {
                host: "board.example".into(),
                port: 7433,
                ca_file: None
            }
        );
        let v6 = Endpoint::parse("tls://[::1]:7433").expect("tls v6");
        assert!(
            matches!(v6, Endpoint::Tls { ref host, .. } if host == "[::1]"),
            "{v6:?}"
        );
        assert!(matches!(
            Endpoint::parse("tls://board.example"),
            Err(EndpointError::NoPort(_))
        ));
        assert_eq!(
            Endpoint::parse("tcp://127.0.0.1:9").expect("tcp"),
            Endpoint::Tcp(SocketAddr::from(([127, 0, 0, 1], 9)))
        );
        let refused = Endpoint::parse("tcp://10.1.2.3:9").expect_err("off loopback");
        assert!(
            refused.to_string().contains("tls://10.1.2.3:9"),
            "{refused}"
        );
        assert_eq!(
            Endpoint::parse("/run/tb.sock").expect("path"),
            Endpoint::Unix("/run/tb.sock".into())
        );
    }

    #[test]
    fn a_list_of_addresses_parses_prints_back_and_takes_no_socket_path() {
        let text = "tls://a.example:7433,tls://[::1]:7434,tcp://127.0.0.1:9";
        let list = Endpoint::parse(text).expect("list");
        assert_eq!(list.alternatives().len(), 3, "{list:?}");
        assert_eq!(list.to_string(), text);
        assert!(list.is_network());
        let trusted = list.with_ca_file(Some("/ca.pem".into()));
        assert_eq!(trusted.ca_file(), Some(Path::new("/ca.pem")));
        assert!(matches!(
            Endpoint::parse("tls://a.example:7433,/run/tb.sock"),
            Err(EndpointError::BadList(_))
        ));
        assert!(matches!(
            Endpoint::parse("tls://a.example:7433,tls://b.example"),
            Err(EndpointError::NoPort(_))
        ));
        // A path with a comma in it is still a path.
        assert_eq!(
            Endpoint::parse("/run/a,b.sock").expect("path"),
            Endpoint::Unix("/run/a,b.sock".into())
        );
    }
}

/// A network endpoint and the token that vouches for the client there: what
/// `--connect`, `--token-file` and `--ca-file` (or `TEAMBOARD_CONNECT`,
/// `TEAMBOARD_TOKEN_FILE`, `TEAMBOARD_CA_FILE`) say together.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Remote {
    pub endpoint: Endpoint,
    pub token_file: PathBuf,
}

#[derive(Debug, thiserror::Error)]
pub enum TokenFileError {
    #[error("cannot read the token file {path}: {error}")]
    Read {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("the token file {0} is empty; put the token `teamctl token create` printed in it")]
    Empty(PathBuf),
}

impl Remote {
    /// The token, as the file holds it (surrounding white space trimmed).
    pub fn token(&self) -> Result<crate::Credential, TokenFileError> {
        let path = &self.token_file;
        let text = std::fs::read_to_string(path).map_err(|error| TokenFileError::Read {
            path: path.clone(),
            error,
        })?;
        let token = text.trim();
        if token.is_empty() {
            return Err(TokenFileError::Empty(path.clone()));
        }
        Ok(crate::Credential::new(token))
    }

    /// The command-line flags that say the same to another teamboard program
    /// (`teamctl spawn` starting a teammated).
    pub fn args(&self) -> Vec<std::ffi::OsString> {
        let mut args: Vec<std::ffi::OsString> = vec![
            "--connect".into(),
            self.endpoint.to_string().into(),
            "--token-file".into(),
            self.token_file.clone().into(),
        ];
        if let Some(ca) = self.endpoint.ca_file() {
            args.extend(["--ca-file".into(), ca.into()]);
        }
        args
    }
}
