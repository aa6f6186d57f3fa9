//! The Claude Code settings a session shows it ran with (issue 43 item 1). The transcript
//! records no environment, but every line records the working directory (`cwd`), and a
//! session that read one of the settings files Claude Code loads for that directory records
//! its text: the user's `<home>/.claude/settings.json`, the project's
//! `<cwd>/.claude/settings.json` and `<cwd>/.claude/settings.local.json` (later ones win,
//! as Claude Code merges them). Their `env` holds the variables the auto-compact rule reads
//! (`CLAUDE_CODE_MAX_OUTPUT_TOKENS`, `CLAUDE_AUTOCOMPACT_PCT_OVERRIDE`,
//! `DISABLE_AUTO_COMPACT`, ...) and `model` the model setting (`opus[1m]` selects the 1M
//! window). A file read in one session is the setting of every session of the same home
//! (user file) or directory (project files) read alongside it that read none itself
//! ([`share`]): an assumption (the file may have changed between sessions), stated in the
//! settings' `source`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{PolicyRule, Session};

/// What a Claude Code session shows of its settings.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClaudeCodeSettings {
    /// The recorded working directory (`cwd` of the session's first line that has one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// `env` of the settings files read (string values only; Claude Code sets them as
    /// environment variables).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// The `model` setting, when a settings file read sets one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Where `env` and `model` were read: the files, and the session that read them when
    /// not this one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// The `autoCompactWindow` setting (an integer in [100,000, 1,000,000]), when a settings
    /// file read sets one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_compact_window: Option<u64>,
    /// The user's `autoCompactEnabled` (global config, default on), when the session shows
    /// it: a `/config` toggle's output, or the global config file read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_compact: Option<AutoCompactShown>,
}

/// `autoCompactEnabled` as a session shows it, and where.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AutoCompactShown {
    pub enabled: bool,
    pub source: String,
}

impl ClaudeCodeSettings {
    /// Nothing recorded.
    pub fn is_empty(&self) -> bool {
        self == &ClaudeCodeSettings::default()
    }

    /// An environment variable the settings set.
    pub fn var(&self, name: &str) -> Option<&str> {
        self.env.get(name).map(String::as_str)
    }

    /// The user's home the working directory is in (`/Users/<name>`, `/home/<name>`,
    /// `/root`, `C:\Users\<name>`), where Claude Code's user settings live.
    pub fn home(&self) -> Option<String> {
        let cwd = self.cwd.as_deref()?;
        let sep = if cwd.contains('\\') { '\\' } else { '/' };
        let parts: Vec<&str> = cwd.split(sep).collect();
        let at = parts
            .iter()
            .position(|p| matches!(*p, "Users" | "home" | "root"))?;
        let take = if parts[at] == "root" { at + 1 } else { at + 2 };
        (parts.len() >= take).then(|| parts[..take].join(&sep.to_string()))
    }
}

/// The settings files Claude Code loads for `s` (lowest precedence first): the user's, the
/// project's, the project's local one.
fn loaded_files(s: &ClaudeCodeSettings) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(home) = s.home() {
        out.push(format!("{home}/.claude/settings.json"));
    }
    if let Some(cwd) = &s.cwd {
        out.push(format!("{cwd}/.claude/settings.json"));
        out.push(format!("{cwd}/.claude/settings.local.json"));
    }
    out
}

/// The text of each settings file `session` read with the `Read` tool, latest read last:
/// (path, the file's JSON text with the `cat -n` line numbers taken off).
fn settings_reads(session: &Session) -> Vec<(String, String)> {
    super::claude_code::read_results(&session.events)
        .into_iter()
        .filter(|(_, path, _)| {
            path.ends_with("/.claude/settings.json")
                || path.ends_with("/.claude/settings.local.json")
        })
        .filter_map(|(_, path, response)| {
            result_text(response).map(|text| (path.to_string(), strip_line_numbers(text)))
        })
        .collect()
}

