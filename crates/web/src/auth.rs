//! The token that lets the person in.
//!
//! A fresh random token per run is printed in the address. The first request
//! that carries it as `?token=` gets it back as a cookie (HttpOnly, so scripts
//! on the page cannot read it; SameSite=Strict, so another site's page cannot
//! make the browser send it) and is sent on to the same path without it, so the
//! token does not stay in the address bar or the history. Anything else without
//! the cookie gets 401 and a page that says how to get in.
//!
//! The token is compared in constant time: the server may listen on a network
//! (with TLS), where timing is observable.

use crate::board::Board;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::sync::Arc;
use subtle::ConstantTimeEq;

const COOKIE: &str = "teamboard_token";

/// The secret in the page's address.
#[derive(Clone, PartialEq, Eq)]
pub struct Token(String);

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(..)")
    }
}

impl Token {
    /// 122 random bits from the operating system, as 32 hex digits.
    pub fn random() -> Token {
        Token(uuid::Uuid::new_v4().simple().to_string())
    }

    /// A given token (`teamctl web --token`, to come back on the same address);
    /// `None` when it is too short to be a secret or has characters that do not
    /// survive a URL or a cookie.
    pub fn given(text: &str) -> Option<Token> {
        let ok = text.len() >= 16 && text.bytes().all(|b| b.is_ascii_alphanumeric());
        ok.then(|| Token(text.to_string()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    fn matches(&self, candidate: &str) -> bool {
        self.0.as_bytes().ct_eq(candidate.as_bytes()).into()
    }
}

/// Lets a request through with the cookie; with the token in the query, sets the
/// cookie and sends the browser to the same address without it; else 401.
pub async fn require(State(board): State<Arc<Board>>, request: Request, next: Next) -> Response {
    let token = &board.token;
    if cookie(&request).is_some_and(|c| token.matches(c)) {
        return next.run(request).await;
    }
    let Some(given) = query_token(&request) else {
        return refuse();
    };
    if !token.matches(given) {
        return refuse();
    }
    let path = request.uri().path().to_string();
    // Over TLS the cookie must never travel in clear text.
    let secure = if board.tls { "; Secure" } else { "" };
    let set = format!(
        "{COOKIE}={}; HttpOnly; SameSite=Strict; Path=/{secure}",
        token.as_str()
    );
    let mut response = StatusCode::SEE_OTHER.into_response();
    let headers = response.headers_mut();
    match (HeaderValue::from_str(&set), HeaderValue::from_str(&path)) {
        (Ok(set), Ok(path)) => {
            headers.insert(header::SET_COOKIE, set);
            headers.insert(header::LOCATION, path);
            response
        }
        _ => refuse(),
    }
}

fn cookie(request: &Request) -> Option<&str> {
    request
        .headers()
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|pair| pair.trim().strip_prefix(COOKIE)?.strip_prefix('='))
}

fn query_token(request: &Request) -> Option<&str> {
    request
        .uri()
        .query()?
        .split('&')
        .find_map(|pair| pair.strip_prefix("token="))
}

fn refuse() -> Response {
    let page = "<!doctype html><meta charset=utf-8><title>teamboard: not signed in</title>\
        <h1>Not signed in</h1><p>This page needs the address <code>teamctl web</code> \
        printed when it started, with its <code>?token=…</code>. Open that address once; \
        the browser then keeps a cookie for this server. Restarting <code>teamctl web</code> \
        makes a new token.</p>";
    let mut response = Response::new(Body::from(page));
    *response.status_mut() = StatusCode::UNAUTHORIZED;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_match_only_themselves() {
        let t = Token::random();
        assert_eq!(t.as_str().len(), 32);
        assert!(t.matches(t.as_str()));
        assert!(!t.matches(""));
        assert!(!t.matches(&t.as_str()[..31]));
        assert_ne!(Token::random(), t);
        assert!(Token::given("short").is_none());
        assert!(Token::given("0123456789abcdef0123; Path=/").is_none());
        assert!(Token::given("0123456789abcdef").is_some());
    }
}
