//! Per-session compact arrays the engine replays on, built once per session so that a replay
//! never touches text: sizes (ADK chars, JSON chars, summarizer-line chars, tokens), ids
//! interned to integers, timestamps, owners, invocation indices, recorded usage.

use std::collections::HashMap;

use crate::tokens::adk;
use crate::tokens::prefetch_lines;
use crate::transcript::{Event, Part, Role, Session};

/// Sentinel for "no id" (calls without ids are invisible to ADK's pairing logic).
pub const NO_ID: u32 = u32::MAX;

/// What kind of part (ADK's pairing logic only looks at calls and responses).
pub const PART_OTHER: u8 = 0;
pub const PART_CALL: u8 = 1;
pub const PART_RESPONSE: u8 = 2;

/// One content part, as the pairing and contents logic needs it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PartInfo {
    pub kind: u8,
    /// Interned call id, or [`NO_ID`].
    pub id: u32,
    /// Interned tool name (ADK pairs id-less responses with calls by name).
    pub name: u32,
    /// ADK chars of the part (text, or name + `json.dumps` payload).
    pub adk_chars: u64,
    /// pydantic JSON chars of the part as stored in the session.
    pub json_chars: u64,
    /// JSON chars saved when ADK strips an `adk-` client id from the request copy.
    pub id_strip_json: u64,
    /// Same genai `Part` as the previous part of the event (text + call in one part): ADK's
    /// orphan filters keep or drop the pair together.
    pub joined: bool,
}

/// Setting-independent measures of the uncompacted session, computed once per session by the
/// engine (`engine::contents::baseline`) and shared by every replay of it.
#[derive(Debug, Clone, Default)]
pub struct BaselineCache {
    /// Per model request (in event order): event index, and its uncompacted request
    /// measures `[contents, adk_chars, json_chars, history_tokens]`.
    pub request_event: Vec<u32>,
    pub request: Vec<[u64; 4]>,
    /// The raw events each model request carries verbatim ([`BaselineCache::seen_word`]): a
    /// request built from scratch has a bitset over events (`words` u64 each) in `seen`; a
    /// request extended from the one before adds the events `seen_added[start..end]` (in
    /// event order) to that bitset. Memory stays O(events) on sessions that extend.
    pub seen: Vec<u64>,
    pub words: usize,
    /// Per model request: (bitset index in `seen`, start, end in `seen_added`).
    pub seen_rows: Vec<(u32, u32, u32)>,
    pub seen_added: Vec<u32>,
    /// Per invocation block: the next request's history for the main agent.
    pub block_end: Vec<[u64; 4]>,
    /// The main agent the block measures were computed for.
    pub main_agent: Option<u32>,
    /// `tok_prefix[i]` = run-tokenizer tokens of events `0..i` (a run's tokens in O(1)).
    pub tok_prefix: Vec<u64>,
    /// `json_prefix[i]` = JSON chars of the events with content among `0..i` (what a range
    /// of raw events adds to a request, for the worth-compacting gate).
    pub json_prefix: Vec<u64>,
    /// `summ_chars_prefix[i]` / `summ_blocks_prefix[i]`: the summarizer prompt's chars and
    /// blocks (events with lines) of events `0..i` (a contiguous span's prompt in O(1)).
    pub summ_chars_prefix: Vec<u64>,
    pub summ_blocks_prefix: Vec<u64>,
    /// Per call id: the first visible event calling it (`u32::MAX`: none).
    pub call_first: Vec<u32>,
}

impl BaselineCache {
    /// Word `w` (events `64w..64w+64`) of the events model request `row` carries verbatim.
    pub fn seen_word(&self, row: usize, w: usize) -> u64 {
        let mut words = self.seen_words(row);
        // asked about the newest events: an extended request's added events reach back to
        // its build, up to the session's start
        words.pos =
            crate::search::partition_point_from_end(words.added, |&i| (i as usize) < w * 64);
        words.word(w)
    }

    /// The words of request `row`'s events, read in increasing order without a search each.
    pub fn seen_words(&self, row: usize) -> SeenWords<'_> {
        let (bits, start, end) = self.seen_rows[row];
        let at = bits as usize * self.words;
        SeenWords {
            bits: &self.seen[at..at + self.words],
            added: &self.seen_added[start as usize..end as usize],
            pos: 0,
        }
    }
}

/// A cursor over one request's seen words ([`BaselineCache::seen_words`]).
pub struct SeenWords<'a> {
    bits: &'a [u64],
    added: &'a [u32],
    /// First added event not below the last word read.
    pos: usize,
}

