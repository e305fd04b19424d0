//! tantivy, built as a competent engineer would for this workload: `STRING` fields for the
//! keyword values (one term per value, multi-valued `printings`), an indexed fast `i64`
//! for `hp`, whitespace-tokenised text fields over the pre-folded words (`name` without
//! positions, `attacks_name` with them, one value per attack so phrases stay inside one
//! name), the default-order `rank` as a fast field, the card `id` as a fast (columnar)
//! string, and the card's JSON stored (lz4). One reader and searcher, kept, with each
//! segment's `rank` and `id` columns opened once.
//!
//! Two ways to answer, both measured, both reading the page's ids from the `id` column:
//!
//! - [`Tantivy::answer`], tantivy as documented: one search with the `Count` collector and
//!   `TopDocs` ordered by the `rank` fast field — what an engineer writes from the docs.
//! - [`Tantivy::answer_tuned`], what a tantivy expert can do for this one workload:
//!   documents are added in default order by one indexing thread with merges off, so inside
//!   every segment doc ids follow rank (checked at build); the query's weight gives the
//!   count (tantivy's fast path: a term's document frequency, for instance), and its scorer
//!   is walked for the first page only, per segment, keeping the smallest ranks.

use std::ops::Bound;

use tantivy::collector::{Count, TopDocs};
use tantivy::columnar::{Column, StrColumn};
use tantivy::indexer::NoMergePolicy;
use tantivy::query::{
    BooleanQuery, EnableScoring, Occur, PhraseQuery, Query, RangeQuery, RegexQuery, TermQuery,
};
use tantivy::schema::{
    Field, IndexRecordOption, Schema, TextFieldIndexing, TextOptions, FAST, INDEXED, STORED, STRING,
};
use tantivy::tokenizer::{TextAnalyzer, WhitespaceTokenizer};
use tantivy::{
    DocAddress, DocSet, Index, IndexReader, IndexWriter, Order, Searcher, TantivyDocument, Term,
    TERMINATED,
};

use super::{values as v, Answer, Card, Class, PAGE};

/// The tantivy peer.
pub struct Tantivy {
    _index: Index,
    _reader: IndexReader,
    searcher: Searcher,
    /// The `rank` column of each segment, in `searcher.segment_readers()` order.
    ranks: Vec<Column<u64>>,
    /// The `id` column of each segment, in the same order.
    ids: Vec<StrColumn>,
    fields: Fields,
}

#[derive(Clone, Copy)]
struct Fields {
    rank: Field,
    id: Field,
    expansion_id: Field,
    printings: Field,
    rarity_code: Field,
    language_code: Field,
    hp: Field,
    name: Field,
    attacks_name: Field,
    json: Field,
}

fn words_field(positions: bool) -> TextOptions {
    let option = if positions {
        IndexRecordOption::WithFreqsAndPositions
    } else {
        IndexRecordOption::Basic
    };
    TextOptions::default().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer("words")
            .set_index_option(option),
    )
}

