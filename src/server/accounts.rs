//! The accounts file: teams, their plans, their API keys (stored only as SHA-256 hashes),
//! and the credit cost of each endpoint; checking a request's `X-Api-Key` / `X-Team-ID`
//! against it in constant time; making new keys.
//!
//! The file is JSON (SERVER.md in the repository describes it):
//!
//! ```json
//! {
//!   "teams": [
//!     {
//!       "id": "acme",
//!       "plan": { "total_credits": 100000, "overage_credit_rate": 0.002 },
//!       "keys": [ { "sha256": "9f86d08…", "created": 1763800000 } ]
//!     }
//!   ],
//!   "credit_costs": { "cards": 1, "card": 1, "expansion_cards": 1, "expansions": 1,
//!                     "expansion": 1, "usage": 0 }
//! }
//! ```

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// The largest credit amount (a plan's credits, an endpoint's cost) and key time the state
/// holds: both databases store them as signed 64-bit integers.
pub const MAX_STORED: u64 = i64::MAX as u64;

/// The largest credit cost of an endpoint, so that a team's credits used, a sum of costs,
/// stays within [`MAX_STORED`] for 9.2 × 10¹² requests (three years at 100,000 a second)
/// rather than overflowing after two.
pub const MAX_CREDIT_COST: u64 = 1_000_000;

/// What a team pays for: the credits of its plan, and the price of each credit past them.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Plan {
    /// Credits included in the plan.
    pub total_credits: u64,
    /// Cost per credit used past `total_credits` (requests are still served then).
    pub overage_credit_rate: f64,
}

/// One API key of a team, as stored: never the key itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StoredKey {
    /// Lower-case hex SHA-256 of the key.
    pub sha256: String,
    /// When the key was made, in Unix seconds.
    #[serde(default)]
    pub created: u64,
}

/// A team: its id (the `X-Team-ID` header), plan and keys.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Team {
    /// The team's id: 1 to 64 ASCII letters, digits, `_` or `-`.
    pub id: String,
    /// The team's plan.
    pub plan: Plan,
    /// The team's keys.
    #[serde(default)]
    pub keys: Vec<StoredKey>,
}

/// The endpoints, as the credit table names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Endpoint {
    /// `/{catalog}/v1[/{lang}]/cards`
    Cards,
    /// `/{catalog}/v1/cards/{id}`
    Card,
    /// `/{catalog}/v1/expansions/{id}/cards`
    ExpansionCards,
    /// `/{catalog}/v1[/{lang}]/expansions`
    Expansions,
    /// `/{catalog}/v1/expansions/{id}`
    Expansion,
    /// `/account/v1/usage`
    Usage,
}

impl Endpoint {
    /// Every endpoint, in the order docs/spec/contract.md lists them ("Requests and
    /// responses").
    pub const ALL: [Endpoint; 6] = [
        Endpoint::Cards,
        Endpoint::Card,
        Endpoint::ExpansionCards,
        Endpoint::Expansions,
        Endpoint::Expansion,
        Endpoint::Usage,
    ];

    /// The endpoint's name in the credit table (and in logs).
    pub fn name(self) -> &'static str {
        match self {
            Endpoint::Cards => "cards",
            Endpoint::Card => "card",
            Endpoint::ExpansionCards => "expansion_cards",
            Endpoint::Expansions => "expansions",
            Endpoint::Expansion => "expansion",
            Endpoint::Usage => "usage",
        }
    }
}

/// What each endpoint costs, in credits: 1 for every catalog endpoint and 0 for the usage
/// endpoint unless the accounts file says otherwise (the service spec leaves the costs open).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CreditCosts {
    /// `/{catalog}/v1[/{lang}]/cards`
    pub cards: u64,
    /// `/{catalog}/v1/cards/{id}`
    pub card: u64,
    /// `/{catalog}/v1/expansions/{id}/cards`
    pub expansion_cards: u64,
    /// `/{catalog}/v1[/{lang}]/expansions`
    pub expansions: u64,
    /// `/{catalog}/v1/expansions/{id}`
    pub expansion: u64,
    /// `/account/v1/usage`
    pub usage: u64,
}

