//! The public surface: an [`Engine`] holds the catalogs of one snapshot; a [`Catalog`]
//! answers the requests of the service (search cards, one card, expansions, one
//! expansion, the cards of one expansion), each a [`Page`] or an [`Item`] of
//! pre-rendered JSON.

mod page;
mod request;

pub use page::{Item, Page};
pub use request::{
    ItemRequest, SearchRequest, EXPANSION_ITEM_PARAMETERS, EXPANSION_LIST_PARAMETERS,
    ITEM_PARAMETERS, LIST_PARAMETERS, MAX_PAGE_SIZE,
};

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use roaring::RoaringBitmap;

use crate::error::{NotFound, ParameterError, ParameterErrorKind, Result};
use crate::index::Postings;
use crate::json::write::Include;
use crate::load::{self, LoadError, LoadProgress};
use crate::plan::Plan;
use crate::query;
use crate::schema::{FieldError, FieldErrorKind, Schema};
use crate::store::{render_record, sorted_page, Collection, Counted, OrderKey, Select, StoreKind};
use crate::text::fold;

/// The catalogs of one snapshot, loaded in memory and indexed.
///
/// ```
/// use cardex::{Engine, SearchRequest};
/// let engine = Engine::open(concat!(env!("CARGO_MANIFEST_DIR"), "/data"))?;
/// let onepiece = engine.catalog("onepiece").expect("bundled");
/// let page = onepiece.search(&SearchRequest::new("printings:PRB01 AND rarity_code:SR"))?;
/// let ids: Vec<_> = page.record_ids().iter().map(|&i| onepiece.cards().record_id(i)).collect();
/// assert_eq!(ids, ["OP01-013", "OP02-013"]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Engine {
    path: PathBuf,
    options: OpenOptions,
    catalogs: BTreeMap<String, Catalog>,
}

/// How [`Engine::open_with`] keeps a snapshot in memory.
///
/// ```
/// use cardex::{Engine, OpenOptions, SearchRequest, StoreKind};
/// let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/data");
/// let options = OpenOptions::new().store(StoreKind::Compressed);
/// let compressed = Engine::open_with(dir, &options, |_| {})?;
/// let plain = Engine::open(dir)?;
/// let req = SearchRequest::new("rarity_code:SR");
/// let page = |e: &Engine| e.catalog("onepiece").unwrap().search(&req).map(|p| p.to_json());
/// assert_eq!(page(&compressed)?, page(&plain)?);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct OpenOptions {
    /// How the records' JSON is kept: plain (the default) or compressed.
    pub store: StoreKind,
}

impl OpenOptions {
    /// The defaults: a plain store.
    pub fn new() -> OpenOptions {
        OpenOptions::default()
    }

    /// Keeps the records' JSON as `store` says.
    pub fn store(mut self, store: StoreKind) -> OpenOptions {
        self.store = store;
        self
    }
}

impl Engine {
    /// Loads the snapshot folder at `path`: one sub-folder per
    /// catalog, with `expansions/*.json` and `cards/*.json` (a sub-folder with neither,
    /// nor a `catalog.json`, is not a catalog). Files are read in parallel on rayon's
    /// global pool (with the `parallel` feature); the result does not depend on file order
    /// or thread count. Once loaded, glibc's `malloc_trim` hands the memory the load freed
    /// back to the system (on GNU/Linux; it trims the whole process's glibc heap, and does
    /// little where the program's global allocator is another, as the `cardex` command's).
    ///
    /// # Errors
    ///
    /// A [`LoadError`] naming the file, the record and, for JSON syntax errors, the line
    /// and column. Nothing is kept of a refused snapshot.
    pub fn open(path: impl AsRef<Path>) -> Result<Engine, LoadError> {
        Engine::open_with_progress(path, |_| {})
    }

    /// [`Engine::open`], telling `progress` how far the load has come: after each file is
    /// read (from the reading threads, so the counts may arrive out of order) and when
    /// indexing starts. `cardex serve` logs it while it starts.
    ///
    /// # Errors
    ///
    /// As [`Engine::open`].
    pub fn open_with_progress(
        path: impl AsRef<Path>,
        progress: impl Fn(LoadProgress) + Sync,
    ) -> Result<Engine, LoadError> {
        Engine::open_with(path, &OpenOptions::default(), progress)
    }

    /// [`Engine::open_with_progress`] with `options`: a compressed store compresses each
    /// collection's records once they are indexed, after one more report
    /// ([`LoadProgress::compressing`]).
    ///
    /// # Errors
    ///
    /// As [`Engine::open`].
    pub fn open_with(
        path: impl AsRef<Path>,
        options: &OpenOptions,
        progress: impl Fn(LoadProgress) + Sync,
    ) -> Result<Engine, LoadError> {
        let path = path.as_ref();
        let files = std::sync::atomic::AtomicUsize::new(0);
        let report = |p: LoadProgress| {
            files.store(p.files, std::sync::atomic::Ordering::Relaxed);
            progress(p);
        };
        let mut catalogs: BTreeMap<String, Catalog> = load::load_with_progress(path, &report)?
            .into_iter()
            .map(|c| (c.name.clone(), Catalog::new(c)))
            .collect();
        if options.store == StoreKind::Compressed {
            let files = files.into_inner();
            progress(LoadProgress {
                files,
                files_read: files,
                cards_read: catalogs.values().map(|c| c.cards.len()).sum(),
                indexing: false,
                compressing: true,
            });
            for catalog in catalogs.values_mut() {
                catalog.compress();
            }
            // The plain texts, freed once compressed, go back to the system.
            crate::memory::release_free_memory();
        }
        Ok(Engine {
            path: path.to_path_buf(),
            options: options.clone(),
            catalogs,
        })
    }

