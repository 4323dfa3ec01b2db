"""The docs' reference tables are the code's: regenerating them (docs/tables.py) changes nothing."""

from __future__ import annotations

import importlib.util

from conftest import REPO


def _tables():
    spec = importlib.util.spec_from_file_location("docs_tables", REPO / "docs" / "tables.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_generated_table_matches_the_code():
    tables = _tables()
    seen = set()
    for page in tables.pages():
        text = page.read_text(encoding="utf-8")
        seen |= {m.group(2) for m in tables._BLOCK.finditer(text)}
        assert tables.render(text) == text, f"{page.name}: a table drifted from the code; run python docs/tables.py"
    assert seen == set(tables.TABLES), f"tables no page shows: {set(tables.TABLES) - seen}"


def test_a_drifted_table_is_seen():
    tables = _tables()
    text = "<!-- table:protocols -->\n| stale |\n<!-- /table:protocols -->"
    assert tables.render(text) != text and "`rsicc`" in tables.render(text)
