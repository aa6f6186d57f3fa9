//! Legacy ADK eval data (old `*.test.json` / `*.evalset.json`), read as
//! [`Format::AdkEvalSet`] sessions.
//!
//! Two shapes exist, both a top-level JSON list:
//! - a list of turns `[{query, expected_tool_use[{tool_name, tool_input}],
//!   expected_intermediate_agent_responses[{author, text}], reference}]`: one session per file
//!   (ADK's `AgentEvaluator` wraps such a file into one eval case named after the file);
//! - a list of cases `[{name, data:[turns…], initial_session?}]`: one session per case, as
//!   ADK's `convert_eval_set_to_pydanctic_schema` makes one `EvalCase` per entry.
//!
//! Each turn becomes one invocation, in the order ADK's converter fills an `Invocation`: the
//! user's query; one model request holding every expected tool call (ids are generated because
//! calls need them; the files record no responses, so none are invented); each intermediate
//! agent response as model text; the `reference` as the final model text. ADK's converter
//! ignores `mock_tool_output`, so this reader does too. The files hold no times, so timestamps
//! are synthesised ([`util::synthetic_time`]).

use serde_json::{Map, Value};

use super::util::{self, Ctx};
use super::{compact_json, Event, Format, Part, ReadError, Role, Session};

/// Keys that mark a legacy turn (`query` is the one ADK requires; one of the others must be
/// there too, so a generic `[{"query": …}]` list is not taken for eval data).
const TURN_KEYS: [&str; 3] = [
    "expected_tool_use",
    "reference",
    "expected_intermediate_agent_responses",
];

fn is_turn_keys<S: AsRef<str>>(keys: &[S]) -> bool {
    let has = |k: &str| keys.iter().any(|x| x.as_ref() == k);
    has("query") && TURN_KEYS.iter().any(|k| has(k))
}

/// True when `text` is a legacy eval data list (turns, or `{name, data}` cases). New-style eval
/// sets and session exports are JSON objects, so they never match: they stay with `adk`.
pub fn sniff(text: &str) -> bool {
    let Some(keys) = util::scan::first_elem_keys(text) else {
        return false;
    };
    if is_turn_keys(&keys) {
        return true;
    }
    let has = |k: &str| keys.iter().any(|x| x == k);
    if !(has("name") && has("data")) {
        return false;
    }
    // `[{name, data}]` is a generic shape: look inside `data` for a turn.
    match serde_json::from_str::<Value>(text) {
        Ok(v) => v
            .as_array()
            .and_then(|a| a.first())
            .and_then(|c| c.get("data"))
            .and_then(Value::as_array)
            .and_then(|d| d.first())
            .and_then(Value::as_object)
            .is_some_and(|t| is_turn_keys(&t.keys().collect::<Vec<_>>())),
        // Truncated or garbled: claim it when it names a turn key, so the reader reports where
        // the JSON breaks instead of "unknown format".
        Err(_) => text.contains("\"query\"") && TURN_KEYS.iter().any(|k| text.contains(k)),
    }
}

/// Parse the whole file. `file` is the path as the user gave it, used in errors and
/// `Session::source`.
pub fn read(file: &str, text: &str) -> Result<Vec<Session>, ReadError> {
    let cx = Ctx::new(file);
    let root = util::parse_json(file, text)?;
    let items = cx.arr(&root, "$")?;
    let named = items
        .first()
        .and_then(Value::as_object)
        .is_some_and(|o| o.contains_key("data") && !o.contains_key("query"));
    if !named {
        let s = session(&cx, items, "$", file_stem(file), file.to_string())?;
        return Ok(vec![s]);
    }
    let mut out = Vec::with_capacity(items.len());
    let mut seen = std::collections::HashSet::new();
    for (i, case) in items.iter().enumerate() {
        let cp = format!("$[{i}]");
        let c = cx.obj(case, &cp)?;
        let data = cx.field(c, "data", &cp)?;
        let turns = cx.arr(data, &format!("{cp}.data"))?;
        let name = cx
            .opt_str(c, "name", &cp)?
            .map(str::to_string)
            .unwrap_or_else(|| format!("case{i}"));
        // Sources must tell sessions apart even when two cases share a name.
        let frag = if seen.insert(name.clone()) {
            name.clone()
        } else {
            format!("{name}[{i}]")
        };
        out.push(session(
            &cx,
            turns,
            &format!("{cp}.data"),
            name,
            format!("{file}#{frag}"),
        )?);
    }
    Ok(out)
}