    /// The options this engine was opened with (reloads use them again).
    pub fn options(&self) -> &OpenOptions {
        &self.options
    }

    /// The snapshot folder this engine was loaded from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The catalog named `name` (the snapshot's folder name: `pokemon`, `onepiece`, ...).
    pub fn catalog(&self, name: &str) -> Option<&Catalog> {
        self.catalogs.get(name)
    }

    /// Like [`Engine::catalog`], with an error listing the catalogs there are.
    ///
    /// # Errors
    ///
    /// [`NotFound::Catalog`].
    pub fn try_catalog(&self, name: &str) -> Result<&Catalog> {
        self.catalog(name).ok_or_else(|| {
            NotFound::Catalog {
                name: name.to_string(),
                known: self.catalogs.keys().cloned().collect(),
            }
            .into()
        })
    }

    /// All catalogs, by name.
    pub fn catalogs(&self) -> impl Iterator<Item = &Catalog> + '_ {
        self.catalogs.values()
    }
}

/// One game's cards and expansions, with their indexes and language scopes.
///
/// ```
/// # let engine = cardex::Engine::open(concat!(env!("CARGO_MANIFEST_DIR"), "/data"))?;
/// let pokemon = engine.catalog("pokemon").unwrap();
/// assert_eq!(pokemon.name(), "pokemon");
/// assert_eq!(pokemon.languages(), ["en", "ja"]);
/// assert_eq!(pokemon.cards().len() as u64, pokemon.count(&cardex::SearchRequest::new(""))?);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Catalog {
    name: String,
    meta: Option<Box<str>>,
    cards: Collection,
    expansions: Collection,
    languages: Vec<String>,
    /// Per language (as in `languages`): its cards and its expansions.
    scopes: Vec<(RoaringBitmap, RoaringBitmap)>,
    /// Whether a card's `expansion.<field>` that no card carries itself is its
    /// expansion's field, joined by `expansion_id`: when the cards have an `expansion_id`.
    joins_expansions: bool,
}

/// Which collection a list request reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Target {
    Cards,
    Expansions,
}

impl Catalog {
    fn new(loaded: load::LoadedCatalog) -> Catalog {
        let mut languages: Vec<String> = [&loaded.cards, &loaded.expansions]
            .iter()
            .flat_map(|c| c.keyword_values("language_code"))
            .collect();
        languages.sort();
        languages.dedup();
        let scope = |c: &Collection, lang: &str| {
            c.holding("language_code", lang)
                .map(|p| p.to_bitmap().into_owned())
                .unwrap_or_default()
        };
        let scopes: Vec<(RoaringBitmap, RoaringBitmap)> = languages
            .iter()
            .map(|l| (scope(&loaded.cards, l), scope(&loaded.expansions, l)))
            .collect();
        // The scopes' bitmaps stay in this vector, unchanged, as long as the catalog, and
        // so as long as the twins the cards' index keeps of them.
        let mut cards = loaded.cards;
        cards.add_twins_of(scopes.iter().map(|(cards, _)| cards));
        let joins_expansions = cards.index().lookup("expansion_id").is_some();
        Catalog {
            name: loaded.name,
            meta: loaded.meta,
            cards,
            expansions: loaded.expansions,
            languages,
            scopes,
            joins_expansions,
        }
    }

    /// Keeps the cards' and the expansions' JSON compressed.
    fn compress(&mut self) {
        crate::par::join(|| self.cards.compress(), || self.expansions.compress());
    }

    /// The catalog's name (its folder name, path segment and webhook event prefix).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// `catalog.json`, compact, if the snapshot has one.
    pub fn meta_json(&self) -> Option<&str> {
        self.meta.as_deref()
    }

    /// The language codes of the catalog's records, folded (`en`, `ja`); empty when its
    /// records carry no `language_code`, and it has no language scopes.
    pub fn languages(&self) -> &[String] {
        &self.languages
    }

    /// The cards, in default order.
    pub fn cards(&self) -> &Collection {
        &self.cards
    }

    /// The expansions, in default order.
    pub fn expansions(&self) -> &Collection {
        &self.expansions
    }

    fn collection(&self, target: Target) -> &Collection {
        match target {
            Target::Cards => &self.cards,
            Target::Expansions => &self.expansions,
        }
    }

    /// The expansions that `target`'s `expansion.*` fields are joined to, if any (see
    /// [`Catalog::joins_expansions`]).
    fn joined(&self, target: Target) -> Option<&Collection> {
        (target == Target::Cards && self.joins_expansions).then_some(&self.expansions)
    }

