//! The query string: its pairs, decoded as an HTML form's are (`+` a space, `%XX` a
//! byte), and refused when a name or value is not UTF-8 once decoded, as a path is.

use std::borrow::Cow;

/// A pair of the query string that is not UTF-8 once decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct NotUtf8 {
    /// The pair's name, decoded with U+FFFD for the bytes that are not UTF-8.
    pub name: String,
    /// The pair's value as sent.
    pub value: String,
}

impl NotUtf8 {
    /// Why the pair is refused.
    pub const REASON: &'static str = "it is not valid UTF-8 once percent-decoded";
}

/// The pairs of `query`, in order, repeats kept; the first pair that is not UTF-8 once
/// decoded is an error.
pub(super) fn pairs(query: Option<&str>) -> Result<Vec<(String, String)>, NotUtf8> {
    let mut pairs = Vec::new();
    for pair in query.unwrap_or_default().split('&') {
        if pair.is_empty() {
            continue;
        }
        let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
        match (decode(name), decode(value)) {
            (Ok(name), Ok(value)) => pairs.push((name, value)),
            (name, _) => {
                return Err(NotUtf8 {
                    name: name.unwrap_or_else(|bytes| String::from_utf8_lossy(&bytes).into()),
                    value: value.to_string(),
                })
            }
        }
    }
    Ok(pairs)
}

/// `text` decoded, or its bytes when they are not UTF-8.
fn decode(text: &str) -> Result<String, Vec<u8>> {
    let spaced: Cow<'_, str> = if text.contains('+') {
        text.replace('+', " ").into()
    } else {
        text.into()
    };
    let bytes: Vec<u8> = percent_encoding::percent_decode_str(&spaced).collect();
    String::from_utf8(bytes).map_err(|e| e.into_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_decode_as_a_forms_and_refuse_what_is_not_utf8() {
        let owned = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
            pairs
                .iter()
                .map(|(n, v)| (n.to_string(), v.to_string()))
                .collect()
        };
        assert_eq!(pairs(None), Ok(vec![]));
        assert_eq!(
            pairs(Some("q=name:%22mr+mime%22&&page=2&q=x&flag&e=%E2%82%AC%2B")),
            Ok(owned(&[
                ("q", "name:\"mr mime\""),
                ("page", "2"),
                ("q", "x"),
                ("flag", ""),
                ("e", "€+"),
            ]))
        );
        // A malformed escape stays as sent, as form decoding keeps it.
        assert_eq!(pairs(Some("q=100%")), Ok(owned(&[("q", "100%")])));
        assert_eq!(
            pairs(Some("page=1&q=%FF")),
            Err(NotUtf8 {
                name: "q".into(),
                value: "%FF".into()
            })
        );
        assert_eq!(
            pairs(Some("q%C3=1")),
            Err(NotUtf8 {
                name: "q\u{FFFD}".into(),
                value: "1".into()
            })
        );
    }
}