impl Tantivy {
    /// Indexes `cards` (in default order) into a new in-memory index.
    pub fn new(cards: &[Card]) -> Tantivy {
        let mut schema = Schema::builder();
        let fields = Fields {
            rank: schema.add_u64_field("rank", FAST),
            id: schema.add_text_field("id", STRING | FAST),
            expansion_id: schema.add_text_field("expansion_id", STRING),
            printings: schema.add_text_field("printings", STRING),
            rarity_code: schema.add_text_field("rarity_code", STRING),
            language_code: schema.add_text_field("language_code", STRING),
            hp: schema.add_i64_field("hp", INDEXED | FAST),
            name: schema.add_text_field("name", words_field(false)),
            attacks_name: schema.add_text_field("attacks_name", words_field(true)),
            json: schema.add_text_field("json", STORED),
        };
        let index = Index::create_in_ram(schema.build());
        index.tokenizers().register(
            "words",
            TextAnalyzer::builder(WhitespaceTokenizer::default()).build(),
        );
        let mut writer: IndexWriter = index.writer_with_num_threads(1, 1 << 30).expect("writer");
        writer.set_merge_policy(Box::new(NoMergePolicy));
        let f = fields;
        for c in cards {
            let mut doc = TantivyDocument::default();
            doc.add_u64(f.rank, u64::from(c.rank));
            doc.add_text(f.id, &c.id);
            doc.add_text(f.expansion_id, &c.expansion_id);
            for p in &c.printings {
                doc.add_text(f.printings, p);
            }
            if let Some(r) = &c.rarity_code {
                doc.add_text(f.rarity_code, r);
            }
            if let Some(l) = &c.language_code {
                doc.add_text(f.language_code, l);
            }
            if let Some(hp) = c.hp {
                doc.add_i64(f.hp, hp);
            }
            doc.add_text(f.name, c.name.join(" "));
            for a in &c.attacks {
                doc.add_text(f.attacks_name, a.join(" "));
            }
            doc.add_text(f.json, &c.json);
            writer.add_document(doc).expect("add");
        }
        writer.commit().expect("commit");
        writer.wait_merging_threads().expect("merges");
        let reader = index.reader().expect("reader");
        let searcher = reader.searcher();
        let ranks: Vec<Column<u64>> = searcher
            .segment_readers()
            .iter()
            .map(|s| s.fast_fields().u64("rank").expect("rank column"))
            .collect();
        let ids: Vec<StrColumn> = searcher
            .segment_readers()
            .iter()
            .map(|s| {
                s.fast_fields()
                    .str("id")
                    .expect("id column")
                    .expect("a string column")
            })
            .collect();
        for (segment, column) in searcher.segment_readers().iter().zip(&ranks) {
            let mut last = None;
            for doc in 0..segment.max_doc() {
                let rank = column.first(doc).expect("every doc has a rank");
                assert!(last < Some(rank), "doc ids follow rank inside a segment");
                last = Some(rank);
            }
        }
        Tantivy {
            _index: index,
            _reader: reader,
            searcher,
            ranks,
            ids,
            fields,
        }
    }

    /// How many segments the index has.
    pub fn segments(&self) -> usize {
        self.searcher.segment_readers().len()
    }

    fn query(&self, class: Class) -> Box<dyn Query> {
        let f = self.fields;
        let term = |field: Field, value: &str| -> Box<dyn Query> {
            Box::new(TermQuery::new(
                Term::from_field_text(field, value),
                IndexRecordOption::Basic,
            ))
        };
        match class {
            Class::Keyword => term(f.rarity_code, v::SR),
            Class::PrintingsAndRarity => Box::new(BooleanQuery::intersection(vec![
                term(f.printings, v::REPRINT_SET),
                term(f.rarity_code, v::SR),
            ])),
            Class::OrOfThree => Box::new(BooleanQuery::union(vec![
                term(f.rarity_code, v::SR),
                term(f.rarity_code, v::SEC),
                term(f.rarity_code, v::UR),
            ])),
            Class::AndNot => Box::new(BooleanQuery::new(vec![
                (Occur::Must, term(f.expansion_id, v::DEBUT_SET)),
                (Occur::MustNot, term(f.rarity_code, v::C)),
            ])),
            Class::Range => Box::new(RangeQuery::new(
                Bound::Included(Term::from_field_i64(f.hp, v::MIN_HP)),
                Bound::Unbounded,
            )),
            Class::TextWord => term(f.name, v::WORD),
            Class::Phrase => Box::new(PhraseQuery::new(
                v::PHRASE
                    .iter()
                    .map(|w| Term::from_field_text(f.attacks_name, w))
                    .collect(),
            )),
            Class::Wildcard => Box::new(
                RegexQuery::from_pattern(&format!("{}.*", v::PREFIX), f.name).expect("regex"),
            ),
            Class::LanguageScoped => Box::new(BooleanQuery::intersection(vec![
                term(f.language_code, v::JA),
                term(f.name, v::EX),
            ])),
            Class::LanguageAll => term(f.language_code, v::EN),
        }
    }

