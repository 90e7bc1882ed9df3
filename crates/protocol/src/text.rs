//! Cutting text to a size: one function for each way of doing it, so that every
//! program cuts the same way and a new caller picks by name instead of writing its
//! own copy.
//!
//! Two questions tell them apart:
//! - Is the limit in bytes (what boardd's limits and the model's budgets count) or
//!   in characters (what a terminal line has room for)?
//! - Is the limit on the whole result, mark included, or on the part kept, with the
//!   mark after it?
//!
//! | function                     | unit  | the limit covers     | mark when cut     |
//! |------------------------------|-------|----------------------|-------------------|
//! | [`byte_prefix`]              | bytes | the result           | none              |
//! | [`byte_prefix_with_ellipsis`]| bytes | the part kept        | `…`               |
//! | [`fit_bytes_with_mark`]      | bytes | the result           | `… [truncated]`   |
//! | [`fit_chars_with_ellipsis`]  | chars | the result           | `…`               |
//!
//! Byte cuts never split a character: they step back to the previous character
//! boundary, so the part kept may be up to three bytes shorter than the limit.

/// What [`fit_bytes_with_mark`] puts where it cut.
pub const TRUNCATED_MARK: &str = "… [truncated]";

/// The longest prefix of `text` that has at most `max` bytes and ends on a
/// character boundary. `text` itself when it fits.
pub fn byte_prefix(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// `text` cut to its first `max` bytes (see [`byte_prefix`]) with `…` after them
/// when anything was cut. The `…` is not counted: the result may reach `max + 3`
/// bytes. For a hard limit on the whole result use [`fit_bytes_with_mark`].
pub fn byte_prefix_with_ellipsis(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    format!("{}…", byte_prefix(text, max))
}

/// `text` in at most `max` bytes in all, ending with [`TRUNCATED_MARK`] when it was
/// cut. When `max` is too small to hold even the mark, the result is the first
/// `max` bytes without it: the limit holds in every case.
pub fn fit_bytes_with_mark(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let Some(room) = max.checked_sub(TRUNCATED_MARK.len()) else {
        return byte_prefix(text, max).to_string();
    };
    format!("{}{TRUNCATED_MARK}", byte_prefix(text, room))
}

/// `text` in at most `max` characters in all, ending with `…` when it was cut.
/// Characters, not display columns: a wide character (CJK, most emoji) counts as one.
pub fn fit_chars_with_ellipsis(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    if max == 0 {
        return String::new();
    }
    let mut out: String = text.chars().take(max - 1).collect();
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_prefix_keeps_text_that_fits() {
        assert_eq!(byte_prefix("", 0), "");
        assert_eq!(byte_prefix("abc", 3), "abc");
        assert_eq!(byte_prefix("abc", 2), "ab");
        assert_eq!(byte_prefix("abc", 0), "");
    }

    #[test]
    fn byte_prefix_steps_back_to_a_character_boundary() {
        // "é" is 2 bytes, "€" is 3, "🦀" is 4.
        assert_eq!(byte_prefix("aé", 2), "a");
        assert_eq!(byte_prefix("a€b", 2), "a");
        assert_eq!(byte_prefix("a€b", 3), "a");
        assert_eq!(byte_prefix("a€b", 4), "a€");
        assert_eq!(byte_prefix("🦀🦀", 7), "🦀");
        assert_eq!(byte_prefix("🦀", 3), "");
    }

    #[test]
    fn ellipsis_follows_the_kept_bytes() {
        assert_eq!(byte_prefix_with_ellipsis("abcdef", 6), "abcdef");
        assert_eq!(byte_prefix_with_ellipsis("abcdef", 4), "abcd…");
        assert_eq!(byte_prefix_with_ellipsis("abcdef", 0), "…");
        assert_eq!(byte_prefix_with_ellipsis("aé", 2), "a…");
        assert_eq!(byte_prefix_with_ellipsis("🦀🦀", 5), "🦀…");
    }

    #[test]
    fn fit_bytes_counts_the_mark_and_never_splits_a_character() {
        let mark = TRUNCATED_MARK.len();
        assert_eq!(fit_bytes_with_mark("short", 5), "short");
        let cut = fit_bytes_with_mark(&"x".repeat(100), 20);
        assert_eq!(cut, format!("{}{TRUNCATED_MARK}", "x".repeat(20 - mark)));
        assert_eq!(cut.len(), 20);
        // A 3-byte character across the cut is dropped whole.
        let text = format!("ab{}", "€".repeat(10));
        let cut = fit_bytes_with_mark(&text, mark + 4);
        assert_eq!(cut, format!("ab{TRUNCATED_MARK}"));
        assert!(cut.len() <= mark + 4);
        // Exactly room for the mark: nothing of the text is kept.
        let long = "x".repeat(mark + 1);
        assert_eq!(fit_bytes_with_mark(&long, mark), TRUNCATED_MARK);
    }

    #[test]
    fn fit_bytes_smaller_than_the_mark_keeps_the_limit() {
        let mark = TRUNCATED_MARK.len();
        let text = "é".repeat(50);
        for max in 0..mark {
            let cut = fit_bytes_with_mark(&text, max);
            assert!(cut.len() <= max, "{max}: {cut:?}");
            assert_eq!(cut, byte_prefix(&text, max));
        }
    }

    #[test]
    fn fit_chars_counts_characters_not_bytes() {
        assert_eq!(fit_chars_with_ellipsis("abcdef", 6), "abcdef");
        assert_eq!(fit_chars_with_ellipsis("abcdef", 4), "abc…");
        assert_eq!(fit_chars_with_ellipsis("ééééé", 5), "ééééé");
        assert_eq!(fit_chars_with_ellipsis("éééééé", 4), "ééé…");
        assert_eq!(fit_chars_with_ellipsis("🦀🦀🦀", 2), "🦀…");
        assert_eq!(fit_chars_with_ellipsis("ab", 1), "…");
        assert_eq!(fit_chars_with_ellipsis("ab", 0), "");
        assert_eq!(fit_chars_with_ellipsis("", 0), "");
    }
}