/// One session from a list of turns at JSON path `path`.
fn session(
    cx: &Ctx,
    turns: &[Value],
    path: &str,
    id: String,
    source: String,
) -> Result<Session, ReadError> {
    let mut inv = util::Invocations::new();
    let mut events: Vec<Event> = Vec::new();
    let mut paths: Vec<String> = Vec::new();
    for (i, turn) in turns.iter().enumerate() {
        let tp = format!("{path}[{i}]");
        let t = cx.obj(turn, &tp)?;
        let query = cx.req_str(t, "query", &tp)?;
        let inv_id = inv.user_turn();
        let mut push = |mut e: Event, p: String| {
            e.timestamp = util::synthetic_time(events.len());
            events.push(e);
            paths.push(p);
        };

        let mut u = Event::new("user", Role::User, inv_id.clone(), 0.0);
        u.critical = util::user_text_flags(query);
        u.parts.push(Part::Text {
            text: query.to_string(),
        });
        push(u, format!("{tp}.query"));

        let uses = cx.opt_arr(t, "expected_tool_use", &tp)?;
        if !uses.is_empty() {
            let mut e = model_event("agent", &inv_id);
            for (k, tu) in uses.iter().enumerate() {
                let up = format!("{tp}.expected_tool_use[{k}]");
                let o = cx.obj(tu, &up)?;
                let name = cx.req_str(o, "tool_name", &up)?;
                e.parts.push(Part::ToolCall {
                    id: Some(format!("{inv_id}-call-{}", k + 1)),
                    name: name.to_string(),
                    args: tool_input(cx, o, &up)?,
                });
            }
            push(e, format!("{tp}.expected_tool_use"));
        }

        let irs = cx.opt_arr(t, "expected_intermediate_agent_responses", &tp)?;
        for (k, ir) in irs.iter().enumerate() {
            let rp = format!("{tp}.expected_intermediate_agent_responses[{k}]");
            let (author, text) = match ir {
                Value::String(s) => ("agent", s.as_str()),
                _ => {
                    let o = cx.obj(ir, &rp)?;
                    let a = cx.opt_str(o, "author", &rp)?.unwrap_or("agent");
                    (a, cx.req_str(o, "text", &rp)?)
                }
            };
            let mut e = model_event(author, &inv_id);
            e.parts.push(Part::Text {
                text: text.to_string(),
            });
            push(e, rp);
        }

        if let Some(r) = cx.opt_str(t, "reference", &tp)? {
            let mut e = model_event("agent", &inv_id);
            e.parts.push(Part::Text {
                text: r.to_string(),
            });
            push(e, format!("{tp}.reference"));
        }
    }
    util::validate_events(cx.file, &events, |i| {
        paths.get(i).cloned().unwrap_or_default()
    })?;
    Ok(Session {
        synthetic_timestamps: true,
        ..Session::new(id, source, Format::AdkEvalSet, events)
    })
}

fn model_event(author: &str, inv_id: &str) -> Event {
    let mut e = Event::new(author, Role::Model, inv_id, 0.0);
    e.model_request = true;
    e
}

/// `tool_input` becomes the call's args (a `FunctionCall.args` dict in ADK); absent or null
/// means no arguments.
fn tool_input(cx: &Ctx, o: &Map<String, Value>, path: &str) -> Result<Value, ReadError> {
    match o.get("tool_input") {
        None | Some(Value::Null) => Ok(Value::Object(Map::new())),
        Some(v @ Value::Object(_)) => Ok(compact_json(v)),
        Some(v) => Err(cx.err(
            format!("{path}.tool_input"),
            format!("wrong shape: expected an object, found {}", util::kind(v)),
        )),
    }
}