    /// Whether a card's `expansion.<field>` (in `q` and `order_by`) is its expansion's
    /// field, joined by its `expansion_id`, where no card carries that field itself: when
    /// the cards have an `expansion_id`. Cards in cardex's own layout carry no
    /// `expansion`, and every `expansion.<field>` is joined; imported cards carry a summary
    /// of theirs (`expansion.name`), and the expansion's other fields are joined
    /// (`expansion.legalities.standard`).
    ///
    /// ```
    /// # let engine = cardex::Engine::open(concat!(env!("CARGO_MANIFEST_DIR"), "/data"))?;
    /// let pokemon = engine.catalog("pokemon").unwrap();
    /// assert!(pokemon.joins_expansions());
    /// let req = cardex::SearchRequest::new("expansion.series:\"Scarlet & Violet\"")
    ///     .order_by("-expansion.release_date");
    /// let hits = pokemon.hits(&req)?;
    /// assert_eq!(hits.ids(pokemon.cards()).next().as_deref(), Some("ddw-1"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn joins_expansions(&self) -> bool {
        self.joins_expansions
    }

    /// The fields `order_by` accepts on a card search when `q` binds none of them: the
    /// cards' own ([`Collection::order_fields`]), and where the cards are joined to their
    /// expansions ([`Catalog::joins_expansions`]) the expansions' as `expansion.<field>`,
    /// those the cards do not carry themselves.
    pub fn card_order_fields(&self) -> Vec<String> {
        let own: Vec<String> = self
            .cards
            .order_fields()
            .into_iter()
            .map(str::to_string)
            .collect();
        let expansions = if self.joins_expansions {
            self.expansions.order_fields()
        } else {
            Vec::new()
        };
        let schema = self.cards.schema();
        let joined: Vec<String> = expansions
            .into_iter()
            .map(|field| format!("expansion.{field}"))
            .filter(|field| schema.value_field(field).is_err())
            .collect();
        own.into_iter().chain(joined).collect()
    }

    /// The records of `target` in language `lang` (all records without a language).
    fn universe(&self, target: Target, lang: Option<&str>) -> Result<&RoaringBitmap> {
        let collection = self.collection(target);
        let Some(lang) = lang else {
            return Ok(collection.all());
        };
        let folded = fold(lang);
        let Some(i) = self.languages.iter().position(|l| *l == folded) else {
            return Err(NotFound::Language {
                catalog: self.name.clone(),
                lang: lang.to_string(),
                known: self.languages.clone(),
            }
            .into());
        };
        let (cards, expansions) = &self.scopes[i];
        Ok(match target {
            Target::Cards => cards,
            Target::Expansions => expansions,
        })
    }

    /// Searches the cards: `q` within the language scope, one page in default order or
    /// `order_by`, with `select` and `include` applied.
    ///
    /// # Errors
    ///
    /// A malformed `q` ([`crate::Error::Parse`]), a `q` that does not fit the catalog
    /// ([`crate::Error::Plan`]), a bad parameter, or an unknown language.
    pub fn search(&self, req: &SearchRequest<'_>) -> Result<Page> {
        self.list(Target::Cards, req, None)
    }

    /// The matches of a card search — the total count and the record ids of the requested
    /// page, in the requested order — without rendering any JSON. `select` and `include` are
    /// not read. As nothing is rendered, `page_size` may exceed [`MAX_PAGE_SIZE`] (a
    /// frontend with pages of its own, such as the Pokémon TCG API's 250).
    ///
    /// # Errors
    ///
    /// As [`Catalog::search`].
    ///
    /// ```
    /// # let engine = cardex::Engine::open(concat!(env!("CARGO_MANIFEST_DIR"), "/data"))?;
    /// let onepiece = engine.catalog("onepiece").unwrap();
    /// let hits = onepiece.hits(&cardex::SearchRequest::new("printings:PRB01 AND rarity_code:SR"))?;
    /// assert_eq!(hits.total_count, 2);
    /// let ids: Vec<_> = hits.ids(onepiece.cards()).collect();
    /// assert_eq!(ids, ["OP01-013", "OP02-013"]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn hits(&self, req: &SearchRequest<'_>) -> Result<Hits> {
        let (hits, ()) = self.matches(Target::Cards, req, None, u32::MAX, |_| Ok(()))?;
        Ok(hits)
    }

    /// The matches of an expansion search, like [`Catalog::hits`]; record ids of
    /// [`Catalog::expansions`].
    ///
    /// # Errors
    ///
    /// As [`Catalog::search_expansions`].
    ///
    /// ```
    /// # let engine = cardex::Engine::open(concat!(env!("CARGO_MANIFEST_DIR"), "/data"))?;
    /// let pokemon = engine.catalog("pokemon").unwrap();
    /// let hits = pokemon.expansion_hits(&cardex::SearchRequest::new("").lang("ja").page_size(250))?;
    /// let ids: Vec<_> = hits.ids(pokemon.expansions()).collect();
    /// assert_eq!(ids, ["bfl_ja", "ssm_ja"]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn expansion_hits(&self, req: &SearchRequest<'_>) -> Result<Hits> {
        let (hits, ()) = self.matches(Target::Expansions, req, None, u32::MAX, |_| Ok(()))?;
        Ok(hits)
    }

    /// Searches the expansions, like [`Catalog::search`] (`include` does not apply).
    ///
    /// # Errors
    ///
    /// As [`Catalog::search`]; `include` is refused.
    ///
    /// ```
    /// # let engine = cardex::Engine::open(concat!(env!("CARGO_MANIFEST_DIR"), "/data"))?;
    /// let pokemon = engine.catalog("pokemon").unwrap();
    /// let ja = pokemon.search_expansions(&cardex::SearchRequest::new("").lang("ja").select("name"))?;
    /// assert_eq!(
    ///     ja.data_json(),
    ///     r#"[{"id":"bfl_ja","name":"灼熱のフレア"},{"id":"ssm_ja","name":"星海のミラージュ"}]"#
    /// );
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn search_expansions(&self, req: &SearchRequest<'_>) -> Result<Page> {
        self.list(Target::Expansions, req, None)
    }

    /// The cards printed in expansion `id` (its debut cards and its reprints: every card
    /// whose printings hold it), searched like [`Catalog::search`].
    ///
    /// # Errors
    ///
    /// [`NotFound::Expansion`] for an unknown expansion; otherwise as [`Catalog::search`].
    ///
    /// ```
    /// # let engine = cardex::Engine::open(concat!(env!("CARGO_MANIFEST_DIR"), "/data"))?;
    /// let onepiece = engine.catalog("onepiece").unwrap();
    /// // PRB01 is reprint-only: its cards debuted in OP01 and OP02.
    /// let page = onepiece.expansion_cards("PRB01", &cardex::SearchRequest::new(""))?;
    /// let ids: Vec<_> = page.record_ids().iter().map(|&r| onepiece.cards().record_id(r)).collect();
    /// assert_eq!(ids, ["OP01-013", "OP01-016", "OP01-061", "OP02-013"]);
    /// assert!(onepiece.expansion_cards("NOPE", &cardex::SearchRequest::new("")).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn expansion_cards(&self, id: &str, req: &SearchRequest<'_>) -> Result<Page> {
        let printed = self.printed_in(id)?;
        self.list(Target::Cards, req, Some(printed))
    }

    /// The matches of [`Catalog::expansion_cards`] without their JSON, like
    /// [`Catalog::hits`]; record ids of [`Catalog::cards`]. As with [`Catalog::hits`],
    /// `select` and `include` are not read and `page_size` may exceed [`MAX_PAGE_SIZE`].
    ///
    /// # Errors
    ///
    /// [`NotFound::Expansion`] for an unknown expansion; a malformed or unfitting `q`, a
    /// bad `order_by` or page, an unknown language.
    ///
    /// ```
    /// # let engine = cardex::Engine::open(concat!(env!("CARGO_MANIFEST_DIR"), "/data"))?;
    /// let onepiece = engine.catalog("onepiece").unwrap();
    /// let hits = onepiece.expansion_card_hits("PRB01", &cardex::SearchRequest::new("rarity_code:SR"))?;
    /// assert_eq!(hits.total_count, 2);
    /// let ids: Vec<_> = hits.ids(onepiece.cards()).collect();
    /// assert_eq!(ids, ["OP01-013", "OP02-013"]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn expansion_card_hits(&self, id: &str, req: &SearchRequest<'_>) -> Result<Hits> {
        let printed = self.printed_in(id)?;
        let (hits, ()) = self.matches(Target::Cards, req, Some(printed), u32::MAX, |_| Ok(()))?;
        Ok(hits)
    }

    /// The cards whose printings hold expansion `id`: the folded index, unless another
    /// expansion's id differs from it in case only (`ab` and `AB`), when the printings
    /// are matched as written.
    fn printed_in(&self, id: &str) -> Result<Postings<'_>> {
        let id = self.expansions.record_id(self.expansion_record(id)?);
        Ok(self
            .cards
            .holding_id_of("printings", &id, &self.expansions)
            .unwrap_or(Postings::Ids(&[])))
    }

    /// The card with id `id` (an exact match, else the only card whose id matches when
    /// folded), as `{"data": {...}}`.
    ///
    /// # Errors
    ///
    /// [`NotFound::Card`], or a bad `select` / `include`.
    ///
    /// ```
    /// # let engine = cardex::Engine::open(concat!(env!("CARGO_MANIFEST_DIR"), "/data"))?;
    /// let onepiece = engine.catalog("onepiece").unwrap();
    /// let req = cardex::ItemRequest { select: Some("name,rarity_code"), include: None };
    /// assert_eq!(
    ///     onepiece.card("OP01-120", &req)?.to_json(),
    ///     r#"{"data":{"id":"OP01-120","name":"Shanks","rarity_code":"SEC"}}"#
    /// );
    /// let err = onepiece.card("OP99-999", &req).unwrap_err();
    /// assert!(matches!(err, cardex::Error::NotFound(cardex::NotFound::Card { ref id }) if id == "OP99-999"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn card(&self, id: &str, req: &ItemRequest<'_>) -> Result<Item> {
        let record = self
            .cards
            .find(id)
            .ok_or_else(|| NotFound::Card { id: id.to_string() })?;
        self.item(Target::Cards, record, req)
    }

    /// The expansion with id `id`, as `{"data": {...}}`.
    ///
    /// # Errors
    ///
    /// [`NotFound::Expansion`], or a bad `select`; `include` is refused.
    ///
    /// ```
    /// # let engine = cardex::Engine::open(concat!(env!("CARGO_MANIFEST_DIR"), "/data"))?;
    /// let onepiece = engine.catalog("onepiece").unwrap();
    /// let req = cardex::ItemRequest { select: Some("name,release_date"), include: None };
    /// assert_eq!(
    ///     onepiece.expansion("PRB01", &req)?.to_json(),
    ///     r#"{"data":{"id":"PRB01","name":"Voyager's Treasury","release_date":"2024/11/08"}}"#
    /// );
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn expansion(&self, id: &str, req: &ItemRequest<'_>) -> Result<Item> {
        self.item(Target::Expansions, self.expansion_record(id)?, req)
    }

    /// The record of expansion `id` (see [`Collection::find`]).
    fn expansion_record(&self, id: &str) -> Result<u32> {
        self.expansions
            .find(id)
            .ok_or_else(|| NotFound::Expansion { id: id.to_string() }.into())
    }

    /// How many cards match `q` in the request's language scope (page, order, select and
    /// include are ignored): the search without rendering anything.
    ///
    /// # Errors
    ///
    /// As [`Catalog::search`].
    ///
    /// ```
    /// # let engine = cardex::Engine::open(concat!(env!("CARGO_MANIFEST_DIR"), "/data"))?;
    /// let pokemon = engine.catalog("pokemon").unwrap();
    /// assert_eq!(pokemon.count(&cardex::SearchRequest::new("").lang("ja"))?, 10);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn count(&self, req: &SearchRequest<'_>) -> Result<u64> {
        let query = query::parse(req.q)?;
        let universe = self.universe(Target::Cards, req.lang)?;
        let joined = self.joined(Target::Cards);
        let plan = Plan::new(&query, req.q, &self.cards, universe, req.lang, None, joined)?;
        let count = plan.matches().len();
        Ok(count)
    }

    /// Checks a card search without running it: the paging, the language, `q` parsed and
    /// planned against the catalog's schema, `order_by`, `select` and `include`; the same
    /// errors as [`Catalog::search`] would give, in the same order (what a client checking a
    /// saved search wants, and the fixed cost every search pays before it executes).
    ///
    /// # Errors
    ///
    /// As [`Catalog::search`].
    ///
    /// ```
    /// # let engine = cardex::Engine::open(concat!(env!("CARGO_MANIFEST_DIR"), "/data"))?;
    /// let onepiece = engine.catalog("onepiece").unwrap();
    /// assert!(onepiece.check(&cardex::SearchRequest::new("rarity_code:SR -power<5000")).is_ok());
    /// assert!(onepiece.check(&cardex::SearchRequest::new("rarity_kode:SR")).is_err());
    /// assert!(onepiece.check(&cardex::SearchRequest::new("").select("nmae")).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn check(&self, req: &SearchRequest<'_>) -> Result<()> {
        let parameters = |collection: &Collection| {
            parse_select(collection, req.select)?;
            parse_include(Target::Cards, req.include, EXPANSION_LIST_PARAMETERS)
        };
        self.planned(
            Target::Cards,
            req,
            None,
            MAX_PAGE_SIZE,
            parameters,
            |_, _, _| (),
        )
    }

    /// The plan of a card search as text: its operators in execution order, with their
    /// estimated sizes and costs.
    ///
    /// # Errors
    ///
    /// As [`Catalog::search`].
    pub fn explain(&self, req: &SearchRequest<'_>) -> Result<String> {
        self.explain_in(Target::Cards, req, None)
    }

    /// The plan of [`Catalog::expansion_cards`] as text, the expansion's cards a `filter`
    /// operator of it (see [`Catalog::explain`]).
    ///
    /// # Errors
    ///
    /// As [`Catalog::expansion_cards`].
    pub fn explain_expansion_cards(&self, id: &str, req: &SearchRequest<'_>) -> Result<String> {
        let printed = self.printed_in(id)?;
        self.explain_in(Target::Cards, req, Some(printed))
    }

    /// The plan of [`Catalog::search_expansions`] as text (see [`Catalog::explain`]).
    ///
    /// # Errors
    ///
    /// As [`Catalog::search_expansions`].
    pub fn explain_expansions(&self, req: &SearchRequest<'_>) -> Result<String> {
        self.explain_in(Target::Expansions, req, None)
    }

    /// A plan as text, its request checked as the search would check it.
    fn explain_in(
        &self,
        target: Target,
        req: &SearchRequest<'_>,
        within: Option<Postings<'_>>,
    ) -> Result<String> {
        self.planned(
            target,
            req,
            within,
            MAX_PAGE_SIZE,
            |collection| {
                parse_select(collection, req.select)?;
                parse_include(target, req.include, EXPANSION_LIST_PARAMETERS).map(drop)
            },
            |plan, _, ()| plan.explain(),
        )
    }

    fn item(&self, target: Target, record: u32, req: &ItemRequest<'_>) -> Result<Item> {
        let collection = self.collection(target);
        let select = parse_select(collection, req.select)?;
        let include = parse_include(target, req.include, EXPANSION_ITEM_PARAMETERS)?;
        Ok(Item::new(record, collection.doc_len(record), |id, out| {
            render_record(collection, id, select.as_ref(), include, out)
        }))
    }

    fn list(
        &self,
        target: Target,
        req: &SearchRequest<'_>,
        within: Option<Postings<'_>>,
    ) -> Result<Page> {
        let collection = self.collection(target);
        let (hits, (select, include)) =
            self.matches(target, req, within, MAX_PAGE_SIZE, |collection| {
                Ok((
                    parse_select(collection, req.select)?,
                    parse_include(target, req.include, EXPANSION_LIST_PARAMETERS)?,
                ))
            })?;
        let records_len = hits
            .record_ids
            .iter()
            .map(|&id| collection.doc_len(id))
            .sum();
        Ok(Page::new(
            req.page,
            req.page_size,
            hits.total_count,
            hits.record_ids,
            records_len,
            |id, out| render_record(collection, id, select.as_ref(), include, out),
        ))
    }

    /// The matches of a list request: how many, and the record ids of the requested page
    /// (of at most `max_page_size`) in the requested order. `parameters` checks the request's other parameters, after
    /// paging, language, `q` and `order_by` and before the query is planned, so errors come
    /// in that order whatever asks.
    fn matches<T>(
        &self,
        target: Target,
        req: &SearchRequest<'_>,
        within: Option<Postings<'_>>,
        max_page_size: u32,
        parameters: impl FnOnce(&Collection) -> Result<T>,
    ) -> Result<(Hits, T)> {
        self.planned(
            target,
            req,
            within,
            max_page_size,
            parameters,
            |plan, order, checked| {
                let hits = self.run(target, req, &plan, &order);
                (hits, checked)
            },
        )
    }

    /// The count and the requested page of `plan`'s matches, in `order`.
    fn run(
        &self,
        target: Target,
        req: &SearchRequest<'_>,
        plan: &Plan<'_>,
        order: &[OrderKey],
    ) -> Hits {
        let collection = self.collection(target);
        let matches = plan.matches();
        let total_count = matches.len();
        let offset = u64::from(req.page - 1) * u64::from(req.page_size);
        let limit = req.page_size as usize;
        let record_ids = if order.is_empty() {
            matches.page(offset, limit)
        } else {
            let offset = usize::try_from(offset).unwrap_or(usize::MAX);
            let joined = self.joined(target);
            sorted_page(
                collection,
                joined,
                &matches.into_set(),
                order,
                offset,
                limit,
            )
        };
        Hits {
            total_count,
            record_ids,
        }
    }

    /// A list request checked and planned, handed to `then` without being run: its plan,
    /// its `order_by` bound to the plan, and what `parameters` made of the request's other
    /// parameters (see [`Catalog::matches`] for the order of the checks). The plan is
    /// passed on rather than returned, so it is not moved once more on the way.
    fn planned<'p, T, R>(
        &'p self,
        target: Target,
        req: &SearchRequest<'p>,
        within: Option<Postings<'p>>,
        max_page_size: u32,
        parameters: impl FnOnce(&Collection) -> Result<T>,
        then: impl FnOnce(Plan<'p>, Vec<OrderKey>, T) -> R,
    ) -> Result<R> {
        req.validate_paging(max_page_size)?;
        let collection = self.collection(target);
        let universe = self.universe(target, req.lang)?;
        let query = query::parse(req.q)?;
        let joined = self.joined(target);
        let mut order = parse_order(collection, joined, req.order_by)?;
        let checked = parameters(collection)?;
        let plan = Plan::new(
            &query, req.q, collection, universe, req.lang, within, joined,
        )?;
        bind_order(collection, &plan, &mut order, req.order_by.unwrap_or(""))?;
        Ok(then(plan, order, checked))
    }
}

