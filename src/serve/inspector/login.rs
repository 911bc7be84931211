//! Signing in to the inspector where the service takes bearer tokens
//! (`--auth-token-file`): a browser sends no `Authorization` header by
//! itself, so `/ui/login` takes one of the tokens in a form and keeps it in
//! a cookie that only the inspector's pages take, in place of the header
//! (`routes::authenticate`). The cookie is `HttpOnly` (no script reads it)
//! and `SameSite=Strict` (no other site's page makes a browser send it),
//! and its path is `/ui`: the API still wants the header.

use std::sync::Arc;

use askama::Template;
use axum::Form;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::Response;
use percent_encoding::{NON_ALPHANUMERIC, percent_decode_str, utf8_percent_encode};

use super::{PageError, page};
use crate::serve::Service;

/// The sign-in page, which needs no token.
pub(in crate::serve) const LOGIN: &str = "/ui/login";
const COOKIE: &str = "idemchart_token";

/// Whether `path` is one of the inspector's, where the cookie stands for
/// the header.
pub(in crate::serve) fn is_inspector(path: &str) -> bool {
    path == "/ui" || path.starts_with("/ui/")
}

/// The token the request's cookie carries, if any.
pub(in crate::serve) fn cookie_token(headers: &HeaderMap) -> Option<Vec<u8>> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == COOKIE)
        .map(|(_, value)| percent_decode_str(value).collect())
}

/// Where a browser without a token is sent.
pub(in crate::serve) fn to_login() -> Response {
    super::actions::see(LOGIN)
}

#[derive(Template)]
#[template(path = "login.html")]
struct LoginPage<'a> {
    message: &'a str,
}

fn login_page(status: StatusCode, message: &str) -> Response {
    page(status, LoginPage { message }.render().unwrap_or_default())
}

/// `GET /ui/login`.
pub(super) async fn form() -> Response {
    login_page(StatusCode::OK, "")
}

#[derive(serde::Deserialize)]
pub(super) struct Token {
    token: String,
}

/// `POST /ui/login`: a token of the file, kept in the cookie; anything
/// else is asked for again.
pub(super) async fn sign_in(
    State(service): State<Arc<Service>>,
    headers: HeaderMap,
    Form(form): Form<Token>,
) -> Result<Response, PageError> {
    super::actions::same_origin(&headers)?;
    let tokens = &service.options.auth_tokens;
    if tokens.is_empty() {
        return Ok(super::actions::see("/ui"));
    }
    let token = form.token.trim();
    if !crate::serve::routes::token_matches(tokens, token.as_bytes()) {
        tracing::warn!("inspector: a sign-in with a token the service does not take");
        return Ok(login_page(
            StatusCode::UNAUTHORIZED,
            "That is not a token this service takes.",
        ));
    }
    let cookie = format!(
        "{COOKIE}={}; Path=/ui; HttpOnly; SameSite=Strict",
        utf8_percent_encode(token, NON_ALPHANUMERIC)
    );
    let mut response = super::actions::see("/ui");
    if let Ok(value) = HeaderValue::from_str(&cookie) {
        response.headers_mut().insert(header::SET_COOKIE, value);
    }
    tracing::info!("inspector: signed in");
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cookie_gives_back_the_token() {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::COOKIE,
            HeaderValue::from_static("a=b; idemchart_token=s%3Bc%20r; c=d"),
        );
        assert_eq!(cookie_token(&headers), Some(b"s;c r".to_vec()));
        assert_eq!(cookie_token(&HeaderMap::new()), None);
    }

    #[test]
    fn only_the_inspectors_paths_take_the_cookie() {
        assert!(is_inspector("/ui") && is_inspector("/ui/machines/a"));
        assert!(!is_inspector("/uix") && !is_inspector("/machines/a/processes/b"));
    }
}
