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
/// unchanged.
pub fn script_safe(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    for c in json.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

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
