//! References (metrics.md "References"): the facts a recorded model event used (its text and
//! its tool calls' arguments) that its request's history already held, and, under a setting,
//! which of them only a summary could still support (at risk) and which no carried summary
//! text supports (broken).
//!
//! "An event contains a fact" means the fact is among the event's facts as `facts_dropped`
//! finds them ([`super::facts::event_facts`]); a summary contains a fact when its text holds
//! it verbatim as a whole token ([`super::token::holds`]). A request's history is every
//! event before its model event (the convention of `attachment_share`). The session-level
//! part ([`SessionReferences`]) is found once per session and shared by every setting;
//! [`tally`] is the per-setting walk over the requests.

use super::facts::{extract_fact_kinds, model_use_text, FactKind};
use super::text_facts::Searched;
use super::token::holds;
use crate::engine::summarizer::SummaryText;
use crate::engine::{Replay, Request};
use crate::tokens::adk::{line_shape, summarizer_text, LineShape};
use crate::tokens::sizes::Jagged;
use crate::transcript::{Event, Role, Session};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::ops::Range;

/// The setting-independent part of the references of one session.
#[derive(Debug, Clone, Default)]
pub struct SessionReferences {
    facts: Vec<String>,
    /// Per fact: the events holding it, ascending, each with "ADK's summarizer sees the fact
    /// in this event" (false when it lies beyond the 2,000-char tool payload cut, or the
    /// event gives the summarizer no line at all).
    /// (One flat column: a list per fact cost 70 bytes each, on 126,000 facts of a long session.)
    holders: Jagged<(u32, bool)>,
    /// Per event: range into `refs`.
    by_event: Vec<Range<u32>>,
    /// The references, event by event.
    refs: Vec<Ref>,
    /// Every fact as one whole-token search ([`super::text_facts::TextSearch`], the one the
    /// summaries' tallies use), built on first use and shared by every setting of the session.
    /// `None` when the facts are too many for the automaton's size limits: [`tally`] then
    /// searches summary by summary.
    automaton: std::sync::OnceLock<Option<super::text_facts::TextSearch>>,
    /// The session's event facts then these facts, as the automaton
    /// [`super::text_facts::Searched`] is found with (one search of a summary text serves
    /// both tallies), built on first use.
    text_automaton: std::sync::OnceLock<Option<super::text_facts::TextSearch>>,
}

/// One reference: a fact the model event uses that earlier events hold. Its support is
/// `holders[fact][..n]`, from event `first` to event `latest` (both `u32::MAX` when `n` is
/// 0); `unseen`: the summarizer sees the fact in none of them.
///
/// The ends and `unseen` are copies, so that most references are settled from the
/// reference alone: a long session's holders do not stay in the cache, and reaching into
/// them for every reference made time per event grow with the session (×7 from 5,000 to
/// 40,000 events).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Ref {
    fact: u32,
    n: u32,
    first: u32,
    latest: u32,
    kind: FactKind,
    unseen: bool,
}

/// The position of the `hidden` run (sorted, disjoint, closed) holding event `e`, if any.
pub fn run_of(hidden: &[(u32, u32)], e: u32) -> Option<usize> {
    // Outside the runs' span, as the latest holder of most references is (it is recent):
    // no search.
    match (hidden.first(), hidden.last()) {
        (Some(&(a, _)), Some(&(_, b))) if a <= e && e <= b => {}
        _ => return None,
    }
    let at = hidden.partition_point(|&(_, b)| b < e);
    hidden.get(at).filter(|&&(a, _)| a <= e).map(|_| at)
}

impl SessionReferences {
    /// `event_facts[i]`: event i's facts; `shapes[i]`: what ADK's summarizer line shows of
    /// event i (`EventLines::shapes`, found while the lines were counted). A line is made
    /// again only for an event whose payload was cut (is the fact in what is left?) or
    /// whose shape is not given: the lines are not kept, a long session's are as large as
    /// its tool payloads.
    pub fn new(
        session: &Session,
        event_facts: &super::facts::EventFacts,
        shapes: &[LineShape],
    ) -> Self {
        use rayon::prelude::*;
        let mut out = SessionReferences::default();
        let mut ids: HashMap<&str, u32> = HashMap::new();
        let mut holders: Vec<Vec<(u32, bool)>> = Vec::new();
        // per fact: whether the summarizer sees it in a holder so far
        let mut seen_any: Vec<bool> = Vec::new();
        // What each event needs its text for, found in parallel a chunk at a time (the regexes
        // over a long session's text were most of its first replay): the facts a model event
        // uses, and for each of its facts whether ADK's summarizer sees it.
        let per_event = |(i, e): (usize, &Event)| {
            let used = if e.role == Role::Model {
                extract_fact_kinds(&model_use_text(e)).into_iter().collect()
            } else {
                Vec::new()
            };
            if event_facts.ids(i).is_empty() {
                return (used, Vec::new());
            }
            let line = match shapes.get(i) {
                Some(LineShape::Cut) | None => Some(summarizer_text(e)),
                Some(_) => None,
            };
            let shape = match (&line, shapes.get(i)) {
                (Some(l), _) => line_shape(e, l),
                (None, s) => s.copied().unwrap_or(LineShape::Absent),
            };
            // Seen unless the event gives the summarizer no line, or a payload was cut and the
            // fact is not in what is left.
            let seen: Vec<bool> = event_facts
                .of(i)
                .map(|f| match shape {
                    LineShape::Absent => false,
                    LineShape::Whole => true,
                    LineShape::Cut => line.as_deref().is_some_and(|l| holds(l, f)),
                })
                .collect();
            (used, seen)
        };
        let n = session.events.len();
        for lo in (0..n).step_by(super::facts::FACT_CHUNK) {
            let hi = (lo + super::facts::FACT_CHUNK).min(n);
            let found: Vec<_> = session.events[lo..hi]
                .par_iter()
                .enumerate()
                .map(|(k, e)| per_event((lo + k, e)))
                .collect();
            for (k, (used, seen)) in found.into_iter().enumerate() {
                let i = lo + k;
                let start = out.refs.len() as u32;
                for (fact, kind) in used {
                    if let Some(&id) = ids.get(fact.as_str()) {
                        let support = &holders[id as usize];
                        out.refs.push(Ref {
                            fact: id,
                            n: support.len() as u32,
                            first: support.first().map_or(u32::MAX, |&(e, _)| e),
                            latest: support.last().map_or(u32::MAX, |&(e, _)| e),
                            kind,
                            // no holder seen so far: none of the first n
                            unseen: !seen_any[id as usize],
                        });
                    }
                }
                out.by_event.push(start..out.refs.len() as u32);
                for (f, seen) in event_facts.of(i).zip(seen) {
                    let id = *ids.entry(f).or_insert_with(|| {
                        out.facts.push(f.to_string());
                        holders.push(Vec::new());
                        seen_any.push(false);
                        out.facts.len() as u32 - 1
                    });
                    let list = &mut holders[id as usize];
                    seen_any[id as usize] |= seen;
                    list.push((i as u32, seen));
                }
            }
        }
        for list in holders {
            out.holders.push(list);
        }
        out
    }