impl Default for CreditCosts {
    fn default() -> CreditCosts {
        CreditCosts {
            cards: 1,
            card: 1,
            expansion_cards: 1,
            expansions: 1,
            expansion: 1,
            usage: 0,
        }
    }
}

impl CreditCosts {
    /// The cost of one successful request to `endpoint`.
    pub fn of(&self, endpoint: Endpoint) -> u64 {
        match endpoint {
            Endpoint::Cards => self.cards,
            Endpoint::Card => self.card,
            Endpoint::ExpansionCards => self.expansion_cards,
            Endpoint::Expansions => self.expansions,
            Endpoint::Expansion => self.expansion,
            Endpoint::Usage => self.usage,
        }
    }
}

/// The accounts file, as read or written.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Accounts {
    /// The teams.
    #[serde(default)]
    pub teams: Vec<Team>,
    /// What each endpoint costs.
    #[serde(default)]
    pub credit_costs: CreditCosts,
}

/// Why an accounts file was refused.
#[derive(Debug)]
pub enum AccountsError {
    /// The file could not be read or written.
    Io {
        /// The file.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
    /// The file is not a valid accounts document.
    Invalid {
        /// The file.
        path: PathBuf,
        /// Where and why.
        message: String,
    },
}

impl fmt::Display for AccountsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AccountsError::Io { path, source } => write!(f, "{}: {source}", path.display()),
            AccountsError::Invalid { path, message } => {
                write!(f, "{}: invalid accounts file: {message}", path.display())
            }
        }
    }
}

impl std::error::Error for AccountsError {}

/// Refuses an array where the accounts file has an object (the document, `credit_costs`,
/// a team, its `plan`, a key), which serde would otherwise read field by field in order:
/// `[]` would be an accounts file of no teams and default costs.
fn objects_where_expected(document: &serde_json::Value) -> Result<(), String> {
    use serde_json::Value;
    let object = |value: &Value, place: &str| match value {
        Value::Object(_) => Ok(()),
        other => Err(format!(
            "{place} is {}: a JSON object is expected",
            match other {
                Value::Array(_) => "an array",
                Value::String(_) => "a string",
                Value::Number(_) => "a number",
                Value::Bool(_) => "a boolean",
                _ => "null",
            }
        )),
    };
    object(document, "the document")?;
    if let Some(costs) = document.get("credit_costs") {
        object(costs, "`credit_costs`")?;
    }
    let Some(Value::Array(teams)) = document.get("teams") else {
        return Ok(());
    };
    for (i, team) in teams.iter().enumerate() {
        object(team, &format!("`teams[{i}]`"))?;
        if let Some(plan) = team.get("plan") {
            object(plan, &format!("`teams[{i}].plan`"))?;
        }
        if let Some(Value::Array(keys)) = team.get("keys") {
            for (k, key) in keys.iter().enumerate() {
                object(key, &format!("`teams[{i}].keys[{k}]`"))?;
            }
        }
    }
    Ok(())
}

