//! `teamctl web`: the board in a browser. The server is `teamboard_web`; this
//! checks the arguments, prints the address and serves until interrupted, or
//! with `--systemd` hands the same settings to the user unit `teamctl-web`.

mod systemd;

use super::Ctx;
use crate::cli::WebArgs;
use crate::render;
use teamboard_web::{Config, TlsFiles, Token, Web};

pub async fn run(ctx: &Ctx, args: WebArgs) -> anyhow::Result<()> {
    if ctx.json {
        anyhow::bail!("web serves a page and has no JSON form; its first line is the address");
    }
    let token = match &args.token {
        Some(given) => Some(
            Token::given(given)
                .ok_or_else(|| anyhow::anyhow!("--token must be at least 16 letters and digits"))?,
        ),
        None => None,
    };
    let tls = match (args.tls_cert, args.tls_key) {
        (Some(cert), Some(key)) => Some(TlsFiles { cert, key }),
        _ => None,
    };
    if args.systemd {
        return systemd::install(ctx, args.listen, tls, token).await;
    }
    let (endpoint, credential) = ctx.endpoint_and_credential();
    let web = Web::bind(Config {
        // Over the network the token, read now; on this host the lead's key,
        // which the server reads itself from the state directory.
        credential: match &ctx.remote {
            Some(_) => Some(credential.map_err(anyhow::Error::msg)?),
            None => None,
        },
        endpoint,
        team: ctx.team.clone(),
        state_dir: ctx.state_dir(),
        listen: args.listen,
        tls,
        token,
        new_team: ctx.new_team,
    })
    .await?;
    // The first line of output is the address: scripts and tests read it.
    render::line(&web.url())?;
    render::note(format_args!(
        "teamctl: serving team '{}'; Ctrl-C stops",
        ctx.team
    ));
    tokio::select! {
        served = web.serve() => served?,
        _ = tokio::signal::ctrl_c() => {}
    }
    Ok(())
}
