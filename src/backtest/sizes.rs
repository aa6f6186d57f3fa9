//! A session's sizes on its provider's scale (issue 37 item 1): fitted on the requests before
//! any recorded compaction, then used where a size is not recorded. The replay itself is not
//! changed: it is run on a copy of the session's arrays whose per-event tokens are on the
//! provider's scale (so every amount a policy removes is too) and whose missing or
//! post-compaction prompt sizes are the fit's.

use crate::policy::measured::fit_requests;
pub use crate::policy::measured::request_sizes;
use crate::tokens::fit::PromptFit;
use crate::tokens::sizes::SessionSizes;
use crate::transcript::Session;

/// The arrays a replay reads, and what they rest on.
pub struct ProviderSizes {
    pub sizes: SessionSizes,
    /// `None`: the session records too few sizes; its counts are today's (run tokenizer).
    pub fit: Option<PromptFit>,
}

impl ProviderSizes {
    /// How the sizes were made, for the report's assumptions.
    pub fn basis(&self) -> &'static str {
        match self.fit {
            Some(_) => "provider scale (overhead + scale x counted, fitted per session)",
            None => "run tokenizer counts (the session records too few prompt sizes)",
        }
    }
}

/// The fit of the session's recorded prompt sizes on `sizes`' counts; `None`: too few
/// recorded.
pub fn prompt_fit(session: &Session, sizes: &SessionSizes) -> Option<PromptFit> {
    fit_requests(&request_sizes(session, sizes))
}

/// The session's arrays on its provider's scale.
pub fn provider_sizes(session: &Session, sizes: &SessionSizes) -> ProviderSizes {
    let Some(fit) = prompt_fit(session, sizes) else {
        let mut out = sizes.clone();
        out.baseline = std::sync::OnceLock::new();
        return ProviderSizes {
            sizes: out,
            fit: None,
        };
    };
    ProviderSizes {
        sizes: on_scale(session, sizes, &fit, true),
        fit: Some(fit),
    }
}

/// `sizes` (the run tokenizer's counts of `session`) on the scale of `fit`: every event's
/// tokens times its scale, so every amount a setting, policy or alternative removes is too
/// (a summary it adds is put on the scale where the prompt carries it, through
/// `provider_fit`: [`SessionSizes::in_prompt`]), and each request whose prompt size is recorded after a compaction the framework
/// made (so not on the raw history) sized `overhead + scale × counted`; with `unrecorded`,
/// also each request that records none. A sweep passes `false`: an ADK setting's trigger
/// reads a request's usage only where the session recorded one, as ADK does; the backtest,
/// which replays no ADK setting, passes `true`. What a sweep replays a recorded session (and
/// its alternatives' sessions) on.
pub fn on_scale(
    session: &Session,
    sizes: &SessionSizes,
    fit: &PromptFit,
    unrecorded: bool,
) -> SessionSizes {
    let requests = request_sizes(session, sizes);
    let mut out = sizes.clone();
    out.baseline = std::sync::OnceLock::new();
    out.provider_fit = Some(*fit);
    for t in &mut out.tokens {
        *t = fit.amount(u64::from(*t)).min(u64::from(u32::MAX)) as u32;
    }
    for &(k, counted, rec) in &requests {
        let slot = &mut out.recorded_prompt[k as usize];
        if rec.is_none() && (unrecorded || slot.is_some()) {
            *slot = Some(fit.size(counted));
        }
    }
    out
}
