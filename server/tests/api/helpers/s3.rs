//! A real S3 implementation for the workspace-store tests: moto's server (PyPI `moto[server]`,
//! started by `fixtures/moto_s3_server.py`) on a free loopback port, with one bucket.
//! `scripts/test.sh` installs it in `.tools/venv`.

use super::python_fixture;
use std::process::Child;

/// A running moto server; stopped when dropped.
pub struct S3Server {
    pub endpoint: String,
    child: Child,
}

impl Drop for S3Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl S3Server {
    /// Starts moto and makes `bucket`.
    pub async fn start(bucket: &str) -> Self {
        let (child, port) = python_fixture(
            "moto_s3_server.py",
            &[],
            "the S3 workspace-store tests need moto[server]: run scripts/test.sh (it installs it \
             in .tools/venv)",
        );
        let server = Self {
            endpoint: format!("http://127.0.0.1:{port}"),
            child,
        };
        let client = reqwest::Client::new();
        for _ in 0..150 {
            if let Ok(response) = client
                .put(format!("{}/{bucket}", server.endpoint))
                .send()
                .await
                && response.status().is_success()
            {
                return server;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        panic!("moto's server did not answer on port {port}");
    }

    /// Overwrites object `key` of `bucket`.
    pub async fn overwrite(&self, bucket: &str, key: &str, bytes: Vec<u8>) {
        use object_store::ObjectStoreExt;
        let store = object_store::aws::AmazonS3Builder::new()
            .with_bucket_name(bucket)
            .with_endpoint(&self.endpoint)
            .with_allow_http(true)
            .with_region("us-east-1")
            .with_access_key_id("test")
            .with_secret_access_key("test")
            .build()
            .unwrap();
        store
            .put(&object_store::path::Path::from(key), bytes.into())
            .await
            .unwrap();
    }
}
