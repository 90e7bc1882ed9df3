//! `teamctl`: the command line for a teamboard. See `teamctl --help`.

mod cli;
mod commands;
mod render;

use std::process::ExitCode;
use teamboard_protocol::ClientError;

fn main() -> ExitCode {
    let cli = cli::Cli::parse_args();
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return fail(&anyhow::anyhow!("cannot start the async runtime: {e}")),
    };
    match runtime.block_on(commands::run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(&e),
    }
}

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
    eprintln!("teamctl: {message}");
    ExitCode::FAILURE
}
