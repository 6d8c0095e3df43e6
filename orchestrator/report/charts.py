"""Inline SVG charts and the shared style of the HTML report (no external assets).

Every chart is a horizontal bar/dot plot over cell names; axes label their ticks with `tick`, so a
chart whose values are all zero reads 0, never a float artefact such as `5e-10`.
"""
from __future__ import annotations

import html
import math
from typing import Any

from orchestrator.campaign import metrics as m

BAR_W = 420  # width of the plotting area, pixels
ROW_H = 22
LEFT = 380  # room for cell names (12px text, about 6.4px a character)
NAME_CHARS = 56  # longer names are shortened from the left, whole in their tooltip


def esc(text: Any) -> str:
    """HTML-escape any value (quotes too)."""
    return html.escape(str(text), quote=True)


def pct(x: float | None) -> str:
    """A rate as a percentage with one decimal, or - when there is none."""
    return "-" if x is None else f"{100 * x:.1f}%"


def _name(name: str) -> str:
    """A row label that fits LEFT: long names keep their end (the task and condition)."""
    short = name if len(name) <= NAME_CHARS else "…" + name[-(NAME_CHARS - 1):]
    return f"{esc(short)}<title>{esc(name)}</title>"


def tick(value: float, unit: str = "") -> str:
    """An axis label: 0 for zero (and float dust), else three significant digits."""
    if abs(value) < 1e-9:
        return f"0{unit}"
    return f"{value:.3g}{unit}"


