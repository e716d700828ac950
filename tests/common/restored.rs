//! An instance started on a data directory (and database) made outside the harness: what
//! `confetti restore` (and `pg_restore`) brought back.

use std::sync::Arc;

use super::{Backend, Options, Shared, TestApp, TestDatabase};

impl TestApp {
    /// An instance on `data_dir` as it is and, on PostgreSQL, on `database`; photos in the
    /// data directory.
    pub async fn spawn_on(backend: Backend, data_dir: tempfile::TempDir, database: Option<TestDatabase>) -> Self {
        let shared = Shared { data_dir: Arc::new(data_dir), database_url: database, s3: None };
        Self::start(backend, Options::default(), shared).await
    }
}
