//! Which facts each summary text of a replay holds, when texts are written around their seeds.
//!
//! A text holds a fact where it occurs as a whole token ([`super::token::holds`]): whether an
//! occurrence is one depends on the two chars either side of it ([`TOKEN_CONTEXT`] bytes).
//! A rolling summarizer's text holds its seed's text whole (`terse`: `model: ` + seed + new
//! lines), so it holds every fact its seed holds away from the seed's ends. Searching each
//! text in full makes a long replay quadratic; here each text is searched only where it
//! differs from its seed: the head with the seed's first bytes, and the seed's last bytes with
//! the tail (as many as the longest fact and its context either side, so a fact crossing a
//! join, or at a seed's end where the text around it now continues it, is found). A fact is
//! then held by every text descending from one where it was found away from that text's
//! ends (a subtree of the seed forest, one range of its pre-order numbers), or, found within
//! [`TOKEN_CONTEXT`] of its ends, by that text alone: the texts around it search it again.

use super::token::{Token, TOKEN_CONTEXT};
use crate::engine::summarizer::SummaryText;
use crate::tokens::cache::{key_map, Key128Map, KeyMap};
use aho_corasick::automaton::Automaton;
use aho_corasick::nfa::contiguous::NFA;
use aho_corasick::Anchored;
use std::collections::HashMap;
use std::sync::Mutex;

/// The automaton [`TextFacts`] searches with (pattern i = fact i), and what it found in lines
/// of summary text before.
pub struct TextSearch {
    nfa: NFA,
    /// Per pattern: what continues it in a text (whole tokens only are held).
    tokens: Vec<Token>,
    /// Per line (a run of text without `\n`, by its xxh3-128): the whole-token occurrences in
    /// it. Kept across replays of the session: a rolling summary's new part is lines of its
    /// events, searched again by every replay of every setting. `None` when a pattern holds a
    /// `\n` (or is empty): then a text is not the sum of its lines. (A `\n` bounds every
    /// token as a text's end does.)
    lines: Option<Mutex<LineMemo>>,
}

impl Clone for TextSearch {
    fn clone(&self) -> Self {
        let lines = self.lines.as_ref().map(|m| {
            let m = m.lock().unwrap_or_else(|e| e.into_inner());
            Mutex::new(LineMemo {
                seen: m.seen.clone(),
                found: m.found.clone(),
            })
        });
        TextSearch {
            nfa: self.nfa.clone(),
            tokens: self.tokens.clone(),
            lines,
        }
    }
}

impl std::fmt::Debug for TextSearch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TextSearch")
            .field("patterns", &self.nfa.patterns_len())
            .field("by_lines", &self.lines.is_some())
            .finish()
    }
}

#[derive(Default)]
struct LineMemo {
    /// Line key -> its occurrences at `found[a..b]`.
    seen: Key128Map<(u32, u32)>,
    /// (pattern, start in its line)
    found: Vec<(u32, u32)>,
}

/// The automaton [`TextFacts`] searches with (pattern i = fact i). (A DFA was tried: over a
/// long session's facts its tables are tens of MB and searching was slower.)
pub fn automaton<P: AsRef<str>>(facts: &[P]) -> Option<TextSearch> {
    let nfa = NFA::new(facts.iter().map(|f| f.as_ref().as_bytes())).ok()?;
    let tokens = facts.iter().map(|f| Token::of(f.as_ref())).collect();
    let lines = facts
        .iter()
        .all(|f| !f.as_ref().is_empty() && !f.as_ref().contains('\n'))
        .then(Mutex::default);
    Some(TextSearch { nfa, tokens, lines })
}

impl TextSearch {
    /// Every whole-token occurrence in `hay` as `found(pattern, start)`, `hay`'s ends counting
    /// as a text's ends (overlapping occurrences, in no set order). Where no pattern holds a
    /// `\n`, each line is looked up (or searched once and remembered).
    fn occurrences(&self, hay: &str, mut found: impl FnMut(u32, usize)) {
        let Some(memo) = &self.lines else {
            return scan(&self.nfa, &self.tokens, hay, found);
        };
        let mut memo = memo.lock().unwrap_or_else(|e| e.into_inner());
        let LineMemo { seen, found: all } = &mut *memo;
        let mut at = 0;
        for line in hay.split('\n') {
            let key = xxhash_rust::xxh3::xxh3_128(line.as_bytes());
            let (a, b) = *seen.entry(key).or_insert_with(|| {
                let a = all.len() as u32;
                scan(&self.nfa, &self.tokens, line, |f, s| {
                    all.push((f, s as u32))
                });
                (a, all.len() as u32)
            });
            for &(f, s) in &all[a as usize..b as usize] {
                found(f, at + s as usize);
            }
            at += line.len() + 1;
        }
    }