/// Whether `id` is a valid team id: 1 to 64 ASCII letters, digits, `_` or `-`.
pub fn valid_team_id(id: &str) -> bool {
    (1..=64).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

impl Accounts {
    /// Reads and checks an accounts file: team ids valid and unique, key hashes 64 hex
    /// digits, rates finite and not negative.
    ///
    /// # Errors
    ///
    /// [`AccountsError`], naming the file and the problem.
    pub fn read(path: &Path) -> Result<Accounts, AccountsError> {
        let text = std::fs::read_to_string(path).map_err(|source| AccountsError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let invalid = |message: String| AccountsError::Invalid {
            path: path.to_path_buf(),
            message,
        };
        // A byte order mark first (as some Windows editors write) is read past, as in
        // snapshot files.
        let text = crate::json::without_bom(&text);
        let value: serde_json::Value =
            serde_json::from_str(text).map_err(|e| invalid(e.to_string()))?;
        objects_where_expected(&value).map_err(invalid)?;
        let accounts: Accounts = serde_json::from_str(text).map_err(|e| invalid(e.to_string()))?;
        let too_large = |what: String| {
            invalid(format!(
                "{what} is larger than {MAX_STORED}, the most the state holds"
            ))
        };
        for endpoint in Endpoint::ALL {
            if accounts.credit_costs.of(endpoint) > MAX_CREDIT_COST {
                return Err(invalid(format!(
                    "credit_costs.{} is larger than {MAX_CREDIT_COST}, the most a request may cost",
                    endpoint.name()
                )));
            }
        }
        let mut seen = std::collections::HashSet::new();
        let mut keys = std::collections::HashMap::new();
        for team in &accounts.teams {
            if !valid_team_id(&team.id) {
                return Err(invalid(format!(
                    "team id `{}` is not 1 to 64 letters, digits, `_` or `-`",
                    team.id
                )));
            }
            if !seen.insert(team.id.as_str()) {
                return Err(invalid(format!("team `{}` is listed twice", team.id)));
            }
            if team.plan.total_credits > MAX_STORED {
                return Err(too_large(format!("team `{}`: total_credits", team.id)));
            }
            let rate = team.plan.overage_credit_rate;
            if !rate.is_finite() || rate < 0.0 {
                return Err(invalid(format!(
                    "team `{}`: overage_credit_rate must be a number ≥ 0",
                    team.id
                )));
            }
            for key in &team.keys {
                if key.sha256.len() != 64
                    || !key
                        .sha256
                        .bytes()
                        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
                {
                    return Err(invalid(format!(
                        "team `{}`: a key's sha256 is not 64 lower-case hex digits",
                        team.id
                    )));
                }
                if key.created > MAX_STORED {
                    return Err(too_large(format!("team `{}`: a key's created", team.id)));
                }
                let first = keys.insert(key.sha256.as_str(), team.id.as_str());
                if let Some(first) = first.filter(|&first| first != team.id) {
                    return Err(invalid(format!(
                        "the key sha256 {} is listed twice (teams `{first}` and `{}`); a key belongs to one team",
                        key.sha256, team.id
                    )));
                }
            }
        }
        Ok(accounts)
    }

    /// Writes the file atomically (a temporary file renamed over it).
    ///
    /// # Errors
    ///
    /// The file system's.
    pub fn write(&self, path: &Path) -> Result<(), AccountsError> {
        let io = |source| AccountsError::Io {
            path: path.to_path_buf(),
            source,
        };
        let mut text = serde_json::to_string_pretty(self).expect("accounts serialise");
        text.push('\n');
        let tmp = path.with_extension("json.tmp");
        std::fs::write(&tmp, text).map_err(io)?;
        std::fs::rename(&tmp, path).map_err(io)
    }

    /// Makes a new random key for team `team` (creating the team with `plan` if it does
    /// not exist), stores its hash and returns the key: the only time it is seen.
    ///
    /// # Errors
    ///
    /// An invalid team id, or no randomness from the OS.
    pub fn add_key(&mut self, team: &str, plan: Plan, now: u64) -> Result<String, AddKeyError> {
        if !valid_team_id(team) {
            return Err(AddKeyError::BadTeamId {
                team: team.to_string(),
            });
        }
        let key = new_key()?;
        let stored = StoredKey {
            sha256: hash_key(&key),
            created: now,
        };
        match self.teams.iter_mut().find(|t| t.id == team) {
            Some(t) => t.keys.push(stored),
            None => self.teams.push(Team {
                id: team.to_string(),
                plan,
                keys: vec![stored],
            }),
        }
        Ok(key)
    }
}

/// Why a key could not be added.
#[derive(Debug)]
#[non_exhaustive]
pub enum AddKeyError {
    /// The team id is not 1 to 64 letters, digits, `_` or `-`.
    BadTeamId {
        /// The id as given.
        team: String,
    },
    /// The OS gave no randomness to make the key from.
    NoRandomness(getrandom::Error),
}

impl fmt::Display for AddKeyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AddKeyError::BadTeamId { team } => write!(
                f,
                "team id `{team}` is not 1 to 64 letters, digits, `_` or `-`"
            ),
            AddKeyError::NoRandomness(e) => write!(f, "no randomness from the OS: {e}"),
        }
    }
}