impl SeenWords<'_> {
    /// Word `w`; `w` must not be below the previous call's.
    pub fn word(&mut self, w: usize) -> u64 {
        let (lo, hi) = (w * 64, w * 64 + 64);
        while self.added.get(self.pos).is_some_and(|&i| (i as usize) < lo) {
            self.pos += 1;
        }
        let mut m = self.bits[w];
        for &i in self.added[self.pos..]
            .iter()
            .take_while(|&&i| (i as usize) < hi)
        {
            m |= 1u64 << (i % 64);
        }
        m
    }
}

/// One short list per event, stored flat: `v[i]` is event i's slice. Most events have none,
/// and a `Vec` per event cost 24 bytes each even then (three such columns were 14 MiB of a
/// 200,000-event session).
#[derive(Debug, Clone)]
pub struct Jagged<T> {
    items: Vec<T>,
    start: Vec<u32>,
}

impl<T> Default for Jagged<T> {
    fn default() -> Self {
        Jagged {
            items: Vec::new(),
            start: vec![0],
        }
    }
}

impl<T> Jagged<T> {
    /// Append the next event's list.
    pub fn push(&mut self, list: impl IntoIterator<Item = T>) {
        self.items.extend(list);
        self.start.push(self.items.len() as u32);
    }

    /// Events held.
    pub fn len(&self) -> usize {
        self.start.len() - 1
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<T> Jagged<T> {
    /// Fetch event `i`'s bounds ahead of use (see [`prefetch`]).
    #[inline(always)]
    pub fn prefetch(&self, i: usize) {
        prefetch(&self.start, i);
    }
}

/// Ask the CPU to fetch `v[i]` ahead of use (nothing when `i` is past the end). A replay
/// walks a dozen per-event arrays at once, more streams than the hardware prefetcher follows:
/// in a session too long for the core's own cache each array then stalls on its own.
#[inline(always)]
pub fn prefetch<T>(v: &[T], i: usize) {
    if let Some(x) = v.get(i) {
        prefetch_lines(x as *const T, 1);
    }
}

impl<T> std::ops::Index<usize> for Jagged<T> {
    type Output = [T];
    fn index(&self, i: usize) -> &[T] {
        &self.items[self.start[i] as usize..self.start[i + 1] as usize]
    }
}

/// The per-event arrays of one session.
#[derive(Debug, Clone, Default)]
pub struct SessionSizes {
    pub n: usize,
    pub timestamp: Vec<f64>,
    /// Contiguous invocation block (the oracle's and the runner's unit of post-invocation).
    pub inv_block: Vec<u32>,
    /// Distinct `invocation_id` (ADK's sliding window counts these), first-appearance order.
    pub inv_id: Vec<u32>,
    /// Per distinct `invocation_id`: the first block carrying it (the oracle names a
    /// compaction's invocations this way).
    pub inv_first_block: Vec<u32>,
    /// First event index of each block, plus `n` at the end.
    pub block_start: Vec<u32>,
    pub author: Vec<u32>,
    /// Interned author names; `user_author` is the index of `user` if present.
    pub authors: Vec<String>,
    pub user_author: u32,
    /// Content role is `model`.
    pub role_model: Vec<bool>,
    /// One recorded model request (the oracle's `is_model_call_event`).
    pub model_request: Vec<bool>,
    /// Content would pass ADK's emptiness / auth / confirmation / framework filters.
    pub visible: Vec<bool>,
    /// ADK live transcription: 0 none, 1 input (user), 2 output (model). `_get_contents`
    /// merges a run of them into one content.
    pub transcription: Vec<u8>,
    /// Event has content (ADK's `_serialized_size` counts it).
    pub has_content: Vec<bool>,
    pub adk_chars: Vec<u64>,
    pub json_chars: Vec<u64>,
    /// `Some((adk_chars, json_chars))` of the event as another agent sees it; `None` when ADK
    /// drops it (only the preamble would remain).
    pub other: Vec<Option<(u64, u64)>>,
    /// Summarizer formatted text of the event: chars (lines joined by `\n`) and line count.
    pub summ_chars: Vec<u64>,
    pub summ_lines: Vec<u32>,
    /// Run-tokenizer tokens per event.
    pub tokens: Vec<u32>,
    /// True when `tokens` are ADK's chars/4 (no real tokenizer given). Callers that pass
    /// adk-chars counts explicitly should set it, so the `adjust` usage rule subtracts
    /// `floor(removed chars / 4)` exactly as the oracle does instead of summed per-event counts.
    pub tokens_are_adk_chars: bool,
    /// Every part, flat, addressed by `parts_at` (event -> range).
    pub parts: Vec<PartInfo>,
    pub parts_at: Vec<(u32, u32)>,
    /// Event has at least one function call / response part.
    pub has_calls: Vec<bool>,
    pub has_resps: Vec<bool>,
    /// Interned ids of `long_running_tool_ids` / requested confirmation+auth ids.
    pub long_running: Jagged<u32>,
    pub requested: Jagged<u32>,
    /// Tool names of client function calls (`adk_request_*`).
    pub client_call_names: Vec<u32>,
    /// Recorded `prompt_token_count`.
    pub recorded_prompt: Vec<Option<u64>>,
    /// Recorded usage (prompt, cached, output).
    pub usage: Vec<Option<crate::transcript::Usage>>,
    /// Critical-event bitmask (bit = `Critical as u8`).
    pub critical: Vec<u8>,
    /// Branch strings (`None` = root); ADK hides events outside the requesting branch.
    pub branch: Vec<Option<u32>>,
    pub branches: Vec<String>,
    /// Per event: `<name>@<id>` segments of its branch as (segment count up to it, `name` as
    /// an author index, first event calling `id` or `u32::MAX`, `id` interned or `NO_ID`), for
    /// ADK's `_is_tool_sub_branch_event`; empty for plain branches.
    pub tool_segs: Jagged<(u32, u32, u32, u32)>,
    /// For the call ids that name a tool sub-branch: every event calling them, ascending
    /// (with rewinds, ADK asks whether a call survives, not only whether one was made).
    pub seg_calls: HashMap<u32, Vec<u32>>,
    pub n_ids: u32,
    pub n_names: u32,
    /// Per part: for a response, the event holding the latest call with its id at or before
    /// it (ADK's `latest_call_by_id` over the visible events); `NO_ID` otherwise.
    pub resp_owner: Vec<u32>,
    /// The agent whose history the oracle measures after each invocation (most frequent
    /// non-user author; ties: first seen), as an author index (or `None`).
    pub main_agent: Option<u32>,
    /// Setting-independent uncompacted measures, filled lazily by the engine's first replay.
    pub baseline: std::sync::OnceLock<BaselineCache>,
    /// ADK 2.13 isolation scope of each event: 0 = unscoped, `k` = `scopes[k - 1]`.
    pub scope: Vec<u32>,
    pub scopes: Vec<String>,
    /// Per scope (`k - 1`): the events holding a function call whose id is the scope and whose
    /// args are truthy, in order, each with the task input ADK prepends to that scope's
    /// requests (`json.dumps(args, ensure_ascii=False)` as a user content): (event, ADK chars,
    /// JSON chars of the content).
    pub scope_lead: Vec<Vec<(u32, u64, u64)>>,
    /// Per event: for a rewind event, the first event it annuls (the first event of its
    /// target invocation, or itself when that is not earlier); `u32::MAX` otherwise.
    pub rewind_to: Vec<u32>,
    /// Rewind events, in order.
    pub rewinds: Vec<u32>,
    /// Timestamps never decrease and none is NaN: a timestamp range is then an index range,
    /// found by binary search (the engine skips compacted spans instead of scanning them).
    pub ts_sorted: bool,
    /// Where the share of cache writes made with Anthropic's 1-hour lifetime changes: (event,
    /// share of its `cache_write_tokens`), ascending; an event's share is the latest at or
    /// before it ([`SessionSizes::write_1h_share`]). Empty for nearly every transcript.
    /// Kept here so that pricing does not walk the session's events at every replay.
    pub write_1h: Vec<(u32, f64)>,
    /// The session's fit of its recorded prompt sizes when `tokens` are on the provider's
    /// scale (`backtest::sizes::on_scale`); `None`: they are the run tokenizer's counts. A
    /// summary a setting adds is counted by the summarizer's tokenizer and put on this scale
    /// where the prompt carries it ([`SessionSizes::in_prompt`]).
    pub provider_fit: Option<crate::tokens::fit::PromptFit>,
}

#[derive(Default)]
struct Interner {
    map: HashMap<String, u32>,
}

/// Names to dense indices, in first-appearance order, as [`SessionSizes::new`] meets them.
#[derive(Default)]
struct Interned<'e> {
    authors: HashMap<String, u32>,
    inv_ids: HashMap<&'e str, u32>,
    /// Function call ids (parts, long-running and requested ids).
    ids: Interner,
    /// Tool names.
    names: Interner,
    branches: HashMap<String, u32>,
    scopes: HashMap<&'e str, u32>,
    /// The first event of each distinct invocation id.
    inv_first_event: Vec<u32>,
}

impl Interner {
    fn get(&mut self, s: &str) -> u32 {
        let n = self.map.len() as u32;
        *self.map.entry(s.to_string()).or_insert(n)
    }
}

fn json_id_strip(id: &Option<String>) -> u64 {
    match id {
        Some(id) if id.starts_with("adk-") => 7 + adk::json_str_len_raw(id) + 1,
        _ => 0,
    }
}

impl SessionSizes {
    /// `counted` tokens of text a setting adds to the prompt (a summary), counted with the
    /// run's tokenizer, as the agent's prompt carries them: on the provider's scale where the
    /// session has a fit, else unchanged (so ADK's engine, fed plain counts, is unchanged).
    pub fn in_prompt(&self, counted: u64) -> u64 {
        self.provider_fit.map_or(counted, |f| f.amount(counted))
    }