    /// The whole-token search over `facts` (pattern i = fact i,
    /// [`super::text_facts::automaton`]).
    fn automaton(&self) -> Option<&super::text_facts::TextSearch> {
        self.automaton
            .get_or_init(|| super::text_facts::automaton(&self.facts))
            .as_ref()
    }

    /// The automaton over `event_facts` (the ones these references were found with; pattern
    /// i = event fact i) and then these facts (pattern `event_facts.facts().len() + i` = fact
    /// i), shared by every setting of the session.
    pub fn text_automaton(
        &self,
        event_facts: &super::facts::EventFacts,
    ) -> Option<&super::text_facts::TextSearch> {
        self.text_automaton
            .get_or_init(|| {
                let all: Vec<&str> = event_facts
                    .facts()
                    .iter()
                    .chain(&self.facts)
                    .map(String::as_str)
                    .collect();
                super::text_facts::automaton(&all)
            })
            .as_ref()
    }

    /// Each reference as (the model event making it, the first and the latest earlier event
    /// holding its fact): what tells whether a session can be cut before an event without
    /// losing what a later turn uses (docs/alternatives.md "Split").
    pub fn supports(&self) -> impl Iterator<Item = (u32, u32, u32)> + '_ {
        self.by_event.iter().enumerate().flat_map(move |(e, r)| {
            self.refs
                .get(r.start as usize..r.end as usize)
                .unwrap_or(&[])
                .iter()
                .map(move |x| (e as u32, x.first, x.latest))
        })
    }

    /// References in the session (over every model event), whatever the setting.
    pub fn len(&self) -> usize {
        self.refs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.refs.is_empty()
    }
}

/// References of one (session, setting) by fact kind.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct RefTally {
    pub references: u64,
    pub at_risk: [u64; 6],
    /// At risk, and every supporting event holds the fact where ADK's summarizer cannot see
    /// it: broken whatever a model writes.
    pub unseen: [u64; 6],
    /// At risk and in no carried summary text (only when the texts are known).
    pub broken: [u64; 6],
    /// Broken and unseen: the part of `broken` the estimate counts as certain.
    pub broken_unseen: [u64; 6],
}

impl RefTally {
    pub fn at_risk_total(&self) -> u64 {
        self.at_risk.iter().sum()
    }
    pub fn unseen_total(&self) -> u64 {
        self.unseen.iter().sum()
    }
    pub fn broken_total(&self) -> u64 {
        self.broken.iter().sum()
    }

    /// Of kind `k`, the references at risk that the summarizer could see (not unseen), and
    /// how many of them the summary texts held: what retention is fitted on
    /// ([`super::calibrate::fit_retention`]).
    pub fn open_kept(&self, k: usize) -> (u64, u64) {
        let open = self.at_risk[k] - self.unseen[k];
        let broken_open = self.broken[k] - self.broken_unseen[k];
        (open, open - broken_open)
    }
}

/// Tally the references of `replay`. `texts[ordinal - 1]` is the text of a summary; with no
/// texts (a modelled summarizer) `broken` stays 0. Kept references are found by
/// [`kept_indexed`], linear overall, from what the texts were found to hold when `searched`
/// is given ([`SessionReferences::text_automaton`]: fact f is pattern `offset + f`; texts
/// written around their seeds, whose lengths add up to the square of the history, from what
/// each added), else by searching each text with the references' own automaton. Debug
/// builds compare with the per-(summary, fact) search.
pub fn tally(
    refs: &SessionReferences,
    replay: &Replay,
    texts: Option<&[Option<&SummaryText>]>,
    searched: Option<(&Searched, u32)>,
) -> RefTally {
    let Some(texts) = texts else {
        return walk(refs, replay, None::<fn(&Request, u32) -> bool>);
    };
    if texts.is_empty() {
        // no summary at all (a policy that clears tool results): nothing holds a fact
        return walk(refs, replay, Some(|_: &Request, _: u32| false));
    }
    #[cfg(debug_assertions)]
    let naive = |t: RefTally| {
        let whole: Vec<Option<String>> = texts.iter().map(|t| t.map(|t| t.to_string())).collect();
        let strs: Vec<Option<&str>> = whole.iter().map(|t| t.as_deref()).collect();
        assert_eq!(t, walk(refs, replay, Some(kept_naive(refs, replay, &strs))));
        t
    };
    #[cfg(not(debug_assertions))]
    let naive = |t: RefTally| t;
    match searched {
        Some((Searched::Held(held), offset)) => {
            // a rolling summary: few summaries carried at once
            let kept = |r: &Request, fact: u32| {
                replay.carried(r).iter().any(|&o| {
                    (o as usize)
                        .checked_sub(1)
                        .is_some_and(|i| held.holds(i, offset + fact))
                })
            };
            naive(walk(refs, replay, Some(kept)))
        }
        Some((Searched::Listed(listed), offset)) => {
            let facts_of = |o: u32| {
                let list = (o as usize).checked_sub(1).and_then(|i| listed.get(i));
                let list = list.map_or(&[][..], Vec::as_slice);
                // the references' facts follow the event facts
                let at = list.partition_point(|&p| p < offset);
                list[at..].iter().map(|&p| p - offset).collect()
            };
            naive(walk(
                refs,
                replay,
                Some(kept_indexed(refs, replay, facts_of)),
            ))
        }
        None => {
            let whole: Vec<Option<std::borrow::Cow<'_, str>>> =
                texts.iter().map(|t| t.map(SummaryText::whole)).collect();
            let texts: Vec<Option<&str>> = whole.iter().map(|t| t.as_deref()).collect();
            let Some(search) = refs.automaton() else {
                return walk(refs, replay, Some(kept_naive(refs, replay, &texts)));
            };
            let facts_of = |o: u32| {
                let text = (o as usize).checked_sub(1).and_then(|i| texts.get(i));
                text.and_then(|t| *t)
                    .map_or_else(Vec::new, |t| super::text_facts::found_in(search, t))
            };
            naive(walk(
                refs,
                replay,
                Some(kept_indexed(refs, replay, facts_of)),
            ))
        }
    }
}

