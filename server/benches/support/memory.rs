//! The resident memory of a real `berth serve` process (the release binary, as an operator runs
//! it) on a generated store: idle after its start, then after a round of reads and bookings.
//! Read from `/proc/PID/status` (`VmRSS` now, `VmHWM` the peak).
#![allow(dead_code)]

use super::fleet::{Store, WEEK_VIEW_MODEL};
use chrono::TimeDelta;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// `VmRSS` and `VmHWM` of `pid`, in MiB.
fn resident(pid: u32) -> (f64, f64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|rest| {
                rest.trim()
                    .trim_end_matches("kB")
                    .trim()
                    .parse::<f64>()
                    .ok()
            })
            .map_or(f64::NAN, |kib| kib / 1024.0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `target/release/berth serve` on `url`, measures it idle and after a round of requests.
pub async fn measure(url: &str, store: &Store) {
    let binary =
        std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/release/berth");
    if !binary.exists() {
        println!(
            "| Memory | not measured: build `cargo build --release -p berth-server --bin berth` first |"
        );
        return;
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port();
    let site = tempfile::tempdir().expect("site root");
    let server = Server(
        Command::new(&binary)
            .arg("serve")
            .env("BERTH_BIND", format!("127.0.0.1:{port}"))
            .env("BERTH_DATABASE_URL", url)
            .env("BERTH_DEMO", "true")
            .env("BERTH_DEMO_BOOKINGS", "false")
            .env("BERTH_DEV_SIGN_IN", "true")
            .env("BERTH_SIGN_IN_RATE_PER_MINUTE", "10000")
            .env("BERTH_LOG", "error")
            .env("BERTH_SITE_ROOT", site.path())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("berth serve"),
    );
    let pid = server.0.id();
    let base = format!("http://127.0.0.1:{port}");
    let client = reqwest::Client::builder()
        .cookie_store(true)
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(120))
        .build()
        .expect("client");
    let deadline = Instant::now() + Duration::from_secs(60);
    while client
        .get(format!("{base}/readyz"))
        .send()
        .await
        .map(|r| r.status().as_u16())
        .ok()
        != Some(200)
    {
        assert!(Instant::now() < deadline, "berth serve answers /readyz");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    tokio::time::sleep(Duration::from_secs(5)).await;
    let (idle, _) = resident(pid);

    // A round of what the bench measures: pages, lists and 1,000 bookings from 200 clients.
    client
        .post(format!("{base}/auth/dev"))
        .form(&[("role", "user"), ("return_to", "/")])
        .send()
        .await
        .expect("sign in");
    let week = format!(
        "{base}/calendar?span=week&model={}",
        WEEK_VIEW_MODEL.replace(' ', "%20")
    );
    let token = format!("Bearer {}", store.token);
    for _ in 0..50 {
        for url in [week.clone(), format!("{base}/")] {
            let response = client.get(&url).send().await.expect("page");
            assert_eq!(response.status().as_u16(), 200, "{url}");
            response.bytes().await.expect("page");
        }
        for path in ["/api/v1/gpus", "/api/v1/reservations?limit=1000"] {
            let response = client
                .get(format!("{base}{path}"))
                .header("authorization", &token)
                .send()
                .await
                .expect("list");
            assert_eq!(response.status().as_u16(), 200, "{path}");
            response.bytes().await.expect("list");
        }
    }
    let from = store.fleet_end + TimeDelta::days(5);
    let mut tasks = Vec::new();
    for (client_index, booker) in store.booker_tokens.iter().enumerate() {
        let client = client.clone();
        let token = format!("Bearer {booker}");
        let url = format!("{base}/api/v1/reservations");
        let gpu = store.gpu_ids[client_index];
        tasks.push(tokio::spawn(async move {
            for k in 0..5 {
                let start = from + TimeDelta::hours(2 * k);
                let body = super::fleet::whole_gpu(gpu, start, start + TimeDelta::hours(2));
                let response = client
                    .post(&url)
                    .header("authorization", &token)
                    .json(&body)
                    .send()
                    .await
                    .expect("book");
                assert!(matches!(response.status().as_u16(), 201 | 409));
            }
        }));
    }
    for task in tasks {
        task.await.expect("client");
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let (after, peak) = resident(pid);
    println!(
        "| Memory of `berth serve` on this store | idle {idle:.1} MiB | after the round {after:.1} MiB (peak {peak:.1} MiB) |"
    );
}
