//! The `cardex` command: search, get and list over a snapshot;
//! `import` a public data set and `generate` a synthetic one into a snapshot folder;
//! `serve` the HTTP service (feature `server`) and manage its `accounts`.
//!
//! Exit status: 0 on success; 2 for a bad request (query, parameter, unknown catalog,
//! language, card or expansion), a command line that cannot be carried out (`generate`
//! over an output that exists without `--force`, `accounts` given a `--data` folder or a
//! state that is not there), or a `serve` or `accounts` configuration that cannot start
//! (a state, snapshot, webhooks or CA file, an address), with the error on stderr (a query
//! error with its caret); 1 when the snapshot cannot be loaded for a search, an import fails (its output
//! existing without `--force` included), the answer cannot be written to stdout (a pipe
//! whose reader is gone ends the command quietly, with 0, except for `accounts add-key`,
//! whose key is shown nowhere else: the key is revoked again), or the server stops with an error. A stderr
//! that cannot be written loses its messages, not the exit status.

use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use cardex::{Engine, Error, ItemRequest, SearchRequest};

#[path = "cli/allocator.rs"]
mod allocator;

#[cfg(feature = "server")]
#[path = "cli/logging.rs"]
mod logging;
use clap::{Args, CommandFactory, Parser, Subcommand};

/// A line on stderr, as `eprintln!` writes it but without its panic: a stderr that cannot
/// be written (closed, full) loses the message, and the exit status still tells the outcome.
macro_rules! say {
    ($($arg:tt)*) => {{
        let _ = writeln!(io::stderr(), $($arg)*);
    }};
}

/// Text on stderr, as [`say!`] but without the line's end.
macro_rules! say_text {
    ($($arg:tt)*) => {{
        let _ = write!(io::stderr(), $($arg)*);
    }};
}

/// Search trading-card catalogs from a JSON snapshot.
#[derive(Debug, Parser)]
#[command(name = "cardex", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Search a catalog's cards; prints the list envelope as JSON.
    Search(SearchArgs),
    /// Print one card as `{"data": {...}}`.
    Get {
        #[command(flatten)]
        data: DataArg,
        /// The catalog (`pokemon`, `onepiece`, ...).
        catalog: String,
        /// The card's id.
        card_id: String,
        /// Comma list of top-level fields to print (`id` is always printed).
        #[arg(long)]
        select: Option<String>,
        /// Comma list of optional parts: `prices`, `pop_reports`.
        #[arg(long)]
        include: Option<String>,
    },
    /// Search (or list) a catalog's expansions; prints the list envelope as JSON.
    Expansions(ExpansionArgs),
    /// Write a seeded synthetic snapshot shaped like a real catalog (for benchmarks and
    /// tests): skewed rarities, reprints, variants with prices, English and Japanese.
    #[cfg(feature = "generate")]
    Generate {
        /// The number of cards.
        #[arg(long)]
        cards: usize,
        /// The snapshot folder to write into (the catalog is a sub-folder of it).
        #[arg(long)]
        out: PathBuf,
        /// The seed: the same seed and card count write the same bytes.
        #[arg(long, default_value_t = 7)]
        seed: u64,
        /// The catalog's name (its folder inside OUT).
        #[arg(long, default_value = "tcg")]
        catalog: String,
        /// Replace the catalog folder if it exists.
        #[arg(long)]
        force: bool,
    },
    /// Run the HTTP service until SIGINT or SIGTERM.
    #[cfg(feature = "server")]
    Serve(ServeArgs),
    /// Manage the accounts of `cardex serve` in its state database: keys, imports, a list.
    #[cfg(feature = "server")]
    Accounts {
        #[command(subcommand)]
        command: AccountsCommand,
    },
    /// Convert a public data set into a cardex snapshot folder.
    Import {
        /// The data set's layout.
        format: ImportFormat,
        /// The data set's folder (for pokemon-tcg-data: with sets/en.json and cards/en/).
        src: PathBuf,
        /// The snapshot folder to write (written aside, then renamed into place).
        out: PathBuf,
        /// The catalog's name in the snapshot.
        #[arg(long, default_value = "pokemon")]
        catalog: String,
        /// Replace the output if it exists.
        #[arg(long)]
        force: bool,
    },
}