impl std::error::Error for AddKeyError {}

/// A new API key: `cdx_` and 64 hex digits of OS randomness (256 bits).
pub(super) fn new_key() -> Result<String, AddKeyError> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(AddKeyError::NoRandomness)?;
    Ok(format!("cdx_{}", hex(&bytes)))
}

fn hex(bytes: &[u8]) -> String {
    use fmt::Write;
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(out, "{b:02x}");
    }
    out
}

/// The stored form of a key: lower-case hex SHA-256.
pub fn hash_key(key: &str) -> String {
    hex(&Sha256::digest(key.as_bytes()))
}

/// The outcome of checking a request's credentials.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Credentials {
    /// Both headers present and the key is one of the team's: the team's index.
    Valid(usize),
    /// A header is missing or empty.
    Missing,
    /// The team is unknown, or the key is not one of its keys.
    Invalid,
}

/// The teams and their key hashes, ready to check requests.
#[derive(Debug)]
pub struct KeyRing {
    /// Each team's number, by its id: hashed, as every request looks one up.
    teams: HashMap<String, usize>,
    hashes: Vec<Vec<[u8; 32]>>,
    /// Each key's team, by the key's hash (for a key presented alone, on `/v2`).
    owners: HashMap<[u8; 32], usize>,
}

impl KeyRing {
    /// The key ring of `accounts` (teams numbered in file order).
    pub fn new(accounts: &Accounts) -> KeyRing {
        let teams = accounts
            .teams
            .iter()
            .enumerate()
            .map(|(i, t)| (t.id.clone(), i))
            .collect();
        let hashes = accounts
            .teams
            .iter()
            .map(|t| t.keys.iter().filter_map(|k| unhex(&k.sha256)).collect())
            .collect::<Vec<Vec<[u8; 32]>>>();
        let owners = hashes
            .iter()
            .enumerate()
            .flat_map(|(team, keys)| keys.iter().map(move |hash| (*hash, team)))
            .collect();
        KeyRing {
            teams,
            hashes,
            owners,
        }
    }

    /// The team of `key`, presented without a team (`/v2`). The key is found by its
    /// SHA-256 hash, so a lookup's timing says nothing about the key itself.
    pub fn owner(&self, key: &str) -> Credentials {
        if key.is_empty() {
            return Credentials::Missing;
        }
        let presented: [u8; 32] = Sha256::digest(key.as_bytes()).into();
        match self.owners.get(&presented) {
            Some(&team) => Credentials::Valid(team),
            None => Credentials::Invalid,
        }
    }

    /// Checks `X-Api-Key` and `X-Team-ID`. The key's hash is compared with every key of
    /// the team in constant time, and an unknown team costs the same hash, so timing tells
    /// nothing about a key (whether a team id exists may show; team ids are not secrets).
    pub fn check(&self, key: Option<&str>, team: Option<&str>) -> Credentials {
        let (Some(key), Some(team)) = (key, team) else {
            return Credentials::Missing;
        };
        if key.is_empty() || team.is_empty() {
            return Credentials::Missing;
        }
        let presented: [u8; 32] = Sha256::digest(key.as_bytes()).into();
        let index = self.teams.get(team).copied();
        let mut matched = subtle::Choice::from(0);
        match index {
            Some(i) => {
                for stored in &self.hashes[i] {
                    matched |= presented.ct_eq(stored);
                }
            }
            None => {
                let _ = presented.ct_eq(&[0u8; 32]);
            }
        }
        match (index, bool::from(matched)) {
            (Some(i), true) => Credentials::Valid(i),
            _ => Credentials::Invalid,
        }
    }
}

