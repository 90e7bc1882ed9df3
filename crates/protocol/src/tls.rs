//! TLS for boardd's TCP listener and its clients: rustls with ring.
//!
//! ring, not aws-lc: teammated already builds rustls with ring for its model
//! providers, and aws-lc is a C build of minutes on a small machine. No OpenSSL
//! either, for the same reason and for one TLS stack across the workspace.
//!
//! A client trusts exactly the CA file it is given (PEM; a self-signed server
//! certificate is its own CA), or the platform's roots without one (read by
//! `rustls-native-certs`, which teammated's HTTPS stack already builds). No
//! setting turns verification off: a client that cannot check the server
//! would hand its token to whoever answers.

use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use std::path::{Path, PathBuf};
use std::sync::Arc;

#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("cannot read the TLS {what} {path}: {reason}")]
    Read {
        what: &'static str,
        path: PathBuf,
        reason: String,
    },
    #[error("the TLS certificate and key do not fit: {0}")]
    Config(rustls::Error),
    #[error("the CA file {path} holds no certificate rustls accepts: {reason}")]
    BadCa { path: PathBuf, reason: String },
    #[error(
        "no trusted root certificates found on this system; give the server's CA (or its \
         self-signed certificate) with --ca-file"
    )]
    NoRoots,
    #[error("'{0}' is not a host name or IP address TLS can check a certificate against")]
    ServerName(String),
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn certs(what: &'static str, path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let read = |reason: String| TlsError::Read {
        what,
        path: path.to_path_buf(),
        reason,
    };
    let certs = CertificateDer::pem_file_iter(path)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|e| read(e.to_string()))?;
    if certs.is_empty() {
        return Err(read("no certificate in it".into()));
    }
    Ok(certs)
}

/// A server's configuration from its certificate chain and key (PEM files):
/// TLS 1.2 and 1.3, no client certificates (clients present a token instead).
pub fn server_config(cert: &Path, key: &Path) -> Result<Arc<rustls::ServerConfig>, TlsError> {
    let chain = certs("certificate", cert)?;
    let key = PrivateKeyDer::from_pem_file(key).map_err(|e| TlsError::Read {
        what: "key",
        path: key.to_path_buf(),
        reason: e.to_string(),
    })?;
    let config = rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .and_then(|b| b.with_no_client_auth().with_single_cert(chain, key))
        .map_err(TlsError::Config)?;
    Ok(Arc::new(config))
}

/// A client's configuration that trusts the certificates in `ca` (PEM), or
/// the platform's roots without one.
pub fn client_config(ca: Option<&Path>) -> Result<Arc<rustls::ClientConfig>, TlsError> {
    let mut roots = rustls::RootCertStore::empty();
    match ca {
        Some(path) => {
            for cert in certs("CA file", path)? {
                roots.add(cert).map_err(|e| TlsError::BadCa {
                    path: path.to_path_buf(),
                    reason: e.to_string(),
                })?;
            }
        }
        None => {
            let found = rustls_native_certs::load_native_certs();
            let (added, _) = roots.add_parsable_certificates(found.certs);
            if added == 0 {
                return Err(TlsError::NoRoots);
            }
        }
    }
    let config = rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(TlsError::Config)?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Arc::new(config))
}

/// The name a server's certificate must carry: a DNS name, or an IP address
/// (matched against the certificate's IP SANs).
pub fn server_name(host: &str) -> Result<ServerName<'static>, TlsError> {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    ServerName::try_from(bare.to_string()).map_err(|_| TlsError::ServerName(host.to_string()))
}
