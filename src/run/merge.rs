//! `merge`'s run: the partial folders of `sweep --shard K/N` combined into one run folder,
//! byte-identical to the run on a single machine, finished by the steps a sweep ends with.
//!
//! Rows come from the shards; aggregates, ranks and the recommendation are recomputed from
//! them. The timelines replay the recommended setting on the longest sessions, so merge
//! re-reads those few transcripts (at the paths the shards recorded).

use super::finish::{kept_recorded, run_target, Finish, Published};
use super::{Destination, Progress, RunError};
use crate::sweep::grid::{GridSpec, Known, ResolvedGrid};
use crate::sweep::pipeline::{self, CacheOpts, Costing};
use crate::table::frames::RunsWriter;
use crate::table::publish::Chosen;
use crate::table::rundir::{self, RunInputs, TIMELINE_SESSIONS};
use crate::transcript::Session;
use anyhow::anyhow;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

/// The partial folders read: the run's inputs, its prices and its grid (as the shards
/// recorded them), and each shard's folder.
pub struct Partials {
    pub dirs: Vec<PathBuf>,
    pub inputs: RunInputs,
    pub parts: Vec<PathBuf>,
    pub costing: Costing,
    pub grid: ResolvedGrid,
}

impl Partials {
    /// Read the partial folders `dirs` (all N of them), with a grid of at most
    /// `max_settings` settings.
    pub fn read(dirs: &[PathBuf], max_settings: u64) -> Result<Partials, RunError> {
        let (inputs, _shard, parts) = rundir::read_partials(dirs)?;
        let costing = Costing::from_texts(
            "pricing.toml",
            &inputs.pricing_toml,
            "latency.toml",
            &inputs.latency_toml,
        )?;
        let known_model = |m: &str| costing.knows_model(m);
        let tokenizers = pipeline::tokenizer_names();
        let known = Known {
            model: &known_model,
            tokenizers: &tokenizers,
        };
        let grid = GridSpec::from_toml("grid.toml", &inputs.grid_toml)
            .and_then(|g| g.resolve_with_limit(&known, max_settings))
            .map_err(|e| anyhow!("{}: {e}", dirs[0].join("grid.toml").display()))?;
        Ok(Partials {
            dirs: dirs.to_vec(),
            inputs,
            parts,
            costing,
            grid,
        })
    }
}

/// A merge: the partials, where the run goes, the token-count cache, the summarizers' time
/// limit, whether to write runs.csv whatever the run's size, and the cancel flag.
pub struct MergeJob<'a> {
    pub partials: Partials,
    pub destination: Destination,
    pub cache: CacheOpts,
    pub summarizer_timeout: Duration,
    pub runs_csv: bool,
    pub cancel: &'a AtomicBool,
}

/// Merge the shards' rows into one run folder and finish it as a sweep finishes its own.
pub fn finish_merge(job: MergeJob<'_>, progress: &dyn Progress) -> Result<Published, RunError> {
    let MergeJob {
        partials,
        destination,
        cache,
        summarizer_timeout,
        runs_csv,
        cancel,
    } = job;
    let Partials {
        dirs,
        inputs,
        parts,
        costing,
        grid,
    } = partials;
    // Where the run goes, checked before the transcripts are read again: never over a shard
    // folder (or a folder holding one), nor over anything the tool did not write.
    let name = inputs.default_name(&super::today());
    let chosen = Chosen::ByUser {
        force: destination.force,
    };
    let (target, latest) =
        run_target(&destination.out, &destination.reports, &name, &dirs, chosen)?;
    let placed = timeline_sessions(&inputs)?;
    let (mut eval, _) =
        pipeline::PipelineEval::build_placed(placed, &grid.tokenizer, &costing, &cache)?;
    eval.set_summarizer_timeout(summarizer_timeout);
    // The shards' rows, merged into the run's runs.parquet a row group per shard at a time.
    let build = crate::table::publish::build_dir_for(&target)?;
    let rows = inputs.sessions.len() as u64 * grid.settings.len() as u64;
    let mut w = RunsWriter::create(
        build.path(),
        &inputs.sessions,
        &grid.settings,
        rundir::wants_runs_csv(rows, runs_csv),
    )?;
    rundir::merge_runs(&parts, &inputs, &mut w)?;
    w.finish()?;
    let recorded = kept_recorded(rundir::merge_recorded(&parts, &inputs)?, &inputs);
    rundir::write_recorded_compactions(build.path(), &recorded, cancel)?;
    let fin = Finish {
        target: &target,
        latest,
        name: &name,
        inputs: &inputs,
        grid: &grid,
        cancel,
    };
    fin.run(build, &eval, progress)
}

/// The sessions the timelines draw, read again (each file with the format its sessions were
/// read as), placed at their index in the run; the others `None`.
fn timeline_sessions(inputs: &RunInputs) -> Result<Vec<Option<Session>>, RunError> {
    let live = rundir::live_sessions(inputs);
    let longest = rundir::longest_sessions(&inputs.sessions, &live, TIMELINE_SESSIONS);
    let mut files: Vec<(String, String)> = longest
        .iter()
        .map(|&i| {
            let s = &inputs.sessions[i as usize];
            (
                pipeline::source_file(&s.source).to_string(),
                s.format.clone(),
            )
        })
        .collect();
    files.sort();
    files.dedup();
    // each timeline session's index in the run, by (source, id)
    let wanted: std::collections::HashMap<(&str, &str), usize> = longest
        .iter()
        .map(|&i| {
            let s = &inputs.sessions[i as usize];
            ((s.source.as_str(), s.session_id.as_str()), i as usize)
        })
        .collect();
    let mut placed = vec![None; inputs.sessions.len()];
    let mut unread: Vec<(String, String)> = Vec::new();
    for (file, format) in &files {
        let loaded = pipeline::load_sessions(std::slice::from_ref(file), Some(format))?;
        if let Some(e) = loaded.skipped.first() {
            unread.push((file.clone(), format!("{}: {}", e.path, e.reason)));
        }
        for s in loaded.sessions {
            if let Some(&i) = wanted.get(&(s.source.as_str(), s.id.as_str())) {
                placed[i] = Some(s);
            }
        }
    }
    for &i in &longest {
        if placed[i as usize].is_none() {
            let s = &inputs.sessions[i as usize];
            let file = pipeline::source_file(&s.source);
            let cause = unread
                .iter()
                .find(|(f, _)| f == file)
                .map_or(String::new(), |(_, e)| format!(" ({e})"));
            if crate::transcript::db::is_db_url(file) {
                return Err(anyhow!("{}: session `{}` is needed for timelines.json but could not be read again{cause}: merge reads the database again, and a shard records its URL without the password; give it in PGPASSWORD or a password file (~/.pgpass, or PGPASSFILE) and run merge again (docs/scale-out.md)", s.source, s.session_id).into());
            }
            return Err(anyhow!("{}: session `{}` is needed for timelines.json but could not be read again{cause} (run merge where the shards' input paths resolve)", s.source, s.session_id).into());
        }
    }
    Ok(placed)
}