    /// Length in bytes of pattern `f`.
    fn len_of(&self, f: u32) -> usize {
        self.nfa
            .pattern_len(aho_corasick::PatternID::new_unchecked(f as usize))
    }
}

/// Facts (the automaton's patterns) held by each text of a list.
///
/// Flat arrays: a replay builds one of these, and a long session has tens of thousands of
/// facts, most held by no text. A list per fact cost an allocation per fact and per found
/// fact at every replay (×1.8 per event from 2,500 to 20,000 events).
#[derive(Debug, Clone, Default)]
pub struct TextFacts {
    /// Per text: its pre-order number in the seed forest.
    pre: Vec<u32>,
    /// Fact f's pre-order ranges are `spans[at[f]..at[f + 1]]` (closed, disjoint, ascending);
    /// empty when no text holds it (or f is past `at`).
    at: Vec<u32>,
    spans: Vec<(u32, u32)>,
}

/// Feed `hay` to the automaton from its start, calling `found(pattern, start)` with each
/// occurrence that is a whole token in `hay` (overlapping; `hay`'s ends count as a text's).
fn scan(ac: &NFA, tokens: &[Token], hay: &str, mut found: impl FnMut(u32, usize)) {
    let Ok(mut sid) = ac.start_state(Anchored::No) else {
        return;
    };
    for (i, &b) in hay.as_bytes().iter().enumerate() {
        sid = ac.next_state(Anchored::No, sid, b);
        if ac.is_match(sid) {
            for k in 0..ac.match_len(sid) {
                let p = ac.match_pattern(sid, k);
                let start = i + 1 - ac.pattern_len(p);
                if tokens[p.as_usize()].fits(hay, start, i + 1) {
                    found(p.as_u32(), start);
                }
            }
        }
    }
}

/// The patterns of `search` that `text` holds (as [`super::token::holds`] finds them),
/// ascending, each once: one pass over the text, whatever the number of patterns.
pub fn found_in(search: &TextSearch, text: &str) -> Vec<u32> {
    let mut out = Vec::new();
    search.occurrences(text, |f, _| out.push(f));
    out.sort_unstable();
    out.dedup();
    out
}

/// A fact found in a text's own part: (fact, text, "by that text alone"), see [`TextFacts`].
type Found = (u32, u32, bool);

impl TextFacts {
    /// `texts[i]`: the text of summary i (`None`: it wrote none); a text's seed is found among
    /// the earlier texts by identity.
    ///
    /// A text `head + seed + tail` whose seed is known and at least `reach` bytes long (the
    /// longest fact and [`TOKEN_CONTEXT`] either side) is searched in two places: the head
    /// with the seed's first `reach` bytes, for facts starting in the head or near the seed's
    /// start (one search per distinct such window, as a chain's heads pile up the same way),
    /// and the seed's last `reach` bytes with the tail, for facts ending near the seed's end
    /// or in the tail. The rest of the seed holds what the seed held away from its ends. Any
    /// other text is searched whole.
    pub fn new(texts: &[Option<&SummaryText>], search: &TextSearch) -> TextFacts {
        let n = texts.len();
        let reach = search.nfa.max_pattern_len() + 2 * TOKEN_CONTEXT;
        let mut parent: Vec<u32> = vec![u32::MAX; n];
        let mut seeds = SeedIndex::new();
        // Each text's first `reach` bytes (interned), carried down the chains: a text's are
        // its head's then its seed's, so no chain is walked for them.
        let mut heads = HeadWindows::new(reach);
        let mut prefix_of: Vec<u32> = vec![u32::MAX; n];
        // every fact found in a text's own part (repeats allowed)
        let mut found: Vec<Found> = Vec::with_capacity(n);
        let mut buf = String::new();
        for (i, t) in texts.iter().enumerate() {
            let Some(t) = t else { continue };
            let i = i as u32;
            let (head, seed, tail) = t.parts();
            let p = seed.and_then(|s| seeds.find(texts, i, s));
            seeds.prev = Some((t.node_id(), i));
            match (p, seed) {
                (Some(p), Some(seed)) if seed.len() >= reach => {
                    parent[i as usize] = p;
                    let seed_prefix = match prefix_of[p as usize] {
                        u32::MAX => heads.prefixes.intern(seed.prefix(reach)),
                        id => id,
                    };
                    prefix_of[p as usize] = seed_prefix;
                    let (a, b, own) = heads.window(search, head, seed_prefix);
                    debug_assert_eq!(
                        heads.prefixes.list[own as usize],
                        t.prefix(reach),
                        "carried prefix"
                    );
                    prefix_of[i as usize] = own;
                    let window = &heads.facts[a as usize..b as usize];
                    found.extend(window.iter().map(|&(f, alone)| (f, i, alone)));
                    buf.clear();
                    buf.push_str(&seed.suffix(reach));
                    let from = buf.len() - TOKEN_CONTEXT;
                    buf.push_str(tail);
                    search.occurrences(&buf, |f, start| {
                        let end = start + search.len_of(f);
                        if end > from {
                            found.push((f, i, end + TOKEN_CONTEXT > buf.len()));
                        }
                    });
                }
                (p, _) => {
                    parent[i as usize] = p.unwrap_or(u32::MAX);
                    let whole = t.whole();
                    search.occurrences(&whole, |f, start| {
                        let end = start + search.len_of(f);
                        let alone = start < TOKEN_CONTEXT || end + TOKEN_CONTEXT > whole.len();
                        found.push((f, i, alone));
                    });
                }
            }
        }
        let (pre, last) = preorder(&parent);
        let (at, spans) = holder_spans(search.nfa.patterns_len(), &found, &pre, &last);
        TextFacts { pre, at, spans }
    }