    /// The share of cache writes made with the 1-hour lifetime that applies at `event`: the
    /// latest recorded at or before it, else 0.
    pub fn write_1h_share(&self, event: u32) -> f64 {
        let at = self.write_1h.partition_point(|&(e, _)| e <= event);
        at.checked_sub(1).map_or(0.0, |k| self.write_1h[k].1)
    }

    /// Build the arrays. `tokens` gives per-event token counts in the run tokenizer; when it
    /// is `None` (or of the wrong length) ADK's chars/4 per event is used.
    pub fn new(session: &Session, tokens: Option<&[u32]>) -> SessionSizes {
        let evs = &session.events;
        let n = evs.len();
        let mut s = SessionSizes {
            n,
            user_author: u32::MAX,
            ..Default::default()
        };
        let mut names = Interned::default();
        for name in [
            "adk_request_confirmation",
            "adk_request_credential",
            "adk_request_input",
        ] {
            let id = names.names.get(name);
            s.client_call_names.push(id);
        }
        let use_tokens = tokens.filter(|t| t.len() == n);
        s.tokens_are_adk_chars = use_tokens.is_none();
        for (i, e) in evs.iter().enumerate() {
            s.push_place(&mut names, evs, i);
            s.push_content(&mut names, e, i, use_tokens.map(|t| t[i]));
        }
        s.block_start.push(n as u32);
        s.scope_and_rewinds(evs, &names.scopes, &names.inv_ids, &names.inv_first_event);
        s.tool_sub_branches(evs, &names);
        s.n_ids = names.ids.map.len() as u32;
        s.n_names = names.names.map.len() as u32;
        s.response_owners();
        s.main_agent = s.most_frequent_agent();
        s.ts_sorted =
            s.timestamp.windows(2).all(|w| w[0] <= w[1]) && !s.timestamp.iter().any(|t| t.is_nan());
        s
    }