#[cfg(feature = "server")]
#[derive(Debug, Args)]
struct ServeArgs {
    #[command(flatten)]
    data: DataArg,
    /// Where to listen: HOST:PORT (port 0 picks a free one, printed in the log).
    #[arg(long, default_value = "127.0.0.1:8080")]
    addr: String,
    /// The state database: accounts (teams, plans, key hashes, credit costs), credits
    /// used, usage figures and the webhook outbox. `sqlite:PATH` (one server; created when
    /// missing) or `postgres://USER@HOST[:PORT]/DB` (replicas) [default: an SQLite file
    /// beside the snapshot folder, `<folder>.state.db`].
    #[arg(long, value_name = "URL")]
    state: Option<String>,
    /// Serve without credentials, rate limits or credits, for local use.
    #[arg(long)]
    open: bool,
    /// With PostgreSQL state: the local file charges are spooled to while the database is
    /// unreachable [default: `<folder>.spool.db` beside the snapshot folder].
    #[arg(long, value_name = "FILE")]
    spool: Option<PathBuf>,
    /// The rate limit's window in milliseconds (100 requests per team in any window).
    #[arg(long, value_name = "MS", default_value_t = 1000, hide = true, value_parser = at_least_one())]
    rate_window: u64,
    /// Seconds between refreshes of the usage figures: they are 1 to 1.25 intervals apart
    /// (20 to 25 minutes by default; the spec asks for every 20 to 30).
    #[arg(long, value_name = "SECS", default_value_t = 1200, value_parser = at_least_one())]
    usage_refresh: u64,
    /// The longest a request may take, in milliseconds (at least 1).
    #[arg(long, value_name = "MS", default_value_t = 10_000, value_parser = at_least_one())]
    request_timeout: u64,
    /// The longest a client may take to send a request's line and headers (and an idle
    /// keep-alive connection may stay open), in milliseconds (at least 1); then the
    /// connection closes.
    #[arg(long, value_name = "MS", default_value_t = 10_000, value_parser = at_least_one())]
    header_timeout: u64,
    /// At shutdown (SIGINT, SIGTERM), how long in-flight requests are waited for, in seconds.
    #[arg(long, value_name = "SECS", default_value_t = 30)]
    shutdown_grace: u64,
    /// The webhooks file (subscriptions and retry policy, see SERVER.md). Without it,
    /// reloads still happen and their events are logged, but nothing is delivered.
    #[arg(long, value_name = "FILE")]
    webhooks: Option<PathBuf>,
    /// A PEM file of private CA certificates that `https://` webhook receivers may present
    /// certificates from, besides the system's and webpki's root certificates (needs
    /// `--webhooks`).
    #[arg(long, value_name = "FILE", requires = "webhooks")]
    webhook_ca: Option<PathBuf>,
    /// How log lines are written on stderr: `text` (logfmt) or `json` (one object per
    /// line).
    #[arg(long, value_enum, default_value_t = logging::LogFormat::Text)]
    log_format: logging::LogFormat,
    /// How the snapshot's records are kept in memory: `plain` (as served, the fastest
    /// pages) or `compressed` (LZ4 against a dictionary per collection: about a quarter of
    /// the memory for the JSON; a page of full cards costs a few times as much).
    #[arg(long, value_name = "KIND", default_value = "plain")]
    store: cardex::StoreKind,
    /// How often the snapshot folder is checked for changes, in milliseconds (a reload
    /// follows once two checks agree on a new state); 0 turns watching off (SIGHUP still
    /// reloads).
    #[arg(long, value_name = "MS", default_value_t = 1000)]
    watch_interval: u64,
    /// Which web origins' pages may call the service from a browser (CORS): `*` (any),
    /// `none`, or a comma list of origins (`https://app.example.com`).
    #[arg(long, value_name = "ORIGINS", default_value = "*")]
    cors_origins: String,
    /// The catalog the Pokémon TCG API v2 surface (`/v2/...`) serves.
    #[arg(long, value_name = "NAME", default_value = cardex::server::v2::DEFAULT_CATALOG)]
    v2_catalog: String,
    /// Requests a minute each client address may make on `/v2` without an API key (429
    /// past it); 0 refuses them all.
    #[arg(long, value_name = "N", default_value_t = cardex::server::v2::DEFAULT_ANONYMOUS_PER_MINUTE)]
    v2_anonymous_limit: u32,
    /// The header webhook deliveries carry their signature in (`X-Scrydex-Signature` for
    /// receivers written for Scrydex).
    #[arg(long, value_name = "NAME", default_value = cardex::webhook::SIGNATURE_HEADER)]
    signature_header: String,
}

