//! Talking to a test app over HTTP as an API client: one wrapper per kind of request, each
//! answering the status and the JSON body.

use crate::helpers::TestApp;
use serde_json::Value;
use std::borrow::Borrow;

/// Sends `request`: the status and the JSON answer (null when the body is not JSON).
pub(crate) async fn answer(request: reqwest::RequestBuilder) -> (u16, Value) {
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// Sends the request `build` makes and, while the portal answers 503 (busy: no database
/// connection came free in time, as on a loaded CI machine), sends it again after the answer's
/// `Retry-After`, up to ten times, as a well-behaved client does. Requests that write should
/// carry an `Idempotency-Key`, so that a retry is done once. The last status and JSON answer.
pub(crate) async fn send_as_a_client(build: impl Fn() -> reqwest::RequestBuilder) -> (u16, Value) {
    let mut busy = 0;
    loop {
        let response = build().send().await.unwrap();
        let status = response.status().as_u16();
        if status != 503 || busy == 10 {
            return (status, response.json().await.unwrap_or(Value::Null));
        }
        let wait: u64 = response
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .expect("a 503 says when to try again")
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        busy += 1;
        tokio::time::sleep(std::time::Duration::from_secs(wait)).await;
    }
}

/// `POST url` with a bearer token, a JSON body and a fresh `Idempotency-Key`, sent again with
/// that key while the portal is busy ([`send_as_a_client`]).
pub(crate) async fn post_as_a_client(url: &str, token: &str, body: &Value) -> (u16, Value) {
    let key = uuid::Uuid::new_v4().to_string();
    send_as_a_client(|| {
        crate::helpers::client()
            .post(url)
            .bearer_auth(token)
            .header("Idempotency-Key", &key)
            .json(body)
    })
    .await
}

/// `POST path` with a JSON body and a bearer token, to send.
fn post_request(app: &TestApp, token: &str, path: &str, body: &Value) -> reqwest::RequestBuilder {
    crate::helpers::client()
        .post(app.url(path))
        .bearer_auth(token)
        .json(body)
}

/// `POST path` with a JSON body and a bearer token: the status and the JSON answer.
pub(crate) async fn post_json(
    app: &TestApp,
    token: &str,
    path: &str,
    body: &Value,
) -> (u16, Value) {
    answer(post_request(app, token, path, body)).await
}

/// [`post_json`] with an `Idempotency-Key` header.
pub(crate) async fn post_with_key(
    app: &TestApp,
    token: &str,
    path: &str,
    key: &str,
    body: &Value,
) -> (u16, Value) {
    answer(post_request(app, token, path, body).header("Idempotency-Key", key)).await
}

/// `POST /api/v1/reservations` with `body`: the status and the JSON answer.
pub(crate) async fn book(app: &TestApp, token: &str, body: impl Borrow<Value>) -> (u16, Value) {
    post_json(app, token, "/api/v1/reservations", body.borrow()).await
}

/// `DELETE /api/v1/reservations/{id}`: the status and the JSON answer.
pub(crate) async fn cancel(app: &TestApp, token: &str, id: &Value) -> (u16, Value) {
    let path = format!("/api/v1/reservations/{id}");
    send(app, reqwest::Method::DELETE, Some(token), &path, None).await
}

/// `GET path` with a bearer token: the status and the JSON answer.
pub(crate) async fn get(app: &TestApp, token: &str, path: &str) -> (u16, Value) {
    send(app, reqwest::Method::GET, Some(token), path, None).await
}

/// Any request with an optional bearer token and JSON body: the status and the JSON answer.
pub(crate) async fn send(
    app: &TestApp,
    method: reqwest::Method,
    token: Option<&str>,
    path: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let mut request = crate::helpers::client().request(method, app.url(path));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    if let Some(body) = body {
        request = request.json(&body);
    }
    answer(request).await
}

/// POSTs every `(token, path, body)` at once; answers their statuses and bodies.
pub(crate) async fn post_all_at_once(
    app: &TestApp,
    requests: Vec<(String, String, Value)>,
) -> Vec<(u16, Value)> {
    let mut running = tokio::task::JoinSet::new();
    for (token, path, body) in requests {
        let url = app.url(&path);
        running.spawn(async move { post_as_a_client(&url, &token, &body).await });
    }
    running.join_all().await
}

/// `raw` encoded for a query string or form.
pub(crate) fn urlencode(raw: &str) -> String {
    url::form_urlencoded::byte_serialize(raw.as_bytes()).collect()
}
