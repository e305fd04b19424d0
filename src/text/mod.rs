//! Text rules shared by the index, the planner and the default order: folding, words,
//! natural order and wildcard patterns, as docs/spec/contract.md defines them.
//!
//! Everything that compares text in cardex goes through [`fold`] first, so a value is
//! indexed and queried under exactly the same rules:
//!
//! 1. Unicode NFKC (full-width Latin becomes ASCII, half-width katakana becomes full width);
//! 2. case folded: Unicode's lowercase mapping, then the full case folding's own letters
//!    (`ß` → `ss`, final `ς` → `σ`, so `Straße` meets `STRASSE` and `ΣΟΦΟΣ` meets `σοφος`),
//!    typographic quotes made plain (`’` → `'`, `“` → `"`);
//! 3. accents removed: NFD, combining marks dropped except the kana voicing marks
//!    U+3099 and U+309A, then NFC (so `é` → `e`, but `ド` stays `ド`).
//!
//! ```
//! use cardex::query::{fold, words};
//! assert_eq!(fold("Flabébé"), "flabebe");
//! assert_eq!(fold("Professor’s RESEARCH"), "professor's research");
//! assert_eq!(fold("ﾘｻﾞｰﾄﾞﾝ"), "リザードン");
//! let w: Vec<&str> = words("リザードンex & pikachu-gx").collect();
//! assert_eq!(w, ["リザードン", "ex", "pikachu", "gx"]);
//! ```

mod natural;
mod pattern;

pub use natural::{natural_key, natural_key_into, NaturalKey};
pub use pattern::Pattern;

use std::borrow::Cow;
use unicode_normalization::char::is_combining_mark;
use unicode_normalization::UnicodeNormalization;

/// The kana voicing marks, the only combining marks folding keeps.
const KANA_VOICING: [char; 2] = ['\u{3099}', '\u{309A}'];

/// Folds `s` for matching: NFKC, lower case, plain quotes, accents removed (see the module
/// docs). ASCII input takes a fast path and is only lower-cased.
///
/// ```
/// assert_eq!(cardex::query::fold("Pokémon"), "pokemon");
/// assert_eq!(cardex::query::fold("ＳＶ１"), "sv1");
/// ```
pub fn fold(s: &str) -> Cow<'_, str> {
    if s.is_ascii() {
        if s.bytes().any(|b| b.is_ascii_uppercase()) {
            Cow::Owned(s.to_ascii_lowercase())
        } else {
            Cow::Borrowed(s)
        }
    } else {
        let mut out = String::with_capacity(s.len());
        fold_non_ascii(s, &mut out);
        Cow::Owned(out)
    }
}

/// Folds `s` and appends the result to `out` (no allocation for ASCII input when `out`
/// has room).
pub fn fold_into(s: &str, out: &mut String) {
    if s.is_ascii() {
        let start = out.len();
        out.push_str(s);
        out[start..].make_ascii_lowercase();
    } else {
        fold_non_ascii(s, out);
    }
}

/// Folds a text that is not all ASCII. Only the parts around non-ASCII characters go
/// through normalisation: a boundary between two ASCII characters is a boundary for NFKC,
/// NFD and NFC alike (ASCII characters are starters that never decompose, and never
/// compose with what precedes them), and lower-casing and quote mapping work character by
/// character. So the runs of ASCII characters followed by ASCII are only lower-cased, and
/// each stretch between them is folded on its own, with the same result as folding the
/// whole text at once.
fn fold_non_ascii(s: &str, out: &mut String) {
    let bytes = s.as_bytes();
    let plain = |i: usize| bytes[i].is_ascii() && bytes.get(i + 1).is_none_or(u8::is_ascii);
    let mut i = 0;
    while i < bytes.len() {
        let start = i;
        while i < bytes.len() && plain(i) {
            i += 1;
        }
        let at = out.len();
        out.push_str(&s[start..i]);
        out[at..].make_ascii_lowercase();
        if i == bytes.len() {
            break;
        }
        // A stretch starting at an ASCII character followed by a non-ASCII one, or at a
        // non-ASCII character; it ends before an ASCII character, so on a char boundary.
        let start = i;
        i += 1;
        while i < bytes.len() && !plain(i) {
            i += 1;
        }
        fold_stretch(&s[start..i], out);
    }
}

