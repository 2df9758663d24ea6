//! A webhook receiver on loopback for the webhook tests: an axum server that records every call
//! (headers and body) and answers with the status it is told to, at once or when let go.

use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode};
use std::sync::{Arc, Mutex};
use tokio::sync::Semaphore;

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
    /// Calls wait here for their answer when the receiver holds them.
    gate: Option<Arc<Semaphore>>,
    task: tokio::task::JoinHandle<()>,
}

impl Receiver {
    /// Starts a receiver that answers every call with `status`.
    pub async fn start(status: StatusCode) -> Self {
        Self::serve(status, None).await
    }

    /// Starts a receiver that records every call at once but answers it with `status` only
    /// after [`Receiver::let_go`].
    pub async fn holding(status: StatusCode) -> Self {
        Self::serve(status, Some(Arc::new(Semaphore::new(0)))).await
    }

    async fn serve(status: StatusCode, gate: Option<Arc<Semaphore>>) -> Self {
        let calls: Arc<Mutex<Vec<Received>>> = Arc::default();
        let recorded = calls.clone();
        let held = gate.clone();
        let app = axum::Router::new().route(
            "/hook",
            axum::routing::post(move |headers: HeaderMap, body: Bytes| {
                let recorded = recorded.clone();
                let held = held.clone();
                async move {
                    recorded.lock().unwrap().push(Received { headers, body });
                    if let Some(gate) = held {
                        gate.acquire().await.unwrap().forget();
                    }
                    status
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/hook", listener.local_addr().unwrap());
        let task = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        Self {
            url,
            calls,
            gate,
            task,
        }
    }

    /// Answers the calls held so far and every later one at once.
    pub fn let_go(&self) {
        if let Some(gate) = &self.gate {
            gate.add_permits(Semaphore::MAX_PERMITS / 2);
        }
    }

    /// Waits until the receiver has had `count` calls.
    pub async fn called(&self, count: usize) {
        for _ in 0..200 {
            if self.calls().len() >= count {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        panic!("{} calls, not {count}", self.calls().len());
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