    /// Where event `i` of `evs` sits: its time, invocation (block and id), author, branch and
    /// isolation scope, interned in first-appearance order.
    #[inline]
    fn push_place<'e>(&mut self, names: &mut Interned<'e>, evs: &'e [Event], i: usize) {
        let s = self;
        let e = &evs[i];
        s.timestamp.push(e.timestamp);
        let block = if i > 0 && evs[i - 1].invocation_id == e.invocation_id {
            s.inv_block[i - 1]
        } else {
            s.block_start.push(i as u32);
            s.block_start.len() as u32 - 1
        };
        s.inv_block.push(block);
        let next_inv = names.inv_ids.len() as u32;
        let iid = *names
            .inv_ids
            .entry(e.invocation_id.as_str())
            .or_insert(next_inv);
        if iid == next_inv {
            s.inv_first_block.push(block);
            names.inv_first_event.push(i as u32);
        }
        s.inv_id.push(iid);
        let na = names.authors.len() as u32;
        let a = *names.authors.entry(e.author.clone()).or_insert_with(|| {
            s.authors.push(e.author.clone());
            na
        });
        if e.author == "user" {
            s.user_author = a;
        }
        s.author.push(a);
        s.role_model.push(e.role == Role::Model);
        s.model_request.push(e.model_request);
        s.branch.push(e.branch.as_ref().map(|b| {
            let nb = names.branches.len() as u32;
            *names.branches.entry(b.clone()).or_insert_with(|| {
                s.branches.push(b.clone());
                nb
            })
        }));
        s.scope.push(match &e.isolation_scope {
            None => 0,
            Some(sc) => {
                let k = s.scopes.len() as u32 + 1;
                *names.scopes.entry(sc.as_str()).or_insert_with(|| {
                    s.scopes.push(sc.clone());
                    k
                })
            }
        });
    }