#[cfg(feature = "server")]
#[derive(Debug, Subcommand)]
enum AccountsCommand {
    /// Make a new API key for a team (creating the team if needed), store its hash, and
    /// print the key: the only time it is shown.
    AddKey {
        #[command(flatten)]
        state: StateArg,
        /// The team id (1 to 64 letters, digits, `_` or `-`).
        #[arg(long)]
        team: String,
        /// The plan's credits, for a new team (`--credits` for short), at most 2^63 - 1.
        #[arg(
            long,
            alias = "credits",
            default_value_t = 50_000,
            value_parser = clap::value_parser!(u64).range(..=i64::MAX as u64)
        )]
        total_credits: u64,
        /// The cost per credit past the plan's, for a new team (`--overage-rate` for short).
        #[arg(
            long,
            alias = "overage-rate",
            default_value_t = 0.002,
            allow_negative_numbers = true
        )]
        overage_credit_rate: f64,
    },
    /// Revoke a key: servers on the state stop accepting it within a second. The key is
    /// read from standard input (one line), so that it stays out of shell histories and
    /// process lists; `--sha256` names it by its hash instead.
    RevokeKey {
        #[command(flatten)]
        state: StateArg,
        /// The key's SHA-256 hash (64 hex digits), as an accounts file lists it, instead
        /// of the key on standard input.
        #[arg(long, value_name = "HEX")]
        sha256: Option<String>,
    },
    /// Import an accounts file (teams, plans, key hashes, credit costs) into the state
    /// database, in one transaction: teams there keep their credits used.
    Import {
        /// The accounts file.
        file: PathBuf,
        #[command(flatten)]
        state: StateArg,
    },
    /// List the teams: plan, number of keys and credits used.
    List {
        #[command(flatten)]
        state: StateArg,
    },
}

/// A state an `accounts` command opened, the runtime its calls run on, and its URL.
#[cfg(feature = "server")]
type OpenedState = (
    tokio::runtime::Runtime,
    cardex::server::state::State,
    cardex::server::state::StateUrl,
);

/// The state database an `accounts` command works on.
#[cfg(feature = "server")]
#[derive(Debug, Args)]
struct StateArg {
    /// The state database, `sqlite:PATH` or `postgres://USER@HOST[:PORT]/DB` [default:
    /// the one `cardex serve` uses for --data, `<folder>.state.db` beside it].
    #[arg(long, value_name = "URL")]
    state: Option<String>,
    #[command(flatten)]
    data: DataArg,
}

#[cfg(feature = "server")]
impl StateArg {
    fn url(self) -> Result<cardex::server::state::StateUrl, Failure> {
        if let Some(url) = parse_state(self.state.as_deref())? {
            return Ok(url);
        }
        let data = self.data.path();
        if !data.is_dir() {
            // A mistyped folder would make a new, empty state no server reads.
            return Err(Failure::Usage(format!(
                "no snapshot folder at {}: the default state is `<folder>.state.db` beside the folder `cardex serve --data` serves; give that folder with --data, or the state with --state",
                data.display()
            )));
        }
        Ok(cardex::server::state::default_state(&data))
    }

    /// Opens a state that must exist already (a command that reads it, or changes what
    /// is in it): a missing SQLite file is an error, not a new empty state.
    fn open_existing(self, command: &str) -> Result<OpenedState, Failure> {
        let url = self.url()?;
        let runtime = Self::runtime()?;
        let state = runtime
            .block_on(cardex::server::state::State::open_existing(&url))
            .map_err(|e| match e {
                cardex::server::state::StateError::NoState { .. } => Failure::Usage(format!(
                    "no state at {url}: `accounts {command}` works on an existing state (`accounts add-key` or `accounts import` makes one); check --state or --data"
                )),
                e => Failure::Config(e.to_string()),
            })?;
        Ok((runtime, state, url))
    }

    fn runtime() -> Result<tokio::runtime::Runtime, Failure> {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(Failure::Io)
    }

    /// Opens the state (an SQLite file is created when missing), on a runtime of its own.
    fn open(self) -> Result<OpenedState, Failure> {
        Self::open_url(self.url()?)
    }

    fn open_url(url: cardex::server::state::StateUrl) -> Result<OpenedState, Failure> {
        let runtime = Self::runtime()?;
        let state = runtime
            .block_on(cardex::server::state::State::open(&url))
            .map_err(|e| Failure::Config(e.to_string()))?;
        Ok((runtime, state, url))
    }
}

/// A clap value parser of a whole number of at least 1 (an interval or a timeout of 0
/// would mean nothing, or drop every connection).
#[cfg(feature = "server")]
fn at_least_one() -> clap::builder::RangedU64ValueParser {
    clap::value_parser!(u64).range(1..)
}