/// The walk over the requests: references, at risk and unseen; and, when `kept` is given
/// (the summary texts are known), broken: at risk and not `kept(request, fact)`.
fn walk(
    refs: &SessionReferences,
    replay: &Replay,
    mut kept: Option<impl FnMut(&Request, u32) -> bool>,
) -> RefTally {
    let mut t = RefTally::default();
    let mut memo = HiddenMemo::default();
    for r in &replay.requests {
        let Some(range) = refs.by_event.get(r.event_index as usize) else {
            continue;
        };
        let list = refs
            .refs
            .get(range.start as usize..range.end as usize)
            .unwrap_or(&[]);
        t.references += list.len() as u64;
        let hidden = replay.hidden(r);
        if hidden.is_empty() {
            continue;
        }
        for rf in list {
            let all = if hidden.len() > HiddenMemo::MIN_RUNS {
                memo.ref_hidden(refs, rf, &replay.hidden, &r.hidden)
            } else {
                ref_hidden(refs, rf, hidden)
            };
            if !all {
                continue;
            }
            let Ref {
                fact, kind, unseen, ..
            } = *rf;
            let k = kind.index();
            t.at_risk[k] += 1;
            if unseen {
                t.unseen[k] += 1;
            }
            if let Some(kept) = kept.as_mut() {
                if !kept(r, fact) {
                    t.broken[k] += 1;
                    if unseen {
                        t.broken_unseen[k] += 1;
                    }
                }
            }
        }
    }
    t
}

/// Hidden-ness for long hidden lists: the current list as one bit per event, and per fact
/// how many of its holders (from the first) were found hidden in it, kept while later
/// requests read the same list grown in place.
///
/// A policy that clears tool results hides one run per result, and a fact held by every
/// result (a path, a command) made each request search its whole support: quadratic in the
/// session. With the per-fact count each holder is found hidden once per list. The bits (one
/// per event, 5 kB for 40,000 events: they stay in the core's cache) settle most references
/// from the reference alone (its latest or first holder visible) without reaching into the
/// per-fact counts or the holders, whose random reads grew the time per event with the
/// session. Lists of a few runs (ADK's summaries) never allocate it.
#[derive(Default)]
struct HiddenMemo {
    /// Per fact: (list start, list end when counted, holders counted hidden).
    per_fact: Vec<(u32, u32, u32)>,
    /// The list the bits hold, as a range of the flat storage.
    list: Range<u32>,
    bits: Vec<u64>,
}

impl HiddenMemo {
    const MIN_RUNS: usize = 16;

    fn hidden(&self, e: u32) -> bool {
        self.bits
            .get(e as usize / 64)
            .is_some_and(|w| w >> (e % 64) & 1 == 1)
    }

    /// Set (or clear) the bits of `runs`, word by word.
    fn mark(&mut self, runs: &[(u32, u32)], on: bool) {
        for &(a, b) in runs {
            let words = b as usize / 64 + 1;
            if self.bits.len() < words {
                self.bits.resize(words, 0);
            }
            let (a, b) = (a as usize, b as usize);
            for w in a / 64..=b / 64 {
                let lo = if w == a / 64 { a % 64 } else { 0 };
                let hi = if w == b / 64 { b % 64 } else { 63 };
                let m = (u64::MAX >> (63 - hi)) & (u64::MAX << lo);
                if on {
                    self.bits[w] |= m;
                } else {
                    self.bits[w] &= !m;
                }
            }
        }
    }

    /// The bits of `list` (a range of `flat`): the runs appended since, when it is the list
    /// held grown in place; else the old list's runs cleared and the new one's set. Work in
    /// the runs that change, never in the session's events.
    fn hold(&mut self, flat: &[(u32, u32)], list: &Range<u32>) {
        if self.list.start == list.start && self.list.end <= list.end {
            self.mark(get_list(flat, &(self.list.end..list.end)), true);
        } else {
            self.mark(get_list(flat, &self.list.clone()), false);
            self.mark(get_list(flat, list), true);
        }
        self.list = list.clone();
    }

    /// Whether every holder of `rf` lies in `list`, a range of the flat storage `flat`.
    fn ref_hidden(
        &mut self,
        refs: &SessionReferences,
        rf: &Ref,
        flat: &[(u32, u32)],
        list: &Range<u32>,
    ) -> bool {
        if rf.n == 0 {
            return true;
        }
        if self.list != *list {
            self.hold(flat, list);
        }
        // from the reference alone, as most are settled
        if !self.hidden(rf.latest) || !self.hidden(rf.first) {
            return false;
        }
        if rf.n <= 2 {
            return true;
        }
        if self.per_fact.is_empty() {
            self.per_fact = vec![(u32::MAX, 0, 0); refs.facts.len()];
        }
        let Some(&m) = self.per_fact.get(rf.fact as usize) else {
            return ref_hidden(refs, rf, get_list(flat, list));
        };
        // the list counted before is a prefix of this one only when it starts at the same
        // place and did not end later (the flat storage is only appended to)
        let mut m = if m.0 != list.start || m.1 > list.end {
            (list.start, list.end, 0)
        } else {
            m
        };
        m.1 = list.end;
        let support = &refs.holders[rf.fact as usize][..rf.n as usize];
        while let Some(&(e, _)) = support.get(m.2 as usize) {
            if !self.hidden(e) {
                break;
            }
            m.2 += 1;
        }
        self.per_fact[rf.fact as usize] = m;
        let all = m.2 as usize >= support.len();
        debug_assert_eq!(
            all,
            ref_hidden(refs, rf, get_list(flat, list)),
            "memo vs search"
        );
        all
    }
}

/// The runs of `list`, a range of the flat storage.
fn get_list<'a>(flat: &'a [(u32, u32)], list: &Range<u32>) -> &'a [(u32, u32)] {
    flat.get(list.start as usize..list.end as usize)
        .unwrap_or(&[])
}