/// The matches of a card search without their JSON: what an embedder that renders its own
/// output (or only needs ids) asks for. See [`Catalog::hits`].
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Hits {
    /// Every match of the query in the language scope.
    pub total_count: u64,
    /// The record ids of the requested page, in the requested order; a record's id and JSON
    /// are [`Collection::record_id`] and [`Collection::doc`] of [`Catalog::cards`].
    pub record_ids: Vec<u32>,
}

impl Hits {
    /// The page's record ids as the records' own `id`s, in page order: slices of
    /// `records`' id column (a few nanoseconds each, no allocation), `records` being the
    /// collection searched ([`Catalog::cards`] for [`Catalog::hits`]).
    ///
    /// # Panics
    ///
    /// When `records` is not the collection searched and holds fewer records than an id
    /// of the page (another collection holding more gives other records' ids).
    ///
    /// ```
    /// # let engine = cardex::Engine::open(concat!(env!("CARGO_MANIFEST_DIR"), "/data"))?;
    /// let onepiece = engine.catalog("onepiece").unwrap();
    /// let hits = onepiece.hits(&cardex::SearchRequest::new("printings:PRB01 AND rarity_code:SR"))?;
    /// let ids: Vec<_> = hits.ids(onepiece.cards()).collect();
    /// assert_eq!(ids, ["OP01-013", "OP02-013"]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn ids<'h, 'c>(
        &'h self,
        records: &'c Collection,
    ) -> impl ExactSizeIterator<Item = std::borrow::Cow<'c, str>> + 'h
    where
        'c: 'h,
    {
        self.record_ids.iter().map(|&r| records.record_id(r))
    }
}