/// A tool result's text as the Claude Code reader keeps it (`{"content": text}`), or a plain
/// string.
pub fn result_text(response: &Value) -> Option<&str> {
    match response {
        Value::String(s) => Some(s),
        v => v.get("content").and_then(Value::as_str),
    }
}

/// A `Read` result without its `cat -n` prefixes (`     7→`), and without the
/// `<system-reminder>` Claude Code may append.
fn strip_line_numbers(text: &str) -> String {
    let body = text.split("<system-reminder>").next().unwrap_or(text);
    body.lines()
        .map(|l| {
            let t = l.trim_start();
            match t.find('→') {
                Some(i) if i > 0 && t[..i].chars().all(|c| c.is_ascii_digit()) => {
                    &t[i + '→'.len_utf8()..]
                }
                _ => l,
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// `env` (string, number and boolean values as strings) and `model` of a settings file's
/// text; `None` when it is not a JSON object.
fn parse_settings(text: &str) -> Option<Parsed> {
    let v: Value = serde_json::from_str(text).ok()?;
    let obj = v.as_object()?;
    let env = obj
        .get("env")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| {
                    let s = match v {
                        Value::String(s) => s.clone(),
                        Value::Number(n) => n.to_string(),
                        Value::Bool(b) => b.to_string(),
                        _ => return None,
                    };
                    Some((k.clone(), s))
                })
                .collect()
        })
        .unwrap_or_default();
    let model = obj.get("model").and_then(Value::as_str).map(str::to_string);
    // an integer within [100,000, 1,000,000], else dropped (`cli.js` 2.1.89's schema)
    let auto_compact_window = obj
        .get("autoCompactWindow")
        .and_then(Value::as_u64)
        .filter(|w| (100_000..=1_000_000).contains(w));
    Some(Parsed {
        env,
        model,
        auto_compact_window,
    })
}

/// The settings of `session` recorded by the reader, if it is a Claude Code session.
fn settings_mut(session: &mut Session) -> Option<&mut ClaudeCodeSettings> {
    match session.recorded_policy.as_mut().map(|p| &mut p.rule) {
        Some(PolicyRule::ClaudeCodeAuto { settings }) => Some(settings),
        _ => None,
    }
}

/// Per settings file `session` read (of those Claude Code loads for its directory): the
/// file and its `(env, model)`, latest read of each file.
fn files_read(session: &Session, s: &ClaudeCodeSettings) -> BTreeMap<String, Parsed> {
    let loaded = loaded_files(s);
    let mut out = BTreeMap::new();
    for (path, text) in settings_reads(session) {
        if !loaded.contains(&path) {
            continue;
        }
        if let Some(parsed) = parse_settings(&text) {
            out.insert(path, parsed);
        }
    }
    out
}

/// What the replay reads of one settings file.
#[derive(Debug, Clone, Default)]
struct Parsed {
    env: BTreeMap<String, String>,
    model: Option<String>,
    /// `autoCompactWindow` (read by the CLI from 2.1.89).
    auto_compact_window: Option<u64>,
}

/// Apply `files` (path → parsed) to `s` in Claude Code's precedence order; `via`: the
/// session that read them, when not `s`'s own.
fn apply(s: &mut ClaudeCodeSettings, files: &BTreeMap<String, Parsed>, via: Option<&str>) {
    let mut used = Vec::new();
    for path in loaded_files(s) {
        let Some(Parsed {
            env,
            model,
            auto_compact_window,
        }) = files.get(&path)
        else {
            continue;
        };
        s.env
            .extend(env.iter().map(|(k, v)| (k.clone(), v.clone())));
        if model.is_some() {
            s.model.clone_from(model);
        }
        if auto_compact_window.is_some() {
            s.auto_compact_window = *auto_compact_window;
        }
        used.push(path);
    }
    if !used.is_empty() {
        let mut src = format!("{} as read", used.join(", "));
        if let Some(id) = via {
            src.push_str(&format!(" in session {id}"));
        }
        s.source = Some(src);
    }
}

/// What `/config` writes when the user turns auto-compact on or off (inside a
/// `<local-command-stdout>`, `cli.js` 2.0.57-2.1.112).
const TOGGLED_ON: &str = "Enabled auto-compact";
const TOGGLED_OFF: &str = "Disabled auto-compact";

/// The user's `autoCompactEnabled` as `session` last shows it: a `/config` toggle's output,
/// or Claude Code's global config (`<home>/.claude.json`, or `<home>/.claude/.config.json`
/// where that exists) read with the `Read` tool, whose missing key means on.
fn auto_compact_shown(session: &Session, s: &ClaudeCodeSettings) -> Option<AutoCompactShown> {
    let mut last: Option<(usize, AutoCompactShown)> = None;
    for (k, e) in session.events.iter().enumerate() {
        for p in &e.parts {
            let super::Part::Text { text } = p else {
                continue;
            };
            let Some((_, out)) = text.split_once("<local-command-stdout>") else {
                continue;
            };
            let on = out.rfind(TOGGLED_ON);
            let off = out.rfind(TOGGLED_OFF);
            if on.is_some() || off.is_some() {
                let shown = AutoCompactShown {
                    enabled: on > off,
                    source: "/config in this session".into(),
                };
                last = Some((k, shown));
            }
        }
    }
    if let Some(home) = s.home() {
        let global = [
            format!("{home}/.claude.json"),
            format!("{home}/.claude/.config.json"),
        ];
        for (k, path, response) in super::claude_code::read_results(&session.events) {
            let Some(text) = result_text(response).filter(|_| global.iter().any(|g| g == path))
            else {
                continue;
            };
            let Ok(Value::Object(obj)) = serde_json::from_str(&strip_line_numbers(text)) else {
                continue;
            };
            let enabled = obj.get("autoCompactEnabled").and_then(Value::as_bool);
            if last.as_ref().is_none_or(|(at, _)| *at <= k) {
                let source = format!("{path} as read");
                last = Some((
                    k,
                    AutoCompactShown {
                        enabled: enabled.unwrap_or(true),
                        source,
                    },
                ));
            }
        }
    }
    last.map(|(_, shown)| shown)
}

/// Fill `session`'s settings from the settings files it read itself.
pub fn observe(session: &mut Session) {
    let Some(s) = settings_of(session).cloned() else {
        return;
    };
    let files = files_read(session, &s);
    let auto_compact = auto_compact_shown(session, &s);
    if let Some(s) = settings_mut(session) {
        apply(s, &files, None);
        s.auto_compact = auto_compact;
    }
}

/// The settings files read by the sessions seen so far: path → (the session that read it
/// last, its parsed `env` and `model`). What [`share`] gives to the sessions that read none;
/// a sweep, which reads its files again window by window, keeps one for the run.
#[derive(Debug, Clone, Default)]
pub struct SettingsBook {
    files: BTreeMap<String, (String, Parsed)>,
}

/// The settings `session` records, if it is a Claude Code session.
pub fn settings_of(session: &Session) -> Option<&ClaudeCodeSettings> {
    match session.recorded_policy.as_ref().map(|p| &p.rule) {
        Some(PolicyRule::ClaudeCodeAuto { settings }) => Some(settings),
        _ => None,
    }
}

impl SettingsBook {
    /// Note the settings files `session` read.
    pub fn note(&mut self, session: &Session) {
        if let Some(s) = settings_of(session) {
            for (path, parsed) in files_read(session, s) {
                self.files.insert(path, (session.id.clone(), parsed));
            }
        }
    }

    /// Add `other`'s files after this one's (a later reader wins).
    pub fn extend(&mut self, other: SettingsBook) {
        self.files.extend(other.files);
    }

    /// Whether [`SettingsBook::apply`] would give `s` settings (it read none itself and
    /// another session read a file Claude Code loads for it).
    pub fn applies_to(&self, s: &ClaudeCodeSettings) -> bool {
        s.source.is_none() && loaded_files(s).iter().any(|p| self.files.contains_key(p))
    }

    /// Give `session` the files another session read for its home or directory, when it
    /// read none itself; `true` when it changed.
    pub fn apply(&self, session: &mut Session) -> bool {
        let Some(s) = settings_mut(session) else {
            return false;
        };
        if !self.applies_to(s) {
            return false;
        }
        let loaded = loaded_files(s);
        let files: BTreeMap<String, Parsed> = loaded
            .iter()
            .filter_map(|p| {
                self.files
                    .get(p)
                    .map(|(_, parsed)| (p.clone(), parsed.clone()))
            })
            .collect();
        let via = loaded
            .iter()
            .filter_map(|p| self.files.get(p).map(|(id, _)| id.clone()))
            .next_back();
        apply(s, &files, via.as_deref());
        true
    }
}

/// Give each Claude Code session that read no settings file the files another session of
/// `sessions` read for the same home (user file) or directory (project files), the last
/// such session in order; its `source` names that session.
pub fn share(sessions: &mut [Session]) {
    let mut book = SettingsBook::default();
    sessions.iter().for_each(|s| book.note(s));
    for session in sessions.iter_mut() {
        book.apply(session);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transcript::Part;
    use crate::transcript::{Event, Format, RecordedPolicy, Role};

    /// A Claude Code session in `cwd` that read `path` (whose text is `text`, numbered as
    /// the Read tool numbers it) when `path` is given.
    fn session(id: &str, cwd: &str, read: Option<(&str, &str)>) -> Session {
        let mut events = Vec::new();
        if let Some((path, text)) = read {
            let mut call = Event::new("claude", Role::Model, "inv-1", 1.0);
            call.model_request = true;
            call.parts.push(Part::ToolCall {
                id: Some("t1".into()),
                name: "Read".into(),
                args: serde_json::json!({ "file_path": path }),
            });
            let numbered: String = text
                .lines()
                .enumerate()
                .map(|(i, l)| format!("{:>6}→{l}\n", i + 1))
                .collect();
            let mut result = Event::new("claude", Role::User, "inv-1", 2.0);
            result.parts.push(Part::ToolResponse {
                id: Some("t1".into()),
                name: "Read".into(),
                response: serde_json::json!({ "content": numbered }),
            });
            events.extend([call, result]);
        }
        let mut s = Session::new(id, format!("{id}.jsonl"), Format::ClaudeCode, events);
        s.recorded_policy = Some(RecordedPolicy {
            source: "claude-code version".into(),
            versions: vec!["2.0.57".into()],
            rule: PolicyRule::ClaudeCodeAuto {
                settings: ClaudeCodeSettings {
                    cwd: Some(cwd.into()),
                    ..Default::default()
                },
            },
        });
        s
    }

    fn settings(s: &Session) -> &ClaudeCodeSettings {
        match &s.recorded_policy.as_ref().unwrap().rule {
            PolicyRule::ClaudeCodeAuto { settings } => settings,
            other => panic!("{other:?}"),
        }
    }

    const USER: &str = "{\n  \"env\": {\n    \"CLAUDE_CODE_MAX_OUTPUT_TOKENS\": \"64000\"\n  },\n  \"model\": \"opus[1m]\",\n  \"autoCompactWindow\": 150000\n}";

    /// The user settings file a session read gives its env and model; a sibling session
    /// of the same home that read none gets them, naming the session that read them; a
    /// session of another home does not.
    #[test]
    fn user_settings_read_in_one_session_set_the_env_of_its_home() {
        let mut sessions = vec![
            session(
                "a",
                "/Users/pat/work",
                Some(("/Users/pat/.claude/settings.json", USER)),
            ),
            session("b", "/Users/pat/other", None),
            session("c", "/Users/sam/work", None),
        ];
        sessions.iter_mut().for_each(observe);
        share(&mut sessions);
        let a = settings(&sessions[0]);
        assert_eq!(a.var("CLAUDE_CODE_MAX_OUTPUT_TOKENS"), Some("64000"));
        assert_eq!(a.model.as_deref(), Some("opus[1m]"));
        assert_eq!(a.auto_compact_window, Some(150_000));
        assert_eq!(
            a.source.as_deref(),
            Some("/Users/pat/.claude/settings.json as read")
        );
        let b = settings(&sessions[1]);
        assert_eq!(b.var("CLAUDE_CODE_MAX_OUTPUT_TOKENS"), Some("64000"));
        assert!(
            b.source.as_deref().unwrap().ends_with("in session a"),
            "{b:?}"
        );
        assert!(settings(&sessions[2]).env.is_empty());
    }

    /// `/config`'s output shows the user's `autoCompactEnabled`, and so does the global
    /// config read; the last shown wins, a config without the key means on.
    #[test]
    fn auto_compact_enabled_is_read_from_config_toggles_and_the_global_config() {
        let toggled = |text: &str| {
            let mut e = Event::new(
                crate::transcript::claude_code::HARNESS,
                Role::User,
                "i",
                3.0,
            );
            e.parts.push(Part::Text { text: text.into() });
            e
        };
        let mut s = session("a", "/home/pat/proj", None);
        s.events.push(toggled(
            "<local-command-stdout>Disabled auto-compact\nSet model to opus</local-command-stdout>",
        ));
        observe(&mut s);
        let shown = settings(&s).auto_compact.clone().expect("shown");
        assert_eq!(
            (shown.enabled, shown.source.as_str()),
            (false, "/config in this session")
        );
        s.events.push(toggled(
            "<local-command-stdout>Enabled auto-compact</local-command-stdout>",
        ));
        observe(&mut s);
        assert_eq!(
            settings(&s).auto_compact.as_ref().map(|a| a.enabled),
            Some(true)
        );
        let global = |text| {
            session(
                "b",
                "/home/pat/proj",
                Some(("/home/pat/.claude.json", text)),
            )
        };
        let mut s = global("{\"autoCompactEnabled\": false, \"numStartups\": 3}");
        observe(&mut s);
        assert_eq!(
            settings(&s).auto_compact.as_ref().map(|a| a.enabled),
            Some(false)
        );
        let mut s = global("{\"numStartups\": 3}");
        observe(&mut s);
        assert_eq!(
            settings(&s).auto_compact.as_ref().map(|a| a.enabled),
            Some(true)
        );
        // another user's global config is not this session's
        let mut s = session(
            "c",
            "/home/sam/proj",
            Some(("/home/pat/.claude.json", "{\"autoCompactEnabled\": false}")),
        );
        observe(&mut s);
        assert_eq!(settings(&s).auto_compact, None);
    }

    /// A settings file Claude Code does not load for the session (another project's) is
    /// not its setting; a file that is not JSON is ignored.
    #[test]
    fn other_projects_settings_and_broken_files_are_not_read() {
        let mut s = session(
            "a",
            "/home/pat/proj",
            Some(("/home/pat/elsewhere/.claude/settings.json", USER)),
        );
        observe(&mut s);
        assert!(settings(&s).env.is_empty());
        let mut s = session(
            "a",
            "/home/pat/proj",
            Some(("/home/pat/proj/.claude/settings.local.json", "{ not json")),
        );
        observe(&mut s);
        assert!(settings(&s).is_empty() || settings(&s).env.is_empty());
        let mut s = session(
            "a",
            "/home/pat/proj",
            Some(("/home/pat/proj/.claude/settings.local.json", USER)),
        );
        observe(&mut s);
        assert_eq!(
            settings(&s).var("CLAUDE_CODE_MAX_OUTPUT_TOKENS"),
            Some("64000")
        );
    }
}
