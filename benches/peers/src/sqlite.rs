//! SQLite in memory (rusqlite, bundled), built as a competent engineer would for this
//! workload: a `cards` table keyed by the default-order rank (the rowid, so `ORDER BY rank`
//! is free), a `printings` table, B-tree indexes on every searched column, FTS5 for the
//! text fields (names contentless, rowid = rank; one row per attack), bulk inserts in one
//! transaction with the indexes created afterwards, and prepared statements from the
//! statement cache. Each answer is two statements: `count(*)` and the first page's ids
//! (read as `&str` from the row, then copied into the answer).

use rusqlite::{params_from_iter, Connection, ToSql};

use super::{values as v, Answer, Card, Class, PAGE};

/// The SQLite peer.
pub struct Sqlite {
    conn: Connection,
}

const SCHEMA: &str = "
PRAGMA journal_mode = OFF;
PRAGMA synchronous = OFF;
CREATE TABLE cards (
    rank INTEGER PRIMARY KEY,
    id TEXT NOT NULL,
    expansion_id TEXT NOT NULL,
    rarity_code TEXT,
    language_code TEXT,
    hp INTEGER,
    json TEXT NOT NULL
);
CREATE TABLE printings (
    expansion_id TEXT NOT NULL,
    rank INTEGER NOT NULL,
    PRIMARY KEY (expansion_id, rank)
) WITHOUT ROWID;
CREATE VIRTUAL TABLE name_fts USING fts5(
    name, content = '', tokenize = 'unicode61 remove_diacritics 0'
);
CREATE VIRTUAL TABLE attack_fts USING fts5(
    name, card UNINDEXED, tokenize = 'unicode61 remove_diacritics 0'
);
";

const INDEXES: &str = "
CREATE INDEX cards_rarity_code ON cards (rarity_code);
CREATE INDEX cards_expansion_id ON cards (expansion_id);
CREATE INDEX cards_language_code ON cards (language_code);
CREATE INDEX cards_hp ON cards (hp);
ANALYZE;
";

impl Sqlite {
    /// Loads `cards` (in default order) into a new in-memory database.
    pub fn new(cards: &[Card]) -> Sqlite {
        let mut conn = Connection::open_in_memory().expect("open");
        conn.execute_batch(SCHEMA).expect("schema");
        let tx = conn.transaction().expect("begin");
        {
            let mut card = tx
                .prepare("INSERT INTO cards VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)")
                .expect("prepare");
            let mut printing = tx
                .prepare("INSERT INTO printings VALUES (?1, ?2)")
                .expect("prepare");
            let mut name = tx
                .prepare("INSERT INTO name_fts (rowid, name) VALUES (?1, ?2)")
                .expect("prepare");
            let mut attack = tx
                .prepare("INSERT INTO attack_fts (name, card) VALUES (?1, ?2)")
                .expect("prepare");
            for c in cards {
                card.execute(rusqlite::params![
                    c.rank,
                    c.id,
                    c.expansion_id,
                    c.rarity_code,
                    c.language_code,
                    c.hp,
                    c.json
                ])
                .expect("insert card");
                for p in &c.printings {
                    printing
                        .execute(rusqlite::params![p, c.rank])
                        .expect("insert printing");
                }
                name.execute(rusqlite::params![c.rank, c.name.join(" ")])
                    .expect("insert name");
                for a in &c.attacks {
                    attack
                        .execute(rusqlite::params![a.join(" "), c.rank])
                        .expect("insert attack");
                }
            }
        }
        tx.commit().expect("commit");
        conn.execute_batch(INDEXES).expect("indexes");
        conn.set_prepared_statement_cache_capacity(64);
        Sqlite { conn }
    }

