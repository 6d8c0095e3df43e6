"""Small deterministic PDFs: `make_pdf(title, lines)` writes one (same inputs, same bytes),
`pdf_text(data)` reads its text lines back."""
from __future__ import annotations

import re

_PAGE_W, _PAGE_H, _MARGIN, _LEADING = 612, 792, 54, 13
_LINES_PER_PAGE = (_PAGE_H - 2 * _MARGIN - 30) // _LEADING


_WRAP = 96


def _pdf_escape(text: str) -> str:
    # Helvetica's WinAnsi covers latin-1; anything else becomes "?" so output stays ASCII-safe.
    text = text.encode("latin-1", errors="replace").decode("latin-1")
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def _wrap(line: str) -> list[str]:
    line = line.replace("\t", "    ").rstrip()
    out = []
    while len(line) > _WRAP:
        cut = line.rfind(" ", 0, _WRAP)
        cut = cut if cut > 0 else _WRAP
        out.append(line[:cut])
        line = "  " + line[cut:].lstrip()
    out.append(line)
    return out


def make_pdf(title: str, lines: list[str]) -> bytes:
    """A small PDF 1.4 document: `title` in bold, then `lines` (wrapped, paginated).

    Deterministic: no dates, no random ids, uncompressed streams — the same inputs always
    give byte-identical output."""
    body = [l2 for line in lines for l2 in _wrap(str(line))]
    pages: list[list[str]] = []
    first = _LINES_PER_PAGE - 2
    pages.append(body[:first])
    rest = body[first:]
    while rest:
        pages.append(rest[:_LINES_PER_PAGE])
        rest = rest[_LINES_PER_PAGE:]

    objects: list[bytes] = []      # object n is objects[n-1]

    def add(content: bytes) -> int:
        objects.append(content)
        return len(objects)

    catalog = add(b"")             # filled in once the page tree number is known
    page_tree = add(b"")
    font = add(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
    bold = add(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica-Bold /Encoding /WinAnsiEncoding >>")
    kids = []
    for i, page_lines in enumerate(pages):
        ops = ["BT"]
        y = _PAGE_H - _MARGIN
        if i == 0:
            ops.append(f"/F2 14 Tf 1 0 0 1 {_MARGIN} {y} Tm ({_pdf_escape(title)}) Tj")
            y -= 2 * _LEADING
        ops.append(f"/F1 10 Tf {_LEADING} TL 1 0 0 1 {_MARGIN} {y} Tm")
        for line in page_lines:
            ops.append(f"({_pdf_escape(line)}) Tj T*")
        ops.append(f"/F1 8 Tf 1 0 0 1 {_MARGIN} {_MARGIN - 20} Tm (Page {i + 1} of {len(pages)}) Tj")
        ops.append("ET")
        stream = "\n".join(ops).encode("latin-1")
        content = add(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
        kids.append(add(
            b"<< /Type /Page /Parent %d 0 R /MediaBox [0 0 %d %d] /Resources << /Font << /F1 %d 0 R "
            b"/F2 %d 0 R >> >> /Contents %d 0 R >>" % (page_tree, _PAGE_W, _PAGE_H, font, bold, content)))
    objects[catalog - 1] = b"<< /Type /Catalog /Pages %d 0 R >>" % page_tree
    objects[page_tree - 1] = (b"<< /Type /Pages /Kids [" + b" ".join(b"%d 0 R" % k for k in kids)
                              + b"] /Count %d >>" % len(kids))
    info = add(b"<< /Title (" + _pdf_escape(title).encode("latin-1") + b") /Producer (bb-erp) >>")

    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for n, obj in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % n + obj + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for off in offsets:
        out += b"%010d 00000 n \n" % off
    out += (b"trailer\n<< /Size %d /Root %d 0 R /Info %d 0 R >>\nstartxref\n%d\n%%%%EOF\n"
            % (len(objects) + 1, catalog, info, xref))
    return bytes(out)


_TJ = re.compile(rb"\(((?:\\.|[^\\)])*)\) Tj")


def pdf_text(data: bytes) -> list[str]:
    """The text lines of a PDF written by `make_pdf` (title first, page footers included)."""
    out = []
    for m in _TJ.finditer(data):
        raw = re.sub(rb"\\(.)", rb"\1", m.group(1))
        out.append(raw.decode("latin-1"))
    return out