/// Session id of a turn-list file: its name without folders, `.json` and `.test` /
/// `.evalset` (ADK names the eval set the same way).
fn file_stem(file: &str) -> String {
    let name = file.rsplit(['/', '\\']).next().unwrap_or(file);
    let name = name.strip_suffix(".json").unwrap_or(name);
    let name = name
        .strip_suffix(".test")
        .or_else(|| name.strip_suffix(".evalset"))
        .unwrap_or(name);
    if name.is_empty() {
        "session".to_string()
    } else {
        name.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transcript::detect;
    use crate::transcript::readutil::testutil::{
        assert_counts_match_stats, corpus, num, read_corpus,
    };

    /// The 13 corpus files in the legacy shape (found as "unknown format" before this reader).
    const LEGACY: [&str; 13] = [
        "adk/adk-python/tests/integration/fixture/home_automation_agent/simple_test2.test.json",
        "adk/adk-python/tests/integration/fixture/trip_planner_agent/trip_inquiry.test.json",
        "adk/adk-samples/python/agents/RAG/eval/data/conversation.test.json",
        "adk/adk-samples/python/agents/brand-search-optimization/eval/data/eval_data1.evalset.json",
        "adk/adk-samples/python/agents/customer-service/eval/eval_data/full_conversation.test.json",
        "adk/adk-samples/python/agents/customer-service/eval/eval_data/simple.test.json",
        "adk/adk-samples/python/agents/data-science/eval/eval_data/simple.test.json",
        "adk/adk-samples/python/agents/financial-advisor/eval/data/seminal.test.json",
        "adk/adk-samples/python/agents/llm-auditor/eval/data/blueberries.test.json",
        "adk/adk-samples/python/agents/llm-auditor/eval/data/ice_cream_sandwich.test.json",
        "adk/adk-samples/python/agents/marketing-agency/eval/data/seminal.test.json",
        "adk/adk-samples/python/agents/personalized-shopping/eval/eval_data/simple.test.json",
        "adk/adk-samples/python/agents/personalized-shopping/tests/tools/tools.test.json",
    ];

    fn tool_calls(s: &Session) -> usize {
        s.events
            .iter()
            .flat_map(|e| &e.parts)
            .filter(|p| matches!(p, Part::ToolCall { .. }))
            .count()
    }

    fn user_turns(s: &Session) -> usize {
        s.events.iter().filter(|e| e.role == Role::User).count()
    }

    /// Turns and tool calls per session match the corpus's own per-session counts
    /// (shared/corpus/stats.json, computed with python from the files).
    #[test]
    fn corpus_files_match_stats_json() {
        for rel in LEGACY {
            assert_eq!(
                detect::detect(&read_corpus(rel)),
                Some(Format::AdkEvalSet),
                "{rel}"
            );
        }
        let (mut turns, mut calls) = (0, 0);
        let compared = assert_counts_match_stats(
            "adk",
            |rel| LEGACY.contains(&rel),
            |rel, _text| {
                // Through the loader, as users read them (detection, then session checks).
                let sessions = detect::load_file(corpus().join(rel), None)?;
                // Sources as stats.json names them: relative to the corpus.
                Ok(sessions
                    .into_iter()
                    .map(|mut s| {
                        let frag = s.source.split_once('#').map(|(_, f)| f.to_string());
                        s.source = frag.map_or(rel.to_string(), |f| format!("{rel}#{f}"));
                        s
                    })
                    .collect())
            },
            |st, s| {
                turns += user_turns(s);
                calls += tool_calls(s);
                // stats.json counts one assistant turn per turn answered by the agent.
                let answered: std::collections::BTreeSet<&str> = s
                    .events
                    .iter()
                    .filter(|e| e.role == Role::Model)
                    .map(|e| e.invocation_id.as_str())
                    .collect();
                let strictly_increasing =
                    s.events.windows(2).all(|w| w[0].timestamp < w[1].timestamp);
                vec![
                    ("user turns", user_turns(s) as u64, num(st, "user_turns")),
                    ("tool calls", tool_calls(s) as u64, num(st, "tool_calls")),
                    (
                        "assistant turns",
                        answered.len() as u64,
                        num(st, "assistant_turns"),
                    ),
                    (
                        "eval-set format (1 = yes)",
                        u64::from(s.format == Format::AdkEvalSet),
                        1,
                    ),
                    (
                        "synthetic timestamps (1 = yes)",
                        u64::from(s.synthetic_timestamps),
                        1,
                    ),
                    (
                        "strictly increasing times (1 = yes)",
                        u64::from(strictly_increasing),
                        1,
                    ),
                ]
            },
        );
        // SOURCE.md: 32 sessions and 112 tool calls in the folder; the 19 sessions adk.rs reads
        // hold 71 calls, so these files hold 13 sessions and 41 calls.
        assert_eq!((compared, calls), (13, 41));
        assert_eq!(turns, 51);
    }

    /// One file checked event by event against its content (brand-search: one named case of
    /// 6 turns, 10 expected calls in 4 turns, 3 intermediate responses, 6 references).
    #[test]
    fn named_case_is_one_session_with_invocations_in_adk_order() {
        let rel =
            "adk/adk-samples/python/agents/brand-search-optimization/eval/data/eval_data1.evalset.json";
        let s = read(rel, &read_corpus(rel)).unwrap();
        assert_eq!(s.len(), 1);
        let s = &s[0];
        assert_eq!(s.id, "eval_data_set_google_shopping");
        assert_eq!(s.source, format!("{rel}#eval_data_set_google_shopping"));
        let requests = s.events.iter().filter(|e| e.model_request).count();
        assert_eq!(requests, 4 + 3 + 6);
        assert_eq!(s.events.len(), 6 + requests);
        // Turn 2: query, one request with both calls, the intermediate response, the reference.
        let t2: Vec<&Event> = s
            .events
            .iter()
            .filter(|e| e.invocation_id == "inv-2")
            .collect();
        assert_eq!(t2.len(), 4);
        assert_eq!(
            t2[0].parts,
            vec![Part::Text {
                text: "BSOAgentTestBrand".into()
            }]
        );
        let names: Vec<(&str, &str)> = t2[1]
            .parts
            .iter()
            .filter_map(|p| match p {
                Part::ToolCall {
                    id: Some(id), name, ..
                } => Some((id.as_str(), name.as_str())),
                _ => None,
            })
            .collect();
        assert_eq!(
            names,
            vec![
                ("inv-2-call-1", "transfer_to_agent"),
                ("inv-2-call-2", "get_product_details_for_brand")
            ]
        );
        assert_eq!(t2[2].author, "brand_search_optimization");
        assert!(matches!(&t2[3].parts[..], [Part::Text { text }] if text.starts_with("| Title |")));
        assert!(t2[1..]
            .iter()
            .all(|e| e.role == Role::Model && e.model_request));
        match &t2[1].parts[0] {
            Part::ToolCall { args, .. } => {
                assert_eq!(
                    args.to_string(),
                    r#"{"agent_name":"keyword_finding_agent"}"#
                )
            }
            p => panic!("unexpected {p:?}"),
        }
    }

    /// No file of the folder is left as "unknown format" any more (one session export is
    /// still refused by the shared validation: its last event's timestamp goes back 3 s), and
    /// the legacy sniffer claims no file that adk.rs reads (objects: session exports and
    /// `eval_cases` eval sets).
    #[test]
    fn adk_folder_has_no_unknown_format_and_sniffers_do_not_overlap() {
        let dir = corpus().join("adk").to_string_lossy().into_owned();
        let l = detect::load_paths(std::slice::from_ref(&dir), None);
        for e in &l.skipped {
            assert!(!e.message.contains("unknown format"), "{e}");
            assert!(
                !LEGACY
                    .iter()
                    .any(|r| e.file.ends_with(r.trim_start_matches("adk/"))),
                "{e}"
            );
        }
        let legacy: Vec<&Session> = l
            .sessions
            .iter()
            .filter(|s| {
                let f = s.source.split('#').next().unwrap_or_default();
                LEGACY
                    .iter()
                    .any(|r| f.ends_with(r.trim_start_matches("adk/")))
            })
            .collect();
        assert_eq!(legacy.len(), 13);
        assert!(legacy.iter().all(|s| s.format == Format::AdkEvalSet));
        let (files, _) = detect::expand_paths(&[dir]);
        for p in files {
            let text = std::fs::read_to_string(&p).unwrap();
            let legacy = LEGACY
                .iter()
                .any(|r| p.ends_with(r.trim_start_matches("adk/")));
            assert_eq!(sniff(&text), legacy, "{}", p.display());
            assert_eq!(
                crate::transcript::adk::sniff(&text),
                !legacy,
                "{}",
                p.display()
            );
        }
    }

    /// `--format adk-eval-set` reaches this reader for lists and adk.rs for objects.
    #[test]
    fn forced_format_dispatches_on_shape() {
        let legacy = corpus().join(LEGACY[5]);
        let auto = detect::load_file(&legacy, None).unwrap();
        let forced = detect::load_file(&legacy, Some(Format::AdkEvalSet)).unwrap();
        assert_eq!(auto, forced);
        let rel = "adk/adk-python/tests/integration/fixture/hello_world_agent/roll_die.test.json";
        let new_style = detect::load_file(corpus().join(rel), Some(Format::AdkEvalSet)).unwrap();
        let direct =
            crate::transcript::adk::read(&corpus().join(rel).to_string_lossy(), &read_corpus(rel))
                .unwrap();
        assert_eq!(new_style, direct);
    }

    #[test]
    fn bad_shapes_name_the_json_path() {
        let cases = [
            (
                r#"[{"query": "hi", "expected_tool_use": [{"tool_input": {}}]}]"#,
                "$[0].expected_tool_use[0]",
                "tool_name",
            ),
            (
                r#"[{"query": "a", "reference": "b"}, {"query": 3, "reference": "c"}]"#,
                "$[1].query",
                "expected a string, found a number",
            ),
            (
                r#"[{"name": "n", "data": [{"query": "q", "expected_tool_use": [{"tool_name": "f", "tool_input": [1]}]}]}]"#,
                "$[0].data[0].expected_tool_use[0].tool_input",
                "expected an object, found an array",
            ),
            (
                r#"[{"name": "n", "data": []}, {"name": "m", "data": {}}]"#,
                "$[1].data",
                "expected an array",
            ),
            (
                r#"[{"query": "q", "expected_intermediate_agent_responses": [{"author": "a"}]}]"#,
                "$[0].expected_intermediate_agent_responses[0]",
                "text",
            ),
        ];
        for (text, loc, msg) in cases {
            let e = read("f.test.json", text).unwrap_err();
            assert_eq!(e.location, loc, "{e}");
            assert!(e.message.contains(msg), "{e}");
            assert!(e.to_string().starts_with("f.test.json: "), "{e}");
        }
    }

    #[test]
    fn missing_parts_are_optional_and_duplicate_names_stay_apart() {
        let text = r#"[{"name": "x", "data": [{"query": "Yes, go", "expected_tool_use": null}]},
                       {"name": "x", "data": [{"query": "q", "reference": "r"}]}]"#;
        assert!(sniff(text));
        let s = read("d/e.evalset.json", text).unwrap();
        assert_eq!(s.len(), 2);
        assert_eq!(
            s[0].events.len(),
            1,
            "no reference, no calls: the query alone"
        );
        assert_eq!(
            s[0].events[0].critical,
            vec![crate::transcript::Critical::Confirmation]
        );
        assert_eq!(s[0].source, "d/e.evalset.json#x");
        assert_eq!(s[1].source, "d/e.evalset.json#x[1]");
        let plain = read("d/conv.test.json", r#"[{"query": "q", "reference": ""}]"#).unwrap();
        assert_eq!(plain[0].id, "conv");
        assert_eq!(plain[0].events.len(), 2);
        // Generic lists are not claimed.
        assert!(!sniff(r#"[{"query": "q"}]"#));
        assert!(!sniff(r#"[{"name": "n", "data": [1, 2]}]"#));
        assert!(!sniff(r#"{"query": "q", "reference": "r"}"#));
    }

    /// Every prefix (and a byte-flipped copy) of every corpus file: sniff and read never panic,
    /// and errors are one line naming the file.
    #[test]
    fn truncated_and_garbled_files_never_panic() {
        for rel in LEGACY {
            let text = read_corpus(rel);
            let step = (text.len() / 300).max(1);
            let mut cut = 0;
            while cut < text.len() {
                if let Some(t) = text.get(..cut) {
                    let _ = sniff(t);
                    match read("f.json", t) {
                        Ok(_) => {}
                        Err(e) => {
                            let s = util::tidy(e).to_string();
                            assert!(s.starts_with("f.json: ") && !s.contains('\n'), "{s}");
                        }
                    }
                }
                cut += step;
            }
            for (i, from, to) in [(0usize, '[', '{'), (1, '"', '\''), (2, ':', ',')] {
                let garbled: String = text
                    .char_indices()
                    .map(|(k, c)| if c == from && k % 3 == i { to } else { c })
                    .collect();
                let _ = sniff(&garbled);
                if let Err(e) = read("f.json", &garbled) {
                    assert!(e.to_string().starts_with("f.json"), "{e}");
                }
            }
        }
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_json_like_text_never_panics(s in r#"[\[\]{}",:\\ a-z0-9_\n]{0,80}"#) {
            let t = format!(r#"[{{"query": "q", "reference": "r", {s}"#);
            for x in [s.as_str(), t.as_str()] {
                let _ = sniff(x);
                if let Err(e) = read("f", x) {
                    proptest::prop_assert!(e.to_string().starts_with("f"));
                }
            }
        }
    }
}
