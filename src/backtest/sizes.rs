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
    let requests = request_sizes(session, sizes);
    let mut out = sizes.clone();
    out.baseline = std::sync::OnceLock::new();
    let Some(fit) = fit_requests(&requests) else {
        return ProviderSizes {
            sizes: out,
            fit: None,
        };
    };
    for t in &mut out.tokens {
        *t = fit.amount(u64::from(*t)).min(u64::from(u32::MAX)) as u32;
    }
    for &(k, counted, rec) in &requests {
        if rec.is_none() {
            out.recorded_prompt[k as usize] = Some(fit.size(counted));
        }
    }
    ProviderSizes {
        sizes: out,
        fit: Some(fit),
    }
}
