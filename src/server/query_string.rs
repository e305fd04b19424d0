//! The query string: its pairs, decoded as an HTML form's are (`+` a space, `%XX` a
//! byte), and refused when a name or value is not UTF-8 once decoded, as a path is.

use std::borrow::Cow;

/// A pair of the query string that is not UTF-8 once decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct NotUtf8 {
    /// The pair's name, as sent.
    pub name: String,
    /// The pair's value, as sent.
    pub value: String,
    /// Whether the name is what is not UTF-8 (else the value is).
    pub in_name: bool,
}

impl NotUtf8 {
    /// Why the pair is refused.
    pub fn reason(&self) -> &'static str {
        if self.in_name {
            "its name is not valid UTF-8 once percent-decoded"
        } else {
            "it is not valid UTF-8 once percent-decoded"
        }
    }

    /// The pair's name decoded, with U+FFFD for the bytes that are not UTF-8.
    pub fn lossy_name(&self) -> String {
        let bytes: Vec<u8> =
            percent_encoding::percent_decode_str(&self.name.replace('+', " ")).collect();
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

/// Each pair of `query`, in order, repeats kept, decoded; or why not.
pub(super) fn each(
    query: Option<&str>,
) -> impl Iterator<Item = Result<(String, String), NotUtf8>> + '_ {
    query
        .unwrap_or_default()
        .split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            match (decode(name), decode(value)) {
                (Ok(name), Ok(value)) => Ok((name, value)),
                (decoded, _) => Err(NotUtf8 {
                    name: name.to_string(),
                    value: value.to_string(),
                    in_name: decoded.is_err(),
                }),
            }
        })
}

/// The pairs of `query`, in order, repeats kept; the first pair that is not UTF-8 once
/// decoded is an error.
pub(super) fn pairs(query: Option<&str>) -> Result<Vec<(String, String)>, NotUtf8> {
    each(query).collect()
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
        let bad = pairs(Some("page=1&q=%FF")).unwrap_err();
        assert_eq!((&*bad.name, &*bad.value, bad.in_name), ("q", "%FF", false));
        assert_eq!(bad.reason(), "it is not valid UTF-8 once percent-decoded");
        let bad = pairs(Some("q%C3=1")).unwrap_err();
        assert_eq!((&*bad.name, &*bad.value, bad.in_name), ("q%C3", "1", true));
        assert_eq!(bad.lossy_name(), "q\u{FFFD}");
        assert_eq!(
            bad.reason(),
            "its name is not valid UTF-8 once percent-decoded"
        );
        // Pair by pair, the others still decode.
        let each: Vec<bool> = each(Some("a=1&b=%FF&c=3")).map(|p| p.is_ok()).collect();
        assert_eq!(each, [true, false, true]);
    }
}