def plain(value: Any) -> str:
    """A recorded value as a reader reads it, not as JSON: `key value, key value` for a mapping
    (a nested one in parentheses), `a; b` for a list, yes/no, - for nothing (escape it to show it)."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, dict):
        return ", ".join(f"{k} {_nested(v)}" for k, v in value.items()) or "-"
    if isinstance(value, (list, tuple)):
        return "; ".join(plain(v) for v in value) or "-"
    return str(value)


def _nested(value: Any) -> str:
    return f"({plain(value)})" if isinstance(value, (dict, list, tuple)) and value else plain(value)


def nice_scale(top: float, steps: int = 4) -> tuple[float, list[float]]:
    """An axis for values up to `top`: its end and its ticks, at a round step (1, 2, 2.5 or 5
    times a power of ten) so the labels read 0, 1, 2, 3 rather than 0, 0.711, 1.42, …"""
    top = top if top > 0 else 1.0
    raw = top / steps
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw * (1 - 1e-9))
    count = max(1, math.ceil(top / step - 1e-9))
    return step * count, [i * step for i in range(count + 1)]


def scale_top(values: list[float]) -> float:
    """The largest value, or 1 when there is nothing above zero (an all-zero chart keeps a sane axis)."""
    top = max([v for v in values if v is not None] + [0.0])
    return top if top > 0 else 1.0


def _axis(width: int, top: int, ticks: list[tuple[float, str]]) -> str:
    parts = []
    for frac, label in ticks:
        x = LEFT + frac * width
        parts.append(f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{top + 5}" stroke="#555"/>')
        parts.append(f'<text x="{x:.1f}" y="{top + 17}" font-size="11" text-anchor="middle">{esc(label)}</text>')
    parts.append(f'<line x1="{LEFT}" y1="{top}" x2="{LEFT + width}" y2="{top}" stroke="#555"/>')
    return "".join(parts)


def rate_chart(rows: list[tuple[str, float | None, list[float] | None, str]], *, title: str, colour: str) -> str:
    """Horizontal bars of rates in [0, 1] with interval whiskers; rows are (name, rate, [lo, hi], note)."""
    height = ROW_H * len(rows) + 40
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{LEFT + BAR_W + 140}" height="{height}" role="img" '
        f'aria-label="{esc(title)}">'
    ]
    for i, (name, value, ci, note) in enumerate(rows):
        y = 10 + i * ROW_H
        parts.append(f'<text x="{LEFT - 8}" y="{y + 14}" font-size="12" text-anchor="end">{_name(name)}</text>')
        parts.append(f'<rect x="{LEFT}" y="{y + 3}" width="{BAR_W}" height="{ROW_H - 6}" fill="#f2f2f2"/>')
        if value is not None:
            parts.append(
                f'<rect x="{LEFT}" y="{y + 3}" width="{value * BAR_W:.1f}" height="{ROW_H - 6}" fill="{colour}">'
                f"<title>{esc(name)}: {pct(value)}</title></rect>"
            )
        if ci:
            x1, x2 = LEFT + ci[0] * BAR_W, LEFT + ci[1] * BAR_W
            ym = y + ROW_H / 2
            parts.append(
                f'<line x1="{x1:.1f}" y1="{ym}" x2="{x2:.1f}" y2="{ym}" stroke="#222" stroke-width="1.5"/>'
                f'<line x1="{x1:.1f}" y1="{ym - 5}" x2="{x1:.1f}" y2="{ym + 5}" stroke="#222"/>'
                f'<line x1="{x2:.1f}" y1="{ym - 5}" x2="{x2:.1f}" y2="{ym + 5}" stroke="#222"/>'
            )
        parts.append(f'<text x="{LEFT + BAR_W + 8}" y="{y + 14}" font-size="12">{esc(note)}</text>')
    parts.append(_axis(BAR_W, 10 + len(rows) * ROW_H + 2, [(f, f"{int(f * 100)}%") for f in (0, 0.25, 0.5, 0.75, 1)]))
    parts.append("</svg>")
    return "".join(parts)


def count_chart(rows: list[tuple[str, float | None, str]], *, title: str, colour: str) -> str:
    """Horizontal bars of non-negative values scaled to the largest; rows are (name, value, note)."""
    top, ticks = nice_scale(scale_top([v for _, v, _ in rows if v is not None]))
    height = ROW_H * len(rows) + 40
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{LEFT + BAR_W + 140}" height="{height}" '
             f'role="img" aria-label="{esc(title)}">']
    for i, (name, value, note) in enumerate(rows):
        y = 10 + i * ROW_H
        parts.append(f'<text x="{LEFT - 8}" y="{y + 14}" font-size="12" text-anchor="end">{_name(name)}</text>')
        if value:
            parts.append(f'<rect x="{LEFT}" y="{y + 3}" width="{value / top * BAR_W:.1f}" height="{ROW_H - 6}" fill="{colour}"/>')
        parts.append(f'<text x="{LEFT + BAR_W + 8}" y="{y + 14}" font-size="12">{esc(note)}</text>')
    parts.append(_axis(BAR_W, 10 + len(rows) * ROW_H + 2, [(t / top, tick(t)) for t in ticks]))
    parts.append("</svg>")
    return "".join(parts)


def turn_time_chart(series: list[tuple[str, list[float]]]) -> str:
    """Per cell: every turn's wall time as a dot, median (thick tick) and p90 (thin tick), log-free linear scale."""
    allv = [v for _, vs in series for v in vs]
    top, ticks = nice_scale(scale_top(allv))
    height = ROW_H * len(series) + 40
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{LEFT + BAR_W + 160}" height="{height}" '
             'role="img" aria-label="turn times">']
    for i, (name, values) in enumerate(series):
        y = 10 + i * ROW_H
        ym = y + ROW_H / 2
        parts.append(f'<text x="{LEFT - 8}" y="{y + 14}" font-size="12" text-anchor="end">{_name(name)}</text>')
        parts.append(f'<line x1="{LEFT}" y1="{ym}" x2="{LEFT + BAR_W}" y2="{ym}" stroke="#e4e4e4"/>')
        for v in sorted(values):
            parts.append(f'<circle cx="{LEFT + v / top * BAR_W:.1f}" cy="{ym}" r="3" fill="#4a78b5" fill-opacity="0.45"/>')
        med, p90 = m.median(values), m.p90(values)
        if med is not None:
            x = LEFT + med / top * BAR_W
            parts.append(f'<line x1="{x:.1f}" y1="{ym - 8}" x2="{x:.1f}" y2="{ym + 8}" stroke="#111" stroke-width="3">'
                         f'<title>median {med:.2f}s</title></line>')
        if p90 is not None:
            x = LEFT + p90 / top * BAR_W
            parts.append(f'<line x1="{x:.1f}" y1="{ym - 8}" x2="{x:.1f}" y2="{ym + 8}" stroke="#c0392b" stroke-width="2">'
                         f'<title>p90 {p90:.2f}s</title></line>')
        note = f"n={len(values)}" + (f"  p50 {med:.1f}s  p90 {p90:.1f}s" if med is not None else "")
        parts.append(f'<text x="{LEFT + BAR_W + 8}" y="{y + 14}" font-size="12">{esc(note)}</text>')
    parts.append(_axis(BAR_W, 10 + len(series) * ROW_H + 2, [(t / top, tick(t, "s")) for t in ticks]))
    parts.append("</svg>")
    return "".join(parts)


CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;margin:2em auto;max-width:1180px;padding:0 1em;color:#222}
h1{font-size:1.5em}h2{font-size:1.15em;margin-top:2em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;font-size:13px;margin:.5em 0}
td,th{border:1px solid #ddd;padding:3px 7px;text-align:right}td:first-child,th:first-child{text-align:left}
.meta{font-size:13px;color:#555}.warn{color:#a04000}code{font-size:12px}
h3{font-size:1em;margin-bottom:.2em}a{color:#1f5fa8}
table.heat td.h{text-align:center;min-width:5.5em;white-space:nowrap}
table.heat th.c{writing-mode:vertical-rl;transform:rotate(180deg);text-align:left;vertical-align:bottom;
 font-weight:normal;max-height:16em;padding:6px 3px}
td.h small{display:block;color:#444;font-size:11px}.breach{outline:2px solid #c0392b;outline-offset:-3px;font-weight:bold}
.legend span{display:inline-block;padding:1px 8px;margin-right:4px;border:1px solid #ddd;font-size:12px}
.pass{color:#1e6b1e;font-weight:bold}.fail{color:#b03020;font-weight:bold}
td.detail{text-align:left;max-width:520px;font-size:12px}td.l,th.l{text-align:left}
.side{display:flex;gap:1em;align-items:flex-start}.side>div{flex:1;overflow-x:auto}
pre{font-size:11px;background:#f7f7f7;padding:6px;overflow-x:auto;white-space:pre-wrap;word-break:break-all}
tr.diff td{background:#fde8e4}
td.req{min-width:10em;max-width:22em;word-break:break-all;font-size:11px}table.audit{font-size:12px}table.audit td,table.audit th{padding:2px 5px}
table.t td,table.t th{text-align:left;vertical-align:top}.wide{overflow-x:auto;max-width:100%}
table.metrics th{font-size:12px;font-weight:600;max-width:6.5em;white-space:normal;vertical-align:bottom}
table.metrics td:first-child{max-width:22em}
table.faults td:not(:first-child){white-space:nowrap}td.kv{text-align:left;font-size:12px}table.kv th{white-space:nowrap}
"""


def heat(rate: float | None) -> str:
    """Background colour of a pass rate: red (0) through amber to green (1); grey for no rate."""
    if rate is None:
        return "#eeeeee"
    # two linear ramps so 50% reads amber, not muddy brown
    lo, mid, hi = (231, 120, 105), (245, 205, 110), (120, 190, 120)
    a, b, t = (lo, mid, rate * 2) if rate <= 0.5 else (mid, hi, (rate - 0.5) * 2)
    r, g, bl = (round(a[i] + (b[i] - a[i]) * t) for i in range(3))
    return f"#{r:02x}{g:02x}{bl:02x}"


