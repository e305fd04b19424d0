//! The simplest peer: the cards deserialised with serde into typed structs (in parallel
//! over files, with rayon) in a `Vec`, in default order, each with its JSON to serve it
//! (as every engine here keeps), and a predicate run over every one of them.

use std::path::Path;

use super::{read_cards, values as v, Answer, Card, Class, PAGE};

/// The scan peer.
pub struct Scan {
    cards: Vec<Card>,
}

fn has_phrase(words: &[String], phrase: &[&str]) -> bool {
    words
        .windows(phrase.len())
        .any(|w| w.iter().zip(phrase).all(|(a, b)| a == b))
}

impl Scan {
    /// Holds `cards` (in default order).
    pub fn new(cards: Vec<Card>) -> Scan {
        Scan { cards }
    }

    /// Reads the cards of `catalog` in the snapshot `dir`.
    pub fn load(dir: &Path, catalog: &str) -> Scan {
        Scan::new(read_cards(dir, catalog))
    }

    /// The cards.
    pub fn cards(&self) -> &[Card] {
        &self.cards
    }

    /// Counts the matches of `class` and lists the first page.
    pub fn answer(&self, class: Class) -> Answer {
        let is = |x: &Option<String>, want: &str| x.as_deref() == Some(want);
        let matches: &dyn Fn(&Card) -> bool = match class {
            Class::Keyword => &|c| is(&c.rarity_code, v::SR),
            Class::PrintingsAndRarity => {
                &|c| is(&c.rarity_code, v::SR) && c.printings.iter().any(|p| p == v::REPRINT_SET)
            }
            Class::OrOfThree => &|c| {
                is(&c.rarity_code, v::SR) || is(&c.rarity_code, v::SEC) || is(&c.rarity_code, v::UR)
            },
            Class::AndNot => &|c| c.expansion_id == v::DEBUT_SET && !is(&c.rarity_code, v::C),
            Class::Range => &|c| c.hp.is_some_and(|h| h >= v::MIN_HP),
            Class::TextWord => &|c| c.name.iter().any(|w| w == v::WORD),
            Class::Phrase => &|c| c.attacks.iter().any(|a| has_phrase(a, &v::PHRASE)),
            Class::Wildcard => &|c| c.name.iter().any(|w| w.starts_with(v::PREFIX)),
            Class::LanguageScoped => {
                &|c| is(&c.language_code, v::JA) && c.name.iter().any(|w| w == v::EX)
            }
            Class::LanguageAll => &|c| is(&c.language_code, v::EN),
        };
        let mut answer = Answer::new(0);
        for card in &self.cards {
            if matches(card) {
                answer.total += 1;
                if answer.ids.len() < PAGE {
                    answer.ids.push(&card.id);
                }
            }
        }
        answer
    }
}
