//! Price questions, the way an engineer would answer them without cardex: SQLite in
//! memory with the price records in their own table (one row per price record, keyed by
//! the card's default-order rank), B-tree indexes on the searched columns, and a join back
//! to the cards; and a plain scan over the same rows, the reference every answer is
//! checked against. The questions are the ones a nested query and a price sort answer in
//! cardex (`variants.prices:( ... )`, `order_by=-variants.prices.market`).

use rusqlite::{params, Connection};
use serde_json::Value;

use super::{Answer, Card, PAGE};

/// One price record of a card's variant, folded as every engine stores it.
#[derive(Debug, Clone)]
pub struct PriceRow {
    /// The card's default-order rank.
    pub card: u32,
    /// The card's id.
    pub id: String,
    /// `raw` or `graded`.
    pub kind: String,
    /// Raw prices: `nm`, `lp`, ...
    pub condition: Option<String>,
    /// `usd`, `jpy`.
    pub currency: Option<String>,
    /// The market price.
    pub market: Option<f64>,
}

/// The price records of `cards`, in card order.
pub fn price_rows(cards: &[Card]) -> Vec<PriceRow> {
    let fold = |v: &Value, key: &str| {
        v.get(key)
            .and_then(Value::as_str)
            .map(|s| cardex::query::fold(s).into_owned())
    };
    let mut rows = Vec::new();
    for card in cards {
        let v: Value = serde_json::from_str(&card.json).expect("the card's JSON");
        for variant in v
            .get("variants")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            for price in variant
                .get("prices")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                rows.push(PriceRow {
                    card: card.rank,
                    id: card.id.clone(),
                    kind: fold(price, "type").unwrap_or_default(),
                    condition: fold(price, "condition"),
                    currency: fold(price, "currency"),
                    market: price.get("market").and_then(Value::as_f64),
                });
            }
        }
    }
    rows
}

/// A price question: raw prices in one condition at or above a market price, optionally
/// in one currency; counted and listed in default order, or sorted by the largest such
/// price, descending.
#[derive(Debug, Clone, Copy)]
pub struct PriceQuestion {
    /// `nm`.
    pub condition: &'static str,
    /// `usd`, or any currency.
    pub currency: Option<&'static str>,
    /// The lowest market price.
    pub min_market: f64,
    /// Sorted by the largest matching market price, descending (ties in default order).
    pub by_price: bool,
}

impl PriceQuestion {
    /// The same question as cardex's `q` and `order_by`.
    pub fn cardex_request(&self) -> (String, Option<&'static str>) {
        let currency = self
            .currency
            .map(|c| format!(" AND currency:{c}"))
            .unwrap_or_default();
        let q = format!(
            "variants.prices:(condition:{}{currency} AND market>={})",
            self.condition, self.min_market
        );
        (q, self.by_price.then_some("-variants.prices.market"))
    }

    fn admits(&self, row: &PriceRow) -> bool {
        row.condition.as_deref() == Some(self.condition)
            && self
                .currency
                .is_none_or(|c| row.currency.as_deref() == Some(c))
            && row.market.is_some_and(|m| m >= self.min_market)
    }

    /// The answer by a scan over the rows: the reference.
    pub fn scan(&self, rows: &[PriceRow]) -> Answer {
        // Per matching card, its largest matching price; rows come in card order.
        let mut best: Vec<(u32, f64, &str)> = Vec::new();
        for row in rows.iter().filter(|r| self.admits(r)) {
            let m = row.market.expect("admitted");
            match best.last_mut() {
                Some((card, top, _)) if *card == row.card => *top = top.max(m),
                _ => best.push((row.card, m, &row.id)),
            }
        }
        if self.by_price {
            best.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        }
        let mut answer = Answer::new(best.len() as u64);
        for (_, _, id) in best.iter().take(PAGE) {
            answer.ids.push(id);
        }
        answer
    }
}

/// cardex's answer to a price question: the count and the first page's card ids.
pub fn cardex_price_answer(catalog: &cardex::Catalog, question: PriceQuestion) -> Answer {
    let (q, order_by) = question.cardex_request();
    let mut req = cardex::SearchRequest::new(&q);
    if let Some(order_by) = order_by {
        req = req.order_by(order_by);
    }
    Answer::of_hits(catalog, &catalog.hits(&req).expect("cardex answers"))
}

