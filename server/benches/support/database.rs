//! A database that lives for one benchmark run (an SQLite file in a temporary directory, or a
//! PostgreSQL database dropped at the end), shared by the bench targets.

use sea_orm::{ConnectionTrait, Database};

/// The store measured.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Backend {
    /// Embedded SQLite file.
    Sqlite,
    /// PostgreSQL (`BERTH_TEST_PG_URL`, default the local server).
    Postgres,
}

impl Backend {
    /// Its name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Sqlite => "SQLite",
            Backend::Postgres => "PostgreSQL",
        }
    }
}

/// Which stores a bench measures (`--backend`).
#[derive(Clone, Copy, PartialEq, Eq, Debug, clap::ValueEnum)]
pub enum Stores {
    /// SQLite only.
    Sqlite,
    /// PostgreSQL only.
    Postgres,
    /// SQLite, then PostgreSQL.
    Both,
}

impl Stores {
    /// The stores, in the order measured.
    pub fn backends(self) -> Vec<Backend> {
        match self {
            Stores::Sqlite => vec![Backend::Sqlite],
            Stores::Postgres => vec![Backend::Postgres],
            Stores::Both => vec![Backend::Sqlite, Backend::Postgres],
        }
    }
}

/// A database that lives for one run: a file in a temporary directory, or a PostgreSQL
/// database dropped at the end.
pub struct BenchDatabase {
    /// Its URL.
    pub url: String,
    admin_url: Option<String>,
    pg_name: Option<String>,
    _dir: Option<tempfile::TempDir>,
}

impl BenchDatabase {
    /// Creates it.
    pub async fn create(backend: Backend) -> Self {
        match backend {
            Backend::Sqlite => {
                let dir = tempfile::tempdir().expect("temporary directory");
                let url = format!(
                    "sqlite://{}?mode=rwc",
                    dir.path().join("bench.db").display()
                );
                Self {
                    url,
                    admin_url: None,
                    pg_name: None,
                    _dir: Some(dir),
                }
            }
            Backend::Postgres => {
                let admin_url = std::env::var("BERTH_TEST_PG_URL")
                    .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".to_owned());
                let name = format!("berth_bench_{}", uuid::Uuid::new_v4().simple());
                let admin = Database::connect(&admin_url).await.expect("PostgreSQL");
                admin
                    .execute_unprepared(&format!("CREATE DATABASE \"{name}\""))
                    .await
                    .expect("create the bench database");
                let _ = admin.close().await;
                // The bench's database on the same server, with the URL's options (such as
                // `?sslmode=disable`) kept.
                let (path, options) = admin_url
                    .split_once('?')
                    .map_or((admin_url.as_str(), String::new()), |(path, options)| {
                        (path, format!("?{options}"))
                    });
                let (base, _) = path.rsplit_once('/').expect("a database URL");
                Self {
                    url: format!("{base}/{name}{options}"),
                    admin_url: Some(admin_url),
                    pg_name: Some(name),
                    _dir: None,
                }
            }
        }
    }

    /// Drops a PostgreSQL database (a file goes with its directory).
    pub async fn drop_database(self) {
        if let (Some(admin_url), Some(name)) = (self.admin_url, self.pg_name) {
            let admin = Database::connect(&admin_url).await.expect("PostgreSQL");
            let _ = admin
                .execute_unprepared(&format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)"))
                .await;
            let _ = admin.close().await;
        }
    }
}