/// Whether every holder of reference `rf` lies in one of the `hidden` runs: from its ends
/// when they settle it (the latest visible, or both ends in one run), else from its holders.
fn ref_hidden(refs: &SessionReferences, rf: &Ref, hidden: &[(u32, u32)]) -> bool {
    if rf.n == 0 {
        return true;
    }
    let Some(last) = run_of(hidden, rf.latest) else {
        return false;
    };
    // the holders are read only when the ends do not settle it
    let support = || &refs.holders[rf.fact as usize][..rf.n as usize];
    if run_of(hidden, rf.first) == Some(last) {
        debug_assert!(all_hidden(support(), hidden), "both ends in one run");
        return true;
    }
    all_hidden(support(), hidden)
}

/// Whether every event of `support` (ascending) lies in one of the `hidden` runs (sorted,
/// disjoint, closed). A fact recurring in every turn has a support as long as the session,
/// so neither side is walked whole: the latest holder (the likeliest to be visible) is
/// tested first, then whichever is shorter is searched in the other.
fn all_hidden(support: &[(u32, bool)], hidden: &[(u32, u32)]) -> bool {
    let in_runs = |e: u32| run_of(hidden, e).is_some();
    debug_assert!(
        hidden.windows(2).all(|w| w[0].1 < w[1].0),
        "hidden runs sorted"
    );
    let Some(&(latest, _)) = support.last() else {
        return true;
    };
    if !in_runs(latest) {
        return false;
    }
    if hidden.len() < support.len() {
        // count the holders inside each run
        let inside: usize = hidden
            .iter()
            .map(|&(a, b)| {
                let lo = support.partition_point(|&(e, _)| e < a);
                let hi = support.partition_point(|&(e, _)| e <= b);
                hi - lo
            })
            .sum();
        inside == support.len()
    } else {
        support.iter().rev().all(|&(e, _)| in_runs(e))
    }
}

/// "Some summary request `r` carries holds `fact`", linear overall: the facts of each
/// carried summary are asked for once (`facts_of(ordinal)`: the facts its text holds, from one
/// pass over it), and a fact is kept when one of the summaries holding it is in a bitset of
/// the request's carried ordinals, updated only when the carried list changes (by its new
/// summaries when it grew).
fn kept_indexed<'a>(
    refs: &SessionReferences,
    replay: &'a Replay,
    facts_of: impl Fn(u32) -> Vec<u32> + 'a,
) -> impl FnMut(&Request, u32) -> bool + 'a {
    // Per fact, the summary ordinals whose text holds it, among those searched so far.
    let mut holding: Vec<Vec<u32>> = vec![Vec::new(); refs.facts.len()];
    let mut searched: Vec<bool> = Vec::new();
    let mut carried_bits: Vec<u64> = Vec::new();
    let mut carried_of: Option<Range<u32>> = None;
    move |r, fact| {
        if carried_of.as_ref() != Some(&r.carried) {
            // Requests share the carried storage: a list with the same start and a later end
            // is the last one plus summaries appended (a sliding window's next request), so
            // only those are added.
            let from = match &carried_of {
                Some(old) if old.start == r.carried.start && old.end <= r.carried.end => old.end,
                _ => {
                    carried_bits.iter_mut().for_each(|w| *w = 0);
                    r.carried.start
                }
            };
            carried_of = Some(r.carried.clone());
            let added = replay.carried.get(from as usize..r.carried.end as usize);
            for &o in added.unwrap_or_default() {
                let w = o as usize / 64;
                if carried_bits.len() <= w {
                    carried_bits.resize(w + 1, 0);
                }
                carried_bits[w] |= 1 << (o % 64);
                if searched.len() <= o as usize {
                    searched.resize(o as usize + 1, false);
                }
                if std::mem::replace(&mut searched[o as usize], true) {
                    continue;
                }
                for f in facts_of(o) {
                    if let Some(list) = holding.get_mut(f as usize) {
                        if list.last() != Some(&o) {
                            list.push(o);
                        }
                    }
                }
            }
        }
        holding[fact as usize].iter().any(|&o| {
            carried_bits
                .get(o as usize / 64)
                .is_some_and(|w| w & (1 << (o % 64)) != 0)
        })
    }
}

/// The per-(summary, fact) search [`kept_indexed`] replaces: debug builds compare the two,
/// and it serves when the facts are too many for the automaton.
fn kept_naive<'a>(
    refs: &'a SessionReferences,
    replay: &'a Replay,
    texts: &'a [Option<&'a str>],
) -> impl FnMut(&Request, u32) -> bool + 'a {
    let mut held: HashMap<(u32, u32), bool> = HashMap::new();
    move |r, fact| {
        let f = refs.facts[fact as usize].as_str();
        replay.carried(r).iter().any(|&o| {
            *held.entry((o, fact)).or_insert_with(|| {
                let text = (o as usize).checked_sub(1).and_then(|i| texts.get(i));
                text.and_then(|t| *t).is_some_and(|s| holds(s, f))
            })
        })
    }
}

/// How `references_broken` was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Basis {
    /// Checked against the summary texts the summarizer wrote.
    Measured,
    /// A modelled summarizer wrote no text: at-risk references × (1 − retention).
    Estimated,
    /// Nothing was at risk: no summary had to support a reference.
    #[default]
    None,
}

impl Basis {
    pub fn name(self) -> &'static str {
        match self {
            Basis::Measured => "measured",
            Basis::Estimated => "estimated",
            Basis::None => "none",
        }
    }

    pub fn parse(s: &str) -> Option<Basis> {
        [Basis::Measured, Basis::Estimated, Basis::None]
            .into_iter()
            .find(|b| b.name() == s)
    }

    /// The basis of an aggregate over sessions: estimated if any session's is, else
    /// measured if any is, else none.
    pub fn combine(a: Basis, b: Basis) -> Basis {
        match (a, b) {
            (Basis::Estimated, _) | (_, Basis::Estimated) => Basis::Estimated,
            (Basis::Measured, _) | (_, Basis::Measured) => Basis::Measured,
            _ => Basis::None,
        }
    }
}

/// Fewest summaries that must hold facts of a kind before its retention rate is used; below
/// it the estimate for that kind is the upper bound (every at-risk reference broken).
pub const MIN_SUMMARIES_PER_KIND: u64 = 5;