    /// What event `i` (`e`) holds: its sizes as ADK and the summarizer count them, its parts
    /// (ids and tool names interned), its recorded usage and marks. `tokens`: its count in
    /// the run tokenizer, if given.
    #[inline]
    fn push_content(&mut self, names: &mut Interned<'_>, e: &Event, i: usize, tokens: Option<u32>) {
        let s = self;
        // A transcription has no content: the gate counts 0 and the summarizer skips it.
        s.has_content.push(!e.parts.is_empty() && !e.transcription);
        s.transcription.push(match (e.transcription, e.role) {
            (false, _) => 0,
            (true, Role::Model) => 2,
            (true, _) => 1,
        });
        let ac = adk::adk_chars(e);
        s.adk_chars.push(ac);
        s.json_chars.push(if e.parts.is_empty() || e.transcription {
            0
        } else {
            adk::json_chars(e)
        });
        s.other.push(adk::other_agent_sizes(e));
        let (sc, sl) = adk::summarizer_stats(e);
        s.summ_chars.push(sc);
        s.summ_lines.push(sl);
        s.tokens.push(tokens.unwrap_or((ac / 4) as u32));
        s.visible.push(is_visible(e));
        let p0 = s.parts.len() as u32;
        for (pi, p) in e.parts.iter().enumerate() {
            let (kind, id, name) = match p {
                Part::ToolCall { id, name, .. } => (PART_CALL, id, names.names.get(name)),
                Part::ToolResponse { id, name, .. } => (PART_RESPONSE, id, names.names.get(name)),
                _ => (PART_OTHER, &None, u32::MAX),
            };
            s.parts.push(PartInfo {
                kind,
                id: id
                    .as_deref()
                    .filter(|x| !x.is_empty())
                    .map_or(NO_ID, |x| names.ids.get(x)),
                name,
                adk_chars: adk::event_part_adk_chars(e, pi),
                json_chars: adk::event_part_json_chars(e, pi),
                id_strip_json: json_id_strip(id),
                joined: e.adk_part(pi).is_some_and(|x| x.joined),
            });
        }
        let p1 = s.parts.len() as u32;
        s.parts_at.push((p0, p1));
        s.has_calls
            .push(e.parts.iter().any(|p| matches!(p, Part::ToolCall { .. })));
        s.has_resps.push(
            e.parts
                .iter()
                .any(|p| matches!(p, Part::ToolResponse { .. })),
        );
        s.long_running
            .push(e.long_running_tool_ids.iter().map(|x| names.ids.get(x)));
        s.requested
            .push(e.requested_ids.iter().map(|x| names.ids.get(x)));
        s.recorded_prompt.push(e.usage.map(|u| u.prompt_tokens));
        s.usage.push(e.usage);
        if let Some(u) = e.usage.filter(|u| u.cache_write_tokens > 0) {
            let share = (e.cache_write_1h_tokens as f64 / u.cache_write_tokens as f64).min(1.0);
            if s.write_1h.last().map_or(0.0, |&(_, x)| x) != share {
                s.write_1h.push((i as u32, share));
            }
        }
        s.critical
            .push(e.critical.iter().fold(0u8, |m, c| m | (1u8 << (*c as u8))));
    }

    /// Tool sub-branch segments (ADK `_BranchPath.is_tool_branch`: leaf `name@id`, split at
    /// the last `@`, with `id` a recorded function call id), and the events calling each
    /// such id.
    fn tool_sub_branches(&mut self, evs: &[Event], names: &Interned<'_>) {
        let s = self;
        let mut first_call: HashMap<u32, u32> = HashMap::new();
        for i in 0..s.n {
            for p in s.part_range(i) {
                let pi = s.parts[p as usize];
                if pi.kind == PART_CALL && pi.id != NO_ID {
                    first_call.entry(pi.id).or_insert(i as u32);
                }
            }
        }
        for e in evs {
            let mut segs = Vec::new();
            if let Some(b) = e.branch.as_deref().filter(|b| b.contains('@')) {
                for (d, seg) in b.split('.').enumerate() {
                    if let Some((name, id)) = seg.rsplit_once('@') {
                        let interned = names.ids.map.get(id).copied();
                        let first = interned
                            .and_then(|x| first_call.get(&x))
                            .copied()
                            .unwrap_or(u32::MAX);
                        if let (Some(x), true) = (interned, first != u32::MAX) {
                            s.seg_calls.entry(x).or_default();
                        }
                        // `u32::MAX` is the nameless agent (post-invocation measures);
                        // `u32::MAX - 1` a name no author has.
                        let who = if name.is_empty() {
                            u32::MAX
                        } else {
                            names.authors.get(name).copied().unwrap_or(u32::MAX - 1)
                        };
                        segs.push((d as u32 + 1, who, first, interned.unwrap_or(NO_ID)));
                    }
                }
            }
            s.tool_segs.push(segs);
        }
        if !s.seg_calls.is_empty() {
            for i in 0..s.n {
                for p in s.part_range(i) {
                    let pi = s.parts[p as usize];
                    if pi.kind == PART_CALL {
                        if let Some(v) = s.seg_calls.get_mut(&pi.id) {
                            if v.last() != Some(&(i as u32)) {
                                v.push(i as u32);
                            }
                        }
                    }
                }
            }
        }
    }