/// Folds `s` as a whole, through the three normalisations (see the module docs).
fn fold_stretch(s: &str, out: &mut String) {
    let lowered: String = s
        .nfkc()
        .flat_map(char::to_lowercase)
        .flat_map(fold_case)
        .map(plain_quote)
        .collect();
    out.extend(
        lowered
            .nfd()
            .filter(|&c| !is_combining_mark(c) || KANA_VOICING.contains(&c))
            .nfc(),
    );
}

/// What Unicode's full case folding makes of a lower-case letter where it differs from the
/// letter itself (after NFKC, which already maps the Greek symbol forms and the long `ſ`):
/// `ß` is `ss`, and the final sigma `ς` is `σ`.
fn fold_case(c: char) -> impl Iterator<Item = char> {
    let (first, second) = match c {
        'ß' => ('s', Some('s')),
        'ς' => ('σ', None),
        other => (other, None),
    };
    std::iter::once(first).chain(second)
}

/// Maps typographic quotes and apostrophes to their ASCII forms.
fn plain_quote(c: char) -> char {
    match c {
        '\u{2018}' | '\u{2019}' | '\u{201A}' | '\u{201B}' | '\u{2032}' | '\u{FF07}' => '\'',
        '\u{201C}' | '\u{201D}' | '\u{201E}' | '\u{201F}' | '\u{2033}' | '\u{FF02}' => '"',
        other => other,
    }
}

/// Whether `c` is CJK for the word rules (a change between CJK and other characters ends a
/// word): Hiragana, Katakana (with `ー`), half-width Katakana, CJK ideographs and Hangul.
pub fn is_cjk(c: char) -> bool {
    matches!(c,
        '\u{3005}'..='\u{3007}'          // 々 〆 〇
        | '\u{3040}'..='\u{309F}'        // Hiragana (with the voicing marks)
        | '\u{30A0}'..='\u{30FF}'        // Katakana, including ー
        | '\u{31F0}'..='\u{31FF}'        // Katakana phonetic extensions
        | '\u{FF65}'..='\u{FF9F}'        // half-width Katakana
        | '\u{3400}'..='\u{4DBF}'        // CJK extension A
        | '\u{4E00}'..='\u{9FFF}'        // CJK unified ideographs
        | '\u{F900}'..='\u{FAFF}'        // CJK compatibility ideographs
        | '\u{20000}'..='\u{2FFFF}'      // CJK extensions B and later
        | '\u{1100}'..='\u{11FF}'        // Hangul Jamo
        | '\u{3130}'..='\u{318F}'        // Hangul compatibility Jamo
        | '\u{AC00}'..='\u{D7AF}'        // Hangul syllables
    )
}

/// Whether `c` is a symbol that is a word of its own (a card's name tells `Nidoran ♀` from
/// `Nidoran ♂`, and `★` and `◇` mark kinds of cards): the Geometric Shapes, Miscellaneous
/// Symbols, Dingbats, Miscellaneous Symbols and Arrows, and pictograph blocks.
pub(crate) fn is_symbol_word(c: char) -> bool {
    matches!(c,
        '\u{25A0}'..='\u{25FF}'        // Geometric Shapes: ◇ ◆ ○ ●
        | '\u{2600}'..='\u{26FF}'      // Miscellaneous Symbols: ★ ☆ ♀ ♂ ♠
        | '\u{2700}'..='\u{27BF}'      // Dingbats
        | '\u{2B00}'..='\u{2BFF}'      // Miscellaneous Symbols and Arrows: ⭐
        | '\u{1F300}'..='\u{1FAFF}'    // pictographs and emoji
    )
}

/// Per byte: whether it is an ASCII letter or digit (a word byte of an ASCII text).
const ASCII_WORD: [bool; 256] = ascii_table(false);
/// [`ASCII_WORD`] with `*` and `?` (the word bytes of an ASCII query pattern).
const ASCII_PATTERN_WORD: [bool; 256] = ascii_table(true);