/// Retention of one fact kind: of the references of that kind at risk at recorded summaries
/// (a fact a later model request used that only the summary could hold, and that ADK's
/// summarizer could see), the share the summary text held verbatim as a whole token.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KindRetention {
    /// Summaries whose cut had references of this kind at risk.
    pub summaries: u64,
    /// References at risk (a file `calibrate` wrote before issue 45 calls them `facts`: the
    /// facts of the compacted span).
    #[serde(alias = "facts")]
    pub at_risk: u64,
    pub kept: u64,
    /// `kept / at_risk`; `None` when fewer than [`MIN_SUMMARIES_PER_KIND`] summaries.
    pub rate: Option<f64>,
    /// 95 % interval of the rate over summaries (mean of the per-summary rates ± 1.96
    /// standard errors, widened to hold the pooled rate); `None` with the rate.
    pub rate_low: Option<f64>,
    pub rate_high: Option<f64>,
}

/// One summarizer family's fit (the framework whose prompt wrote the summaries).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FamilyRetention {
    pub summaries: u64,
    pub models: Vec<String>,
    pub kinds: BTreeMap<String, KindRetention>,
}

/// Per fact kind retention, fitted by `calibrate` from recorded compactions that carry their
/// summary text: pooled over every summarizer family (what the estimate of a modelled
/// summarizer uses), and per family.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Retention {
    /// Where the rates come from (built-in corpus sample, or the calibrated transcripts).
    pub source: String,
    /// Summaries fitted.
    pub summaries: u64,
    /// Models that wrote them (as the transcripts name them), sorted.
    pub models: Vec<String>,
    /// By kind name (`url`, `email`, `quoted`, `path`, `id`, `number`).
    pub kinds: BTreeMap<String, KindRetention>,
    /// By family (`claude-code`, `openhands`, ...): the same fit on that family's summaries.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub families: BTreeMap<String, FamilyRetention>,
    /// Set on the fit [`Retention::for_family`] gives (never read from or written to a file).
    #[serde(skip)]
    pub chosen: Option<FamilyChoice>,
}

/// Which family's fit an estimate uses ([`Retention::for_family`]).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FamilyChoice {
    /// The family whose summaries the policy's summaries stand for.
    pub family: String,
    /// The table holds a fit of that family (else the whole pooled fit is used).
    pub fitted: bool,
    /// Kinds that take the pooled rate: too few of the family's summaries had them at risk.
    pub pooled_kinds: Vec<&'static str>,
    /// Summaries of the pooled fit.
    pub pooled_summaries: u64,
}

impl Retention {
    /// The rate for a kind, `None` when too few summaries held it.
    pub fn rate(&self, kind: FactKind) -> Option<f64> {
        self.kinds.get(kind.name()).and_then(|k| k.rate)
    }

    /// The fit the summaries of a policy of `family` rest on (issue 45: per summarizer family,
    /// the framework whose prompt writes them): that family's rate for every kind it has one
    /// for, the pooled rate for the kinds too few of its summaries had at risk; the pooled fit
    /// when the table has no fit of that family. `None` (ADK's prompt, `model:NAME`, a
    /// family without recorded summaries): the pooled fit itself.
    pub fn for_family(&self, family: Option<&str>) -> std::borrow::Cow<'_, Retention> {
        use std::borrow::Cow;
        let Some(name) = family else {
            return Cow::Borrowed(self);
        };
        let mut choice = FamilyChoice {
            family: name.to_string(),
            fitted: false,
            pooled_kinds: Vec::new(),
            pooled_summaries: self.summaries,
        };
        let Some(fam) = self.families.get(name) else {
            return Cow::Owned(Retention {
                chosen: Some(choice),
                ..self.clone()
            });
        };
        choice.fitted = true;
        let mut kinds = BTreeMap::new();
        for k in FactKind::ALL {
            let own = fam.kinds.get(k.name()).filter(|x| x.rate.is_some());
            let pooled = self.kinds.get(k.name());
            if own.is_none() && pooled.is_some_and(|x| x.rate.is_some()) {
                choice.pooled_kinds.push(k.name());
            }
            if let Some(x) = own.or(pooled) {
                kinds.insert(k.name().to_string(), x.clone());
            }
        }
        Cow::Owned(Retention {
            source: self.source.clone(),
            summaries: fam.summaries,
            models: fam.models.clone(),
            kinds,
            families: BTreeMap::new(),
            chosen: Some(choice),
        })
    }

    /// What the fit rests on: `N summaries (family n, ...)`, families by name; for a family's
    /// fit ([`Retention::for_family`]), `n FAMILY summaries`, with the kinds that take the
    /// pooled rate, or the pooled fit and why.
    pub fn rests_on(&self) -> String {
        match &self.chosen {
            Some(c) if !c.fitted => format!(
                "{}, pooled: the table has no {} fit",
                self.pooled_rests_on(),
                c.family
            ),
            Some(c) if c.pooled_kinds.is_empty() => {
                format!("{} {} summaries", self.summaries, c.family)
            }
            Some(c) => format!(
                "{} {} summaries (the pooled {} for {}: too few of them had it at risk)",
                self.summaries,
                c.family,
                c.pooled_summaries,
                c.pooled_kinds.join(", ")
            ),
            None => self.pooled_rests_on(),
        }
    }

    fn pooled_rests_on(&self) -> String {
        let fams: Vec<String> = self
            .families
            .iter()
            .map(|(name, f)| format!("{name} {}", f.summaries))
            .collect();
        if fams.is_empty() {
            format!("{} summaries", self.summaries)
        } else {
            format!("{} summaries ({})", self.summaries, fams.join(", "))
        }
    }

    /// Kinds that fall back to the upper bound.
    pub fn missing_kinds(&self) -> Vec<&'static str> {
        FactKind::ALL
            .into_iter()
            .filter(|k| self.rate(*k).is_none())
            .map(FactKind::name)
            .collect()
    }
}

/// The estimate for a modelled summarizer: the references beyond the summarizer's sight are
/// broken; of the other at-risk ones, `1 - retention` of each kind (all of a kind with no
/// rate). Lies within `[unseen, at_risk]` by construction.
pub fn estimate(t: &RefTally, retention: Option<&Retention>) -> f64 {
    let mut sum = 0.0;
    for k in FactKind::ALL {
        let i = k.index();
        let certain = t.unseen[i] as f64;
        let open = (t.at_risk[i] - t.unseen[i]) as f64;
        let rate = retention.and_then(|r| r.rate(k)).unwrap_or(0.0);
        sum += certain + open * (1.0 - rate.clamp(0.0, 1.0));
    }
    sum
}

