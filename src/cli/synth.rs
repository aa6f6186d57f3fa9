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
    // What it would write, refused before anything is.
    let estimate = match (args.invocations, &swe) {
        (Some(invocations), _) => {
            crate::synth::estimate_long(args.seed, long_shape(&args, invocations))
        }
        (None, Some(shape)) => crate::synth::estimate_swe_agent(shape),
        (None, None) => crate::synth::estimate_sessions(args.sessions, args.seed),
    };
    estimate.check()?;
    super::install_signal_handler();
    let build = publish::build_dir_for(&target)?;
    let (count, bytes) = write_files(&args, swe.as_ref(), build.path())?;
    publish::publish(build, &target)?;
    errln!(
        "wrote {} sessions ({:.2} MB) to {}",
        count,
        bytes as f64 / 1e6,
        super::term(&args.out.display().to_string())
    );
    Ok(super::EXIT_OK)
}

fn long_shape(args: &SynthArgs, invocations: usize) -> crate::synth::LongShape {
    crate::synth::LongShape {
        invocations,
        tool_rounds: args.tool_rounds,
    }
}

fn cancelled() -> bool {
    super::CANCEL.load(std::sync::atomic::Ordering::SeqCst)
}

/// A writer that fails once a signal arrived, so a long session stops mid-way.
struct UntilSignal<W>(W);

impl<W: std::io::Write> std::io::Write for UntilSignal<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if cancelled() {
            return Err(std::io::ErrorKind::Interrupted.into());
        }
        self.0.write(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

/// Write the files into `dir` one at a time, stopping between (and within a long session)
/// at a signal; (files, bytes).
fn write_files(
    args: &SynthArgs,
    swe: Option<&crate::synth::SweShape>,
    dir: &std::path::Path,
) -> anyhow::Result<(usize, usize)> {
    let stop = || -> anyhow::Result<()> {
        match cancelled() {
            true => Err(crate::error::Cancelled.into()),
            false => Ok(()),
        }
    };
    if let Some(invocations) = args.invocations {
        let shape = long_shape(args, invocations);
        let mut text = UntilSignal(Vec::new());
        let written = crate::synth::write_long_session(args.seed, shape, &mut text);
        stop()?;
        written?;
        crate::atomic::write_atomic(&dir.join(shape.file_name()), &text.0)?;
        return Ok((1, text.0.len()));
    }
    let count = swe.map_or(args.sessions, |s| s.turns.len());
    let mut bytes = 0usize;
    for i in 0..count {
        stop()?;
        let f = match swe {
            Some(shape) => crate::synth::swe_agent_one(args.seed, i, shape.turns[i], shape),
            None => crate::synth::generate_one(args.seed, i),
        };
        crate::atomic::write_atomic(&dir.join(&f.file_name), f.json.as_bytes())?;
        bytes += f.json.len();
    }
    Ok((count, bytes))
}
