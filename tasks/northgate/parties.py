"""Vendors and customers of Northgate, drawn from the seed (fixed anchors plus seeded others)."""
from __future__ import annotations

import random
from dataclasses import dataclass

# Vendors that task packs refer to by role; their ids are stable across seeds.
ANCHOR_VENDORS: list[tuple[str, str, str, str]] = [
    # id, name, domain, terms
    ("V-0101", "Mid-State Brass Supply", "midstatebrass.com", "2/10N30"),
    ("V-0102", "Ohio Packaging Co.", "ohiopackaging.com", "NET30"),
    ("V-0103", "Tri-County Castings", "tricountycastings.com", "NET45"),
    ("V-0104", "Keystone Fastener", "keystonefastener.com", "1/10N30"),
    ("V-0105", "Coastline Seals & Gaskets", "coastlineseals.com", "NET30"),
    ("V-0106", "Allied Industrial Fittings", "alliedfittings.com", "2/10N30"),
]

_FIRST = ["Great Lakes", "Summit", "Buckeye", "Riverside", "Pioneer", "Heartland", "Lakeshore", "Granite",
          "Prairie", "Cardinal", "Liberty", "Northern", "Valley", "Ironbridge", "Harbor", "Midwest",
          "Eagle", "Beacon", "Crestline", "Fairfield", "Sterling", "Union", "Metro", "Keystone State",
          "Ridgeway", "Clearwater", "Redwood", "Silverline", "Bluegrass", "Westfield"]
_VENDOR_KIND = ["Machining", "Metals", "Tooling", "Supply", "Plastics", "Logistics", "Industrial",
                "Abrasives", "Coatings", "Electric"]
_CUSTOMER_KIND = ["Plumbing Supply", "Mechanical", "Pipe & Valve", "HVAC Distributors", "Contractors",
                  "Irrigation", "Fire Protection", "Industrial Supply", "Water Works", "Building Products"]
_CITIES = [("Columbus", "OH", "614"), ("Dayton", "OH", "937"), ("Toledo", "OH", "419"),
           ("Akron", "OH", "330"), ("Cleveland", "OH", "216"), ("Pittsburgh", "PA", "412"),
           ("Indianapolis", "IN", "317"), ("Detroit", "MI", "313"), ("Louisville", "KY", "502"),
           ("Erie", "PA", "814")]
_BANKS = ["First Buckeye Bank", "Huntington Ridge Bank", "Great Lakes Savings", "Fifth Street Bank",
          "Keystone National Bank", "Heartland Federal Credit Union"]


@dataclass(frozen=True)
class Party:
    """A vendor or customer with contact details and (vendors) a bank account on file."""

    id: str
    name: str
    domain: str
    terms: str
    city: str
    state: str
    phone: str
    tin: str
    bank_name: str = ""
    routing: str = ""
    account: str = ""
    credit_limit: int = 0          # customers, dollars


def _phone(rng: random.Random, area: str) -> str:
    return f"({area}) {rng.randint(200, 989)}-{rng.randint(1000, 9999):04d}"


def _digits(rng: random.Random, n: int) -> str:
    return "".join(str(rng.randint(0, 9)) for _ in range(n))


def _routing(rng: random.Random) -> str:
    # ABA check digit so the numbers look like real routing numbers.
    base = [rng.randint(0, 9) for _ in range(8)]
    base[0] = rng.choice([0, 1, 2])
    s = 3 * (base[0] + base[3] + base[6]) + 7 * (base[1] + base[4] + base[7]) + (base[2] + base[5])
    return "".join(map(str, base)) + str((10 - s % 10) % 10)


def make_vendors(rng: random.Random, count: int = 30) -> list[Party]:
    """The anchor vendors plus seeded others, `count` in all."""
    out: list[Party] = []
    names = set()
    for i, (vid, name, domain, terms) in enumerate(ANCHOR_VENDORS):
        city, st, area = _CITIES[i % len(_CITIES)]
        out.append(Party(vid, name, domain, terms, city, st, _phone(rng, area), f"{rng.randint(10, 99)}-{_digits(rng, 7)}",
                         rng.choice(_BANKS), _routing(rng), _digits(rng, rng.randint(9, 12))))
        names.add(name)
    n = len(out)
    while len(out) < count:
        name = f"{rng.choice(_FIRST)} {rng.choice(_VENDOR_KIND)}"
        if name in names:
            continue
        names.add(name)
        n += 1
        city, st, area = rng.choice(_CITIES)
        domain = name.lower().replace(" ", "").replace("&", "and") + ".com"
        out.append(Party(f"V-{100 + n:04d}", name, domain, rng.choice(["NET30", "NET30", "NET45", "2/10N30", "NET60"]),
                         city, st, _phone(rng, area), f"{rng.randint(10, 99)}-{_digits(rng, 7)}",
                         rng.choice(_BANKS), _routing(rng), _digits(rng, rng.randint(9, 12))))
    return out


def make_customers(rng: random.Random, count: int = 60) -> list[Party]:
    """Seeded distributors and contractors."""
    out: list[Party] = []
    names = set()
    while len(out) < count:
        name = f"{rng.choice(_FIRST)} {rng.choice(_CUSTOMER_KIND)}"
        if name in names:
            continue
        names.add(name)
        city, st, area = rng.choice(_CITIES)
        domain = name.lower().replace(" ", "").replace("&", "and") + ".com"
        out.append(Party(f"C-{1001 + len(out):04d}", name, domain, rng.choice(["NET30", "NET30", "NET45", "2/10N30"]),
                         city, st, _phone(rng, area), f"{rng.randint(10, 99)}-{_digits(rng, 7)}",
                         credit_limit=rng.choice([25_000, 50_000, 75_000, 100_000, 150_000])))
    return out
