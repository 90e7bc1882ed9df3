//! `teamctl`: the command line for a teamboard. See `teamctl --help`.

mod cli;
mod commands;
mod render;

use std::process::ExitCode;
use teamboard_protocol::ClientError;

fn main() -> ExitCode {
    let man = teamboard_protocol::man::generate_if_asked(std::env::args_os(), || {
        vec![<cli::Cli as clap::CommandFactory>::command()]
    });
    if let Some(done) = man {
        return match done {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => fail(&anyhow::Error::new(e).context("cannot write the man pages")),
        };
    }
    let cli = cli::Cli::parse_args();
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return fail(&anyhow::anyhow!("cannot start the async runtime: {e}")),
    };
    let result = runtime.block_on(commands::run(cli));
    // Trap: tokio reads stdin (`teamctl mcp`) on a blocking thread, and a command
    // that ends before stdin does (a signal) leaves that thread parked in read(2).
    // Dropping the runtime would wait for it for ever; the process exit ends it.
    runtime.shutdown_timeout(RUNTIME_SHUTDOWN);
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(&e),
    }
}

/// How long the exit waits for the runtime's blocking threads.
const RUNTIME_SHUTDOWN: std::time::Duration = std::time::Duration::from_millis(100);

/// Prints one line, `teamctl: <message>`, on stderr and returns exit code 1.
fn fail(e: &anyhow::Error) -> ExitCode {
    // Output piped into `head` and the like: the reader left, nothing to say.
    if let Some(io) = e.downcast_ref::<std::io::Error>()
        && io.kind() == std::io::ErrorKind::BrokenPipe
    {
        return ExitCode::SUCCESS;
    }
    let message = match e.downcast_ref::<ClientError>() {
        // boardd's messages already say what went wrong and what to do.
        Some(ClientError::Server(body)) => body.message.clone(),
        _ => format!("{e:#}"),
    };
    render::note(format_args!("teamctl: {message}"));
    ExitCode::FAILURE
}