/// The query argument of `command`, empty when absent. One that looks like a long option
/// (`--explian`, `--pagesize=1`) is a misspelt option, not a query, unless it comes after
/// `--`: a query may start with `-` (`-rarity:C`), and `--x` is a query only written so.
fn query_text(query: Option<String>, command: &str) -> Result<String, Failure> {
    let q = query.unwrap_or_default();
    let option_like = q.strip_prefix("--").is_some_and(option_name_like);
    if option_like && !std::env::args_os().any(|a| a == "--") {
        let name = q.split('=').next().unwrap_or_default();
        return Err(Failure::Usage(format!(
            "`{name}` is not an option of `cardex {command}` (see `cardex {command} --help`); \
             a query that starts with `--` goes after `--`: `cardex {command} CATALOG -- '{q}'`"
        )));
    }
    Ok(q)
}

/// Whether `text` (after `--`) reads as an option's name, with its `=value` if any:
/// letters, digits, `-` and `_` (`page_size`, the HTTP parameter's name, is typed too).
fn option_name_like(text: &str) -> bool {
    text.split('=').next().is_some_and(|name| {
        !name.is_empty()
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    })
}

/// For `search` and `expansions`, whose query may start with `-` (`-rarity_code:C`): an
/// argument before a lone `--` that reads as an option none of theirs is, said as a
/// misspelt option with the one it resembles. Left to clap, it would be taken as the
/// query, and the option's value then named as the unexpected argument, or a value-less
/// `--page_size=5` searched for (and found nothing).
fn misspelt_option(args: &[std::ffi::OsString]) -> Option<String> {
    let command = args.get(1)?.to_str()?;
    if !matches!(command, "search" | "expansions") {
        return None;
    }
    let cli = Cli::command();
    let sub = cli.find_subcommand(command)?;
    let long = |name: &str| sub.get_arguments().find(|a| a.get_long() == Some(name));
    let mut rest = args[2..].iter();
    while let Some(arg) = rest.next() {
        let Some(arg) = arg.to_str() else { continue };
        if arg == "--" {
            return None;
        }
        // A short option (`-p 5`): the commands have none but `-h`. Alone, or before an
        // option, it may be a query (`-C`, no card named C); before a value, which clap
        // would name as unexpected, it was meant as an option.
        let short = arg
            .strip_prefix('-')
            .filter(|t| t.len() == 1 && t.bytes().all(|b| b.is_ascii_alphabetic() && b != b'h'));
        if let (Some(letter), Some(next)) = (short, rest.as_slice().first()) {
            if !next.to_str().is_some_and(|n| n.starts_with('-')) {
                // The long options that take a value and start with the letter.
                let lower = letter.to_ascii_lowercase();
                let longs: Vec<String> = sub
                    .get_arguments()
                    .filter(|a| a.get_action().takes_values())
                    .filter_map(|a| a.get_long())
                    .filter(|l| l.starts_with(&lower))
                    .map(|l| format!("`--{l}`"))
                    .collect();
                let like = if longs.is_empty() {
                    String::new()
                } else {
                    format!(" (did you mean {}?)", longs.join(" or "))
                };
                return Some(format!(
                    "`-{letter}` is not an option of `cardex {command}`{like}; see `cardex \
                     {command} --help`"
                ));
            }
        }
        let Some(text) = arg.strip_prefix("--").filter(|t| option_name_like(t)) else {
            continue;
        };
        let (name, value) = match text.split_once('=') {
            Some((name, _)) => (name, true),
            None => (text, false),
        };
        match long(name) {
            // Its value is the next argument, whatever it looks like (`--order-by -hp`),
            // except a `--` that clap reads as the end of the options (`--select --`).
            Some(known) if !value && known.get_action().takes_values() => {
                if rest.as_slice().first().is_some_and(|next| next == "--")
                    && !known.is_allow_hyphen_values_set()
                {
                    return None;
                }
                rest.next();
            }
            Some(_) => {}
            None if name == "help" => {}
            None => {
                let longs = || sub.get_arguments().filter_map(|a| a.get_long());
                // Spelt with other case, `-` or `_` (`--page_size`, `--orderBy`), else
                // misspelt (`--explian`).
                let fold = |n: &str| n.replace(['-', '_'], "").to_ascii_lowercase();
                // Compared with `_` for `-` on both sides, as `suggest` reads names.
                let underscored: Vec<String> = longs().map(|l| l.replace('-', "_")).collect();
                let close = longs()
                    .find(|l| fold(l) == fold(name))
                    .or_else(|| {
                        let typed = name.replace('-', "_");
                        let near = cardex::suggest(&typed, underscored.iter().map(String::as_str))?;
                        longs().find(|l| l.replace('-', "_") == near)
                    })
                    .map(|l| format!(" (did you mean `--{l}`?)"))
                    .unwrap_or_default();
                return Some(format!(
                    "`--{name}` is not an option of `cardex {command}`{close}; see `cardex \
                     {command} --help`; a query that starts with `--` goes after `--`: \
                     `cardex {command} CATALOG -- '{arg}'`"
                ));
            }
        }
    }
    None
}