const fn ascii_table(pattern: bool) -> [bool; 256] {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 128 {
        let byte = b as u8;
        table[b] = byte.is_ascii_alphanumeric() || (pattern && (byte == b'*' || byte == b'?'));
        b += 1;
    }
    table
}

/// Whether `c` can be part of a word: a letter, a digit, or a kana voicing mark.
#[inline]
fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || KANA_VOICING.contains(&c)
}

/// The words of an already folded text: maximal runs of letters and digits, where a change
/// between CJK and other characters also ends a word, and each symbol (the Geometric
/// Shapes, Miscellaneous Symbols, Dingbats, Miscellaneous Symbols and Arrows, and
/// pictograph blocks: `★`, `◇`, `♀`) is a word of its own.
///
/// ```
/// let w: Vec<&str> = cardex::query::words("boss's orders (ghetsis)").collect();
/// assert_eq!(w, ["boss", "s", "orders", "ghetsis"]);
/// let w: Vec<&str> = cardex::query::words("team rocket's nidoran♀ ★").collect();
/// assert_eq!(w, ["team", "rocket", "s", "nidoran", "♀", "★"]);
/// // In a pattern, a symbol keeps the wildcards around it.
/// let w: Vec<&str> = cardex::query::pattern_words("★* *♀ nido*♂").collect();
/// assert_eq!(w, ["★*", "*♀", "nido*", "♂"]);
/// ```
pub fn words(folded: &str) -> Words<'_> {
    Words {
        rest: folded,
        pattern: false,
        ascii: folded.is_ascii(),
    }
}

/// The words of an already folded text, as [`words`] finds them: pushes where each starts
/// and ends to `spans` (which the caller passes empty). Returns `true` only if the text is
/// its words joined by single spaces (nothing before the first or after the last); then a
/// word pair `"w1 w2"` is the slice from one word's start to the next one's end, with
/// nothing to copy. An ASCII text takes a byte loop; any other is split by [`words`], and
/// the result is then always `false`.
pub(crate) fn word_spans<const N: usize>(
    folded: &str,
    spans: &mut smallvec::SmallVec<[(usize, usize); N]>,
) -> bool {
    if let Some(joined) = ascii_word_spans(folded, spans) {
        return joined;
    }
    // Each word is a slice of `folded`: its offset is the distance between the two.
    let base = folded.as_ptr() as usize;
    spans.extend(words(folded).map(|w| {
        let start = w.as_ptr() as usize - base;
        (start, start + w.len())
    }));
    false
}

/// [`word_spans`] for an ASCII text; `None`, pushing nothing, for any other.
fn ascii_word_spans<const N: usize>(
    folded: &str,
    spans: &mut smallvec::SmallVec<[(usize, usize); N]>,
) -> Option<bool> {
    if !folded.is_ascii() {
        return None;
    }
    let b = folded.as_bytes();
    let mut joined = true;
    let mut first = true;
    let mut i = 0;
    loop {
        let gap = i;
        while i < b.len() && !ASCII_WORD[usize::from(b[i])] {
            i += 1;
        }
        let single_space = i == gap + 1 && b[gap] == b' ';
        if i == b.len() {
            return Some(joined && i == gap);
        }
        joined &= if first { i == 0 } else { single_space };
        first = false;
        let start = i;
        while i < b.len() && ASCII_WORD[usize::from(b[i])] {
            i += 1;
        }
        spans.push((start, i));
    }
}

/// Like [`words`], but `*` and `?` count as word characters, so a query value such as
/// `char*` stays one (pattern) word.
pub fn pattern_words(folded: &str) -> Words<'_> {
    Words {
        rest: folded,
        pattern: true,
        ascii: folded.is_ascii(),
    }
}

/// Iterator over the words of a folded text; see [`words`].
#[derive(Debug, Clone)]
pub struct Words<'a> {
    rest: &'a str,
    pattern: bool,
    /// The text is ASCII: words are runs of ASCII letters and digits, found byte by byte
    /// (no CJK, no script changes).
    ascii: bool,
}

