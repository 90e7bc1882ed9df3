//! Starting the threads git and the checks run on.
//!
//! A thread that cannot start (a pid or memory limit) must not lose the
//! request it was for: each caller answers its job as failed instead, or the
//! owner of a gate would wait for ever with its task stuck in `checking`.
//! Tests make the start fail on their own thread to see that answer.

/// Starts the thread `name` running `f`.
pub(crate) fn start(name: String, f: impl FnOnce() + Send + 'static) -> std::io::Result<()> {
    #[cfg(test)]
    if FAIL.with(std::cell::Cell::get) {
        return Err(std::io::Error::other("no thread may start here (a test)"));
    }
    std::thread::Builder::new().name(name).spawn(f).map(drop)
}

#[cfg(test)]
thread_local! {
    static FAIL: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Makes every later [`start`] on the calling thread fail.
#[cfg(test)]
pub(crate) fn fail_here() {
    FAIL.with(|f| f.set(true));
}