/// Whether stdout throws away what is written to it: it is `/dev/null`, which is also
/// what a Rust program finds on a stdout that was closed when it started.
#[cfg(all(unix, feature = "server"))]
fn stdout_discards() -> bool {
    use std::os::fd::AsFd;
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let Ok(fd) = io::stdout().as_fd().try_clone_to_owned() else {
        return true;
    };
    let Ok(meta) = std::fs::File::from(fd).metadata() else {
        return false;
    };
    meta.file_type().is_char_device()
        && std::fs::metadata("/dev/null").is_ok_and(|null| null.rdev() == meta.rdev())
}

/// A new team's plan, its overage rate checked.
#[cfg(feature = "server")]
fn overage_plan(
    total_credits: u64,
    overage_credit_rate: f64,
) -> Result<cardex::server::accounts::Plan, Failure> {
    if !overage_credit_rate.is_finite() || overage_credit_rate < 0.0 {
        return Err(Failure::Usage(
            "--overage-credit-rate must be a number ≥ 0".into(),
        ));
    }
    Ok(cardex::server::accounts::Plan {
        total_credits,
        overage_credit_rate,
    })
}

/// A `--state` value (a bad one is a usage error, exit status 2). Not a clap value
/// parser: clap would repeat the value, password and all, in its message.
#[cfg(feature = "server")]
fn parse_state(text: Option<&str>) -> Result<Option<cardex::server::state::StateUrl>, Failure> {
    text.map(cardex::server::state::StateUrl::parse)
        .transpose()
        .map_err(|e| Failure::Usage(e.to_string()))
}

/// The data sets `cardex import` reads.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum ImportFormat {
    /// github.com/PokemonTCG/pokemon-tcg-data (the Pokémon TCG API's data).
    PokemonTcgData,
}

#[derive(Debug, Args)]
struct DataArg {
    /// The snapshot folder [default: $CARDEX_DATA, else ./data, else the bundled data/]
    #[arg(long, value_name = "DIR")]
    data: Option<PathBuf>,
}

#[derive(Debug, Args)]
struct ListArgs {
    /// Scope to one language (`en`, `ja`), as `/{catalog}/v1/{lang}/...` does.
    #[arg(long)]
    lang: Option<String>,
    /// The page, from 1.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    page: u32,
    /// Records per page, 1 to 100.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=100))]
    page_size: u32,
    /// Comma list of fields to sort by, `-` before a field for descending.
    #[arg(long, allow_hyphen_values = true)]
    order_by: Option<String>,
    /// Comma list of top-level fields to print (`id` is always printed).
    #[arg(long)]
    select: Option<String>,
    /// Print the query plan with its estimated costs to stderr.
    #[arg(long)]
    explain: bool,
}

#[derive(Debug, Args)]
struct SearchArgs {
    #[command(flatten)]
    data: DataArg,
    /// The catalog (`pokemon`, `onepiece`, ...).
    catalog: String,
    #[command(flatten)]
    list: ListArgs,
    /// Comma list of optional parts: `prices`, `pop_reports`.
    #[arg(long)]
    include: Option<String>,
    /// Only the cards printed in this expansion (its debut cards and reprints), as
    /// `/{catalog}/v1/expansions/{id}/cards` lists them (an expansion is of one language,
    /// so `--lang` does not apply).
    #[arg(long, value_name = "ID", conflicts_with = "lang")]
    expansion: Option<String>,
    /// The `q` expression (quote it). Absent or empty matches every card.
    #[arg(allow_hyphen_values = true)]
    query: Option<String>,
}

#[derive(Debug, Args)]
struct ExpansionArgs {
    #[command(flatten)]
    data: DataArg,
    /// The catalog.
    catalog: String,
    #[command(flatten)]
    list: ListArgs,
    /// Print one expansion by id instead of a list (`--select` applies; the list's other
    /// options do not).
    #[arg(
        long,
        value_name = "ID",
        conflicts_with_all = ["query", "lang", "page", "page_size", "order_by", "explain"]
    )]
    id: Option<String>,
    /// The `q` expression over expansions (quote it). Absent or empty lists them all.
    #[arg(allow_hyphen_values = true)]
    query: Option<String>,
}