impl<'a> Iterator for Words<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        let pattern = self.pattern;
        if self.ascii {
            let bytes = self.rest.as_bytes();
            let table = if pattern {
                &ASCII_PATTERN_WORD
            } else {
                &ASCII_WORD
            };
            let part = |b: u8| table[usize::from(b)];
            let Some(start) = bytes.iter().position(|&b| part(b)) else {
                self.rest = "";
                return None;
            };
            let end = bytes[start..]
                .iter()
                .position(|&b| !part(b))
                .map_or(bytes.len(), |n| start + n);
            // Both ends are ASCII positions of an ASCII text: character boundaries.
            let word = &self.rest[start..end];
            self.rest = &self.rest[end..];
            return Some(word);
        }
        let is_wildcard = |c: char| pattern && (c == '*' || c == '?');
        let mut start = None;
        // Whether the current word is CJK; undecided while it holds only wildcards.
        let mut cjk_run: Option<bool> = None;
        for (i, c) in self.rest.char_indices() {
            if !c.is_ascii() && is_symbol_word(c) {
                // A symbol ends the word before it, and is one itself; in a pattern, with
                // the wildcards around it (`★*`, `*♀` are patterns of one word).
                let wildcards_only =
                    start.is_some_and(|s| self.rest[s..i].chars().all(is_wildcard));
                let (begin, end) = match start {
                    Some(s) if !wildcards_only => (s, i),
                    _ => {
                        let after = &self.rest[i + c.len_utf8()..];
                        let trailing = after.len() - after.trim_start_matches(is_wildcard).len();
                        (start.unwrap_or(i), i + c.len_utf8() + trailing)
                    }
                };
                let word = &self.rest[begin..end];
                self.rest = &self.rest[end..];
                return Some(word);
            }
            let part = if c.is_ascii() {
                c.is_ascii_alphanumeric() || is_wildcard(c)
            } else {
                is_word_char(c)
            };
            match start {
                None if part => {
                    start = Some(i);
                    cjk_run = (!is_wildcard(c)).then(|| is_cjk(c));
                }
                None => {}
                Some(s) => {
                    let script_change =
                        !is_wildcard(c) && *cjk_run.get_or_insert_with(|| is_cjk(c)) != is_cjk(c);
                    if !part || script_change {
                        let word = &self.rest[s..i];
                        self.rest = &self.rest[i..];
                        return Some(word);
                    }
                }
            }
        }
        let word = start.map(|s| &self.rest[s..]);
        self.rest = "";
        word
    }
}

/// Whether every character of `word` is CJK (and there is at least one). Such a query word
/// also matches any indexed word that contains it (`ザード` finds `リザードン`).
pub fn is_all_cjk(word: &str) -> bool {
    !word.is_empty() && word.chars().all(is_cjk)
}

/// Parses a string that is a decimal number (`"120"`, `"-5"`, `"+7"`, `"9.5"`), which
/// ranges and comparisons in `q` compare as a number: an optional sign, at most 18
/// digits, then maybe a point and more digits. Surrounding spaces, exponents and a point
/// without digits on both sides (`"1."`, `".5"`) are not decimal numbers.
pub fn decimal_number(s: &str) -> Option<f64> {
    let unsigned = s.strip_prefix(['-', '+']).unwrap_or(s);
    let (whole, fraction) = match unsigned.split_once('.') {
        Some((whole, fraction)) => (whole, Some(fraction)),
        None => (unsigned, None),
    };
    let digits = |d: &str| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit());
    if whole.len() > 18 || !digits(whole) || !fraction.is_none_or(digits) {
        return None;
    }
    s.parse::<f64>().ok()
}

/// Parses a date written `YYYY/MM/DD` or `YYYY-MM-DD` (one separator, twice), alone or
/// followed by a time after a space or `T` (`2022/10/10 15:12:00`), as the number
/// `YYYYMMDD`: ranges and comparisons in `q` compare dates as these numbers
/// (`release_date>=2020/01/01`, `release_date:[2020-01-01 TO *]`), the time ignored.
pub fn date_number(s: &str) -> Option<f64> {
    let b = s.as_bytes();
    let (year, month, day) = date_parts(s)?;
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) {
        return None;
    }
    if let Some((&first, time)) = b[10..].split_first() {
        let clock = |c: &u8| c.is_ascii_digit() || matches!(c, b':' | b'.' | b'Z');
        if !matches!(first, b' ' | b'T') || time.is_empty() || !time.iter().all(clock) {
            return None;
        }
    }
    Some(f64::from(year * 10_000 + month * 100 + day))
}

