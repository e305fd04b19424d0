//! Wildcard patterns: `*` matches any run of characters (also none), `?` exactly one.

/// A folded wildcard pattern, matched against whole folded values or single words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pattern {
    chars: Vec<char>,
    prefix_len: usize,
}

impl Pattern {
    /// Builds a pattern from folded text.
    pub fn new(folded: &str) -> Pattern {
        let prefix_len = folded.find(['*', '?']).unwrap_or(folded.len());
        Pattern {
            chars: folded.chars().collect(),
            prefix_len,
        }
    }

    /// The pattern's text.
    pub fn as_text(&self) -> String {
        self.chars.iter().collect()
    }

    /// Whether `s` contains a wildcard character.
    pub fn has_wildcard(s: &str) -> bool {
        s.contains(['*', '?'])
    }

    /// The text before the first wildcard; every match starts with it, so a sorted
    /// vocabulary needs to be scanned only from there.
    pub fn literal_prefix(&self) -> String {
        self.chars
            .iter()
            .take_while(|&&c| c != '*' && c != '?')
            .collect()
    }

    /// The byte length of [`Pattern::literal_prefix`] in the folded source.
    #[cfg(test)]
    pub fn literal_prefix_len(&self) -> usize {
        self.prefix_len
    }

    /// Whether the whole of `s` matches the pattern (iterative, no recursion: the classic
    /// backtrack-to-last-star algorithm, `O(len(s) * len(pattern))` at worst).
    pub fn matches(&self, s: &str) -> bool {
        let p = &self.chars;
        let text: Vec<char> = s.chars().collect();
        let (mut ti, mut pi) = (0usize, 0usize);
        let mut star: Option<(usize, usize)> = None;
        while ti < text.len() {
            if pi < p.len() && (p[pi] == '?' || (p[pi] != '*' && p[pi] == text[ti])) {
                ti += 1;
                pi += 1;
            } else if pi < p.len() && p[pi] == '*' {
                star = Some((pi, ti));
                pi += 1;
            } else if let Some((sp, st)) = star {
                pi = sp + 1;
                ti = st + 1;
                star = Some((sp, st + 1));
            } else {
                return false;
            }
        }
        p[pi..].iter().all(|&c| c == '*')
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        let m = |p: &str, s: &str| Pattern::new(p).matches(s);
        assert!(m("char*", "charizard"));
        assert!(m("char*", "char"));
        assert!(!m("char*", "cha"));
        assert!(m("*zard", "charizard"));
        assert!(m("c?arizard", "charizard"));
        assert!(!m("c?arizard", "carizard"));
        assert!(m("*", ""));
        assert!(m("**a**", "banana"));
        assert!(m("リザ*", "リザードン"));
        assert!(m("a*b*c", "aXXbYYc"));
        assert!(!m("a*b*c", "aXXbYY"));
        assert!(!m("?", ""));
    }

    #[test]
    fn prefix() {
        assert_eq!(Pattern::new("char*der").literal_prefix(), "char");
        assert_eq!(Pattern::new("*x").literal_prefix(), "");
        assert_eq!(Pattern::new("ab?").literal_prefix_len(), 2);
    }

    #[test]
    fn a_pattern_matches_and_has_a_literal_prefix() {
        let p = Pattern::new("char*der");
        assert!(p.matches("charmander"));
        assert!(!p.matches("charizard"));
        assert_eq!(p.literal_prefix(), "char");
    }
}
