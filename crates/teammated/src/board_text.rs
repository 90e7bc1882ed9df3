//! The texts the teammate sends to boardd (results, failure reasons, messages to the
//! lead), kept under boardd's limit.

use teamboard_protocol::text::byte_prefix_with_ellipsis;

/// The longest result or message text the teammate sends. boardd refuses texts over
/// 256 KiB; a result that long is not read by anyone anyway, and the transcript keeps
/// the whole of it.
pub(crate) const TEXT_MAX: usize = 64 * 1024;

/// `text` as boardd will take it: when longer than [`TEXT_MAX`] bytes, its beginning
/// (cut on a character boundary) and a note that the transcript has the rest.
pub(crate) fn cap(text: &str) -> String {
    if text.len() <= TEXT_MAX {
        return text.to_string();
    }
    let cut = byte_prefix_with_ellipsis(text, TEXT_MAX - 200);
    format!(
        "{cut}\n[... {} more bytes cut; the teammate's transcript has all of it ...]",
        text.len() - (TEXT_MAX - 200)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_texts_go_as_they_are() {
        let text = "x".repeat(TEXT_MAX);
        assert_eq!(cap(&text), text);
    }

    #[test]
    fn long_texts_fit_and_say_where_the_rest_is() {
        // A 2-byte character straddles the cut, which falls at TEXT_MAX - 200.
        let text = format!("a{}", "é".repeat(TEXT_MAX));
        let capped = cap(&text);
        assert!(capped.len() <= TEXT_MAX, "{}", capped.len());
        let kept = format!("a{}…", "é".repeat((TEXT_MAX - 200) / 2 - 1));
        assert!(capped.starts_with(&kept));
        assert!(capped.ends_with(&format!(
            "\n[... {} more bytes cut; the teammate's transcript has all of it ...]",
            text.len() - (TEXT_MAX - 200)
        )));
    }
}
