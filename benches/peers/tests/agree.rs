//! Every peer engine gives the same answer as the scan (and cardex) to every query class,
//! on a generated snapshot of 10,000 cards: what the `peers` bench checks before it times
//! anything, run as a test so that a peer that drifts fails `cargo test -p cardex-peers`.

use cardex_peers::prices::{cardex_price_answer, price_rows, PriceQuestion, SqlitePrices};
use cardex_peers::{
    cardex_answer, read_cards, scan::Scan, sqlite::Sqlite, tantivy_peer::Tantivy, Answer, Class,
};

#[test]
fn every_engine_agrees_with_the_scan_on_every_class() {
    let dir = std::env::temp_dir().join(format!("cardex-peers-agree-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    cardex::generate::write_snapshot(
        &dir,
        &cardex::generate::Options {
            cards: 10_000,
            ..Default::default()
        },
    )
    .expect("write the snapshot");
    let engine = cardex::Engine::open(&dir).expect("cardex loads the snapshot");
    let catalog = engine.catalog("tcg").expect("the generated catalog");
    let cards = read_cards(&dir, "tcg");
    assert_eq!(cards.len(), 10_000);
    // The price questions of the `prices` bench, and neighbours: any currency or one,
    // default order or by price.
    let rows = price_rows(&cards);
    let prices = SqlitePrices::new(&cards, &rows);
    for currency in [None, Some("usd"), Some("jpy")] {
        for min_market in [20.0, 100.0, 190.5] {
            for by_price in [false, true] {
                let question = PriceQuestion {
                    condition: "nm",
                    currency,
                    min_market,
                    by_price,
                };
                let want = question.scan(&rows);
                assert!(want.total > 0, "{question:?} matches something");
                if currency.is_some() || !by_price {
                    assert_eq!(
                        cardex_price_answer(catalog, question),
                        want,
                        "cardex, {question:?}"
                    );
                }
                assert_eq!(prices.answer(question), want, "sqlite, {question:?}");
            }
        }
    }
    let sqlite = Sqlite::new(&cards);
    let tantivy = Tantivy::new(&cards);
    let scan = Scan::new(cards);
    for class in Class::ALL {
        let want: Answer = scan.answer(class);
        assert!(want.total > 0, "{} matches something", class.label());
        assert_eq!(
            cardex_answer(catalog, class),
            want,
            "cardex, {}",
            class.label()
        );
        assert_eq!(sqlite.answer(class), want, "sqlite, {}", class.label());
        assert_eq!(tantivy.answer(class), want, "tantivy, {}", class.label());
        assert_eq!(
            tantivy.answer_tuned(class),
            want,
            "tantivy-tuned, {}",
            class.label()
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
