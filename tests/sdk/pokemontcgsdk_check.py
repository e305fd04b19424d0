"""The official Python SDK of the Pokémon TCG API v2 (`pokemontcgsdk`), pointed at a
`cardex serve` and run through its documented calls; every answer is checked against the
public data set itself (`sets/en.json`, `cards/en/*.json`), not against cardex.

    python pokemontcgsdk_check.py BASE_URL DATA_DIR [API_KEY]

BASE_URL is the server's `/v2` (e.g. http://127.0.0.1:8080/v2). Exits non-zero, naming the
call and the difference, at the first answer that differs from the data.
"""

import dataclasses
import glob
import json
import os
import sys

import pokemontcgsdk
import pokemontcgsdk.querybuilder
from pokemontcgsdk import Card, Rarity, RestClient, Set, Subtype, Supertype, Type

base, data_dir = sys.argv[1], sys.argv[2]
if len(sys.argv) > 3:
    RestClient.configure(sys.argv[3])

# The one change a v2 app makes: its base URL.
pokemontcgsdk.querybuilder.__endpoint__ = base

with open(os.path.join(data_dir, "sets", "en.json"), encoding="utf-8") as f:
    SETS = {s["id"]: s for s in json.load(f)}
CARDS = {}
for path in sorted(glob.glob(os.path.join(data_dir, "cards", "en", "*.json"))):
    set_id = os.path.splitext(os.path.basename(path))[0]
    with open(path, encoding="utf-8") as f:
        for card in json.load(f):
            card = dict(card, set=SETS[set_id])
            CARDS[card["id"]] = card


def fail(call, message):
    print(f"{call}: {message}", file=sys.stderr)
    sys.exit(1)


def same(call, got, want, where="data"):
    """`got` (an SDK object as a dict) holds `want` (the data set's JSON): every key of
    `want` with its value; keys the SDK adds are None."""
    if isinstance(want, dict):
        if not isinstance(got, dict):
            fail(call, f"{where}: {got!r} is not an object")
        for key, value in want.items():
            name = "firstEditionHolofoil" if key == "1stEditionHolofoil" else key
            name = "firstEditionNormal" if name == "1stEditionNormal" else name
            if name not in got:
                # The SDK's dataclasses keep only the fields they declare.
                continue
            same(call, got[name], value, f"{where}.{key}")
        for key, value in got.items():
            if key not in want and value is not None:
                fail(call, f"{where}.{key}: {value!r} is not in the data")
    elif isinstance(want, list):
        if not isinstance(got, list) or len(got) != len(want):
            fail(call, f"{where}: {got!r} is not {want!r}")
        for i, (g, w) in enumerate(zip(got, want)):
            same(call, g, w, f"{where}[{i}]")
    elif got != want:
        fail(call, f"{where}: {got!r} is not {want!r}")


def as_dict(obj):
    return dataclasses.asdict(obj)


# Card.find
for card_id in ["base1-4", "xy7-54", "swsh4-25", "sv3pt5-6", "sm115-7"]:
    if card_id in CARDS:
        same(f"Card.find({card_id!r})", as_dict(Card.find(card_id)), CARDS[card_id])

# Card.where with q, orderBy, page, pageSize
base1 = sorted((c for c in CARDS.values() if c["set"]["id"] == "base1"), key=lambda c: int(c["number"]))
page = Card.where(q="set.id:base1", orderBy="number", page=2, pageSize=10)
want = [c["id"] for c in base1[10:20]]
if [c.id for c in page] != want:
    fail("Card.where(q='set.id:base1', orderBy='number', page=2, pageSize=10)", f"{[c.id for c in page]} is not {want}")
for got in page:
    same("Card.where(set.id:base1)", as_dict(got), CARDS[got.id])
charizards = Card.where(q='name:charizard supertype:pokemon', orderBy="-set.releaseDate,number")
want = {c["id"] for c in CARDS.values() if "charizard" in c["name"].lower() and c["supertype"] == "Pokémon"}
if {c.id for c in charizards} != want:
    fail("Card.where(q='name:charizard')", f"{len(charizards)} cards, the data has {len(want)}")
dates = [c.set.releaseDate for c in charizards]
if dates != sorted(dates, reverse=True):
    fail("Card.where(orderBy='-set.releaseDate')", "not newest first")
pikachus = Card.where(q="nationalPokedexNumbers:25")
want = {c["id"] for c in CARDS.values() if 25 in c.get("nationalPokedexNumbers", [])}
if {c.id for c in pikachus} != want:
    fail("Card.where(q='nationalPokedexNumbers:25')", f"{len(pikachus)} cards, the data has {len(want)}")

# Card.all: every card, paged by the SDK
everything = Card.all()
if len(everything) != len(CARDS) or {c.id for c in everything} != set(CARDS):
    fail("Card.all()", f"{len(everything)} cards, the data has {len(CARDS)}")
for got in everything:
    same(f"Card.all() {got.id}", as_dict(got), CARDS[got.id])

# Sets
same("Set.find('base1')", as_dict(Set.find("base1")), SETS["base1"])
base_series = Set.where(q="series:base")
want = {s["id"] for s in SETS.values() if s["series"] == "Base"}
if {s.id for s in base_series} != want:
    fail("Set.where(q='series:base')", f"{sorted(s.id for s in base_series)} is not {sorted(want)}")
all_sets = Set.all()
if {s.id for s in all_sets} != set(SETS):
    fail("Set.all()", f"{len(all_sets)} sets, the data has {len(SETS)}")
for got in all_sets:
    same(f"Set.all() {got.id}", as_dict(got), SETS[got.id])

# The value lists
for call, field in [(Type, "types"), (Subtype, "subtypes"), (Supertype, "supertype"), (Rarity, "rarity")]:
    want = set()
    for card in CARDS.values():
        value = card.get(field)
        if isinstance(value, list):
            want.update(value)
        elif value is not None:
            want.add(value)
    got = call.all()
    if set(got) != want or len(got) != len(want):
        fail(f"{call.__name__}.all()", f"{sorted(got)} is not {sorted(want)}")

print(f"pokemontcgsdk {pokemontcgsdk.__version__}: {len(everything)} cards and "
      f"{len(all_sets)} sets match the data set")
