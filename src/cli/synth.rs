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
    /// Write SWE-agent trajectories instead, one per turn count in this comma-separated list
    /// (`NN-swe-agent-TURNS.traj`), shaped like The Complexity Trap's raw runs
    /// (docs/validation.md): synthetic, for replaying long SWE-agent runs.
    #[arg(long, value_name = "LIST", conflicts_with_all = ["sessions", "invocations"])]
    pub swe_agent_turns: Option<String>,
    /// With --swe-agent-turns: mean tokens of one turn (action and observation), o200k.
    #[arg(
        long,
        value_name = "N",
        default_value_t = 650,
        requires = "swe_agent_turns"
    )]
    pub turn_tokens: u64,
    /// With --swe-agent-turns: the observations' share of a turn's tokens (0..1).
    #[arg(
        long,
        value_name = "X",
        default_value_t = 0.84,
        requires = "swe_agent_turns"
    )]
    pub obs_share: f64,
    /// With --swe-agent-turns: tokens of the system prompt and the task together, o200k.
    #[arg(
        long,
        value_name = "N",
        default_value_t = 2_300,
        requires = "swe_agent_turns"
    )]
    pub fixed_tokens: u64,
}

/// Why a `--swe-agent-turns` shape is refused.
#[derive(Debug, thiserror::Error)]
pub enum ShapeError {
    #[error("--swe-agent-turns: `{0}` is not a turn count (a whole number from 1)")]
    Turns(String),
    #[error("--obs-share: {0} is outside 0..1")]
    Share(f64),
}

/// The SWE-agent shape the flags give.
fn swe_shape(args: &SynthArgs, list: &str) -> Result<crate::synth::SweShape, ShapeError> {
    let obs_share = args.obs_share;
    let turns = list
        .split(',')
        .map(|t| {
            t.trim()
                .parse::<usize>()
                .ok()
                .filter(|&n| n > 0)
                .ok_or_else(|| ShapeError::Turns(t.trim().to_string()))
        })
        .collect::<Result<Vec<_>, _>>()?;
    if !(0.0..=1.0).contains(&obs_share) {
        return Err(ShapeError::Share(obs_share));
    }
    Ok(crate::synth::SweShape {
        turns,
        turn_tokens: args.turn_tokens,
        obs_share,
        fixed_tokens: args.fixed_tokens,
    })
}

pub fn run(args: SynthArgs) -> anyhow::Result<u8> {
    use crate::table::publish;
    let target = publish::check_target(
        &args.out,
        &[],
        publish::Chosen::ByUser { force: args.force },
    )?;
    let swe = match &args.swe_agent_turns {
        Some(list) => Some(swe_shape(&args, list)?),
        None => None,
    };
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
            let files = match &swe {
                Some(shape) => crate::synth::generate_swe_agent(args.seed, shape),
                None => crate::synth::generate(args.sessions, args.seed),
            };
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
