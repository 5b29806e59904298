"""The docs a newcomer follows are true: every module path and every relative link they cite exists, and nothing in
the project points outside it (docs/architecture.md is the design; the repository holds all of it)."""

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])
# A path in backticks under one of the project's own top-level folders, e.g. `ingest/connectors/base.py`,
# `finops/models/`, `tests/fakes/` (a glob or a placeholder such as `<kind>` is not a path).
CITED_PATH = re.compile(r"`((?:finops|ingest|demo|bench|tests|templates|static|docs)/[\w./-]*)`")
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def cited_paths(text: str) -> set[str]:
    return {match.rstrip(".") for match in CITED_PATH.findall(text)}


def test_every_module_path_the_docs_cite_exists():
    missing = [
        f"{doc.relative_to(ROOT)}: {path}"
        for doc in DOCS
        for path in cited_paths(doc.read_text())
        if not (ROOT / path).exists()
    ]
    assert not missing, "paths cited in the docs that do not exist:\n" + "\n".join(missing)


def test_every_relative_link_in_the_docs_leads_to_a_file_of_the_repository():
    broken = []
    for doc in DOCS:
        for target in LINK.findall(doc.read_text()):
            if re.match(r"^[a-z]+:", target):  # http:, https:, mailto:
                continue
            resolved = (doc.parent / target).resolve()
            if not resolved.is_relative_to(ROOT) or not resolved.exists():
                broken.append(f"{doc.relative_to(ROOT)}: {target}")
    assert not broken, "links that leave the repository or lead nowhere:\n" + "\n".join(broken)


def test_nothing_in_the_project_points_to_the_teams_old_design_notes_outside_it():
    # The names are put together here so that `git grep` of them finds nothing in the project, this file included.
    old_notes = ("shared" + "/DESIGN", "DESIGN" + ".md")
    found = subprocess.run(
        ["git", "grep", "-n", "-e", old_notes[0], "-e", old_notes[1]],
        cwd=ROOT,
        capture_output=True,
        text=True,
    ).stdout
    assert found == "", found


def test_the_readme_sends_a_newcomer_to_the_architecture_first():
    readme = (ROOT / "README.md").read_text()
    first_link = LINK.search(readme.split("## Quick start")[0])
    assert first_link and first_link.group(1) == "docs/architecture.md"