    /// Whether text `i` holds fact `fact`.
    pub fn holds(&self, i: usize, fact: u32) -> bool {
        let f = fact as usize;
        let (Some(&p), Some(&a), Some(&b)) = (self.pre.get(i), self.at.get(f), self.at.get(f + 1))
        else {
            return false;
        };
        let r = &self.spans[a as usize..b as usize];
        let at = r.partition_point(|&(a, _)| a <= p);
        at > 0 && r[at - 1].1 >= p
    }
}

/// Finds a text's seed among the earlier texts by identity.
struct SeedIndex {
    /// Texts by identity, filled only as far as a seed that is not the text just before
    /// needs it: a rolling summary's seed is the summary before it, and a map as large as
    /// the replay's texts is a cache miss per lookup on a long one.
    by_node: KeyMap<u32>,
    indexed: usize,
    /// The text just before: (its identity, its index).
    prev: Option<(usize, u32)>,
}

impl SeedIndex {
    fn new() -> SeedIndex {
        SeedIndex {
            by_node: key_map(0),
            indexed: 0,
            prev: None,
        }
    }

    /// Node ids are addresses: an odd multiple spreads their bits and keeps them distinct.
    fn key(t: &SummaryText) -> u64 {
        (t.node_id() as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)
    }

    /// The index of `seed` among `texts[..i]`, if it is one of them.
    fn find(&mut self, texts: &[Option<&SummaryText>], i: u32, seed: &SummaryText) -> Option<u32> {
        match self.prev {
            Some((node, k)) if node == seed.node_id() => Some(k),
            _ => {
                for (k, t) in texts.iter().enumerate().take(i as usize).skip(self.indexed) {
                    if let Some(t) = t {
                        self.by_node.insert(Self::key(t), k as u32);
                    }
                }
                self.indexed = i as usize;
                self.by_node.get(&Self::key(seed)).copied()
            }
        }
    }
}

/// Texts' first bytes, interned: chains share them.
#[derive(Default)]
struct Prefixes {
    list: Vec<String>,
    ids: HashMap<String, u32>,
}

impl Prefixes {
    fn intern(&mut self, p: String) -> u32 {
        if let Some(&id) = self.ids.get(p.as_str()) {
            return id;
        }
        let id = self.list.len() as u32;
        self.list.push(p.clone());
        self.ids.insert(p, id);
        id
    }
}

/// The facts starting in a head or near the seed's start: per (head, seed's prefix),
/// searched once (a chain's heads pile up the same way), with the prefix of the text that
/// window starts.
struct HeadWindows<'t> {
    /// Bytes of a text's prefix: the longest fact's and its context either side.
    keep: usize,
    prefixes: Prefixes,
    /// A summarizer has one head or a few: a list.
    head_ids: Vec<&'t str>,
    /// Windows by (head, prefix) as one key, spread by an odd multiplier: (its facts at
    /// `facts[a..b]`, the prefix it starts).
    windows: KeyMap<(u32, u32, u32)>,
    /// (fact, found within [`TOKEN_CONTEXT`] of the text's start)
    facts: Vec<(u32, bool)>,
    window: String,
}

