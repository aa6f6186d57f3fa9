//! A sweep planned once, from the flags and then from the data (ripgrep's low → high
//! arguments, uv's `resolve()`): which grid the grid file and the flags describe, which of
//! the guide's alternatives are replayed, and the defaults only the sessions can decide
//! (a cap is kept only when some invocation made more calls, the artifacts alternative only
//! when some session attaches a file). The command line maps its flags onto a
//! [`SweepRequest`] and prints; nothing here knows clap.

use super::grid::{GridError, GridSpec, Known, ResolvedGrid};
use super::pipeline::{self, Costing};
use super::run::SessionInfo;
use std::path::{Path, PathBuf};

/// The caps `--alternatives all|cap` replays when no --max-llm-calls is given.
pub const DEFAULT_CAPS: [u64; 3] = [10, 25, 50];

/// The split rules `--alternatives all|split` replays when no --split is given.
pub const DEFAULT_SPLITS: [&str; 2] = ["lossless", "idle=30m"];

/// Which of the guide's alternatives a sweep replays beside compaction (`--alternatives`,
/// docs/alternatives.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Alternatives {
    All,
    Cap,
    Artifacts,
    Split,
    None,
}

impl Alternatives {
    /// The value as written after `--alternatives`.
    pub fn parse(which: &str) -> Result<Alternatives, PlanError> {
        Ok(match which {
            "all" => Alternatives::All,
            "cap" => Alternatives::Cap,
            "artifacts" => Alternatives::Artifacts,
            "split" => Alternatives::Split,
            "none" => Alternatives::None,
            _ => return Err(PlanError::UnknownAlternatives(which.to_string())),
        })
    }

    pub const fn name(self) -> &'static str {
        match self {
            Alternatives::All => "all",
            Alternatives::Cap => "cap",
            Alternatives::Artifacts => "artifacts",
            Alternatives::Split => "split",
            Alternatives::None => "none",
        }
    }

    /// Whether this choice replays the alternative `kind` (cap, artifacts or split).
    pub fn wants(self, kind: Alternatives) -> bool {
        self == Alternatives::All || self == kind
    }
}

/// A sweep the flags cannot describe. Each message names the flag or file to fix.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error("{}: cannot read: {source}", path.display())]
    ReadGrid {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Grid(#[from] GridError),
    #[error("--alternatives: unknown value `{0}`; use all, cap, artifacts, split or none")]
    UnknownAlternatives(String),
    #[error("{flag}: --alternatives {which} does not replay it; use --alternatives all or {kind}")]
    NotReplayed {
        flag: &'static str,
        which: &'static str,
        kind: &'static str,
    },
}

/// What the command line was given, as plain data.
#[derive(Debug, Clone)]
pub struct SweepRequest<'a> {
    /// The grid file; without one the default grid is the base.
    pub grid_file: Option<&'a Path>,
    /// The axes given as flags: each replaces the same key of the base.
    pub flags: GridSpec,
    /// `--alternatives` as written.
    pub alternatives: &'a str,
    /// Largest grid accepted, in settings.
    pub max_settings: u64,
}

/// The resolved sweep: its grid (settings, baselines first, then the alternatives) and which
/// alternatives it replays.
#[derive(Debug, Clone)]
pub struct SweepPlan {
    pub grid: ResolvedGrid,
    pub alternatives: Alternatives,
    /// `--max-settings`, checked again when the data adds its default alternatives.
    pub max_settings: u64,
}

impl SweepPlan {
    /// The grid the request describes, resolved against the models `costing` prices and the
    /// known tokenizers. The data's defaults come later, from [`SweepPlan::fit_to_sessions`]
    /// (`--show-grid` prints the plan before any transcript is read).
    pub fn resolve(req: SweepRequest<'_>, costing: &Costing) -> Result<SweepPlan, PlanError> {
        let mut spec = base_grid(req.grid_file)?;
        if req.grid_file.is_none() {
            if let Some(trigger) = &req.flags.trigger {
                drop_untriggered_axes(&mut spec, &trigger.text());
            }
        }
        let given = [
            (
                Alternatives::Cap,
                "--max-llm-calls",
                req.flags.max_llm_calls.is_some(),
            ),
            (Alternatives::Split, "--split", req.flags.split.is_some()),
        ];
        spec.overlay(req.flags);
        let alternatives = Alternatives::parse(req.alternatives)?;
        for (kind, flag, given) in given {
            if given && !alternatives.wants(kind) {
                return Err(PlanError::NotReplayed {
                    flag,
                    which: alternatives.name(),
                    kind: kind.name(),
                });
            }
        }
        keep_wanted_alternatives(&mut spec, alternatives);
        let known_model = |m: &str| costing.knows_model(m);
        let tokenizers = pipeline::tokenizer_names();
        let known = Known {
            model: &known_model,
            tokenizers: &tokenizers,
        };
        let grid = spec.resolve_with_limit(&known, req.max_settings)?;
        Ok(SweepPlan {
            grid,
            alternatives,
            max_settings: req.max_settings,
        })
    }