/// `order_by=f1,-f2`: fields of the collection (camelCase accepted), `-` for descending.
///
/// The usual request gives none: that case is inlined, so the caller receives no
/// `Result` to copy (this and the other parameter checks run on every search).
#[inline]
fn parse_order(
    collection: &Collection,
    joined: Option<&Collection>,
    order_by: Option<&str>,
) -> Result<Vec<OrderKey>> {
    match order_by.filter(|t| !t.trim().is_empty()) {
        None => Ok(Vec::new()),
        Some(text) => parse_order_keys(collection, joined, text),
    }
}

/// [`parse_order`] of a non-blank `text`. With `joined`, a key `expansion.<field>` that the
/// records do not have is `<field>` of the record's expansion in `joined`.
fn parse_order_keys(
    collection: &Collection,
    joined: Option<&Collection>,
    text: &str,
) -> Result<Vec<OrderKey>> {
    let schema = collection.schema();
    text.split(',')
        .map(|item| {
            let item = item.trim();
            let (descending, name) = match item.strip_prefix('-') {
                Some(rest) => (true, rest.trim()),
                None => (false, item),
            };
            let bad = |reason: String| ParameterError::invalid("order_by", text, reason);
            if name.is_empty() {
                return Err(
                    bad("each key is a field name, `-` before it for descending".into()).into(),
                );
            }
            match schema.value_field(name) {
                Ok(field) => {
                    if let Some(array) = words_in_array(collection, field) {
                        return Err(bad(format!(
                            "`{name}` is a text field inside the array of objects `{array}`; \
                             sort by a number, keyword or boolean field"
                        ))
                        .into());
                    }
                    Ok(OrderKey {
                        field,
                        descending,
                        counted: None,
                        joined: false,
                    })
                }
                Err(e) => {
                    let own = joined.zip(crate::naming::strip_field_prefix(name, "expansion."));
                    let (e, prefix, of) = match own {
                        Some((expansions, own)) => match expansions.schema().value_field(own) {
                            Ok(field) => {
                                return Ok(OrderKey {
                                    field,
                                    descending,
                                    counted: None,
                                    joined: true,
                                });
                            }
                            Err(e) => (e, "expansion.", expansions),
                        },
                        None => (e, "", collection),
                    };
                    if let FieldErrorKind::Object { children } = &e.kind {
                        // As `q` says it: the field is there. Its fields that sort, at any
                        // depth, are listed (the first few).
                        const LISTED: usize = 12;
                        let parent = children
                            .first()
                            .and_then(|c| c.rsplit_once('.'))
                            .map(|(parent, _)| format!("{parent}."));
                        let sorts: Vec<String> = parent
                            .iter()
                            .flat_map(|parent| {
                                of.schema().fields().filter(move |f| {
                                    f.holds_values && f.path.starts_with(parent.as_str())
                                })
                            })
                            .filter(|f| {
                                of.schema()
                                    .value_field(f.path)
                                    .is_ok_and(|field| words_in_array(of, field).is_none())
                            })
                            .map(|f| format!("`{prefix}{}`", f.path))
                            .collect();
                        let mut reason = format!("`{name}` holds objects, not values");
                        if !sorts.is_empty() {
                            reason.push_str("; sort by ");
                            reason.push_str(crate::naming::FIELDS_OF_OBJECT);
                            reason.push_str(&sorts[..sorts.len().min(LISTED)].join(", "));
                            if sorts.len() > LISTED {
                                reason.push_str(&format!(", … ({} in all)", sorts.len()));
                            }
                        }
                        return Err(bad(reason).into());
                    }
                    let kind = ParameterErrorKind::UnknownField {
                        field: name.to_string(),
                        suggestion: e.suggestion.map(|s| format!("{prefix}{s}")),
                    };
                    Err(ParameterError::new("order_by", text, kind).into())
                }
            }
        })
        .collect()
}