impl<'t> HeadWindows<'t> {
    fn new(keep: usize) -> HeadWindows<'t> {
        HeadWindows {
            keep,
            prefixes: Prefixes::default(),
            head_ids: Vec::new(),
            windows: key_map(0),
            facts: Vec::new(),
            window: String::new(),
        }
    }

    /// The facts starting in `head` followed by the seed prefix `seed_prefix`, or in that
    /// prefix's first [`TOKEN_CONTEXT`] bytes (at `facts[a..b]`; their right context is in
    /// the window, as the prefix holds the longest fact and its context past them), and the
    /// interned prefix of that window: `(a, b, prefix)`.
    fn window(&mut self, search: &TextSearch, head: &'t str, seed_prefix: u32) -> (u32, u32, u32) {
        let h = match self.head_ids.iter().position(|&x| x == head) {
            Some(h) => h as u32,
            None => {
                self.head_ids.push(head);
                self.head_ids.len() as u32 - 1
            }
        };
        let key = (u64::from(h) << 32 | u64::from(seed_prefix)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let HeadWindows {
            keep,
            prefixes,
            windows,
            facts,
            window,
            ..
        } = self;
        *windows.entry(key).or_insert_with(|| {
            window.clear();
            window.push_str(head);
            window.push_str(&prefixes.list[seed_prefix as usize]);
            let a = facts.len() as u32;
            let near = head.len() + TOKEN_CONTEXT;
            search.occurrences(window, |f, start| {
                if start < near {
                    facts.push((f, start < TOKEN_CONTEXT));
                }
            });
            let mut cut = (*keep).min(window.len());
            while !window.is_char_boundary(cut) {
                cut += 1;
            }
            let own = prefixes.intern(window[..cut].to_string());
            (a, facts.len() as u32, own)
        })
    }
}

/// The texts holding each fact as pre-order ranges, grouped by fact: `(at, spans)` of
/// [`TextFacts`]: a subtree, or one text (a range of one). Per fact ascending, and a range
/// inside the last kept one dropped (they nest or are disjoint); compacted in place.
fn holder_spans(
    facts: usize,
    found: &[Found],
    pre: &[u32],
    last: &[u32],
) -> (Vec<u32>, Vec<(u32, u32)>) {
    // a holder as text << 1 | alone
    let pairs = found
        .iter()
        .map(|&(f, i, alone)| (f, i << 1 | u32::from(alone)));
    let (mut at, holders) = grouped(facts, pairs);
    let mut spans: Vec<(u32, u32)> = holders
        .iter()
        .map(|&h| {
            let i = (h >> 1) as usize;
            (pre[i], if h & 1 == 1 { pre[i] } else { last[i] })
        })
        .collect();
    let mut w = 0usize;
    for f in 0..facts {
        let (a, b) = (at[f] as usize, at[f + 1] as usize);
        at[f] = w as u32;
        if a == b {
            continue;
        }
        // widest first where two start together (a text alone inside its subtree)
        spans[a..b].sort_unstable_by_key(|&(a, b)| (a, std::cmp::Reverse(b)));
        let first = w;
        for k in a..b {
            let x = spans[k];
            if w == first || x.0 > spans[w - 1].1 {
                spans[w] = x;
                w += 1;
            }
        }
    }
    at[facts] = w as u32;
    spans.truncate(w);
    (at, spans)
}

/// What a replay's summary texts hold (the automaton's patterns), by compaction: each text
/// searched once, for both tallies (`facts_dropped` and the references).
#[derive(Debug, Clone)]
pub enum Searched {
    /// Some texts are written around their seeds: from what each added ([`TextFacts`]).
    Held(TextFacts),
    /// Every text stands alone: the patterns it holds, ascending ([`found_in`]).
    Listed(Vec<Vec<u32>>),
}

impl Searched {
    /// `texts[i]`: the text of compaction i (`None`: it wrote none).
    pub fn new(texts: &[Option<&SummaryText>], search: &TextSearch) -> Searched {
        if texts.iter().flatten().any(|t| t.parts().1.is_some()) {
            return Searched::Held(TextFacts::new(texts, search));
        }
        Searched::Listed(
            texts
                .iter()
                .map(|t| t.map_or_else(Vec::new, |t| found_in(search, &t.whole())))
                .collect(),
        )
    }