/// The year, month and day of text that starts in a date's shape, `YYYY/MM/DD` or
/// `YYYY-MM-DD` (its first ten bytes, ASCII), whatever their values.
pub(crate) fn date_parts(s: &str) -> Option<(u32, u32, u32)> {
    let b = s.as_bytes().get(..10)?;
    if !matches!(b[4], b'/' | b'-') || b[7] != b[4] {
        return None;
    }
    let digits = |at: std::ops::Range<usize>| -> Option<u32> {
        b[at].iter().try_fold(0u32, |n, &c| {
            c.is_ascii_digit().then(|| n * 10 + u32::from(c - b'0'))
        })
    };
    Some((digits(0..4)?, digits(5..7)?, digits(8..10)?))
}

/// Whether `x` reads as a date `YYYYMMDD` of the years 1000 to 9999 (what
/// [`date_number`] makes of a date, or an eight-digit whole number in the ISO 8601 basic
/// form): a field whose string numbers all read so is a field of dates, where a bare year
/// in a range or comparison stands for that year's span (`release_date>=2020`).
pub fn is_date_number(x: f64) -> bool {
    if x.fract() != 0.0 || !(10_000_101.0..=99_991_231.0).contains(&x) {
        return false;
    }
    let n = x as u32;
    (1..=12).contains(&(n / 100 % 100)) && (1..=31).contains(&(n % 100))
}

/// A bare year as a range bound in `q` (`2020`: an integer from 1000 to 9999), which on a
/// field of dates ([`is_date_number`]) stands for the dates of that year.
pub fn year(x: f64) -> Option<u32> {
    (x.fract() == 0.0 && (1000.0..=9999.0).contains(&x)).then_some(x as u32)
}

/// The number a string value compares as in ranges and comparisons: a decimal number
/// ([`decimal_number`]) or a date ([`date_number`]).
pub fn numeric_string(s: &str) -> Option<f64> {
    decimal_number(s).or_else(|| date_number(s))
}

/// The number of terminal columns `s` takes: wide (East Asian) characters count two,
/// combining marks none. Used to put carets under the right character in error messages.
pub fn display_width(s: &str) -> usize {
    s.chars().map(char_width).sum()
}

