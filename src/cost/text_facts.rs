//! Which facts each summary text of a replay holds, when texts are written around their seeds.
//!
//! A rolling summarizer's text holds its seed's text whole (`terse`: `model: ` + seed + new
//! lines), so it holds every fact its seed holds. Searching each text in full makes a long
//! replay quadratic; here each text is searched only where it differs from its seed: the
//! head with the seed's first bytes, and the seed's last bytes with the tail (as long as the
//! longest fact, less one, so a fact crossing a join is found). A fact is then held by every
//! text descending from one where it was found: a subtree of the seed forest, one range of
//! its pre-order numbers.

use crate::engine::summarizer::SummaryText;
use aho_corasick::automaton::{Automaton, StateID};
use aho_corasick::nfa::contiguous::NFA;
use aho_corasick::Anchored;
use std::collections::HashMap;

/// The automaton [`TextFacts`] searches with (pattern i = fact i): its state can be carried
/// from the end of a seed into the text written around it. (A DFA was tried: over a long
/// session's facts its tables are tens of MB and searching was slower.)
pub fn automaton<P: AsRef<[u8]>>(facts: &[P]) -> Option<NFA> {
    NFA::new(facts).ok()
}

/// Facts (the automaton's patterns) held by each text of a list.
#[derive(Debug, Clone, Default)]
pub struct TextFacts {
    /// Per text: its pre-order number in the seed forest.
    pre: Vec<u32>,
    /// Per fact: the pre-order ranges (closed, disjoint, ascending) of the texts holding it.
    ranges: Vec<Vec<(u32, u32)>>,
}

/// Feed `hay` to the automaton from state `sid`, calling `found` with each pattern ending in
/// it (overlapping); the state after it.
fn scan(ac: &NFA, mut sid: StateID, hay: &str, mut found: impl FnMut(u32)) -> StateID {
    for &b in hay.as_bytes() {
        sid = ac.next_state(Anchored::No, sid, b);
        if ac.is_match(sid) {
            for k in 0..ac.match_len(sid) {
                found(ac.match_pattern(sid, k).as_u32());
            }
        }
    }
    sid
}

impl TextFacts {
    /// `texts[i]`: the text of summary i (`None`: it wrote none); a text's seed is found among
    /// the earlier texts by identity.
    ///
    /// A text `head + seed + tail` whose seed is known and at least as long as the longest
    /// fact is searched in two places: the head with the seed's first bytes (a fact starting
    /// in the head; one search per distinct such window, as a chain's heads pile up the same
    /// way), and the tail, the search resumed where the seed's ended (the automaton's state
    /// after a text depends on its last bytes only, as many as the longest fact). Any other
    /// text is searched whole.
    pub fn new(texts: &[Option<&SummaryText>], ac: &NFA) -> TextFacts {
        let n = texts.len();
        let longest = ac.max_pattern_len();
        let Ok(start) = ac.start_state(Anchored::No) else {
            return TextFacts::default();
        };
        let mut parent: Vec<Option<usize>> = vec![None; n];
        let mut end: Vec<StateID> = vec![start; n];
        let mut by_node: HashMap<usize, usize> = HashMap::new();
        let mut heads: HashMap<String, Vec<u32>> = HashMap::new();
        let mut found: Vec<Vec<u32>> = vec![Vec::new(); ac.patterns_len()];
        let note = |found: &mut Vec<Vec<u32>>, i: usize, f: u32| {
            let list = &mut found[f as usize];
            if list.last() != Some(&(i as u32)) {
                list.push(i as u32);
            }
        };
        for (i, t) in texts.iter().enumerate() {
            let Some(t) = t else { continue };
            by_node.insert(t.node_id(), i);
            let (head, seed, tail) = t.parts();
            let p = seed.and_then(|s| by_node.get(&s.node_id()).copied());
            match (p, seed) {
                (Some(p), Some(seed)) if seed.len() >= longest => {
                    parent[i] = Some(p);
                    let window = [head, &seed.prefix(longest.saturating_sub(1))].concat();
                    let in_head = heads.entry(window).or_insert_with_key(|w| {
                        let mut fs = Vec::new();
                        scan(ac, start, w, |f| fs.push(f));
                        fs.sort_unstable();
                        fs.dedup();
                        fs
                    });
                    for &f in in_head.iter() {
                        note(&mut found, i, f);
                    }
                    end[i] = scan(ac, end[p], tail, |f| note(&mut found, i, f));
                }
                (p, _) => {
                    parent[i] = p;
                    end[i] = scan(ac, start, &t.whole(), |f| note(&mut found, i, f));
                }
            }
        }
        // pre-order numbers and subtree ends (a parent always comes before its children)
        let mut children: Vec<Vec<usize>> = vec![Vec::new(); n];
        for (i, p) in parent.iter().enumerate() {
            if let Some(p) = p {
                children[*p].push(i);
            }
        }
        let mut pre = vec![0u32; n];
        let mut last = vec![0u32; n];
        let mut next = 0u32;
        let mut stack: Vec<(usize, bool)> = Vec::new();
        for root in (0..n).filter(|&i| parent[i].is_none()) {
            stack.push((root, false));
            while let Some((i, done)) = stack.pop() {
                if done {
                    last[i] = next - 1;
                    continue;
                }
                pre[i] = next;
                next += 1;
                stack.push((i, true));
                stack.extend(children[i].iter().rev().map(|&c| (c, false)));
            }
        }
        let ranges = found
            .into_iter()
            .map(|nodes| {
                let mut r: Vec<(u32, u32)> = nodes
                    .iter()
                    .map(|&i| (pre[i as usize], last[i as usize]))
                    .collect();
                r.sort_unstable();
                let mut out: Vec<(u32, u32)> = Vec::with_capacity(r.len());
                for x in r {
                    // subtrees nest or are disjoint: drop one inside the last kept
                    if out.last().is_none_or(|l| x.0 > l.1) {
                        out.push(x);
                    }
                }
                out
            })
            .collect();
        TextFacts { pre, ranges }
    }

