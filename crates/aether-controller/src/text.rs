//! Bounded text: a message cut to what the API stores, marked with `…`
//! where it was cut (a condition's message in characters, an Event's note
//! in bytes).

/// At most `max` characters, marked with `…` when cut.
pub(crate) fn truncate(mut text: String, max: usize) -> String {
    if let Some((cut, _)) = text.char_indices().nth(max.saturating_sub(1))
        && text[cut..].chars().count() > 1
    {
        text.truncate(cut);
        text.push('…');
    }
    text
}

/// At most `max` bytes, on a character boundary, marked with `…` when cut.
pub(crate) fn cut_bytes(mut text: String, max: usize) -> String {
    if text.len() > max {
        let mut end = max - '…'.len_utf8();
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push('…');
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncate_keeps_short_text_and_cuts_long_text_to_the_bound() {
        assert_eq!(truncate("abc".into(), 3), "abc");
        assert_eq!(truncate("abcd".into(), 3), "ab…");
        assert_eq!(truncate("ééééé".into(), 4).chars().count(), 4);
    }

    #[test]
    fn cut_bytes_keeps_a_character_whole_and_marks_the_cut() {
        assert_eq!(cut_bytes("abc".into(), 3), "abc");
        let cut = cut_bytes("é".repeat(10), 8);
        assert!(cut.len() <= 8 && cut.ends_with('…'), "{cut}");
        assert_eq!(cut, "éé…");
    }
}
