//! systemd readiness notification (`sd_notify`), without a crate for it.
//!
//! With `Type=notify`, systemd waits for `READY=1` on the datagram socket named by
//! `$NOTIFY_SOCKET` before it considers boardd started. Without the variable this
//! is a no-op, so the same code runs under tests and by hand.

use std::os::unix::net::UnixDatagram;

/// Sends `state` (e.g. `READY=1`) to systemd, if systemd asked for it.
pub fn notify(state: &str) {
    let Some(path) = std::env::var_os("NOTIFY_SOCKET") else {
        return;
    };
    if let Err(e) = send(&path, state) {
        tracing::warn!(error = %e, "sd_notify failed");
    }
}

fn send(path: &std::ffi::OsStr, state: &str) -> std::io::Result<()> {
    let sock = UnixDatagram::unbound()?;
    let bytes = path.as_encoded_bytes();
    if let Some(name) = bytes.strip_prefix(b"@") {
        // A leading '@' names a socket in the abstract namespace.
        use std::os::linux::net::SocketAddrExt;
        let addr = std::os::unix::net::SocketAddr::from_abstract_name(name)?;
        sock.send_to_addr(state.as_bytes(), &addr)?;
    } else {
        sock.send_to(state.as_bytes(), path)?;
    }
    Ok(())
}
