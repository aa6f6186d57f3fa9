//! Token counting: each event counted once (o200k, cl100k or ADK's chars/4), cached on
//! disk, and the per-event size arrays the engine replays on.

pub mod adk;
pub mod cache;
pub mod calibration;
pub mod count;
pub mod fit;
pub mod sizes;
pub mod splice;
pub mod tokenizer;

pub use cache::CacheOpts;
pub use count::{
    count_sessions, count_sessions_with_stats, count_text, counted_texts, CountStats, Counter,
};
pub use tokenizer::Tokenizer;

/// Hints the CPU to load `lines` cache lines from `p` on. A prefetch never faults, whatever
/// the address (an empty string's dangling pointer included), and changes no result.
#[inline(always)]
pub(crate) fn prefetch_lines<T>(p: *const T, lines: usize) {
    #[cfg(target_arch = "x86_64")]
    for l in 0..lines {
        let at = p.cast::<i8>().wrapping_add(64 * l);
        // SAFETY: `_mm_prefetch` only needs SSE, which every x86_64 CPU has; it reads no
        // memory architecturally and cannot fault, so any address is sound.
        unsafe { std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(at) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (p, lines);
}
