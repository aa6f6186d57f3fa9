//! The one integration test binary: every area is a module here, so polars and plotters are
//! linked once instead of once per test file. Shared helpers live in `common`.

mod common;

mod alternatives;
mod backtest;
mod bad_input;
mod browser;
mod cost;
mod db;
mod deploy;
mod docs;
mod engine;
mod engine_extra;
mod inspect;
mod layers;
mod live;
mod mutations;
mod policies;
mod python;
mod readers;
mod readers_more;
mod recorded;
mod references;
mod report;
mod run_digests;
mod run_library;
mod safety;
mod sweep;
mod wheel;