    /// Appends the ids of `page` ((segment, doc) in page order) to `answer`, read from the
    /// `id` column: each segment's term ordinals sorted and looked up in one forward walk
    /// of its dictionary (`sorted_ords_to_term_cb`, what tantivy's own term aggregation
    /// does), not one dictionary seek per id.
    fn push_ids(&self, answer: &mut Answer, page: &[(usize, u32)]) {
        // (segment, term ordinal, place in the page)
        let mut wanted: Vec<(usize, u64, usize)> = page
            .iter()
            .enumerate()
            .map(|(place, &(segment, doc))| {
                let ord = self.ids[segment]
                    .term_ords(doc)
                    .next()
                    .expect("every doc has an id");
                (segment, ord, place)
            })
            .collect();
        wanted.sort_unstable();
        let mut text = String::with_capacity(page.len() * 16);
        let mut spans = vec![(0, 0); page.len()];
        for run in wanted.chunk_by(|a, b| a.0 == b.0) {
            let dictionary = self.ids[run[0].0].dictionary();
            let mut next = run.iter();
            dictionary
                .sorted_ords_to_term_cb(run.iter().map(|w| w.1), |term| {
                    let place = next.next().expect("one call per ordinal").2;
                    let start = text.len();
                    text.push_str(std::str::from_utf8(term).expect("a UTF-8 id"));
                    spans[place] = (start, text.len());
                    Ok(())
                })
                .expect("the ids' terms");
        }
        for (start, end) in spans {
            answer.ids.push(&text[start..end]);
        }
    }

    /// Counts the matches of `class` and lists the first page's ids, with tantivy's
    /// collectors.
    pub fn answer(&self, class: Class) -> Answer {
        let query = self.query(class);
        let collector = (
            Count,
            TopDocs::with_limit(PAGE).order_by_fast_field::<u64>("rank", Order::Asc),
        );
        let (total, top) = self.searcher.search(&query, &collector).expect("search");
        let page: Vec<(usize, u32)> = top
            .into_iter()
            .map(
                |(
                    _,
                    DocAddress {
                        segment_ord,
                        doc_id,
                    },
                )| (segment_ord as usize, doc_id),
            )
            .collect();
        let mut answer = Answer::new(total as u64);
        self.push_ids(&mut answer, &page);
        answer
    }

    /// Counts the matches of `class` and lists the first page's ids, the tuned way: the
    /// weight's count, and the scorer walked for the first page only.
    pub fn answer_tuned(&self, class: Class) -> Answer {
        let query = self.query(class);
        let weight = query
            .weight(EnableScoring::disabled_from_searcher(&self.searcher))
            .expect("weight");
        let mut total = 0;
        // (rank, segment, doc) of each segment's first page.
        let mut first: Vec<(u64, usize, u32)> = Vec::with_capacity(PAGE);
        for (s, (segment, ranks)) in self
            .searcher
            .segment_readers()
            .iter()
            .zip(&self.ranks)
            .enumerate()
        {
            total += u64::from(weight.count(segment).expect("count"));
            let mut scorer = weight.scorer(segment, 1.0).expect("scorer");
            let mut doc = scorer.doc();
            let mut taken = 0;
            while doc != TERMINATED && taken < PAGE {
                first.push((ranks.first(doc).expect("rank"), s, doc));
                taken += 1;
                doc = scorer.advance();
            }
        }
        first.sort_unstable();
        first.truncate(PAGE);
        let page: Vec<(usize, u32)> = first.into_iter().map(|(_, s, d)| (s, d)).collect();
        let mut answer = Answer::new(total);
        self.push_ids(&mut answer, &page);
        answer
    }
}