fn unhex(text: &str) -> Option<[u8; 32]> {
    let mut out = [0u8; 32];
    for (i, pair) in text.as_bytes().chunks(2).enumerate() {
        let digits = std::str::from_utf8(pair).ok()?;
        *out.get_mut(i)? = u8::from_str_radix(digits, 16).ok()?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan() -> Plan {
        Plan {
            total_credits: 10,
            overage_credit_rate: 0.5,
        }
    }

    #[test]
    fn a_new_key_checks_against_its_team_only() {
        let mut accounts = Accounts::default();
        let key = accounts.add_key("acme", plan(), 1).unwrap();
        let other = accounts.add_key("globex", plan(), 1).unwrap();
        assert!(key.starts_with("cdx_") && key.len() == 68);
        assert_ne!(key, other);
        // Only the hash is stored.
        let stored = serde_json::to_string(&accounts).unwrap();
        assert!(!stored.contains(&key[4..]));
        let ring = KeyRing::new(&accounts);
        assert_eq!(ring.check(Some(&key), Some("acme")), Credentials::Valid(0));
        assert_eq!(
            ring.check(Some(&other), Some("globex")),
            Credentials::Valid(1)
        );
        assert_eq!(ring.check(Some(&key), Some("globex")), Credentials::Invalid);
        assert_eq!(ring.check(Some(&key), Some("nobody")), Credentials::Invalid);
        assert_eq!(
            ring.check(Some("cdx_0"), Some("acme")),
            Credentials::Invalid
        );
        assert_eq!(ring.check(None, Some("acme")), Credentials::Missing);
        assert_eq!(ring.check(Some(&key), None), Credentials::Missing);
        assert_eq!(ring.check(Some(""), Some("acme")), Credentials::Missing);
        // A key alone names its team (/v2).
        assert_eq!(ring.owner(&key), Credentials::Valid(0));
        assert_eq!(ring.owner(&other), Credentials::Valid(1));
        assert_eq!(ring.owner("cdx_0"), Credentials::Invalid);
        assert_eq!(ring.owner(""), Credentials::Missing);
    }

    #[test]
    fn a_second_key_joins_the_team() {
        let mut accounts = Accounts::default();
        let first = accounts.add_key("acme", plan(), 1).unwrap();
        let second = accounts.add_key("acme", plan(), 2).unwrap();
        assert_eq!(accounts.teams.len(), 1);
        let ring = KeyRing::new(&accounts);
        assert_eq!(
            ring.check(Some(&first), Some("acme")),
            Credentials::Valid(0)
        );
        assert_eq!(
            ring.check(Some(&second), Some("acme")),
            Credentials::Valid(0)
        );
        let bad = accounts.add_key("bad id", plan(), 1).unwrap_err();
        assert!(matches!(bad, AddKeyError::BadTeamId { ref team } if team == "bad id"));
        assert!(bad.to_string().contains("is not 1 to 64 letters"), "{bad}");
    }

    #[test]
    fn the_file_round_trips_and_bad_files_are_refused() {
        let dir = std::env::temp_dir().join(format!("cardex-accounts-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("accounts.json");
        let mut accounts = Accounts::default();
        accounts.add_key("acme", plan(), 1).unwrap();
        accounts.write(&path).unwrap();
        assert_eq!(Accounts::read(&path).unwrap(), accounts);
        // A byte order mark before the JSON is read past.
        let written = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, format!("\u{FEFF}{written}")).unwrap();
        assert_eq!(Accounts::read(&path).unwrap(), accounts);
        for (text, says) in [
            ("{\"teams\": [{\"id\": \"a b\", \"plan\": {\"total_credits\": 1, \"overage_credit_rate\": 0}}]}", "team id"),
            ("{\"teams\": [{\"id\": \"a\", \"plan\": {\"total_credits\": 1, \"overage_credit_rate\": 0}}, {\"id\": \"a\", \"plan\": {\"total_credits\": 1, \"overage_credit_rate\": 0}}]}", "twice"),
            ("{\"teams\": [{\"id\": \"a\", \"plan\": {\"total_credits\": 1, \"overage_credit_rate\": -1}}]}", "overage"),
            ("{\"teams\": [{\"id\": \"a\", \"plan\": {\"total_credits\": 1, \"overage_credit_rate\": 0}, \"keys\": [{\"sha256\": \"xyz\"}]}]}", "sha256"),
            ("{\"team\": []}", "unknown field"),
            ("{\"credit_costs\": {\"card\": 1, \"crads\": 2}}", "unknown field `crads`"),
            ("{\"credit_costs\": {\"cards\": 9223372036854775808}}", "credit_costs.cards is larger than 1000000, the most a request may cost"),
            // Two requests at a cost of 2^63 - 1 would overflow a team's credits used.
            ("{\"credit_costs\": {\"cards\": 1000001}}", "credit_costs.cards is larger than 1000000"),
            ("{\"teams\": [{\"id\": \"a\", \"plan\": {\"total_credits\": 18446744073709551615, \"overage_credit_rate\": 0}}]}", "team `a`: total_credits is larger"),
            ("{\"teams\": [{\"id\": \"a\", \"plan\": {\"total_credits\": 1, \"overage_credit_rate\": 0, \"credits\": 5}}]}", "unknown field `credits`"),
            (&format!("{{\"teams\": [{{\"id\": \"a\", \"plan\": {{\"total_credits\": 1, \"overage_credit_rate\": 0}}, \"keys\": [{{\"sha256\": \"{}\", \"created\": 18446744073709551615}}]}}]}}", "e".repeat(64)), "team `a`: a key's created is larger"),
            ("[", "EOF"),
            // An array where an object belongs is not read field by field.
            ("[]", "the document is an array: a JSON object is expected"),
            ("{\"credit_costs\": [9]}", "`credit_costs` is an array"),
            ("{\"teams\": [[\"a\", [1, 0.5]]]}", "`teams[0]` is an array"),
            ("{\"teams\": [{\"id\": \"a\", \"plan\": [5, 0.5]}]}", "`teams[0].plan` is an array"),
            (&format!("{{\"teams\": [{{\"id\": \"a\", \"plan\": {{\"total_credits\": 1, \"overage_credit_rate\": 0}}, \"keys\": [[\"{}\", 1]]}}]}}", "f".repeat(64)), "`teams[0].keys[0]` is an array"),
            (&format!("{{\"teams\": [{{\"id\": \"a\", \"plan\": {{\"total_credits\": 1, \"overage_credit_rate\": 0}}, \"keys\": [{{\"sha256\": \"{0}\"}}]}}, {{\"id\": \"b\", \"plan\": {{\"total_credits\": 1, \"overage_credit_rate\": 0}}, \"keys\": [{{\"sha256\": \"{0}\"}}]}}]}}", "c".repeat(64)), "listed twice (teams `a` and `b`)"),
        ] {
            std::fs::write(&path, text).unwrap();
            let err = Accounts::read(&path).unwrap_err().to_string();
            assert!(err.contains(says) && err.contains("accounts.json"), "{err}");
        }
        // One team listing its key twice is harmless.
        let twice = format!("{{\"teams\": [{{\"id\": \"a\", \"plan\": {{\"total_credits\": 1, \"overage_credit_rate\": 0}}, \"keys\": [{{\"sha256\": \"{0}\"}}, {{\"sha256\": \"{0}\"}}]}}]}}", "d".repeat(64));
        std::fs::write(&path, twice).unwrap();
        assert_eq!(Accounts::read(&path).unwrap().teams[0].keys.len(), 2);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
