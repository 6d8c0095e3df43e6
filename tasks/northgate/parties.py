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
    # Services billed monthly without a PO (rent, power, IT and telecom, accounting).
    ("V-0107", "Scioto Industrial Properties", "sciotoproperties.com", "NET30"),
    ("V-0108", "Central Ohio Power & Gas", "centralohiopg.com", "NET30"),
    ("V-0109", "Brightline IT Services", "brightlineit.com", "NET30"),
    ("V-0110", "Hartley & Moss CPAs", "hartleymoss.com", "NET45"),
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
    kind: str = ""                 # customers: distributor | contractor
    weight: float = 0.0            # customers: share of orders
    pays: dict | None = None       # customers: payment behaviour profile (world file)
    parent: str | None = None      # customers: parent account that pays for this one


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


_DISTRIBUTOR_KINDS = {"Plumbing Supply", "Pipe & Valve", "HVAC Distributors", "Industrial Supply",
                      "Building Products"}
_SHORT_REASONS = ["two cases arrived damaged", "pricing difference on the 1-in valves",
                  "freight deducted per our agreement", "one carton short on delivery"]


def _payment_profile(rng: random.Random, i: int) -> dict:
    """How a customer pays: mostly on time, a fifth late, a few short or with a wrong reference."""
    r = rng.random()
    if i == 7:                   # one chronic slow payer, far behind
        return {"pays": "late", "days_late": 55, "reference": "invoice"}
    if r < 0.58:
        return {"pays": "on_time", "reference": rng.choice(["invoice", "invoice", "po"])}
    if r < 0.82:
        return {"pays": "late", "days_late": rng.choice([6, 10, 14, 21, 30]), "reference": "invoice"}
    if r < 0.92:
        return {"pays": "short", "short_pct": rng.choice([1.5, 2.0, 3.0, 5.0]), "reference": "invoice",
                "short_reason": rng.choice(_SHORT_REASONS)}
    return {"pays": "on_time", "reference": "wrong"}


def make_customers(rng: random.Random, count: int = 60) -> list[Party]:
    """Seeded distributors and contractors with a Pareto-like order share, credit limits in line
    with their volume, payment behaviour profiles and one parent paying for a subsidiary."""
    out: list[Party] = []
    names = set()
    while len(out) < count:
        kind = rng.choice(_CUSTOMER_KIND)
        name = f"{rng.choice(_FIRST)} {kind}"
        if name in names:
            continue
        names.add(name)
        n = len(out)
        city, st, area = rng.choice(_CITIES)
        domain = name.lower().replace(" ", "").replace("&", "and") + ".com"
        weight = round(1.0 / (1 + n) ** 0.8 * rng.uniform(0.7, 1.3), 4)
        limit = 150_000 if weight > 0.35 else 75_000 if weight > 0.12 else 40_000 if weight > 0.06 else 20_000
        out.append(Party(f"C-{1001 + n:04d}", name, domain, rng.choice(["NET30", "NET30", "NET45", "2/10N30"]),
                         city, st, _phone(rng, area), f"{rng.randint(10, 99)}-{_digits(rng, 7)}",
                         credit_limit=limit, kind="distributor" if kind in _DISTRIBUTOR_KINDS else "contractor",
                         weight=weight, pays=_payment_profile(rng, n)))
    # A subsidiary whose parent pays its invoices.
    parent, child = out[2], out[count - 5]
    out[count - 5] = Party(**{**child.__dict__, "name": f"{parent.name.split()[0]} {child.name.split(' ', 1)[1]} East",
                              "parent": parent.id, "pays": {"pays": "on_time", "payer": parent.id,
                                                            "reference": "invoice"}})
    return out
