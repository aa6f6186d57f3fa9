//! Facts a reader may need verbatim after a compaction, and the share a summary drops
//! (`facts_dropped` in metrics.md; only for summarizers that really write text).
//!
//! A fact is one of: a URL, an email address, a double-quoted or backticked string
//! (2-120 chars), a file path (starts with `/`, `~/`, `./`, `../`, or has a directory and an
//! extension), an id like `ABC-123`, or a number with 2+ digits. Kinds are taken in that
//! order and each match is masked before the next kind is searched, so the digits of a URL
//! are not also counted as a number. A fact is kept when the summary holds it verbatim as a
//! whole token ([`holds`]): `80` is not in `1480`, `id` not in `valid`.

use super::token::holds;
use crate::transcript::{Event, Part};
use regex::Regex;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;

struct Patterns {
    ordered: Vec<(Regex, usize, FactKind)>,
}

/// The kind of a fact: which pattern found it first (retention is fitted per kind).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FactKind {
    Url,
    Email,
    Quoted,
    Path,
    Id,
    Number,
}

impl FactKind {
    pub const ALL: [FactKind; 6] = [
        FactKind::Url,
        FactKind::Email,
        FactKind::Quoted,
        FactKind::Path,
        FactKind::Id,
        FactKind::Number,
    ];

    pub fn name(self) -> &'static str {
        match self {
            FactKind::Url => "url",
            FactKind::Email => "email",
            FactKind::Quoted => "quoted",
            FactKind::Path => "path",
            FactKind::Id => "id",
            FactKind::Number => "number",
        }
    }

    pub fn parse(s: &str) -> Option<FactKind> {
        FactKind::ALL.into_iter().find(|k| k.name() == s)
    }

    /// Position in [`FactKind::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }
}

