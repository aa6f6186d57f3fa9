//! Thin binary: everything lives in the `compaction_sim` library.
fn main() -> std::process::ExitCode {
    compaction_sim::cli::main()
}
