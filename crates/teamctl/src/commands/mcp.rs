//! `teamctl mcp`: the board's MCP server on stdio (the `teamboard-mcp` crate).
//! stdout belongs to the protocol: nothing else may be printed there.

use super::Ctx;
use crate::cli::McpArgs;
use teamboard_mcp::{MemberBoard, MemberClient, OwnBoard, OwnConfig};

pub async fn run(ctx: &Ctx, args: McpArgs) -> anyhow::Result<()> {
    // Refused rather than ignored: the output is JSON-RPC whatever the flags,
    // and a --json that changed nothing would leave its reader guessing.
    if ctx.json {
        anyhow::bail!(
            "`teamctl mcp` speaks JSON-RPC on stdout in any case (each tool answers with \
             the JSON its teamctl twin prints with --json); leave --json out"
        );
    }
    let input = tokio::io::BufReader::new(tokio::io::stdin());
    let output = tokio::io::stdout();
    if let Some(client) = MemberClient::from_env() {
        let board = MemberBoard::new(client, ctx.timeout());
        teamboard_mcp::serve(input, output, board).await?;
        return Ok(());
    }
    let (endpoint, credential) = ctx.endpoint_and_credential();
    let mut board = OwnBoard::new(OwnConfig {
        endpoint,
        team: ctx.team.clone(),
        new_team: ctx.new_team,
        name: args.name,
        role: args.role,
        timeout: ctx.timeout(),
        credential,
    });
    // Joined at once, so that the member shows on the board while the session
    // runs; a boardd that is not there yet is tried again at each call.
    if let Err(why) = board.join().await {
        crate::render::note(format_args!("teamctl mcp: {why}; the tools will try again"));
    }
    // The client closes stdin when it goes, or stops the server with a signal:
    // either way a task still held goes back to the board with a note, rather
    // than with the attempt a dropped connection costs.
    let served = tokio::select! {
        served = teamboard_mcp::serve(input, output, &mut board) => served.map(|_| ()),
        () = stop_signal() => Ok(()),
    };
    board.leave().await;
    served?;
    Ok(())
}

/// SIGTERM or SIGINT.
async fn stop_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        // Without the handlers the default action (exit) stays: wait for stdin.
        return std::future::pending().await;
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
}