fn char_width(c: char) -> usize {
    if is_combining_mark(c) || c == '\u{200B}' {
        0
    } else if is_cjk(c)
        || matches!(c,
            '\u{3000}'..='\u{303F}'        // CJK symbols and punctuation
            | '\u{FF00}'..='\u{FF60}'      // full-width forms
            | '\u{FFE0}'..='\u{FFE6}'
            | '\u{1F300}'..='\u{1FAFF}'    // pictographs and emoji
        )
    {
        2
    } else {
        1
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn dates_are_numbers_yyyymmdd() {
        assert_eq!(date_number("2020/05/01"), Some(20_200_501.0));
        assert_eq!(date_number("1999-01-09"), Some(19_990_109.0));
        assert_eq!(date_number("2022/10/10 15:12:00"), Some(20_221_010.0));
        assert_eq!(date_number("2022-10-10T15:12:00Z"), Some(20_221_010.0));
        for not in [
            "2020/05-01",
            "2020/13/01",
            "2020/00/10",
            "2020/01/32",
            "2020/1/01",
            "20200501",
            "2020/05/01 ",
            "2020/05/01 noon",
            "2020/05/01x",
            "",
            "2020/05",
        ] {
            assert_eq!(date_number(not), None, "{not}");
        }
        assert_eq!(numeric_string("120"), Some(120.0));
        assert_eq!(numeric_string("2020/05/01"), Some(20_200_501.0));
        assert_eq!(numeric_string("May 2020"), None);
        assert!(is_date_number(20_200_501.0));
        assert!(is_date_number(10_000_101.0) && is_date_number(99_991_231.0));
        for not in [
            120.0,
            2020.0,
            20_201_301.0,
            20_200_100.0,
            20_200_132.0,
            20_200_501.5,
        ] {
            assert!(!is_date_number(not), "{not}");
        }
        assert_eq!(year(2020.0), Some(2020));
        for not in [999.0, 10_000.0, 2020.5, -2020.0, 20_200_501.0] {
            assert_eq!(year(not), None, "{not}");
        }
    }

    /// Characters that test the stretch boundaries: ASCII letters and spaces, combining
    /// marks that attach to an ASCII letter, precomposed and compatibility characters,
    /// kana with and without voicing marks, half- and full-width forms, Hangul jamo that
    /// compose, typographic quotes.
    const MIXED: &[char] = &[
        'a', 'E', 'z', ' ', '-', '\'', '1', '\u{301}', '\u{308}', '\u{327}', '\u{3099}',
        '\u{309A}', 'é', 'Å', 'ß', 'İ', 'ǅ', '㎏', 'ﬁ', 'ト', 'ド', 'ｶ', 'ﾞ', 'Ｓ', '１',
        '\u{1100}', '\u{1161}', '\u{11A8}', '’', '“', '×', '炎', 'Ω', '\u{212B}',
    ];

    proptest! {
        /// Folding stretch by stretch gives what folding the whole text at once gives.
        #[test]
        fn folding_by_stretches_is_folding_the_whole(
            chars in proptest::collection::vec(proptest::sample::select(MIXED), 0..24)
        ) {
            let text: String = chars.into_iter().collect();
            let mut whole = String::new();
            fold_stretch(&text, &mut whole);
            prop_assert_eq!(fold(&text).into_owned(), whole);
        }

        /// On any text, ASCII (the byte loop) or not (the general split), the spans are
        /// the words; the text is said to be joined exactly when it is ASCII and its words
        /// joined by single spaces.
        #[test]
        fn word_spans_are_the_words(text in prop_oneof!["[ -~]{0,40}", "\\PC{0,40}"]) {
            let folded = fold(&text);
            let mut spans: smallvec::SmallVec<[(usize, usize); 4]> = smallvec::SmallVec::new();
            let joined = word_spans(&folded, &mut spans);
            let expected: Vec<&str> = words(&folded).collect();
            let found: Vec<&str> = spans.iter().map(|&(s, e)| &folded[s..e]).collect();
            prop_assert_eq!(&found, &expected);
            prop_assert_eq!(joined, folded.is_ascii() && expected.join(" ") == *folded);
        }
    }

    #[test]
    fn word_spans_flag_joined_text_and_leave_other_text_to_words() {
        let mut spans: smallvec::SmallVec<[(usize, usize); 4]> = smallvec::SmallVec::new();
        assert_eq!(ascii_word_spans("flabébé ex", &mut spans), None);
        assert!(spans.is_empty());
        assert!(!word_spans("flabébé ex", &mut spans));
        let found: Vec<(usize, usize)> = spans.drain(..).collect();
        assert_eq!(found, [(0, 9), (10, 12)]);
        assert_eq!(ascii_word_spans("", &mut spans), Some(true));
        assert_eq!(ascii_word_spans("a b", &mut spans), Some(true));
        assert_eq!(ascii_word_spans(" a b", &mut spans), Some(false));
        assert_eq!(ascii_word_spans("a  b", &mut spans), Some(false));
        assert_eq!(ascii_word_spans("a b.", &mut spans), Some(false));
        assert_eq!(ascii_word_spans("a-b", &mut spans), Some(false));
    }

    #[test]
    fn fold_rules() {
        assert_eq!(fold("CHARIZARD"), "charizard");
        assert_eq!(fold("Flabébé"), "flabebe");
        assert_eq!(fold("Pokémon"), "pokemon");
        assert_eq!(fold("Professor’s Research"), "professor's research");
        assert_eq!(fold("“Quoted”"), "\"quoted\"");
        assert_eq!(fold("ＯＰ０１"), "op01");
        // Voicing marks survive, in composed form.
        assert_eq!(fold("ド"), "ド");
        assert_eq!(fold("ト\u{3099}"), "ド");
        assert_eq!(fold("ﾘｻﾞｰﾄﾞﾝ"), "リザードン");
        assert_eq!(fold("Ångström"), "angstrom");
        // Full case folding: ß (and capital ẞ) is ss, the final sigma is σ, the Greek
        // symbol forms and the long s are their letters.
        for (a, b) in [
            ("Straße", "STRASSE"),
            ("STRAẞE", "strasse"),
            ("ΣΟΦΟΣ", "σοφος"),
            ("ϐϑϕ", "βθφ"),
            ("ſpiel", "SPIEL"),
        ] {
            assert_eq!(fold(a), fold(b), "{a} {b}");
        }
        assert_eq!(fold("Weißer Ritter"), "weisser ritter");
        assert!(matches!(fold("already folded"), Cow::Borrowed(_)));
    }

    #[test]
    fn fold_into_matches_fold() {
        for s in ["ABC", "Flabébé", "リザードンEX", "Ｚｏｒｏ"] {
            let mut out = String::from(">");
            fold_into(s, &mut out);
            assert_eq!(&out[1..], fold(s));
        }
    }

    #[test]
    fn words_split_on_punctuation_and_script() {
        fn w(s: &str) -> Vec<&str> {
            words(s).collect()
        }
        assert_eq!(w("charizard ex"), ["charizard", "ex"]);
        assert_eq!(w("pikachu & zekrom-gx"), ["pikachu", "zekrom", "gx"]);
        assert_eq!(w("リザードンex"), ["リザードン", "ex"]);
        assert_eq!(w("ex リザードン"), ["ex", "リザードン"]);
        assert_eq!(w("雷タイプ"), ["雷タイプ"]);
        assert_eq!(w("10+ damage"), ["10", "damage"]);
        assert_eq!(w("  ...  "), Vec::<&str>::new());
        assert_eq!(w(""), Vec::<&str>::new());
    }

    #[test]
    fn pattern_words_keep_wildcards() {
        fn w(s: &str) -> Vec<&str> {
            pattern_words(s).collect()
        }
        assert_eq!(w("char*"), ["char*"]);
        assert_eq!(w("*zard ex"), ["*zard", "ex"]);
        assert_eq!(w("リザ*"), ["リザ*"]);
        assert_eq!(w("mr.*"), ["mr", "*"]);
        assert_eq!(w("*ザード"), ["*ザード"]);
        assert_eq!(w("?x"), ["?x"]);
    }

    #[test]
    fn cjk_classes() {
        assert!(is_all_cjk("ザード"));
        assert!(is_all_cjk("炎"));
        assert!(is_all_cjk("한국"));
        assert!(!is_all_cjk("exザ"));
        assert!(!is_all_cjk(""));
    }

    #[test]
    fn decimal_numbers() {
        assert_eq!(decimal_number("0"), Some(0.0));
        assert_eq!(decimal_number("-40"), Some(-40.0));
        assert_eq!(decimal_number("+40"), Some(40.0));
        assert_eq!(decimal_number("060"), Some(60.0));
        // Half grades (BGS and CGC 9.5) and prices written as strings.
        assert_eq!(decimal_number("9.5"), Some(9.5));
        assert_eq!(decimal_number("175.50"), Some(175.5));
        assert_eq!(decimal_number("-0.25"), Some(-0.25));
        assert_eq!(
            decimal_number("1.1234567890123456789"),
            Some(1.123_456_789_012_345_7)
        );
        for bad in [
            "",
            "-",
            "1.",
            ".5",
            "-.5",
            "1.5.2",
            "1,5",
            "1e3",
            "1.5e3",
            " 1",
            "1 ",
            "12a",
            "×2",
            "inf",
            "NaN",
            "99999999999999999999",
        ] {
            assert_eq!(decimal_number(bad), None, "{bad}");
        }
    }

    #[test]
    fn widths() {
        assert_eq!(display_width("abc"), 3);
        assert_eq!(display_width("リザ"), 4);
        assert_eq!(display_width("e\u{301}"), 1);
        assert_eq!(display_width("🐻"), 2);
    }

    #[test]
    fn decimal_numbers_are_digits_with_a_sign() {
        assert_eq!(decimal_number("120"), Some(120.0));
        assert_eq!(decimal_number("10+"), None);
    }
}