    /// The `WHERE` clause (over `cards`) and its parameters for `class`, or for the text
    /// classes the statement reading rank from FTS.
    fn sql(class: Class) -> (&'static str, Vec<&'static dyn ToSql>) {
        match class {
            Class::Keyword => ("FROM cards WHERE rarity_code = ?1", vec![&v::SR]),
            Class::PrintingsAndRarity => (
                "FROM cards WHERE rarity_code = ?1 AND rank IN \
                 (SELECT rank FROM printings WHERE expansion_id = ?2)",
                vec![&v::SR, &v::REPRINT_SET],
            ),
            Class::OrOfThree => (
                "FROM cards WHERE rarity_code IN (?1, ?2, ?3)",
                vec![&v::SR, &v::SEC, &v::UR],
            ),
            Class::AndNot => (
                "FROM cards WHERE expansion_id = ?1 AND rarity_code IS NOT ?2",
                vec![&v::DEBUT_SET, &v::C],
            ),
            Class::Range => ("FROM cards WHERE hp >= ?1", vec![&v::MIN_HP]),
            Class::TextWord => (
                "FROM name_fts WHERE name_fts MATCH ?1",
                vec![&"name : charizard"],
            ),
            Class::Phrase => (
                "FROM attack_fts WHERE attack_fts MATCH ?1",
                vec![&"name : \"flame burst\""],
            ),
            Class::Wildcard => (
                "FROM name_fts WHERE name_fts MATCH ?1",
                vec![&"name : char*"],
            ),
            Class::LanguageScoped => (
                "FROM cards WHERE language_code = ?1 AND rank IN \
                 (SELECT rowid FROM name_fts WHERE name_fts MATCH ?2)",
                vec![&v::JA, &"name : ex"],
            ),
            Class::LanguageAll => ("FROM cards WHERE language_code = ?1", vec![&v::EN]),
        }
    }

    /// Counts the matches of `class` and lists the first page's ids.
    pub fn answer(&self, class: Class) -> Answer {
        let (from, params) = Sqlite::sql(class);
        // The rank: the rowid of `cards` and `name_fts`; the `card` column of `attack_fts`,
        // where one card has a row per attack. (`rank` is reserved in FTS5 tables.)
        let (count_sql, page_sql) = match class {
            Class::TextWord | Class::Wildcard => (
                format!("SELECT count(*) {from}"),
                format!(
                    "SELECT c.id FROM cards c WHERE c.rank IN (SELECT rowid {from}) \
                     ORDER BY c.rank LIMIT {PAGE}"
                ),
            ),
            Class::Phrase => (
                format!("SELECT count(DISTINCT card) {from}"),
                format!(
                    "SELECT c.id FROM cards c WHERE c.rank IN (SELECT card {from}) \
                     ORDER BY c.rank LIMIT {PAGE}"
                ),
            ),
            _ => (
                format!("SELECT count(*) {from}"),
                format!("SELECT id {from} ORDER BY rank LIMIT {PAGE}"),
            ),
        };
        let mut count = self.conn.prepare_cached(&count_sql).expect("prepare count");
        let total: i64 = count
            .query_row(params_from_iter(params.iter()), |r| r.get(0))
            .expect("count");
        let mut answer = Answer::new(total as u64);
        let mut page = self.conn.prepare_cached(&page_sql).expect("prepare page");
        let mut rows = page.query(params_from_iter(params.iter())).expect("page");
        while let Some(row) = rows.next().expect("a row") {
            answer
                .ids
                .push(row.get_ref(0).and_then(|v| Ok(v.as_str()?)).expect("an id"));
        }
        answer
    }

    /// The query plan SQLite chose for `class`'s page (for the notes in BENCHMARKS.md).
    pub fn explain(&self, class: Class) -> String {
        let (from, params) = Sqlite::sql(class);
        let mut stmt = self
            .conn
            .prepare(&format!("EXPLAIN QUERY PLAN SELECT count(*) {from}"))
            .expect("explain");
        stmt.query_map(params_from_iter(params.iter()), |r| r.get::<_, String>(3))
            .expect("explain")
            .map(|r| r.expect("row"))
            .collect::<Vec<_>>()
            .join("; ")
    }
}
