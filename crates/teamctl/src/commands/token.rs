//! `teamctl token`: the tokens that let clients on other hosts in
//! (`boardd --listen-tcp`, `teammated --connect`).

use super::Ctx;
use crate::cli::TokenCommand;
use crate::render;
use teamboard_protocol::Request;
use teamboard_protocol::token::{
    CreateTokenArgs, IssuedToken, ListTokensArgs, TokenEntry, TokenRef,
};

pub async fn run(ctx: &Ctx, command: TokenCommand) -> anyhow::Result<()> {
    let client = ctx.connect().await?;
    match command {
        TokenCommand::Create(arg) => {
            let request = Request::CreateToken(CreateTokenArgs {
                name: arg.name,
                team: None,
            });
            let Some(issued) = ctx.call::<IssuedToken>(&client, request).await? else {
                return Ok(());
            };
            // The token alone on stdout, for `> FILE`; what it is for on stderr.
            render::line(issued.token.as_str())?;
            render::note(format!(
                "a token for '{}' in team '{}': keep it secret, it is not shown again. \
                 Give it with --token-file; `teamctl token revoke {}` revokes it",
                issued.entry.name, issued.entry.team, issued.entry.name
            ));
        }
        TokenCommand::Revoke(arg) => {
            let request = Request::RevokeToken(TokenRef {
                name: arg.name,
                team: None,
            });
            let Some(gone) = ctx.call::<TokenEntry>(&client, request).await? else {
                return Ok(());
            };
            render::line(&format!(
                "revoked the token of '{}' in team '{}'",
                gone.name, gone.team
            ))?;
        }
        TokenCommand::List => {
            let request = Request::ListTokens(ListTokensArgs::default());
            let Some(tokens) = ctx.call::<Vec<TokenEntry>>(&client, request).await? else {
                return Ok(());
            };
            if tokens.is_empty() {
                render::line(&format!("no tokens in team '{}'", ctx.team))?;
            }
            let lines: Vec<String> = (tokens.iter())
                .map(|t| format!("{}  made {}", t.name, render::datetime(t.created_ms)))
                .collect();
            render::lines(&lines)?;
        }
    }
    Ok(())
}
