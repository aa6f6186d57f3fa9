//! The session-database filters `inspect`, `replay`, `sweep` and `calibrate` share
//! (`#[command(flatten)] db: DbFlags`), turned into a [`DbFilter`] at the CLI edge.

use crate::transcript::db::{is_db_url, DbFilter};
use clap::Args;

#[derive(Debug, Clone, Default, Args)]
pub struct DbFlags {
    /// Database inputs: only sessions of this ADK app (`app_name`).
    #[arg(long, value_name = "NAME")]
    pub app: Option<String>,
    /// Database inputs: only sessions of this user (`user_id`).
    #[arg(long, value_name = "ID")]
    pub user: Option<String>,
    /// Only the session with this id (in a database, or a file holding several sessions).
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
    /// Database inputs: only sessions last updated on or after DATE (2026-12-01, or a UTC
    /// time 2026-12-01T09:30).
    #[arg(long, value_name = "DATE")]
    pub since: Option<String>,
}

impl DbFlags {
    /// The filter for the database inputs among `inputs`. `--app`, `--user` and `--since`
    /// select database sessions only, so without a database input they are refused rather
    /// than ignored; `files_take_session` says whether `--session` also selects in files.
    pub fn filter(&self, inputs: &[String], files_take_session: bool) -> anyhow::Result<DbFilter> {
        let any_db = inputs.iter().any(|i| is_db_url(i));
        if !any_db {
            let mut used: Vec<&str> = Vec::new();
            for (flag, set) in [
                ("--app", self.app.is_some()),
                ("--user", self.user.is_some()),
                ("--session", self.session.is_some() && !files_take_session),
                ("--since", self.since.is_some()),
            ] {
                if set {
                    used.push(flag);
                }
            }
            if !used.is_empty() {
                anyhow::bail!(
                    "{} select sessions of database inputs (sqlite:///FILE.db, \
                     postgresql://USER@HOST/DB); no input is one",
                    used.join(", ")
                );
            }
        }
        let since = match &self.since {
            Some(s) => Some(DbFilter::parse_since(s).map_err(anyhow::Error::msg)?),
            None => None,
        };
        Ok(DbFilter {
            app: self.app.clone(),
            user: self.user.clone(),
            session: self.session.clone(),
            since,
        })
    }
}
