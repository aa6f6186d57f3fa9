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
use aho_corasick::AhoCorasick;
use std::collections::HashMap;

/// Facts (the automaton's patterns) held by each text of a list.
#[derive(Debug, Clone, Default)]
pub struct TextFacts {
    /// Per text: its pre-order number in the seed forest.
    pre: Vec<u32>,
    /// Per fact: the pre-order ranges (closed, disjoint, ascending) of the texts holding it.
    ranges: Vec<Vec<(u32, u32)>>,
}

impl TextFacts {
    /// `texts[i]`: the text of summary i (`None`: it wrote none); a text's seed is found among
    /// the earlier texts by identity. `ac` has pattern i = fact i; `longest` is the longest
    /// fact in bytes.
    pub fn new(texts: &[Option<&SummaryText>], ac: &AhoCorasick, longest: usize) -> TextFacts {
        let n = texts.len();
        let mut parent: Vec<Option<usize>> = vec![None; n];
        let mut by_node: HashMap<usize, usize> = HashMap::new();
        let mut found: Vec<Vec<u32>> = vec![Vec::new(); ac.patterns_len()];
        let hit = |i: usize, hay: &str, found: &mut Vec<Vec<u32>>| {
            for m in ac.find_overlapping_iter(hay) {
                let list = &mut found[m.pattern().as_usize()];
                if list.last() != Some(&(i as u32)) {
                    list.push(i as u32);
                }
            }
        };
        for (i, t) in texts.iter().enumerate() {
            let Some(t) = t else { continue };
            by_node.insert(t.node_id(), i);
            let (head, seed, tail) = t.parts();
            let p = seed.and_then(|s| by_node.get(&s.node_id()).copied());
            match (p, seed) {
                (None, None) => hit(i, tail, &mut found),
                (None, Some(_)) => hit(i, &t.to_string(), &mut found),
                (Some(p), Some(seed)) => {
                    parent[i] = Some(p);
                    let edge = longest.saturating_sub(1);
                    if seed.len() <= edge {
                        hit(i, &t.to_string(), &mut found);
                    } else {
                        hit(i, &[head, &seed.prefix(edge)].concat(), &mut found);
                        hit(i, &[&seed.suffix(edge), tail].concat(), &mut found);
                    }
                }
                (Some(_), None) => unreachable!("a parent is found through a seed"),
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
        let mut end = vec![0u32; n];
        let mut next = 0u32;
        let mut stack: Vec<(usize, bool)> = Vec::new();
        for root in (0..n).filter(|&i| parent[i].is_none()) {
            stack.push((root, false));
            while let Some((i, done)) = stack.pop() {
                if done {
                    end[i] = next - 1;
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
                    .map(|&i| (pre[i as usize], end[i as usize]))
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

    /// Every (text, fact) pair agrees with `contains` on the whole text: chains, branches
    /// (two texts on one seed), facts across the joins, texts with no seed among the list.
    #[test]
    fn text_facts_agree_with_searching_each_whole_text() {
        let facts = ["4521", "model: user", "\nagent", "ok\nmodel", "A-12", "zz"];
        let ac = AhoCorasick::new(facts).unwrap();
        let longest = facts.iter().map(|f| f.len()).max().unwrap();
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
        let tf = TextFacts::new(&texts, &ac, longest);
        for (i, t) in texts.iter().enumerate() {
            let whole = t.map(|t| t.to_string()).unwrap_or_default();
            for (k, fact) in facts.iter().enumerate() {
                assert_eq!(
                    tf.holds(i, k as u32),
                    t.is_some() && whole.contains(fact),
                    "text {i} {whole:?}, fact {fact:?}"
                );
            }
        }
    }
}