/// SQLite with a `cards` table and a `prices` table joined to it.
pub struct SqlitePrices {
    conn: Connection,
}

const SCHEMA: &str = "
PRAGMA journal_mode = OFF;
PRAGMA synchronous = OFF;
CREATE TABLE cards (rank INTEGER PRIMARY KEY, id TEXT NOT NULL);
CREATE TABLE prices (
    card INTEGER NOT NULL REFERENCES cards (rank),
    type TEXT NOT NULL,
    condition TEXT,
    currency TEXT,
    market REAL
);
";

const INDEXES: &str = "
CREATE INDEX prices_condition_market ON prices (condition, market, card);
CREATE INDEX prices_condition_currency_market ON prices (condition, currency, market, card);
CREATE INDEX prices_card ON prices (card);
ANALYZE;
";

impl SqlitePrices {
    /// Loads the cards and their price rows into a new in-memory database.
    pub fn new(cards: &[Card], rows: &[PriceRow]) -> SqlitePrices {
        let mut conn = Connection::open_in_memory().expect("open");
        conn.execute_batch(SCHEMA).expect("schema");
        let tx = conn.transaction().expect("begin");
        {
            let mut card = tx
                .prepare("INSERT INTO cards VALUES (?1, ?2)")
                .expect("prepare");
            for c in cards {
                card.execute(params![c.rank, c.id]).expect("insert card");
            }
            let mut price = tx
                .prepare("INSERT INTO prices VALUES (?1, ?2, ?3, ?4, ?5)")
                .expect("prepare");
            for r in rows {
                price
                    .execute(params![r.card, r.kind, r.condition, r.currency, r.market])
                    .expect("insert price");
            }
        }
        tx.commit().expect("commit");
        conn.execute_batch(INDEXES).expect("indexes");
        conn.set_prepared_statement_cache_capacity(16);
        SqlitePrices { conn }
    }

    /// The question's `WHERE` clause over `prices p`, joined to `cards c`.
    fn filter(question: PriceQuestion) -> &'static str {
        match question.currency {
            Some(_) => {
                "FROM prices p JOIN cards c ON c.rank = p.card \
                 WHERE p.condition = ?1 AND p.market >= ?2 AND p.currency = ?3"
            }
            None => {
                "FROM prices p JOIN cards c ON c.rank = p.card \
                 WHERE p.condition = ?1 AND p.market >= ?2 AND ?3 IS NULL"
            }
        }
    }

    /// Counts the matching cards and lists the first page's ids: in default order, or by
    /// the largest matching price.
    pub fn answer(&self, question: PriceQuestion) -> Answer {
        let from = SqlitePrices::filter(question);
        let count_sql = format!("SELECT count(DISTINCT c.rank) {from}");
        let page_sql = if question.by_price {
            format!(
                "SELECT c.id {from} GROUP BY c.rank ORDER BY max(p.market) DESC, c.rank \
                 LIMIT {PAGE}"
            )
        } else {
            format!("SELECT c.id {from} GROUP BY c.rank ORDER BY c.rank LIMIT {PAGE}")
        };
        let args = params![question.condition, question.min_market, question.currency];
        let total: i64 = self
            .conn
            .prepare_cached(&count_sql)
            .expect("prepare count")
            .query_row(args, |r| r.get(0))
            .expect("count");
        let mut page = self.conn.prepare_cached(&page_sql).expect("prepare page");
        Answer::of_rows(total as u64, page.query(args).expect("page"))
    }

    /// The plan SQLite chose for the question's page.
    pub fn explain(&self, question: PriceQuestion) -> String {
        let from = SqlitePrices::filter(question);
        let mut stmt = self
            .conn
            .prepare(&format!("EXPLAIN QUERY PLAN SELECT DISTINCT c.rank {from}"))
            .expect("explain");
        let args = params![question.condition, question.min_market, question.currency];
        stmt.query_map(args, |r| r.get::<_, String>(3))
            .expect("explain")
            .map(|r| r.expect("row"))
            .collect::<Vec<_>>()
            .join("; ")
    }
}
