"""The handbook as pages: its Markdown files rendered to HTML (headings, lists, bold, paragraphs).

A small renderer on purpose: the handbook uses only these constructs, and the UI must not pull
a Markdown library into the ERP image.
"""
from __future__ import annotations

import re
from pathlib import Path

from markupsafe import Markup, escape


def handbook_files(folder: Path | None) -> list[tuple[str, str]]:
    """(file name, title) of each Markdown file, README first."""
    if folder is None or not folder.is_dir():
        return []
    files = sorted(folder.glob("*.md"), key=lambda p: (p.name != "README.md", p.name))
    out = []
    for p in files:
        first = next((ln for ln in p.read_text(encoding="utf-8").splitlines() if ln.strip()), p.stem)
        out.append((p.name, first.lstrip("# ").strip()))
    return out


def _inline(text: str) -> Markup:
    html = str(escape(text))
    html = re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", html)
    html = re.sub(r"(?<![*\w])\*(?!\s)(.+?)(?<!\s)\*(?![*\w])", r"<em>\1</em>", html)
    html = re.sub(r"`(.+?)`", r"<code>\1</code>", html)
    return Markup(html)


def render_markdown(text: str) -> Markup:
    """Headings, bullet and numbered lists, paragraphs; clause ids (`**PAY-2.1**`) get anchors."""
    out: list[str] = []
    for block in re.split(r"\n\s*\n", text.strip()):
        lines = block.splitlines()
        if not lines:
            continue
        head = re.match(r"^(#{1,4})\s+(.*)", lines[0])
        if head and len(lines) == 1:
            level = len(head.group(1))
            out.append(f"<h{level + 1}>{_inline(head.group(2))}</h{level + 1}>")
            continue
        if all(re.match(r"^\s*[-*]\s+", ln) or ln.startswith("  ") for ln in lines):
            items = [re.sub(r"^\s*[-*]\s+", "", ln) for ln in lines if re.match(r"^\s*[-*]\s+", ln)]
            out.append("<ul>" + "".join(f"<li>{_inline(i)}</li>" for i in items) + "</ul>")
            continue
        if all(re.match(r"^\s*\d+\.\s+", ln) for ln in lines):
            items = [re.sub(r"^\s*\d+\.\s+", "", ln) for ln in lines]
            out.append("<ol>" + "".join(f"<li>{_inline(i)}</li>" for i in items) + "</ol>")
            continue
        para = " ".join(ln.strip() for ln in lines)
        clause = re.match(r"^\*\*([A-Z]{2,5}-\d+(?:\.\d+)*)\*\*", para)
        anchor = f' id="{escape(clause.group(1))}" class="clause"' if clause else ""
        out.append(f"<p{anchor}>{_inline(para)}</p>")
    return Markup("\n".join(out))