impl DataArg {
    fn path(&self) -> PathBuf {
        if let Some(path) = &self.data {
            return path.clone();
        }
        if let Some(path) = std::env::var_os("CARDEX_DATA").filter(|p| !p.is_empty()) {
            return PathBuf::from(path);
        }
        let local = PathBuf::from("data");
        if local.is_dir() {
            return local;
        }
        PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/data"))
    }
}

impl ListArgs {
    fn request<'a>(&'a self, q: &'a str) -> SearchRequest<'a> {
        SearchRequest {
            q,
            lang: self.lang.as_deref(),
            page: self.page,
            page_size: self.page_size,
            order_by: self.order_by.as_deref(),
            select: self.select.as_deref(),
            include: None,
        }
    }
}

/// How a run ended, short of success.
enum Failure {
    Load(cardex::LoadError),
    Import(cardex::import::ImportError),
    Request(Error),
    /// A command line that cannot be carried out as given.
    Usage(String),
    /// The server stopped with an error.
    #[cfg_attr(not(feature = "server"), allow(dead_code))]
    Serve(String),
    /// A configuration the environment cannot carry out: a state, snapshot, webhooks or
    /// CA file, an address (exit status 2, like a usage error).
    #[cfg_attr(not(feature = "server"), allow(dead_code))]
    Config(String),
    /// Writing the answer to stdout failed (a closed stdout ends the command quietly).
    Output(io::Error),
    #[cfg_attr(not(any(feature = "server", feature = "generate")), allow(dead_code))]
    Io(io::Error),
}

fn main() -> ExitCode {
    allocator::configure();
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if let Some(message) = misspelt_option(&args) {
        say!("error: {message}");
        return ExitCode::from(2);
    }
    let cli = Cli::parse_from(args);
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Load(e)) => {
            say!("error: cannot load the snapshot: {e}");
            ExitCode::from(1)
        }
        Err(Failure::Import(e)) => {
            say!("error: import failed: {e}");
            ExitCode::from(1)
        }
        Err(Failure::Request(e)) => {
            say!("error: {e}");
            ExitCode::from(2)
        }
        Err(Failure::Usage(message)) => {
            say!("error: {message}");
            ExitCode::from(2)
        }
        Err(Failure::Serve(message)) => {
            say!("error: {message}");
            ExitCode::from(1)
        }
        Err(Failure::Config(message)) => {
            say!("error: {message}");
            ExitCode::from(2)
        }
        // A closed stdout (`cardex search ... | head`) is not an error worth a message.
        Err(Failure::Output(e)) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(Failure::Output(e)) => {
            say!("error: cannot write the output: {e}");
            ExitCode::from(1)
        }
        Err(Failure::Io(e)) => {
            say!("error: {e}");
            ExitCode::from(1)
        }
    }
}

fn open(data: &DataArg) -> Result<Engine, Failure> {
    Engine::open(data.path()).map_err(Failure::Load)
}