fn patterns() -> &'static Patterns {
    static P: OnceLock<Patterns> = OnceLock::new();
    P.get_or_init(|| {
        // The patterns are constants; `expect` cannot fail on input data.
        let r = |s: &str| Regex::new(s).expect("valid fact pattern");
        Patterns {
            ordered: vec![
                (r(r#"https?://[^\s"'<>`)\]}]+"#), 0, FactKind::Url),
                (
                    r(r"[A-Za-z0-9._%+\-]+@[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*\.[A-Za-z]{2,}"),
                    0,
                    FactKind::Email,
                ),
                (r(r#""([^"\n]{2,120})""#), 1, FactKind::Quoted),
                (r(r"`([^`\n]{2,120})`"), 1, FactKind::Quoted),
                (
                    r(r#"(?:^|[\s"'(=:\[,])((?:~|\.\.?)?/[\w.\-]+(?:/[\w.\-]+)*/?)"#),
                    1,
                    FactKind::Path,
                ),
                (
                    r(r"\b([\w\-]+(?:/[\w.\-]+)+\.[A-Za-z0-9]{1,8})\b"),
                    1,
                    FactKind::Path,
                ),
                (r(r"\b[A-Z][A-Z0-9]{1,9}-\d+\b"), 0, FactKind::Id),
                (r(r"\d+(?:[.,]\d+)*"), 0, FactKind::Number),
            ],
        }
    })
}

/// The distinct facts in a text.
pub fn extract_facts(text: &str) -> BTreeSet<String> {
    extract_fact_kinds(text).into_keys().collect()
}

/// The distinct facts in a text with their kind (the first pattern that found each).
pub fn extract_fact_kinds(text: &str) -> BTreeMap<String, FactKind> {
    let mut facts = BTreeMap::new();
    let mut masked = text.to_string();
    for (re, group, kind) in &patterns().ordered {
        let mut spans = Vec::new();
        for caps in re.captures_iter(&masked) {
            let Some(m) = caps.get(*group) else { continue };
            // The fact as the original text spells it: a match may span a masked earlier fact
            // (a backticked `f("x")` after "x" was taken), and the masked copy is in no text.
            let Some(mut fact) = text.get(m.start()..m.end()) else {
                continue;
            };
            if *group == 0 && fact.starts_with("http") {
                fact = fact.trim_end_matches(['.', ',', ';', ':', '!', '?']);
            }
            let is_number = fact
                .bytes()
                .all(|b| b.is_ascii_digit() || b == b'.' || b == b',');
            if is_number && fact.bytes().filter(u8::is_ascii_digit).count() < 2 {
                continue;
            }
            if fact.trim().is_empty() {
                continue;
            }
            facts.entry(fact.to_string()).or_insert(*kind);
            spans.push((m.start(), m.start() + fact.len()));
        }
        for (s, e) in spans {
            // Mask with spaces of the same byte length so later offsets stay valid.
            if masked.is_char_boundary(s) && masked.is_char_boundary(e) {
                masked.replace_range(s..e, &" ".repeat(e - s));
            }
        }
    }
    facts
}

/// The text of an event that facts are drawn from: text and thoughts, and the string and
/// number values (not the keys) of tool arguments and responses.
pub fn event_fact_text(event: &Event) -> String {
    let mut out = String::new();
    for part in &event.parts {
        match part {
            Part::Text { text } | Part::Thought { text } => {
                out.push_str(text);
                out.push('\n');
            }
            Part::ToolCall { args, .. } => json_values(args, &mut out),
            Part::ToolResponse { response, .. } => json_values(response, &mut out),
            Part::Attachment { .. } => {}
        }
    }
    out
}

/// The text of a model event the agent *used*: its text and its tool calls' arguments
/// (metrics.md "References"); thoughts and tool responses are not the agent's use of a fact.
pub fn model_use_text(event: &Event) -> String {
    let mut out = String::new();
    for part in &event.parts {
        match part {
            Part::Text { text } => {
                out.push_str(text);
                out.push('\n');
            }
            Part::ToolCall { args, .. } => json_values(args, &mut out),
            _ => {}
        }
    }
    out
}

fn json_values(v: &serde_json::Value, out: &mut String) {
    match v {
        serde_json::Value::String(s) => {
            // NaN / Infinity / big integers read from Python JSON: their printed form.
            match crate::transcript::pyjson::tagged(s) {
                Some(n) => out.push_str(n.repr()),
                None => out.push_str(s),
            }
            out.push('\n');
        }
        serde_json::Value::Number(n) => {
            out.push_str(&n.to_string());
            out.push('\n');
        }
        serde_json::Value::Array(a) => a.iter().for_each(|x| json_values(x, out)),
        serde_json::Value::Object(o) => o.values().for_each(|x| json_values(x, out)),
        _ => {}
    }
}

/// Facts of a compacted span and how many of them the summary lost.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FactTally {
    pub total: u64,
    pub dropped: u64,
}

impl FactTally {
    pub fn add(&mut self, other: FactTally) {
        self.total += other.total;
        self.dropped += other.dropped;
    }

    /// Share dropped, 0..1 (0 when the spans held no facts).
    pub fn share(&self) -> f64 {
        if self.total == 0 {
            0.0
        } else {
            self.dropped as f64 / self.total as f64
        }
    }
}

/// Count the facts of `span` and those missing from `summary`.
pub fn tally<'a>(span: impl IntoIterator<Item = &'a Event>, summary: &str) -> FactTally {
    let mut facts = BTreeSet::new();
    for e in span {
        facts.extend(extract_facts(&event_fact_text(e)));
    }
    let dropped = facts.iter().filter(|f| !holds(summary, f)).count() as u64;
    FactTally {
        total: facts.len() as u64,
        dropped,
    }
}

/// [`tally`] over facts found beforehand: `facts[i]` are event `i`'s (see
/// [`event_facts`]); the same count, without reading the events again.
pub fn tally_found(facts: &EventFacts, span: std::ops::Range<usize>, summary: &str) -> FactTally {
    tally_held(facts, span, |f| holds(summary, facts.fact(f)))
}

/// [`tally_found`] where `held(fact id)` says whether the summary holds a fact (found
/// beforehand, e.g. by [`super::text_facts::TextFacts`]).
pub fn tally_held(
    facts: &EventFacts,
    span: std::ops::Range<usize>,
    held: impl Fn(u32) -> bool,
) -> FactTally {
    let all = facts.distinct(span);
    let dropped = all.iter().filter(|&&f| !held(f)).count() as u64;
    FactTally {
        total: all.len() as u64,
        dropped,
    }
}

/// Each event's facts (what [`tally`] finds in a span, one event at a time), each distinct
/// fact stored once: a long session repeats the same order numbers and amounts in turn after
/// turn, and a list of strings per event was most of its memory.
#[derive(Debug, Clone, Default)]
pub struct EventFacts {
    /// The distinct facts, in order of first appearance.
    facts: Vec<String>,
    /// Event i's facts as indices into `facts` (ascending by text, as `extract_facts`
    /// gives them): `ids[start[i]..start[i + 1]]`.
    ids: Vec<u32>,
    start: Vec<u32>,
}

impl EventFacts {
    /// The distinct facts of events `span`, ascending. (A sorted list, not a set: a span of a
    /// long session holds thousands, and a tree node per fact was most of a tally.)
    pub fn distinct(&self, span: std::ops::Range<usize>) -> Vec<u32> {
        let mut all: Vec<u32> = Vec::new();
        for i in span {
            all.extend_from_slice(self.ids(i));
        }
        all.sort_unstable();
        all.dedup();
        all
    }

    /// The facts of event `i` as ids (empty past the last event).
    pub fn ids(&self, i: usize) -> &[u32] {
        match (self.start.get(i), self.start.get(i + 1)) {
            (Some(&a), Some(&b)) => &self.ids[a as usize..b as usize],
            _ => &[],
        }
    }

    /// The text of fact `id`.
    pub fn fact(&self, id: u32) -> &str {
        &self.facts[id as usize]
    }

    /// The facts of event `i`.
    pub fn of(&self, i: usize) -> impl Iterator<Item = &str> + '_ {
        self.ids(i).iter().map(|&f| self.fact(f))
    }

    /// The distinct facts (fact id = index).
    pub fn facts(&self) -> &[String] {
        &self.facts
    }

    /// Events covered.
    pub fn len(&self) -> usize {
        self.start.len().saturating_sub(1)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Events whose facts are found in parallel before they are interned: enough to share out,
/// few enough that their fact sets stay small.
pub(crate) const FACT_CHUNK: usize = 4096;

/// Each event's facts, in order.
pub fn event_facts(session: &crate::transcript::Session) -> EventFacts {
    let mut out = EventFacts {
        start: vec![0],
        ..EventFacts::default()
    };
    use rayon::prelude::*;
    // the map owns each fact's text until the end, then hands it over (no second copy)
    let mut known: std::collections::HashMap<String, u32> = std::collections::HashMap::new();
    // found in parallel a chunk at a time (the regexes over a long session's text were most
    // of its first replay), interned in order
    for chunk in session.events.chunks(FACT_CHUNK) {
        let found: Vec<BTreeSet<String>> = chunk
            .par_iter()
            .map(|e| extract_facts(&event_fact_text(e)))
            .collect();
        for facts in found {
            for f in facts {
                let next = known.len() as u32;
                let id = *known.entry(f).or_insert(next);
                out.ids.push(id);
            }
            out.start.push(out.ids.len() as u32);
        }
    }
    out.facts = vec![String::new(); known.len()];
    for (f, id) in known {
        out.facts[id as usize] = f;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transcript::Role;

    /// A session of user messages, one per text.
    fn user_session(texts: &[&str]) -> crate::transcript::Session {
        let events = texts
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let mut e = Event::new("user", Role::User, "i1", i as f64);
                e.parts.push(Part::Text { text: (*t).into() });
                e
            })
            .collect();
        crate::transcript::Session::new("s", "mem", crate::transcript::Format::Canonical, events)
    }

    fn set(v: &[&str]) -> BTreeSet<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn each_kind_is_found_once() {
        let t = "Order 4521 for bob@example.com, see https://x.io/a/77 and /var/log/app.log; \
                 ticket ABC-123 said \"refund approved\" at 9 am, file src/cost/mod.rs.";
        assert_eq!(
            extract_facts(t),
            set(&[
                "4521",
                "bob@example.com",
                "https://x.io/a/77",
                "/var/log/app.log",
                "ABC-123",
                "refund approved",
                "src/cost/mod.rs"
            ])
        );
    }

    /// Issue 13: a fact repeated turn after turn is stored once; every event holding it
    /// reads it back, with its other facts.
    #[test]
    fn event_facts_store_each_distinct_fact_once() {
        let texts = [
            "order 4521 shipped",
            "still about order 4521, see ABC-123",
            "nothing",
        ];
        let found = event_facts(&user_session(&texts));
        assert_eq!(found.len(), 3);
        for (i, t) in texts.iter().enumerate() {
            let want: Vec<String> = extract_facts(t).into_iter().collect();
            let got: Vec<&str> = found.of(i).collect();
            assert_eq!(got, want, "event {i}");
        }
        assert_eq!(found.ids(0), &found.ids(1)[..1], "4521 is one fact");
        let distinct: BTreeSet<&str> = (0..3).flat_map(|i| found.of(i)).collect();
        assert_eq!(found.facts.len(), distinct.len());
    }

    #[test]
    fn a_fact_spanning_an_earlier_one_is_spelled_as_in_the_text() {
        // "1.4" is taken first (quoted); the backticked fact around it keeps its real text.
        let t = "add `{:dialyxir, \"~> 1.4\", only: :dev}` to mix.exs";
        let f = extract_facts(t);
        assert!(f.contains("{:dialyxir, \"~> 1.4\", only: :dev}"), "{f:?}");
        assert!(f.iter().all(|x| t.contains(x.as_str())), "{f:?}");
    }

    #[test]
    fn a_relative_path_after_a_slash_is_held_as_the_extractor_takes_it() {
        let text = "app/(protected)/dashboard/page.tsx:12";
        assert!(extract_facts(text).contains("dashboard/page.tsx"));
        assert!(holds(text, "dashboard/page.tsx"));
        assert!(holds("see app/src/cost/mod.rs", "src/cost/mod.rs"));
    }

    /// Every fact the extractor finds in a text is held by that text: the bounds are no
    /// stricter than the extractor's own.
    #[test]
    fn every_fact_found_in_a_text_is_held_by_it() {
        let texts = [
            "Order 4521 for bob@example.com, see https://x.io/a/77 and /var/log/app.log; \
             ticket ABC-123 said \"refund approved\" at 9 am, file src/cost/mod.rs.",
            "go get github.com/x/y.go, then -b/c.rs and ./src/x.rs or ~/notes/a.md:",
            "add `{:dialyxir, \"~> 1.4\", only: :dev}` to mix.exs (line 80, 1,480 chars)",
            "Flight UA-991 on 2024-05-12 costs 450, seat 14C, x86_64, 180.5 s, v2.0.1",
            "see https://x.io/a?b=1&c=2. and (https://x.io/z) or https://x.io/q!",
            "user_id=4521;ratio=0.80 path=/tmp/a-b/c_d.txt [/etc/hosts] 'x/y.json'",
        ];
        for t in texts {
            for f in extract_facts(t) {
                assert!(holds(t, &f), "{f:?} in {t:?}");
            }
        }
    }

    #[test]
    fn single_digits_and_plain_words_are_not_facts() {
        assert!(extract_facts("I have 3 cats and/or 1 dog, it's fine").is_empty());
    }

    #[test]
    fn tally_counts_missing_facts() {
        let mut e = Event::new("user", Role::User, "i1", 1.0);
        e.parts.push(Part::Text {
            text: "Flight UA-991 on 2024-05-12 costs 450".into(),
        });
        e.parts.push(Part::ToolResponse {
            id: None,
            name: "t".into(),
            response: serde_json::json!({"seat": "14C", "gate": 27}),
        });
        // facts: UA-991, 2024, 05, 12, 450 (the date splits into numbers: `-` is not a
        // separator), 27 ("14C" is not a number: "14" is, with 2 digits). Let us list:
        let facts = extract_facts(&event_fact_text(&e));
        assert_eq!(
            facts,
            set(&["UA-991", "2024", "05", "12", "450", "14", "27"])
        );
        // Summary keeps UA-991 and 450 only: 5 of 7 dropped.
        let t = tally([&e], "user: Flight UA-991 costs 450");
        assert_eq!(
            t,
            FactTally {
                total: 7,
                dropped: 5
            }
        );
        assert!((t.share() - 5.0 / 7.0).abs() < 1e-12);
    }

    #[test]
    fn facts_found_beforehand_tally_the_same() {
        let texts = [
            "Order 4521 for bob@example.com",
            "ticket ABC-123 \"refund approved\" 4521",
            "nothing here",
            "see /var/log/app.log at 9 am, order 7788",
        ];
        let session = user_session(&texts);
        let found = event_facts(&session);
        let summaries = [
            "",
            "order 4521, ABC-123",
            "refund approved /var/log/app.log 7788",
        ];
        for a in 0..=texts.len() {
            for b in a..=texts.len() {
                for sum in summaries {
                    assert_eq!(
                        tally_found(&found, a..b, sum),
                        tally(&session.events[a..b], sum),
                        "span {a}..{b}, summary {sum:?}"
                    );
                    // one automaton pass over the summary (extra patterns after the facts,
                    // as the references add them, are never counted)
                    let patterns: Vec<&str> = found
                        .facts()
                        .iter()
                        .map(String::as_str)
                        .chain(["order", "7788 "])
                        .collect();
                    let ac = crate::detail::text_facts::automaton(&patterns).unwrap();
                    let listed = crate::detail::text_facts::found_in(&ac, sum);
                    assert_eq!(
                        tally_held(&found, a..b, |f| listed.binary_search(&f).is_ok()),
                        tally(&session.events[a..b], sum),
                        "span {a}..{b}, summary {sum:?}, listed"
                    );
                }
            }
        }
        // the sets overlap across events (4521 twice): counted once
        assert_eq!(tally_found(&found, 0..2, "").total, 4);
    }
}