    /// Whether text `i` holds fact `fact`.
    pub fn holds(&self, i: usize, fact: u32) -> bool {
        let (Some(&p), Some(r)) = (self.pre.get(i), self.ranges.get(fact as usize)) else {
            return false;
        };
        let at = r.partition_point(|&(a, _)| a <= p);
        at > 0 && r[at - 1].1 >= p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every (text, fact) pair: `holds` agrees with searching the whole text.
    fn assert_agrees(texts: &[Option<&SummaryText>], facts: &[impl AsRef<str>], what: &str) {
        let patterns: Vec<&str> = facts.iter().map(|f| f.as_ref()).collect();
        let ac = automaton(&patterns).unwrap();
        let tf = TextFacts::new(texts, &ac);
        for (i, t) in texts.iter().enumerate() {
            let whole = t.map(|t| t.to_string()).unwrap_or_default();
            for (k, fact) in facts.iter().enumerate() {
                let fact = fact.as_ref();
                assert_eq!(
                    tf.holds(i, k as u32),
                    t.is_some() && whole.contains(fact),
                    "{what}: text {i} {whole:?}, fact {fact:?}"
                );
            }
        }
    }

    /// Every (text, fact) pair agrees with `contains` on the whole text: chains, branches
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

    /// Random forests of texts over a small alphabet (so facts often cross the joins), with
    /// short and long seeds, deep chains and branches: `holds` agrees with `contains`.
    #[test]
    fn random_seed_forests_agree_with_whole_texts() {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut rnd = |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        let alphabet = ['a', 'b', ':', ' ', 'a', '\n', '\u{e9}'];
        for round in 0..600 {
            let word = |len: u64, rnd: &mut dyn FnMut(u64) -> u64| -> String {
                (0..len).map(|_| alphabet[rnd(7) as usize]).collect()
            };
            let facts: Vec<String> = (0..8).map(|_| word(1 + rnd(7), &mut rnd)).collect();
            let mut texts: Vec<SummaryText> = Vec::new();
            for _ in 0..40 {
                let t = if texts.is_empty() || rnd(4) == 0 {
                    SummaryText::flat(word(rnd(12), &mut rnd))
                } else {
                    let seed = texts[rnd(texts.len() as u64) as usize].clone();
                    let head = ["model: ", "", "a", "b:"][rnd(4) as usize];
                    SummaryText::seeded(head, &seed, &word(rnd(4), &mut rnd), None)
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
