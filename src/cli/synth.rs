//! `compaction-sim synth`: write realistic sample sessions as ADK session JSON.

use clap::Args;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct SynthArgs {
    /// How many sessions to write (session i depends only on the seed and i).
    #[arg(long, default_value_t = 40)]
    pub sessions: usize,
    /// PRNG seed; the same seed always writes the same bytes.
    #[arg(long, default_value_t = 6)]
    pub seed: u64,
    /// Folder to write `NN-kind-INVOCATIONS.session.json` files into: a new path, an empty
    /// folder, or (with --force) an earlier output of synth.
    #[arg(long)]
    pub out: PathBuf,
    /// Replace the --out folder when it holds an earlier compaction-sim output.
    #[arg(long)]
    pub force: bool,
    /// Write one long session of small events instead, with this many invocations (a user
    /// message and a short answer each): `long-N.session.json`, for scale tests.
    #[arg(long, value_name = "N", conflicts_with = "sessions")]
    pub invocations: Option<usize>,
    /// With --invocations: each answer follows a tool round (call and invoice-sized response).
    #[arg(long, requires = "invocations")]
    pub tool_rounds: bool,
}

pub fn run(args: SynthArgs) -> anyhow::Result<u8> {
    use crate::table::publish;
    let target = publish::check_target(
        &args.out,
        &[],
        publish::Chosen::ByUser { force: args.force },
    )?;
    let build = publish::build_dir_for(&target)?;
    let (count, bytes) = match args.invocations {
        Some(invocations) => {
            let shape = crate::synth::LongShape {
                invocations,
                tool_rounds: args.tool_rounds,
            };
            let mut text = Vec::new();
            crate::synth::write_long_session(args.seed, shape, &mut text)?;
            crate::atomic::write_atomic(&build.path().join(shape.file_name()), &text)?;
            (1, text.len())
        }
        None => {
            let files = crate::synth::generate(args.sessions, args.seed);
            let mut bytes = 0usize;
            for f in &files {
                crate::atomic::write_atomic(&build.path().join(&f.file_name), f.json.as_bytes())?;
                bytes += f.json.len();
            }
            (files.len(), bytes)
        }
    };
    publish::publish(build, &target)?;
    errln!(
        "wrote {} sessions ({:.2} MB) to {}",
        count,
        bytes as f64 / 1e6,
        super::term(&args.out.display().to_string())
    );
    Ok(super::EXIT_OK)
}
