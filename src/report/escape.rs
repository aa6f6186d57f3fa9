//! Escaping for every string that reaches report.md / report.html from data (session ids,
//! paths, summarizer names, labels, skip reasons): the run folder's data is derived from
//! transcripts, which are untrusted.

/// Text content or attribute value in HTML.
pub fn html(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// Inline Markdown text (paragraphs, list items, table cells): HTML-significant characters
/// become entities (so a renderer never sees a tag), Markdown punctuation is
/// backslash-escaped, and line breaks become spaces (they would end a table row).
pub fn md(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            // Only what is special mid-line: report code never starts a line with data, so
            // list and heading markers (`-`, `+`, `1.`) need no escape.
            '\\' | '`' | '*' | '_' | '[' | ']' | '#' | '|' | '~' => {
                out.push('\\');
                out.push(c);
            }
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// A fenced Markdown code block whose fence is longer than any backtick run in `code`, so
/// the content cannot close it; control characters and line breaks become spaces (the block
/// holds one paste-ready line).
pub fn md_code_block(code: &str) -> String {
    let line: String = code
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let mut longest = 0;
    let mut run = 0;
    for c in line.chars() {
        if c == '`' {
            run += 1;
            longest = longest.max(run);
        } else {
            run = 0;
        }
    }
    let fence = "`".repeat((longest + 1).max(3));
    format!("{fence}python\n{line}\n{fence}\n")
}

/// A file-name component from untrusted text (e.g. a session id): only `[A-Za-z0-9_-]`, at
/// most 64 characters, never empty, never `.`/`..`; a short hash keeps distinct ids distinct.
pub fn file_component(s: &str) -> String {
    let mut out: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(48)
        .collect();
    let trimmed = out.trim_matches('_').to_string();
    out = if trimmed.is_empty() {
        "session".to_string()
    } else {
        trimmed
    };
    format!(
        "{out}-{:08x}",
        xxhash_rust::xxh3::xxh3_64(s.as_bytes()) as u32
    )
}

/// JSON text made safe inside `<script>`: the escapes are JSON's own, so the parsed value is
/// unchanged. Control characters JSON leaves raw (DEL, the C1 range) are escaped too: no
/// control character of the data reaches the page.
pub fn script_safe(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    for c in json.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c if c.is_control() => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every renderer-neutral block holding `s` where data goes.
    fn blocks_holding(s: &str) -> Vec<crate::report::Block> {
        use crate::report::{Block, Inline};
        let inline = || {
            vec![
                Inline::Text(s.into()),
                Inline::Strong(s.into()),
                Inline::Code(s.into()),
            ]
        };
        vec![
            Block::Heading(2, s.into()),
            Block::Para(inline()),
            Block::Code(s.into()),
            Block::List(vec![inline(), inline()]),
            Block::Table {
                head: vec![s.into(), "n".into()],
                rows: vec![vec![inline(), inline()]],
                numeric: vec![false, true],
            },
            Block::Chart {
                stem: "cost_vs_detail".into(),
                title: s.into(),
                how: s.into(),
                note: s.into(),
                svg: None,
                skipped: Some(s.into()),
            },
        ]
    }

    proptest::proptest! {
        /// Any transcript string through every escaping of report.md and report.html (text,
        /// Markdown, the code block, the JSON island): no control character survives, the
        /// island parses back to the string, and the rendered pages keep their lines.
        #[test]
        fn no_transcript_string_leaves_a_control_character_in_the_report(
            s in crate::transcript::util::HOSTILE_TEXT
        ) {
            use crate::report::{to_html, to_markdown};
            let no_control = |t: &str| !t.chars().any(char::is_control);
            proptest::prop_assert!(no_control(&html(&s)) && no_control(&md(&s)));
            let code = md_code_block(&s);
            proptest::prop_assert!(code.lines().count() == 3 && code.lines().all(no_control));
            let island = script_safe(&serde_json::json!({ "id": s }).to_string());
            proptest::prop_assert!(no_control(&island), "{:?}", island);
            let back: serde_json::Value = serde_json::from_str(&island).unwrap();
            proptest::prop_assert_eq!(back["id"].as_str(), Some(s.as_str()));
            let (plain, hostile) = (blocks_holding("x"), blocks_holding(&s));
            for (a, b) in [
                (to_markdown(&plain), to_markdown(&hostile)),
                (to_html(&plain, "x", None), to_html(&hostile, &s, None)),
            ] {
                proptest::prop_assert_eq!(a.lines().count(), b.lines().count());
                proptest::prop_assert!(b.lines().all(no_control), "{:?}", b);
            }
        }
    }

    #[test]
    fn html_escapes_markup_and_quotes() {
        assert_eq!(
            html("<script>\"x\"&'y'</svg>"),
            "&lt;script&gt;&quot;x&quot;&amp;&#39;y&#39;&lt;/svg&gt;"
        );
    }

    #[test]
    fn md_neutralises_tags_links_and_table_pipes() {
        let s = md("<script>[a](http://x) | *b*\nnext");
        assert!(!s.contains('<') && !s.contains('\n'));
        assert!(s.contains("\\[a\\](http://x)") && s.contains("\\|") && s.contains("\\*b\\*"));
    }

    #[test]
    fn code_block_fence_outlasts_backticks_in_content() {
        let b = md_code_block("a ```` b");
        assert!(b.starts_with("`````python\n"));
        assert!(b.ends_with("\n`````\n"));
    }

    #[test]
    fn file_component_never_escapes_the_folder() {
        let f = file_component("../../etc/passwd");
        assert!(
            f.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'),
            "{f}"
        );
        assert!(f.starts_with("etc_passwd-"));
        assert_ne!(
            file_component("a/b"),
            file_component("a_b"),
            "distinct ids stay distinct"
        );
        assert!(file_component("..").starts_with("session-"));
    }
}