/// For a field inside an array of objects whose values are words (a text field, not one
/// of numbers or of `true` and `false`), the array: words do not order elements, so such a
/// field does not sort.
fn words_in_array(collection: &Collection, field: crate::index::FieldId) -> Option<&str> {
    let info = collection.index().field(field);
    let (array, _, _) = collection.enclosing_array(info.path())?;
    // `true` and `false` (a field of booleans, text by its name) order as the values they are.
    let words =
        || (0..info.terms().len()).any(|i| !matches!(info.terms().term(i), "true" | "false"));
    (info.kind() == crate::index::FieldKind::Text && !info.has_numbers() && words())
        .then_some(array)
}

/// Binds each `order_by` key on a field inside an array of objects to the elements the
/// query's nested queries on that array at its top level match (all of them without one;
/// see [`crate::plan::BoundNested`]), and refuses a price sort across currencies: when the
/// elements hold several values of `currency`, a key on a field of JSON numbers there
/// needs such a nested query to fix one.
fn bind_order(
    collection: &Collection,
    plan: &Plan<'_>,
    order: &mut [OrderKey],
    text: &str,
) -> Result<()> {
    for key in order.iter_mut().filter(|key| !key.joined) {
        let path = collection.index().field(key.field).path();
        let Some((_, space, relative)) = collection.enclosing_array(path) else {
            continue;
        };
        let elements = &collection.nested()[space].elements;
        let Some(field) = elements.index().lookup(relative) else {
            continue;
        };
        let bound: Vec<&crate::plan::BoundNested<'_>> =
            plan.bound.iter().filter(|b| b.space == space).collect();
        let fixed = bound
            .iter()
            .any(|b| b.fixed.iter().any(|f| f == "currency"));
        one_currency(collection, key, fixed, !bound.is_empty(), text)?;
        let Some((first, rest)) = bound.split_first() else {
            continue;
        };
        let mut counted = first.elements().clone();
        for other in rest {
            counted &= other.elements();
        }
        key.counted = Some(Counted {
            space,
            field,
            elements: counted,
        });
    }
    Ok(())
}

