//! The page: one HTML, one script, one stylesheet, hand-written and embedded,
//! so that nothing is built or fetched to show it.

use axum::http::header;
use axum::response::IntoResponse;

pub async fn index() -> impl IntoResponse {
    asset(
        "text/html; charset=utf-8",
        include_str!("../assets/index.html"),
    )
}

pub async fn script() -> impl IntoResponse {
    asset(
        "text/javascript; charset=utf-8",
        include_str!("../assets/app.js"),
    )
}

pub async fn style() -> impl IntoResponse {
    asset("text/css; charset=utf-8", include_str!("../assets/app.css"))
}

fn asset(kind: &'static str, body: &'static str) -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, kind),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        body,
    )
}