    /// Each response part's owning call event (ADK's `latest_call_by_id` over the visible
    /// events): `resp_owner`.
    fn response_owners(&mut self) {
        let s = self;
        let mut latest_call: Vec<u32> = vec![NO_ID; s.n_ids as usize];
        s.resp_owner = vec![NO_ID; s.parts.len()];
        for i in 0..s.n {
            if !s.visible[i] {
                continue;
            }
            for p in s.part_range(i) {
                let pi = s.parts[p as usize];
                if pi.kind == PART_CALL && pi.id != NO_ID {
                    latest_call[pi.id as usize] = i as u32;
                }
            }
            for p in s.part_range(i) {
                let pi = s.parts[p as usize];
                if pi.kind == PART_RESPONSE && pi.id != NO_ID {
                    s.resp_owner[p as usize] = latest_call[pi.id as usize];
                }
            }
        }
    }

    /// The oracle's measured agent: collections.Counter(...).most_common(1) over the non-user
    /// authors (first seen wins ties, as Counter keeps insertion order).
    fn most_frequent_agent(&self) -> Option<u32> {
        let mut counts: Vec<u32> = vec![0; self.authors.len()];
        for &a in &self.author {
            if a != self.user_author {
                counts[a as usize] += 1;
            }
        }
        let mut best: Option<u32> = None;
        for (a, &c) in counts.iter().enumerate() {
            if c > 0 && best.is_none_or(|b| c > counts[b as usize]) {
                best = Some(a as u32);
            }
        }
        best
    }

    /// The task inputs of each scope and the rewind targets (after the per-event pass).
    fn scope_and_rewinds(
        &mut self,
        evs: &[Event],
        scopes: &HashMap<&str, u32>,
        inv_ids: &HashMap<&str, u32>,
        inv_first_event: &[u32],
    ) {
        self.scope_lead = vec![Vec::new(); self.scopes.len()];
        if !scopes.is_empty() {
            for (i, e) in evs.iter().enumerate() {
                for p in &e.parts {
                    let Part::ToolCall {
                        id: Some(id),
                        args: serde_json::Value::Object(args),
                        ..
                    } = p
                    else {
                        continue;
                    };
                    let Some(&k) = scopes.get(id.as_str()) else {
                        continue;
                    };
                    if args.is_empty() {
                        continue; // `fc.args` must be truthy
                    }
                    let text = adk::py_json_dumps_unicode(&serde_json::Value::Object(args.clone()));
                    let chars = text.chars().count() as u64;
                    // {"parts":[{"text":"…"}],"role":"user"}
                    let json = 37 + adk::json_str_len_raw(&text);
                    self.scope_lead[k as usize - 1].push((i as u32, chars, json));
                }
            }
        }
        self.rewind_to = vec![u32::MAX; evs.len()];
        for (i, e) in evs.iter().enumerate() {
            let Some(target) = e.rewind_before_invocation_id.as_deref() else {
                continue;
            };
            let first = inv_ids
                .get(target)
                .and_then(|&k| inv_first_event.get(k as usize))
                .copied()
                .filter(|&f| (f as usize) < i)
                .unwrap_or(i as u32);
            self.rewind_to[i] = first;
            self.rewinds.push(i as u32);
        }
    }

    /// Whether the session has isolation scopes or rewinds (the engine's exact but slower
    /// path for them is needed).
    #[inline]
    pub fn has_scopes_or_rewinds(&self) -> bool {
        !self.scopes.is_empty() || !self.rewinds.is_empty()
    }

    /// ADK `_apply_rewinds` over events `0..n`: the annulled spans (closed raw event index
    /// intervals), ascending. A rewind only ever drops a contiguous span ending at itself;
    /// walking backwards, a rewind inside a later rewind's span is itself annulled.
    pub fn rewound_spans(&self, n: usize, out: &mut Vec<(u32, u32)>) {
        out.clear();
        let mut limit = n as u32;
        for &r in self.rewinds.iter().rev() {
            if r < limit {
                let t = self.rewind_to[r as usize];
                out.push((t, r));
                limit = t;
            }
        }
        out.reverse();
    }

    /// The task input ADK prepends for scope `scope` (> 0) to a request built from events
    /// `0..n` (the first delegating call among them, skipping `excluded` ones): (ADK chars, JSON
    /// chars).
    pub fn scope_lead(
        &self,
        scope: u32,
        n: usize,
        excluded: impl Fn(usize) -> bool,
    ) -> Option<(u64, u64)> {
        let leads = self.scope_lead.get((scope as usize).checked_sub(1)?)?;
        leads
            .iter()
            .take_while(|&&(e, _, _)| (e as usize) < n)
            .find(|&&(e, _, _)| !excluded(e as usize))
            .map(|&(_, a, j)| (a, j))
    }

    /// Global part indices of event `i`.
    pub fn part_range(&self, i: usize) -> std::ops::Range<u32> {
        let (a, b) = self.parts_at[i];
        a..b
    }