/// The currency rule of a key on a field inside an array of objects: when the elements
/// hold amounts (JSON numbers, as prices are) in several currencies, a query must fix one
/// (`fixed`) with a nested condition on the same array.
/// `nested`: the query has a nested query on that array at its top level, which fixes
/// no currency.
fn one_currency(
    collection: &Collection,
    key: &OrderKey,
    fixed: bool,
    nested: bool,
    text: &str,
) -> Result<()> {
    if key.joined {
        return Ok(());
    }
    let path = collection.index().field(key.field).path();
    let Some((array, space, relative)) = collection.enclosing_array(path) else {
        return Ok(());
    };
    let elements = &collection.nested()[space].elements;
    let Some(field) = elements.index().lookup(relative) else {
        return Ok(());
    };
    let amounts = !elements.index().field(field).numbers().is_empty();
    if !amounts || fixed {
        return Ok(());
    }
    let currencies = elements.keyword_values("currency");
    if currencies.len() <= 1 {
        return Ok(());
    }
    let listed: Vec<String> = currencies.iter().map(|c| c.to_uppercase()).collect();
    let reason = if nested {
        format!(
            "the `{array}` records that hold `{path}` are in several currencies ({}), and a \
             sort never orders different currencies as one number; the query's nested \
             condition on `{array}` fixes none: give it one `currency:{}` of its own, not \
             under OR or NOT and without wildcards",
            listed.join(", "),
            listed[0],
        )
    } else {
        format!(
            "the `{array}` records that hold `{path}` are in several currencies ({}), and a \
             sort never orders different currencies as one number; fix one with a nested \
             condition on the same array, e.g. \
             q={array}:(currency:{} AND ...)&order_by={}{path}",
            listed.join(", "),
            listed[0],
            if key.descending { "-" } else { "" },
        )
    };
    Err(ParameterError::invalid("order_by", text, reason).into())
}

