//! A webhook receiver on loopback for the webhook tests: an axum server that records every call
//! (headers and body) and answers with the status it is told to.

use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode};
use std::sync::{Arc, Mutex};

/// One call the receiver got.
#[derive(Debug, Clone)]
pub struct Received {
    pub headers: HeaderMap,
    pub body: Bytes,
}

/// A running receiver.
pub struct Receiver {
    pub url: String,
    calls: Arc<Mutex<Vec<Received>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Receiver {
    /// Starts a receiver that answers every call with `status`.
    pub async fn start(status: StatusCode) -> Self {
        let calls: Arc<Mutex<Vec<Received>>> = Arc::default();
        let recorded = calls.clone();
        let app = axum::Router::new().route(
            "/hook",
            axum::routing::post(move |headers: HeaderMap, body: Bytes| {
                let recorded = recorded.clone();
                async move {
                    recorded.lock().unwrap().push(Received { headers, body });
                    status
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/hook", listener.local_addr().unwrap());
        let task = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        Self { url, calls, task }
    }

    /// Every call so far.
    pub fn calls(&self) -> Vec<Received> {
        self.calls.lock().unwrap().clone()
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.task.abort();
    }
}