    /// Call ids (with id) of event `i`.
    pub fn call_ids(&self, i: usize) -> impl Iterator<Item = u32> + '_ {
        self.part_range(i)
            .map(|p| self.parts[p as usize])
            .filter(|p| p.kind == PART_CALL && p.id != NO_ID)
            .map(|p| p.id)
    }

    /// Response ids (with id) of event `i`.
    pub fn resp_ids(&self, i: usize) -> impl Iterator<Item = u32> + '_ {
        self.part_range(i)
            .map(|p| self.parts[p as usize])
            .filter(|p| p.kind == PART_RESPONSE && p.id != NO_ID)
            .map(|p| p.id)
    }

    /// Index of an author name.
    pub fn author_index(&self, name: &str) -> Option<u32> {
        self.authors
            .iter()
            .position(|a| a == name)
            .map(|p| p as u32)
    }

    /// Number of invocation blocks.
    pub fn blocks(&self) -> usize {
        self.block_start.len().saturating_sub(1)
    }

    /// ADK's `_is_tool_sub_branch_event` for event `i` in the request of agent `viewer` on
    /// `branch`, built from the first `n` events: `i` is strictly below `branch` and some
    /// segment below it is `<name>@<id>`, `id` a call among those events, `name` not `viewer`.
    #[inline]
    pub fn tool_sub_branch(&self, branch: Option<u32>, viewer: u32, n: usize, i: usize) -> bool {
        !self.tool_segs[i].is_empty() && self.tool_sub_branch_slow(branch, viewer, n, i, &[])
    }

    /// [`tool_sub_branch`](Self::tool_sub_branch) when the events in `rewound` are annulled:
    /// ADK collects the call ids from the events left after `_apply_rewinds`, so a segment
    /// counts only while some surviving event among the first `n` makes its call.
    pub fn tool_sub_branch_after_rewinds(
        &self,
        branch: Option<u32>,
        viewer: u32,
        n: usize,
        i: usize,
        rewound: &[(u32, u32)],
    ) -> bool {
        !self.tool_segs[i].is_empty() && self.tool_sub_branch_slow(branch, viewer, n, i, rewound)
    }

    fn tool_sub_branch_slow(
        &self,
        branch: Option<u32>,
        viewer: u32,
        n: usize,
        i: usize,
        rewound: &[(u32, u32)],
    ) -> bool {
        let segs = &self.tool_segs[i];
        let Some(eb) = self.branch[i] else {
            return false;
        };
        let base = match branch {
            None => 0,
            Some(b) => {
                let cur = &self.branches[b as usize];
                let ev = &self.branches[eb as usize];
                let below = ev.len() > cur.len()
                    && ev.starts_with(cur.as_str())
                    && ev.as_bytes()[cur.len()] == b'.';
                if !below {
                    return false;
                }
                cur.split('.').count() as u32
            }
        };
        let called = |first: u32, id: u32| {
            if rewound.is_empty() {
                return (first as usize) < n;
            }
            self.seg_calls.get(&id).is_some_and(|v| {
                v.iter()
                    .take_while(|&&j| (j as usize) < n)
                    .any(|&j| !in_spans(rewound, j as usize))
            })
        };
        segs.iter()
            .any(|&(depth, who, first, id)| depth > base && who != viewer && called(first, id))
    }

    /// Whether event `i` belongs to `branch` (ADK `_is_event_belongs_to_branch`).
    #[inline]
    pub fn belongs_to_branch(&self, branch: Option<u32>, i: usize) -> bool {
        match (branch, self.branch[i]) {
            (Some(b), Some(eb)) if b != eb => self.branch_below(b, eb),
            _ => true,
        }
    }

    /// Branch `b` lies below branch `eb` (`eb` followed by a dot starts `b`).
    fn branch_below(&self, b: u32, eb: u32) -> bool {
        let inv = &self.branches[b as usize];
        let ev = &self.branches[eb as usize];
        inv.len() > ev.len() && inv.starts_with(ev.as_str()) && inv.as_bytes()[ev.len()] == b'.'
    }
}

/// Whether raw event `i` lies in one of the rewound `spans` (ascending, disjoint).
pub fn in_spans(spans: &[(u32, u32)], i: usize) -> bool {
    let i = i as u32;
    let k = spans.partition_point(|&(t, _)| t <= i);
    k > 0 && i <= spans[k - 1].1
}

