//! Certificates for the TLS tests, made with the `openssl` command line (no
//! certificate crate to build for tests alone).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Certificates for 127.0.0.1 (and `localhost`) in one directory.
#[derive(Debug, Clone)]
pub struct TestCerts {
    /// A CA, and a server certificate it signed, with the server's key.
    pub ca: PathBuf,
    pub cert: PathBuf,
    pub key: PathBuf,
    /// A self-signed server certificate (its own CA), with its key.
    pub self_signed: PathBuf,
    pub self_signed_key: PathBuf,
    /// A CA that signed neither.
    pub other_ca: PathBuf,
}

fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("the TLS tests need the openssl command ({e}); install it"));
    assert!(
        out.status.success(),
        "openssl {args:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A self-signed certificate, `CA` says whether it may sign others; a server
/// certificate must not (webpki refuses a CA as the end entity).
fn self_signed(dir: &Path, name: &str, cn: &str, ca: bool) {
    let constraints = if ca {
        "basicConstraints=critical,CA:TRUE"
    } else {
        "basicConstraints=critical,CA:FALSE"
    };
    let (key, cert) = (format!("{name}.key"), format!("{name}.pem"));
    let subj = format!("/CN={cn}");
    #[rustfmt::skip]
    let args = [
        "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
        "-nodes", "-days", "2", "-subj", &subj, "-keyout", &key, "-out", &cert,
        "-addext", constraints, "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
    ];
    openssl(dir, &args);
}

impl TestCerts {
    /// Makes them all in `dir`.
    pub fn make(dir: &Path) -> TestCerts {
        std::fs::create_dir_all(dir).expect("certificate directory");
        self_signed(dir, "ca", "teamboard test CA", true);
        self_signed(dir, "other-ca", "another CA", true);
        self_signed(dir, "self", "127.0.0.1", false);
        #[rustfmt::skip]
        openssl(dir, &[
            "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
            "-nodes", "-subj", "/CN=127.0.0.1", "-keyout", "server.key", "-out", "server.csr",
        ]);
        std::fs::write(
            dir.join("server.ext"),
            "basicConstraints=critical,CA:FALSE\nsubjectAltName=IP:127.0.0.1,DNS:localhost\n\
             extendedKeyUsage=serverAuth\n",
        )
        .expect("extensions file");
        #[rustfmt::skip]
        openssl(dir, &[
            "x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
            "-CAcreateserial", "-days", "2", "-extfile", "server.ext", "-out", "server.pem",
        ]);
        TestCerts {
            ca: dir.join("ca.pem"),
            cert: dir.join("server.pem"),
            key: dir.join("server.key"),
            self_signed: dir.join("self.pem"),
            self_signed_key: dir.join("self.key"),
            other_ca: dir.join("other-ca.pem"),
        }
    }
}