impl Collection {
    /// The fields `order_by` accepts when `q` binds none of them, as the records spell
    /// them (camelCase spellings are accepted too): every field holding values, but for
    /// text fields inside arrays of objects, and amounts inside arrays of objects whose
    /// elements hold several currencies (those need a nested query fixing one).
    ///
    /// ```
    /// let engine = cardex::Engine::open(concat!(env!("CARGO_MANIFEST_DIR"), "/data"))?;
    /// let cards = engine.catalog("pokemon").unwrap().cards();
    /// let fields = cards.order_fields();
    /// assert!(fields.contains(&"name") && fields.contains(&"variants.prices.type"));
    /// // Text inside an array of objects; prices in several currencies (JPY and USD).
    /// assert!(!fields.contains(&"attacks.text") && !fields.contains(&"variants.prices.market"));
    /// # Ok::<(), cardex::LoadError>(())
    /// ```
    pub fn order_fields(&self) -> Vec<&str> {
        self.fields()
            .filter(|f| f.holds_values)
            .map(|f| f.path)
            .filter(|path| {
                parse_order(self, None, Some(path)).is_ok_and(|keys| {
                    keys.iter()
                        .all(|key| one_currency(self, key, false, false, path).is_ok())
                })
            })
            .collect()
    }
}

/// `select=id,name`: top-level fields of the collection (camelCase accepted).
#[inline]
fn parse_select(collection: &Collection, select: Option<&str>) -> Result<Option<Select>> {
    match select.filter(|t| !t.trim().is_empty()) {
        None => Ok(None),
        Some(text) => parse_select_keys(collection, text).map(Some),
    }
}

/// [`parse_select`] of a non-blank `text`.
fn parse_select_keys(collection: &Collection, text: &str) -> Result<Select> {
    let schema = collection.schema();
    let mut keys = Vec::new();
    for name in text.split(',').map(str::trim) {
        let bad = |reason: String| ParameterError::invalid("select", text, reason);
        if name.is_empty() {
            return Err(bad("list top-level field names separated by commas".into()).into());
        }
        match schema.top_level_field(name) {
            Ok(key) => keys.push(key),
            // Every record has an `id` (the loader requires it), even in a catalog with no
            // records to show it.
            Err(_) if crate::naming::snake_case(name) == "id" => keys.push("id".to_string()),
            Err(FieldError {
                kind: FieldErrorKind::NotTopLevel,
                ..
            }) => {
                return Err(bad(format!(
                    "`{name}` is not a top-level field; select takes top-level fields only"
                ))
                .into());
            }
            Err(e) => {
                let kind = ParameterErrorKind::UnknownField {
                    field: name.to_string(),
                    suggestion: e.suggestion,
                };
                return Err(ParameterError::new("select", text, kind).into());
            }
        }
    }
    Select::new(keys).ok_or_else(|| {
        ParameterError::invalid(
            "select",
            text,
            format!("at most {} fields besides `id`", Select::MAX_KEYS),
        )
        .into()
    })
}

/// `include=prices,pop_reports` (cards only: on expansions, which have no optional parts,
/// an unknown parameter, listing the parameters the endpoint takes, `expansions_allowed`).
#[inline]
fn parse_include(
    target: Target,
    include: Option<&str>,
    expansions_allowed: &'static [&'static str],
) -> Result<Include> {
    match include.filter(|t| !t.trim().is_empty()) {
        None => Ok(Include::NONE),
        Some(text) => parse_include_parts(target, text, expansions_allowed),
    }
}

/// [`parse_include`] of a non-blank `text`.
fn parse_include_parts(
    target: Target,
    text: &str,
    expansions_allowed: &'static [&'static str],
) -> Result<Include> {
    if target == Target::Expansions {
        let allowed = expansions_allowed;
        return Err(
            ParameterError::new("include", text, ParameterErrorKind::Unknown { allowed }).into(),
        );
    }
    text.split(',')
        .map(str::trim)
        .try_fold(Include::NONE, |acc, part| {
            let Some(part_set) = Schema::optional_part(part) else {
                let parts = ["prices", "pop_reports"];
                let mut reason = String::from("the parts are `prices` and `pop_reports`");
                if let Some(close) = crate::naming::suggest(part, parts) {
                    reason.push_str(&format!(" (did you mean `{close}`?)"));
                }
                return Err(ParameterError::invalid("include", text, reason).into());
            };
            Ok(acc.union(part_set))
        })
}