/// ADK's `_should_include_event_in_context` for an unscoped event: non-empty content and not
/// an auth / confirmation / framework event.
/// A content without a role is never sent (`_contains_empty_content`); a part carrying a
/// thought signature always is (`_is_part_invisible`).
fn is_visible(e: &Event) -> bool {
    let any_visible = e.parts.iter().enumerate().any(|(i, p)| {
        e.adk_part(i).is_some_and(|x| x.signature)
            || match p {
                Part::Text { text } => !text.is_empty(),
                Part::Thought { .. } => false,
                Part::ToolCall { .. } | Part::ToolResponse { .. } => true,
                Part::Attachment { .. } => true,
            }
    });
    !e.role_absent
        && !e.context_hidden
        && any_visible
        && !adk::is_auth_event(e)
        && !adk::is_confirmation_event(e)
        && !adk::is_framework_event(e)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transcript::Format;

    /// Issue 13: per-event lists are one flat column; each event still reads back its own.
    #[test]
    fn jagged_columns_give_each_event_its_own_list() {
        let mut j: Jagged<u32> = Jagged::default();
        j.push([]);
        j.push([7, 8]);
        j.push([]);
        j.push([9]);
        assert_eq!(j.len(), 4);
        let lists: Vec<&[u32]> = (0..j.len()).map(|i| &j[i]).collect();
        assert_eq!(lists, vec![&[][..], &[7, 8][..], &[][..], &[9][..]]);
    }

    fn session(events: Vec<Event>) -> SessionSizes {
        let s = Session::new("s", "t", Format::Adk, events);
        SessionSizes::new(&s, None)
    }

    fn ev(inv: &str, t: f64, rewind: Option<&str>) -> Event {
        let mut e = Event::new("user", Role::User, inv, t);
        e.rewind_before_invocation_id = rewind.map(str::to_string);
        e
    }

    /// ADK `_apply_rewinds`: a rewind drops itself and everything from its target's first
    /// event; walking backwards, a rewind inside a later rewind's span is not applied; an
    /// unknown or not-earlier target drops only the rewind event.
    #[test]
    fn rewound_spans_follow_apply_rewinds() {
        let s = session(vec![
            ev("i1", 1.0, None),
            ev("i1", 2.0, None),
            ev("i2", 3.0, None),
            ev("i2", 4.0, None),
            ev("rw1", 5.0, Some("i2")), // 4: drops 2..=4
            ev("i3", 6.0, None),
            ev("rw2", 7.0, Some("i3")),   // 6: drops 5..=6
            ev("rw3", 8.0, Some("nope")), // 7: drops itself
            ev("i4", 9.0, None),
            ev("rw4", 10.0, Some("i2")), // 9: drops 2..=9, rw1..rw3 included
            ev("rw5", 11.0, Some("rw5")), // 10: its own invocation starts here: itself only
        ]);
        let mut out = Vec::new();
        let mut at = |n: usize| {
            s.rewound_spans(n, &mut out);
            out.clone()
        };
        assert_eq!(at(4), vec![]);
        assert_eq!(at(5), vec![(2, 4)]);
        assert_eq!(at(7), vec![(2, 4), (5, 6)]);
        assert_eq!(at(8), vec![(2, 4), (5, 6), (7, 7)]);
        assert_eq!(at(10), vec![(2, 9)]);
        assert_eq!(at(11), vec![(2, 9), (10, 10)]);
        let spans = at(11);
        assert!(!in_spans(&spans, 1));
        assert!(in_spans(&spans, 2) && in_spans(&spans, 9) && in_spans(&spans, 10));
        assert!(s.has_scopes_or_rewinds());
    }

    /// A scoped agent's task input: the first call whose id is the scope and whose args are
    /// truthy, as `json.dumps(args, ensure_ascii=False)`, once that call exists.
    #[test]
    fn scope_lead_is_the_delegating_calls_args() {
        let call = |id: &str, args: serde_json::Value| {
            let mut e = Event::new("coord", Role::Model, "i", 1.0);
            e.parts.push(Part::ToolCall {
                id: Some(id.into()),
                name: "task".into(),
                args,
            });
            e
        };
        let scoped = |sc: &str| {
            let mut e = Event::new("worker", Role::Model, "i", 2.0);
            e.parts.push(Part::Text { text: "w".into() });
            e.isolation_scope = Some(sc.into());
            e
        };
        let s = session(vec![
            call("task2", serde_json::json!({})),
            call("task1", serde_json::json!({"topic": "ñ", "n": 1})),
            scoped("task1"),
            scoped("task2"),
            Event::new("user", Role::User, "i", 3.0),
        ]);
        assert_eq!(s.scope, vec![0, 0, 1, 2, 0]);
        assert_eq!(s.scopes, vec!["task1".to_string(), "task2".to_string()]);
        // `{"topic": "ñ", "n": 1}`: 22 chars; its content
        // `{"parts":[{"text":"{\"topic\": \"ñ\", \"n\": 1}"}],"role":"user"}`: 65
        assert_eq!(s.scope_lead(1, 5, |_| false), Some((22, 65)));
        assert_eq!(s.scope_lead(1, 1, |_| false), None, "call not yet there");
        assert_eq!(s.scope_lead(1, 5, |e| e == 1), None, "call rewound");
        assert_eq!(s.scope_lead(2, 5, |_| false), None, "empty args are falsy");
        assert_eq!(s.scope_lead(0, 5, |_| false), None);
    }
}
