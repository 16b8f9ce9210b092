"""The project's documents as tests read them: README.md and docs/*.md, their code blocks and their links.

Code blocks are run by the tests of what they show, wherever the block lives; `code_block_after` finds one by
the words just before it, so a section can move between documents with only its file name changing here."""

from __future__ import annotations

import re
from pathlib import Path

from duragent._config.settings import ROOT

DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

FENCE = re.compile(r"^```.*?^```", re.S | re.M)
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^(#{1,6}) +(.+?) *$", re.M)


def code_block_after(document: str, marker: str, language: str = "python") -> str:
    """The first ```language block after `marker` in `document` (a path under the project root)."""
    text = (ROOT / document).read_text()
    assert marker in text, f"{document} no longer says {marker!r}"
    match = re.search(rf"```{language}\n(.*?)```", text.split(marker, 1)[1], re.S)
    assert match, f"no {language} block after {marker!r} in {document}"
    return match.group(1)


def prose(text: str) -> str:
    """The text outside code blocks: a `#` comment in a shell block is no heading, a `[x](y)` in code no link."""
    return FENCE.sub("", text)


def anchors(path: Path) -> set[str]:
    """The anchors GitHub gives `path`'s headings: lower case, punctuation dropped, spaces as hyphens, and
    `-1`, `-2`... after a heading seen before."""
    seen: dict[str, int] = {}
    found = set()
    for _, title in HEADING.findall(prose(path.read_text())):
        slug = re.sub(r"[^\w\- ]", "", title.strip().lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(slug if count == 0 else f"{slug}-{count}")
    return found


def relative_links(path: Path) -> list[str]:
    """The targets of `path`'s links that point inside the project (no scheme, no mail address)."""
    targets = LINK.findall(prose(path.read_text()))
    return [t for t in targets if not re.match(r"^[a-z][a-z0-9+.-]*:", t)]