    /// The defaults the sessions decide, for alternatives asked for without values: the
    /// default caps, each only where some invocation made more model calls (a cap no
    /// invocation reaches would repeat the baseline's row); the artifacts alternative when
    /// some session has an attachment; the default split rules. Refused when they take the
    /// grid over `--max-settings` (with --combine each adds one setting per compaction
    /// setting), still before any replay.
    pub fn fit_to_sessions(&mut self, sessions: &[SessionInfo]) -> Result<(), PlanError> {
        let grid = &mut self.grid;
        if self.alternatives.wants(Alternatives::Cap) && grid.max_llm_calls.is_empty() {
            let longest = sessions
                .iter()
                .map(|i| i.max_model_requests_per_invocation)
                .max()
                .unwrap_or(0);
            let caps: Vec<u64> = DEFAULT_CAPS
                .iter()
                .copied()
                .filter(|&n| n < longest)
                .collect();
            grid.add_caps(&caps);
        }
        if self.alternatives.wants(Alternatives::Artifacts)
            && sessions.iter().any(|i| i.attachment_tokens > 0)
        {
            // After the caps (grid.toml lists both, and re-resolving adds them in this order).
            grid.add_artifacts();
        }
        if self.alternatives.wants(Alternatives::Split) && grid.split.is_empty() {
            grid.add_splits(&DEFAULT_SPLITS.map(String::from));
        }
        Ok(grid.check_count(self.max_settings)?)
    }
}

/// The grid file, or the default grid.
fn base_grid(file: Option<&Path>) -> Result<GridSpec, PlanError> {
    let Some(p) = file else {
        return Ok(GridSpec::default_grid());
    };
    let text =
        crate::atomic::read_capped(p, crate::atomic::MAX_CONFIG_BYTES).map_err(|source| {
            PlanError::ReadGrid {
                path: p.to_path_buf(),
                source,
            }
        })?;
    Ok(GridSpec::from_toml(&p.display().to_string(), &text)?)
}

/// `--trigger invocations` alone over the default grid: the default's size-trigger axes are
/// not the user's, so they go rather than being refused as unused (and the same for the
/// turn-trigger axes under `--trigger tokens`).
fn drop_untriggered_axes(spec: &mut GridSpec, trigger: &str) {
    if !trigger.contains("tokens") && !trigger.contains("both") {
        spec.after_tokens = None;
        spec.keep_recent_events = None;
    }
    if !trigger.contains("invocations") && !trigger.contains("both") {
        spec.after_invocations = None;
        spec.overlap = None;
    }
}

/// The grid without the alternatives `--alternatives` leaves out (a grid file may list them).
fn keep_wanted_alternatives(spec: &mut GridSpec, alternatives: Alternatives) {
    if !alternatives.wants(Alternatives::Cap) {
        spec.max_llm_calls = None;
    }
    if !alternatives.wants(Alternatives::Artifacts) {
        spec.artifacts = None;
    }
    if !alternatives.wants(Alternatives::Split) {
        spec.split = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sweep::grid::{AxisItem, AxisSpec};

    fn request(flags: GridSpec, alternatives: &str) -> SweepRequest<'_> {
        SweepRequest {
            grid_file: None,
            flags,
            alternatives,
            max_settings: super::super::grid::MAX_SETTINGS,
        }
    }

    fn costing() -> Costing {
        Costing::load(None, None).expect("built-in tables")
    }

    #[test]
    fn alternatives_refuse_flags_they_do_not_replay() {
        let flags = GridSpec {
            split: Some(AxisSpec::One(AxisItem::Text("lossless".into()))),
            ..GridSpec::default()
        };
        let e = SweepPlan::resolve(request(flags, "cap"), &costing()).unwrap_err();
        assert_eq!(
            e.to_string(),
            "--split: --alternatives cap does not replay it; use --alternatives all or split"
        );
        let e = SweepPlan::resolve(request(GridSpec::default(), "some"), &costing()).unwrap_err();
        assert_eq!(
            e.to_string(),
            "--alternatives: unknown value `some`; use all, cap, artifacts, split or none"
        );
    }

    #[test]
    fn the_data_decides_the_default_caps() {
        let mut plan = SweepPlan::resolve(request(GridSpec::default(), "cap"), &costing())
            .expect("default grid");
        let info = SessionInfo {
            max_model_requests_per_invocation: 30,
            ..SessionInfo::default()
        };
        plan.fit_to_sessions(&[info]).expect("within the limit");
        assert_eq!(plan.grid.max_llm_calls, vec![10, 25]);
        assert!(plan.grid.split.is_empty() && !plan.grid.artifacts);
    }
}