    /// Whether text `i` holds pattern `p`.
    pub fn holds(&self, i: usize, p: u32) -> bool {
        match self {
            Searched::Held(h) => h.holds(i, p),
            Searched::Listed(l) => l.get(i).is_some_and(|l| l.binary_search(&p).is_ok()),
        }
    }
}

/// `(key, value)` pairs (keys below `keys`) grouped by key, in their order within a key (a
/// counting sort): key k's values are `values[at[k]..at[k + 1]]`. Flat, where a list per key
/// cost an allocation per key at every replay.
fn grouped(keys: usize, pairs: impl Iterator<Item = (u32, u32)> + Clone) -> (Vec<u32>, Vec<u32>) {
    let mut at = vec![0u32; keys + 1];
    for (k, _) in pairs.clone() {
        at[k as usize + 1] += 1;
    }
    for k in 0..keys {
        at[k + 1] += at[k];
    }
    let mut next = at.clone();
    let mut values = vec![0u32; at[keys] as usize];
    for (k, v) in pairs {
        values[next[k as usize] as usize] = v;
        next[k as usize] += 1;
    }
    (at, values)
}

/// Pre-order numbers and last pre-order number of each subtree of the forest `parent`
/// (`u32::MAX`: a root; a parent always comes before its children).
fn preorder(parent: &[u32]) -> (Vec<u32>, Vec<u32>) {
    let n = parent.len();
    // children as one list grouped by parent, in index order
    let (at, children) = grouped(
        n,
        (0..n as u32).filter_map(|i| {
            Some(parent[i as usize])
                .filter(|&p| p != u32::MAX)
                .map(|p| (p, i))
        }),
    );
    let mut pre = vec![0u32; n];
    let mut last = vec![0u32; n];
    let mut count = 0u32;
    let mut stack: Vec<(u32, bool)> = Vec::new();
    for root in (0..n).filter(|&i| parent[i] == u32::MAX) {
        stack.push((root as u32, false));
        while let Some((i, done)) = stack.pop() {
            let i = i as usize;
            if done {
                last[i] = count - 1;
                continue;
            }
            pre[i] = count;
            count += 1;
            stack.push((i as u32, true));
            let kids = &children[at[i] as usize..at[i + 1] as usize];
            stack.extend(kids.iter().rev().map(|&c| (c, false)));
        }
    }
    (pre, last)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detail::token::holds;

    /// Every (text, fact) pair: `holds` agrees with searching the whole text.
    fn assert_agrees(texts: &[Option<&SummaryText>], facts: &[impl AsRef<str>], what: &str) {
        let patterns: Vec<&str> = facts.iter().map(|f| f.as_ref()).collect();
        let ac = automaton(&patterns).unwrap();
        // twice: the second finds the lines the first searched
        let tf = TextFacts::new(texts, &ac);
        let again = TextFacts::new(texts, &ac);
        for (i, t) in texts.iter().enumerate() {
            let whole = t.map(|t| t.to_string()).unwrap_or_default();
            let contained: Vec<u32> = (0..facts.len() as u32)
                .filter(|&k| holds(&whole, facts[k as usize].as_ref()))
                .collect();
            assert_eq!(
                found_in(&ac, &whole),
                contained,
                "{what}: found_in text {i} {whole:?}"
            );
            for (k, fact) in facts.iter().enumerate() {
                let fact = fact.as_ref();
                let held = t.is_some() && holds(&whole, fact);
                assert_eq!(
                    tf.holds(i, k as u32),
                    held,
                    "{what}: text {i} {whole:?}, fact {fact:?}"
                );
                assert_eq!(
                    again.holds(i, k as u32),
                    held,
                    "{what}: again, text {i}, {fact:?}"
                );
            }
        }
    }

    /// Every (text, fact) pair agrees with [`holds`] on the whole text: chains, branches
    /// (two texts on one seed), facts across the joins, texts with no seed among the list.
    #[test]
    fn text_facts_agree_with_searching_each_whole_text() {
        // " user: orde" is as long as the longest and starts at the head's last byte: it ends
        // at the last byte of the seed's part of the head window
        let facts = [
            "4521",
            "model: user",
            " user: orde",
            "\nagent",
            "ok\nmodel",
            "A-12",
            "zz",
        ];
        let a = SummaryText::flat("user: order 4521 ok".into());
        let b = SummaryText::seeded("model: ", &a, "\nagent: A-1", None);
        let c = SummaryText::seeded("model: ", &b, "2 done", None);
        let d = SummaryText::seeded("model: ", &a, "", None);
        let orphan_seed = SummaryText::flat("zz top".into());
        let e = SummaryText::seeded("model: ", &orphan_seed, "\nmodel", None);
        let f = SummaryText::seeded("model: ", &e, "\nuser: fine", None);
        let texts = [
            Some(&a),
            Some(&b),
            None,
            Some(&c),
            Some(&d),
            Some(&e),
            Some(&f),
        ];
        assert_agrees(&texts, &facts, "fixed");
    }

    /// A fact at a seed's start or end, where the text written around it continues it (a
    /// head `1` before `80`, a tail `5` after it, `.bak` after a path, `val` before `id`), is
    /// not held by that text, nor by the texts written around it in turn.
    #[test]
    fn a_fact_at_a_seed_s_ends_is_not_held_where_the_text_around_it_continues_it() {
        let facts = ["80", "src/a.rs", "id", "4521"];
        let a = SummaryText::flat("80 was the port; order 4521, then src/a.rs".into());
        let b = SummaryText::seeded("1", &a, ".bak and 805", None);
        let c = SummaryText::seeded("val", &b, "", None);
        let d = SummaryText::seeded("val", &a, " id", None);
        let e = SummaryText::seeded(" ", &d, ".", None);
        let f = SummaryText::seeded("x", &e, "1", None);
        let texts = [Some(&a), Some(&b), Some(&c), Some(&d), Some(&e), Some(&f)];
        let search = automaton(&facts).unwrap();
        assert!(
            a.len() >= search.nfa.max_pattern_len() + 2 * TOKEN_CONTEXT,
            "seeded"
        );
        let held = TextFacts::new(&texts, &search);
        assert!(
            held.holds(0, 0) && held.holds(0, 1),
            "a holds 80 and the path"
        );
        assert!(
            !held.holds(1, 0) && !held.holds(1, 1),
            "b: 180, src/a.rs.bak, 805"
        );
        assert!(!held.holds(2, 0) && !held.holds(2, 1), "c: b's ends again");
        assert!(
            held.holds(3, 0) && held.holds(3, 1),
            "d: val80 and src/a.rs id"
        );
        assert!(held.holds(3, 2) && held.holds(5, 2), "d, f: \" id\"");
        assert!(held.holds(5, 1), "f: src/a.rs id.1");
        assert!(!held.holds(2, 2), "c: no id");
        assert!((0..6).all(|i| held.holds(i, 3)), "4521 away from every end");
        assert_agrees(&texts, &facts, "seed ends");
    }

    /// Random forests of texts over a small alphabet (so facts often cross the joins), with
    /// short and long seeds, deep chains and branches: `holds` agrees with [`holds`] on each
    /// whole text, for facts bounded as numbers, paths and words.
    #[test]
    fn random_seed_forests_agree_with_whole_texts() {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut rnd = |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        // digits, `.`, `/`, `-`, letters: facts bounded as numbers, paths and words, whose
        // occurrences at a seed's ends the text around it may continue
        let alphabet = ['a', '1', '.', '/', ' ', '\n', '\u{e9}', '-', '1', 'a', '_'];
        for round in 0..600 {
            let word = |len: u64, rnd: &mut dyn FnMut(u64) -> u64| -> String {
                (0..len).map(|_| alphabet[rnd(11) as usize]).collect()
            };
            // every other round no fact holds a `\n`: texts are then searched by their lines
            let mut facts: Vec<String> = (0..8).map(|_| word(1 + rnd(4), &mut rnd)).collect();
            if round % 2 == 1 {
                for f in &mut facts {
                    *f = f.replace('\n', "b");
                }
                assert!(automaton(&facts).unwrap().lines.is_some());
            }
            let mut texts: Vec<SummaryText> = Vec::new();
            for _ in 0..40 {
                let t = if texts.is_empty() || rnd(4) == 0 {
                    SummaryText::flat(word(rnd(40), &mut rnd))
                } else {
                    let seed = texts[rnd(texts.len() as u64) as usize].clone();
                    let head = ["model: ", "", "a", "1", "b/", "."][rnd(6) as usize];
                    SummaryText::seeded(head, &seed, &word(rnd(5), &mut rnd), None)
                };
                texts.push(t);
            }
            // some texts are missing from the list (a seed it cannot find)
            let listed: Vec<Option<&SummaryText>> =
                texts.iter().map(|t| (rnd(9) != 0).then_some(t)).collect();
            assert_agrees(&listed, &facts, &format!("round {round}"));
        }
    }
}
