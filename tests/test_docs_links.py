"""Every link between the project's documents leads somewhere: README.md and docs/*.md point only at files
that exist, and at headings those files have. Sections move between documents; a link left behind fails here."""

from __future__ import annotations

from pathlib import Path

import pytest

from duragent._config.settings import ROOT
from tests.support.docs import DOCUMENTS, anchors, relative_links


def broken_links(document: Path) -> list[str]:
    broken = []
    for target in relative_links(document):
        file, _, anchor = target.partition("#")
        destination = (document.parent / file).resolve() if file else document
        if not destination.exists():
            broken.append(f"{target}: no such file")
        elif anchor and destination.suffix == ".md" and anchor not in anchors(destination):
            broken.append(f"{target}: no such heading")
    return broken


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda path: str(path.relative_to(ROOT)))
def test_every_relative_link_points_at_a_file_and_heading_that_exist(document: Path):
    assert broken_links(document) == []


def test_the_checker_catches_a_missing_file_and_a_missing_heading(tmp_path: Path):
    (tmp_path / "there.md").write_text("# There\n\n## A section: `with code`\n\n```sh\n# not a heading\n```\n")
    page = tmp_path / "page.md"
    page.write_text(
        "[ok](there.md#a-section-with-code) [gone](gone.md) [no heading](there.md#not-a-heading) [web](https://x.y)\n"
        "```\n[in code](ignored.md)\n```\n"
    )
    assert broken_links(page) == ["gone.md: no such file", "there.md#not-a-heading: no such heading"]