/// A request of event `event` that sees `hidden` (a range of [`Replay::hidden`]) only through
/// the summaries `carried` (a range of [`Replay::carried`]); every size 0: what [`tally`]
/// reads of a request is its event and these two ranges.
fn bare_request(event: u32, hidden: Range<u32>, carried: Range<u32>) -> Request {
    Request {
        event_index: event,
        invocation_index: 0,
        author: 0,
        measured_prompt_tokens: None,
        adk_chars: 0,
        adk_chars_uncompacted: 0,
        contents: 0,
        contents_uncompacted: 0,
        json_chars: 0,
        json_chars_uncompacted: 0,
        history_tokens: 0,
        baseline_history_tokens: 0,
        summary_tokens: 0,
        hidden_tokens: 0,
        shared_prefix_tokens: 0,
        pre_request_compacted: false,
        pre_request_compactions: 0..0,
        recorded_prompt_tokens: None,
        replayed_prompt_tokens: None,
        baseline_prompt_tokens: 0,
        prompt_tokens: 0,
        carried,
        hidden,
    }
}

/// The events recorded compactions `0..=i` of `session` forgot, as sorted disjoint closed
/// runs (an OpenHands view drops every condensation's events, a Claude Code summary replaces
/// the whole history).
fn forgotten_so_far(session: &Session, i: usize) -> Vec<(u32, u32)> {
    let upto = (i + 1).min(session.recorded_compactions.len());
    runs_of(
        session.recorded_compactions[..upto]
            .iter()
            .flat_map(|c| c.forgotten.iter().cloned()),
    )
}

/// `ranges` of events as sorted disjoint closed runs.
fn runs_of(ranges: impl Iterator<Item = Range<usize>>) -> Vec<(u32, u32)> {
    let mut ranges: Vec<Range<usize>> = ranges.filter(|r| !r.is_empty()).collect();
    ranges.sort_by_key(|r| r.start);
    let mut runs: Vec<(u32, u32)> = Vec::new();
    for r in ranges {
        let (a, b) = (r.start as u32, r.end as u32 - 1);
        match runs.last_mut() {
            Some(last) if a <= last.1 + 1 => last.1 = last.1.max(b),
            _ => runs.push((a, b)),
        }
    }
    runs
}

/// The replay [`tally`] reads for one recorded cut: a request per model request of `session`
/// whose event is in `events`, each seeing `hidden` only through summary 1.
fn recorded_cut(session: &Session, hidden: &[(u32, u32)], events: Range<usize>) -> Replay {
    let end = events.end.min(session.events.len());
    let requests = (events.start.min(end)..end)
        .filter(|&k| session.events[k].model_request)
        .map(|k| bare_request(k as u32, 0..hidden.len() as u32, 0..1))
        .collect();
    Replay {
        requests,
        hidden: hidden.to_vec(),
        carried: vec![1],
        ..Replay::default()
    }
}

/// The events recorded compaction `i`'s summary stands for in the prompt: from its first
/// event up to the next summary (a microcompaction in between leaves the summary in place).
fn summary_span(session: &Session, i: usize) -> Range<usize> {
    let recorded = &session.recorded_compactions;
    let next = recorded[i + 1..].iter().find(|n| !n.is_micro());
    recorded[i].at_event..next.map_or(usize::MAX, |n| n.at_event)
}

/// A session's recorded summaries, measured where each stood (issue 45): the references and
/// the tool calls, found once per session and shared by every recorded compaction, by the
/// backtest's check and by `calibrate`'s fit.
pub struct RecordedSummaries<'s> {
    pub session: &'s Session,
    pub refs: SessionReferences,
    /// [`super::refetch::calls`] of the session.
    pub calls: Vec<super::refetch::Call>,
}

/// One recorded compaction's cut: the events its summary stands for in the prompt
/// ([`summary_span`]), what the requests there see only through it, its text, and the tool
/// calls there repeating one made before it.
pub struct RecordedCut {
    pub events: Range<usize>,
    /// The events the compactions so far forgot, and the responses after this one that only
    /// re-obtained some of them (a same-result re-fetch, [`super::refetch::reobtained`]): a
    /// fact the agent used from such a response was lost to the compaction and paid for
    /// again, a reference at risk that the summary either held or broke, as if the agent had
    /// used it straight away (as it would have, uncompacted). Sorted disjoint closed runs.
    pub hidden: Vec<(u32, u32)>,
    pub text: SummaryText,
    pub repeats: Vec<super::refetch::Repeat>,
}

/// Whether a recorded summary text is empty: nothing for a cut to be measured on.
fn no_text(summary: &str) -> bool {
    summary.trim().is_empty()
}

impl<'s> RecordedSummaries<'s> {
    /// `None` when no recorded compaction of `session` carries a summary text.
    pub fn new(session: &'s Session) -> Option<Self> {
        if session
            .recorded_compactions
            .iter()
            .all(|c| no_text(&c.summary))
        {
            return None;
        }
        let facts = super::facts::event_facts(session);
        Some(RecordedSummaries {
            session,
            refs: SessionReferences::new(session, &facts, &[]),
            calls: super::refetch::calls(session),
        })
    }

    /// Recorded compaction `i`'s cut; `None` when it records no summary text.
    pub fn cut(&self, i: usize) -> Option<RecordedCut> {
        let c = self.session.recorded_compactions.get(i)?;
        if no_text(&c.summary) {
            return None;
        }
        let events = summary_span(self.session, i);
        let forgotten = forgotten_so_far(self.session, i);
        let repeats = super::refetch::repeats(&self.calls, &events);
        let lost = |e: usize| u32::try_from(e).is_ok_and(|e| run_of(&forgotten, e).is_some());
        let again = super::refetch::reobtained(self.session, &self.calls, &repeats, lost);
        let hidden = if again.is_empty() {
            forgotten
        } else {
            let runs = forgotten.iter().map(|&(a, b)| a as usize..b as usize + 1);
            runs_of(runs.chain(again.iter().map(|&e| e as usize..e as usize + 1)))
        };
        Some(RecordedCut {
            events,
            hidden,
            text: SummaryText::flat(c.summary.clone()),
            repeats,
        })
    }