fn run(cli: Cli) -> Result<(), Failure> {
    let stdout = io::stdout();
    let mut out = io::BufWriter::new(stdout.lock());
    match cli.command {
        Command::Search(args) => {
            let q = query_text(args.query, "search")?;
            let engine = open(&args.data)?;
            let catalog = engine
                .try_catalog(&args.catalog)
                .map_err(Failure::Request)?;
            let mut req = args.list.request(&q);
            req.include = args.include.as_deref();
            if args.list.explain {
                let plan = match &args.expansion {
                    Some(id) => catalog.explain_expansion_cards(id, &req),
                    None => catalog.explain(&req),
                }
                .map_err(Failure::Request)?;
                say_text!("{plan}");
            }
            let page = match &args.expansion {
                Some(id) => catalog.expansion_cards(id, &req),
                None => catalog.search(&req),
            }
            .map_err(Failure::Request)?;
            page.write_to(&mut out).map_err(Failure::Output)?;
        }
        Command::Get {
            data,
            catalog,
            card_id,
            select,
            include,
        } => {
            let engine = open(&data)?;
            let catalog = engine.try_catalog(&catalog).map_err(Failure::Request)?;
            let req = ItemRequest {
                select: select.as_deref(),
                include: include.as_deref(),
            };
            let item = catalog.card(&card_id, &req).map_err(Failure::Request)?;
            item.write_to(&mut out).map_err(Failure::Output)?;
        }
        #[cfg(feature = "generate")]
        Command::Generate {
            cards,
            out: dest,
            seed,
            catalog,
            force,
        } => {
            let options = cardex::generate::Options {
                cards,
                seed,
                catalog,
            };
            cardex::generate::check(&options).map_err(Failure::Usage)?;
            // A catalog a killed run had moved aside is back before it is looked for.
            cardex::generate::recover_abandoned(&dest, &options.catalog);
            let folder = dest.join(&options.catalog);
            if std::fs::symlink_metadata(&folder).is_ok() && !force {
                return Err(Failure::Usage(format!(
                    "{} exists; remove it, choose another --out or --catalog, or replace it with --force",
                    folder.display()
                )));
            }
            let start = std::time::Instant::now();
            let stats =
                cardex::generate::write_snapshot(&dest, &options).map_err(|e| match e.kind() {
                    io::ErrorKind::InvalidInput => Failure::Usage(e.to_string()),
                    _ => Failure::Io(e),
                })?;
            say!(
                "generated {} cards in {} expansions ({:.1} MiB of JSON) into {} in {:.2} s",
                stats.cards,
                stats.expansions,
                stats.bytes as f64 / (1024.0 * 1024.0),
                folder.display(),
                start.elapsed().as_secs_f64()
            );
            return Ok(());
        }
        #[cfg(feature = "server")]
        Command::Serve(args) => {
            let mut config = cardex::server::ServeConfig::new(args.data.path(), args.addr);
            config.store = args.store;
            config.state = parse_state(args.state.as_deref())?;
            config.open = args.open;
            config.spool = args.spool;
            config.cors_origins =
                cardex::server::CorsOrigins::parse(&args.cors_origins).map_err(Failure::Usage)?;
            config.rate_window = std::time::Duration::from_millis(args.rate_window);
            config.usage_refresh = std::time::Duration::from_secs(args.usage_refresh);
            config.request_timeout = std::time::Duration::from_millis(args.request_timeout);
            config.header_read_timeout = std::time::Duration::from_millis(args.header_timeout);
            config.shutdown_grace = std::time::Duration::from_secs(args.shutdown_grace);
            config.webhooks = args.webhooks;
            config.webhook_ca = args.webhook_ca;
            config.watch_interval = (args.watch_interval > 0)
                .then(|| std::time::Duration::from_millis(args.watch_interval));
            config.v2_catalog = args.v2_catalog;
            config.v2_anonymous_per_minute = args.v2_anonymous_limit;
            config.signature_header = args.signature_header;
            config.after_load = Some(allocator::give_back);
            let _flushed_at_exit = logging::install(args.log_format);
            return cardex::server::run(config).map_err(|e| match e.exit_code() {
                2 => Failure::Config(e.to_string()),
                _ => Failure::Serve(e.to_string()),
            });
        }
        #[cfg(feature = "server")]
        Command::Accounts {
            command: AccountsCommand::Import { file, state },
        } => {
            let accounts = cardex::server::accounts::Accounts::read(&file)
                .map_err(|e| Failure::Config(e.to_string()))?;
            let (runtime, state, url) = state.open()?;
            runtime
                .block_on(state.import(&accounts))
                .map_err(|e| Failure::Config(e.to_string()))?;
            say!(
                "imported {} teams from {} into {url}",
                accounts.teams.len(),
                file.display()
            );
            return Ok(());
        }
        #[cfg(feature = "server")]
        Command::Accounts {
            command:
                AccountsCommand::AddKey {
                    state,
                    team,
                    total_credits,
                    overage_credit_rate,
                },
        } => {
            let plan = overage_plan(total_credits, overage_credit_rate)?;
            if !cardex::server::accounts::valid_team_id(&team) {
                return Err(Failure::Usage(format!(
                    "team id `{team}` is not 1 to 64 letters, digits, `_` or `-`"
                )));
            }
            // A closed stdout is /dev/null to a Rust program, which takes every write: the
            // key would be stored and shown to no one.
            #[cfg(unix)]
            if stdout_discards() {
                return Err(Failure::Io(io::Error::other(
                    "stdout is closed or /dev/null, so the key would be shown to no one; nothing was added",
                )));
            }
            let (runtime, state, url) = state.open()?;
            let key = runtime
                .block_on(state.add_key(&team, plan, cardex::server::unix_now()))
                .map_err(|e| Failure::Config(e.to_string()))?;
            say!("added a key for team `{team}` to {url}; it is shown once, store it now:");
            // The key is shown nowhere else: should stdout not take it (a pipe whose reader
            // is gone, a full device), the key no one holds is revoked again, and the
            // command fails.
            let Err(e) = writeln!(out, "{key}").and_then(|()| out.flush()) else {
                return Ok(());
            };
            let hash = cardex::server::accounts::hash_key(&key);
            let undone = match runtime.block_on(state.revoke_key(&hash)) {
                Ok(_) => "it was revoked again; add a key once more".to_string(),
                Err(revoke) => format!(
                    "it is stored, and revoking it failed ({revoke}): revoke it with `cardex \
                     accounts revoke-key --sha256 {hash}` and this --state"
                ),
            };
            return Err(Failure::Io(io::Error::other(format!(
                "cannot write the key: {e}; {undone}"
            ))));
        }
        #[cfg(feature = "server")]
        Command::Accounts {
            command: AccountsCommand::RevokeKey { state, sha256 },
        } => {
            let hash = match sha256 {
                Some(hex) => {
                    let hex = hex.trim().to_ascii_lowercase();
                    if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                        return Err(Failure::Usage(
                            "--sha256 takes a key's SHA-256 hash: 64 hex digits".into(),
                        ));
                    }
                    hex
                }
                None => {
                    let mut line = String::new();
                    std::io::stdin().read_line(&mut line).map_err(|e| {
                        Failure::Usage(format!("cannot read the key on standard input: {e}"))
                    })?;
                    let key = line.trim();
                    if key.is_empty() {
                        return Err(Failure::Usage(
                            "give the key to revoke on standard input (or its hash with --sha256)"
                                .into(),
                        ));
                    }
                    cardex::server::accounts::hash_key(key)
                }
            };
            let (runtime, state, url) = state.open_existing("revoke-key")?;
            let revoked = runtime
                .block_on(state.revoke_key(&hash))
                .map_err(|e| Failure::Config(e.to_string()))?;
            return match revoked {
                Some(team) => {
                    say!("revoked a key of team `{team}` in {url}");
                    Ok(())
                }
                None => Err(Failure::Config(format!(
                    "no key in {url} has that hash; nothing was revoked"
                ))),
            };
        }
        #[cfg(feature = "server")]
        Command::Accounts {
            command: AccountsCommand::List { state },
        } => {
            let (runtime, state, _) = state.open_existing("list")?;
            let accounts = runtime
                .block_on(state.accounts())
                .map_err(|e| Failure::Config(e.to_string()))?;
            let used_by_team = runtime
                .block_on(state.used_by_team())
                .map_err(|e| Failure::Config(e.to_string()))?;
            writeln!(
                out,
                "team\ttotal_credits\toverage_credit_rate\tkeys\tused_credits"
            )
            .map_err(Failure::Output)?;
            for team in &accounts.teams {
                let used = used_by_team.get(&team.id).copied().unwrap_or(0);
                writeln!(
                    out,
                    "{}\t{}\t{}\t{}\t{used}",
                    team.id,
                    team.plan.total_credits,
                    team.plan.overage_credit_rate,
                    team.keys.len()
                )
                .map_err(Failure::Output)?;
            }
            return out.flush().map_err(Failure::Output);
        }
        Command::Import {
            format: ImportFormat::PokemonTcgData,
            src,
            out: dest,
            catalog,
            force,
        } => {
            use cardex::import::pokemon_tcg::{import, Options};
            let start = std::time::Instant::now();
            let stats = import(&src, &dest, &Options { catalog, force }, &|p| {
                if p.files_done % 25 == 0 || p.files_done == p.files {
                    say!(
                        "converted {}/{} card files ({} cards)",
                        p.files_done,
                        p.files,
                        p.records
                    );
                }
            })
            .map_err(Failure::Import)?;
            say!(
                "imported {} cards in {} sets into {} in {:.2} s",
                stats.cards,
                stats.sets,
                dest.display(),
                start.elapsed().as_secs_f64()
            );
            return Ok(());
        }
        Command::Expansions(args) => {
            let q = query_text(args.query, "expansions")?;
            let engine = open(&args.data)?;
            let catalog = engine
                .try_catalog(&args.catalog)
                .map_err(Failure::Request)?;
            if let Some(id) = &args.id {
                let req = ItemRequest {
                    select: args.list.select.as_deref(),
                    include: None,
                };
                let item = catalog.expansion(id, &req).map_err(Failure::Request)?;
                item.write_to(&mut out).map_err(Failure::Output)?;
            } else {
                let req = args.list.request(&q);
                if args.list.explain {
                    let plan = catalog.explain_expansions(&req).map_err(Failure::Request)?;
                    say_text!("{plan}");
                }
                let page = catalog.search_expansions(&req).map_err(Failure::Request)?;
                page.write_to(&mut out).map_err(Failure::Output)?;
            }
        }
    }
    out.write_all(b"\n").map_err(Failure::Output)?;
    out.flush().map_err(Failure::Output)
}