    /// The references of the requests in `events` that see `hidden` only through `cut`'s
    /// text: at risk, and broken where the text does not hold them.
    pub fn tally(
        &self,
        cut: &RecordedCut,
        hidden: &[(u32, u32)],
        events: Range<usize>,
    ) -> RefTally {
        let replay = recorded_cut(self.session, hidden, events);
        tally(&self.refs, &replay, Some(&[Some(&cut.text)]), None)
    }

    /// Recorded compaction `i` measured on its summary text: the model requests after it (up
    /// to the next summary) see what the cut hides only through that text. `None` when it
    /// records no summary text.
    pub fn at(&self, i: usize) -> Option<(RecordedCut, RefTally)> {
        let cut = self.cut(i)?;
        let t = self.tally(&cut, &cut.hidden, cut.events.clone());
        Some((cut, t))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transcript::Part;

    /// The walk the at-risk tests are compared with: every holder in some hidden run.
    fn every_holder_hidden(support: &[(u32, bool)], hidden: &[(u32, u32)]) -> bool {
        support
            .iter()
            .all(|&(e, _)| hidden.iter().any(|&(a, b)| a <= e && e <= b))
    }

    /// Issue 13: a fact recurring in every turn made the at-risk test walk its whole support
    /// for every reference. The searched test agrees with the walk on every small case.
    #[test]
    fn all_hidden_agrees_with_walking_every_holder() {
        let runs: [&[(u32, u32)]; 5] = [
            &[],
            &[(0, 9)],
            &[(2, 3), (5, 5), (7, 12)],
            &[(1, 1)],
            &[(0, 0), (2, 2), (4, 4), (6, 6), (8, 8), (10, 10)],
        ];
        for hidden in runs {
            for mask in 0u32..(1 << 12) {
                let support: Vec<(u32, bool)> = (0..12)
                    .filter(|e| mask >> e & 1 == 1)
                    .map(|e| (e, true))
                    .collect();
                let walked = every_holder_hidden(&support, hidden);
                assert_eq!(
                    all_hidden(&support, hidden),
                    walked,
                    "{support:?} in {hidden:?}"
                );
            }
        }
    }

    /// A reference is settled from its ends when they do (latest visible, or both ends in
    /// one hidden run), else from its holders: the same answer as walking every holder, for
    /// every support of up to 12 events and every prefix of it.
    #[test]
    fn a_reference_is_hidden_exactly_when_every_holder_is() {
        let runs: [&[(u32, u32)]; 4] = [
            &[],
            &[(0, 9)],
            &[(2, 3), (5, 5), (7, 12)],
            &[(0, 0), (2, 2), (4, 4), (6, 6), (8, 8), (10, 10)],
        ];
        for mask in 0u32..(1 << 12) {
            let support: Vec<(u32, bool)> = (0..12)
                .filter(|e| mask >> e & 1 == 1)
                .map(|e| (e, e % 3 == 0))
                .collect();
            let mut refs = SessionReferences::default();
            refs.holders.push(support.iter().copied());
            for n in 0..=support.len() {
                let rf = Ref {
                    fact: 0,
                    n: n as u32,
                    first: support.first().filter(|_| n > 0).map_or(u32::MAX, |h| h.0),
                    latest: n.checked_sub(1).map_or(u32::MAX, |k| support[k].0),
                    kind: FactKind::Path,
                    unseen: !support[..n].iter().any(|h| h.1),
                };
                for hidden in runs {
                    let walked = every_holder_hidden(&support[..n], hidden);
                    assert_eq!(
                        ref_hidden(&refs, &rf, hidden),
                        walked,
                        "{:?} in {hidden:?}",
                        &support[..n]
                    );
                }
            }
        }
    }

    /// The memo answers as walking every holder does, request after request, while lists
    /// grow in place (a policy's cleared results), a new list starts (a summary), holders
    /// are added and a holder found visible is covered by a run added later.
    #[test]
    fn the_memo_agrees_with_walking_every_holder_as_lists_grow() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = |m: u32| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % m as u64) as u32
        };
        for _case in 0..200 {
            let events = 600u32;
            let facts = 4usize;
            let mut refs = SessionReferences::default();
            let mut supports = Vec::new();
            for _ in 0..facts {
                let support: Vec<(u32, bool)> = (0..events)
                    .filter(|_| next(4) == 0)
                    .map(|e| (e, true))
                    .collect();
                refs.holders.push(support.iter().copied());
                supports.push(support);
            }
            refs.facts = (0..facts).map(|f| f.to_string()).collect();
            let mut memo = HiddenMemo::default();
            let mut flat: Vec<(u32, u32)> = Vec::new();
            let mut list = 0u32..0u32;
            let mut at = 0u32; // the next event a run may start at
            for _request in 0..40 {
                match next(6) {
                    // a new list (a summary's runs)
                    0 => {
                        let start = flat.len() as u32;
                        at = 0;
                        for _ in 0..(MIN + 1 + next(4) as usize) {
                            let a = at + u32::from(next(4) == 0);
                            // now and then a run across a word of the bits
                            let b = a + if next(6) == 0 { next(90) } else { next(2) };
                            if b >= events {
                                break;
                            }
                            flat.push((a, b));
                            at = b + 1;
                        }
                        list = start..flat.len() as u32;
                    }
                    // the same list, grown in place (cleared results)
                    1..=3 if list.end as usize == flat.len() => {
                        for _ in 0..next(4) {
                            let a = at + u32::from(next(4) == 0);
                            if a >= events {
                                break;
                            }
                            flat.push((a, a));
                            at = a + 1;
                        }
                        list.end = flat.len() as u32;
                    }
                    _ => {}
                }
                let hidden = &flat[list.start as usize..list.end as usize];
                if hidden.len() <= MIN {
                    continue;
                }
                for (f, support) in supports.iter().enumerate() {
                    let n = next(support.len() as u32 + 1) as usize;
                    let rf = Ref {
                        fact: f as u32,
                        n: n as u32,
                        first: support.first().filter(|_| n > 0).map_or(u32::MAX, |h| h.0),
                        latest: n.checked_sub(1).map_or(u32::MAX, |k| support[k].0),
                        kind: FactKind::Path,
                        unseen: false,
                    };
                    assert_eq!(
                        memo.ref_hidden(&refs, &rf, &flat, &list),
                        every_holder_hidden(&support[..n], hidden),
                        "{:?} in {hidden:?}",
                        &support[..n]
                    );
                }
            }
        }
    }
    const MIN: usize = HiddenMemo::MIN_RUNS;

    use crate::transcript::{Event, Format};

    fn request(event: u32, hidden: Range<u32>, carried: Range<u32>) -> Request {
        bare_request(event, hidden, carried)
    }

    /// The agent lists files (e1), a tool result names `src/app/config.rs` at the end of a
    /// `pad`-char listing (e2), the user says go on (e3), the agent edits that path (e4).
    fn session(pad: usize) -> Session {
        let mut e0 = Event::new("user", Role::User, "i1", 1.0);
        e0.parts.push(Part::Text {
            text: "fix the config loader".into(),
        });
        let mut e1 = Event::new("agent", Role::Model, "i1", 2.0);
        e1.parts.push(Part::ToolCall {
            id: Some("c1".into()),
            name: "ls".into(),
            args: serde_json::json!({"dir": "."}),
        });
        let mut e2 = Event::new("agent", Role::User, "i1", 3.0);
        e2.parts.push(Part::ToolResponse {
            id: Some("c1".into()),
            name: "ls".into(),
            response: serde_json::json!({"out": format!("{} src/app/config.rs", "x".repeat(pad))}),
        });
        let mut e3 = Event::new("user", Role::User, "i2", 4.0);
        e3.parts.push(Part::Text {
            text: "go on".into(),
        });
        let mut e4 = Event::new("agent", Role::Model, "i2", 5.0);
        e4.parts.push(Part::Text {
            text: "Editing it now.".into(),
        });
        e4.parts.push(Part::ToolCall {
            id: Some("c2".into()),
            name: "edit".into(),
            args: serde_json::json!({"path": "src/app/config.rs"}),
        });
        Session::new("s", "mem", Format::Canonical, vec![e0, e1, e2, e3, e4])
    }

    /// The session's references from the line shapes found while counting, checked against
    /// those found by making every line again.
    fn found(s: &Session) -> SessionReferences {
        let facts = super::super::facts::event_facts(s);
        let lines = crate::summarize::EventLines::new(s, &|t: &str| t.len() as u64);
        let shaped = SessionReferences::new(s, &facts, &lines.shapes);
        let remade = SessionReferences::new(s, &facts, &[]);
        let parts = |r: &SessionReferences| {
            format!("{:?}{:?}{:?}{:?}", r.facts, r.holders, r.by_event, r.refs)
        };
        assert_eq!(parts(&shaped), parts(&remade), "shapes vs lines made again");
        shaped
    }

    /// e1 is answered with nothing hidden; e4 sees events 0..=2 only through summary 1.
    fn compacted() -> Replay {
        Replay {
            requests: vec![request(1, 0..0, 0..0), request(4, 0..1, 0..1)],
            carried: vec![1],
            hidden: vec![(0, 2)],
            ..Default::default()
        }
    }

    #[test]
    fn a_path_read_only_in_a_tool_result_is_a_reference_at_risk_after_compaction() {
        let s = session(10);
        let r = found(&s);
        // The one reference: e4 uses the path e2 holds ("." in e1 is no fact).
        assert_eq!(r.len(), 1);
        let none = Replay {
            requests: vec![request(1, 0..0, 0..0), request(4, 0..0, 0..0)],
            ..Default::default()
        };
        let t = tally(&r, &none, Some(&[]), None);
        assert_eq!(
            (t.references, t.at_risk_total(), t.broken_total()),
            (1, 0, 0)
        );

        // Summary without the path: broken. With it: kept.
        let lost = SummaryText::flat("user: fix the config loader".into());
        let t = tally(&r, &compacted(), Some(&[Some(&lost)]), None);
        assert_eq!((t.at_risk_total(), t.broken_total()), (1, 1));
        assert_eq!(t.at_risk[FactKind::Path.index()], 1);
        let kept = SummaryText::flat("ls printed src/app/config.rs".into());
        let t = tally(&r, &compacted(), Some(&[Some(&kept)]), None);
        assert_eq!((t.at_risk_total(), t.broken_total()), (1, 0));
        // No text (modelled): at risk, not certainly broken (ADK's summarizer sees it).
        let t = tally(&r, &compacted(), None, None);
        assert_eq!(
            (t.at_risk_total(), t.unseen_total(), t.broken_total()),
            (1, 0, 0)
        );
        assert_eq!(estimate(&t, None), 1.0);
    }

    #[test]
    fn a_fact_beyond_the_2000_char_cut_is_broken_for_certain() {
        let r = found(&session(2500));
        let t = tally(&r, &compacted(), None, None);
        assert_eq!((t.at_risk_total(), t.unseen_total()), (1, 1));
        // Whatever the retention, the estimate cannot drop below the certain part.
        let mut kinds = BTreeMap::new();
        kinds.insert(
            "path".to_string(),
            KindRetention {
                summaries: 9,
                at_risk: 10,
                kept: 10,
                rate: Some(1.0),
                rate_low: Some(0.7),
                rate_high: Some(1.0),
            },
        );
        let ret = Retention {
            source: "test".into(),
            summaries: 9,
            models: vec![],
            kinds,
            families: BTreeMap::new(),
            chosen: None,
        };
        assert_eq!(estimate(&t, Some(&ret)), 1.0);
        // Short payload: the same retention keeps the reference.
        let t = tally(&found(&session(10)), &compacted(), None, None);
        assert_eq!(estimate(&t, Some(&ret)), 0.0);
    }

    #[test]
    fn a_reference_still_held_by_a_visible_event_is_not_at_risk() {
        // The path also appears in e3 (kept verbatim): not at risk even though e2 is hidden.
        let mut s = session(10);
        s.events[3].parts.push(Part::Text {
            text: "see src/app/config.rs".into(),
        });
        let r = found(&s);
        let t = tally(
            &r,
            &compacted(),
            Some(&[Some(&SummaryText::flat(String::new()))]),
            None,
        );
        assert_eq!((t.references, t.at_risk_total()), (1, 0));
    }

    #[test]
    fn basis_of_an_aggregate() {
        use Basis::*;
        assert_eq!(Basis::combine(None, Measured), Measured);
        assert_eq!(Basis::combine(Measured, Estimated), Estimated);
        assert_eq!(Basis::combine(None, None), None);
        for b in [Measured, Estimated, None] {
            assert_eq!(Basis::parse(b.name()), Some(b));
        }
    }
}
