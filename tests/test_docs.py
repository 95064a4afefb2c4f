"""The docs stay true: every route the worker serves outside the dashboard is in docs/rest-api.md
and every route written anywhere in the docs exists; every relative link (and its #anchor) leads
somewhere; the README stays a page a newcomer reads in minutes."""

from __future__ import annotations

import re
from pathlib import Path

from starlette.routing import Route

from worker.app import create_app
from worker.pages import routes as dashboard_routes
from worker.settings import load_settings

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
README_MAX_LINES = 260

METHOD = r"(?:GET|POST|PUT|PATCH|DELETE)"
ROUTE_SPAN = re.compile(rf"^({METHOD}(?:/{METHOD})*) (/[^\s?]*)")
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.DOTALL | re.MULTILINE)

Routes = set[tuple[str, str]]


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]


def template(path: str) -> str:
    """`/api/sessions/{session_id:path}/end` and `/api/sessions/{id}/end` read alike."""
    return re.sub(r"\{[^}]*\}", "{}", path)


def prose(text: str) -> str:
    """The text outside fenced code blocks (a curl line or a diagram is not a claim)."""
    return FENCE.sub("", text)


def documented_routes(text: str) -> Routes:
    """Every `METHOD /path...` code span, with `GET/PATCH/DELETE /x` as three routes."""
    found: Routes = set()
    for span in re.findall(r"`([^`]+)`", prose(text)):
        match = ROUTE_SPAN.match(" ".join(span.split()))
        if match:
            for method in match.group(1).split("/"):
                found.add((method, template(match.group(2))))
    return found


def route_set(routes: list[object]) -> Routes:
    return {
        (method, template(route.path))
        for route in routes
        if isinstance(route, Route)
        for method in (route.methods or set()) - {"HEAD"}
    }


def served(home: Path) -> tuple[Routes, Routes]:
    """(every route the app serves, those that are not dashboard pages: the API)."""
    app = create_app(load_settings({"CAIRN_HOME": str(home)}))
    every = route_set(list(app.routes))
    return every, every - route_set(list(dashboard_routes(lambda fn: fn)))


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower().replace("`", ""))
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    out: set[str] = set()
    for line in prose(path.read_text(encoding="utf-8")).splitlines():
        match = re.match(r"#{1,6} (.+)", line)
        if match:
            base = slug(match.group(1))
            n = seen.get(base, 0)
            seen[base] = n + 1
            out.add(base if n == 0 else f"{base}-{n}")
    return out


def broken_links(files: list[Path], root: Path = ROOT) -> list[str]:
    """'page: target (why)' for each relative link whose file or #heading is missing."""
    broken = []
    for page in files:
        for target in LINK.findall(prose(page.read_text(encoding="utf-8"))):
            if re.match(r"[a-z][a-z+.-]*:", target):
                continue  # http:, https:, mailto:
            file_part, _, anchor = target.partition("#")
            dest = (page.parent / file_part).resolve() if file_part else page
            where = f"{page.relative_to(root)}: {target}"
            if not dest.exists():
                broken.append(f"{where} (no such file)")
            elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                broken.append(f"{where} (no heading #{anchor})")
    return broken


def test_the_route_reader_reads_the_forms_the_table_uses() -> None:
    text = (
        "| `GET /api/memories` · `GET/PATCH/DELETE /api/memories/{id}` | ... |\n"
        "| `POST /api/decay/run {project?, dry_run?}` · `GET /api/report?project=&since=` | ... |\n"
        "```sh\ncurl -X `POST /api/not-a-claim`\n```\n"
        "a `GET\n  /api/embeddings/stats` split over two lines; `/api/sessions/{id}/...` alone"
    )
    assert documented_routes(text) == {
        ("GET", "/api/memories"),
        ("GET", "/api/memories/{}"),
        ("PATCH", "/api/memories/{}"),
        ("DELETE", "/api/memories/{}"),
        ("POST", "/api/decay/run"),
        ("GET", "/api/report"),
        ("GET", "/api/embeddings/stats"),
    }


def test_every_api_route_is_in_the_rest_api_page(tmp_path: Path) -> None:
    """A route added to the app without a row in docs/rest-api.md fails here."""
    _, api = served(tmp_path)
    assert ("GET", "/api/status") in api and ("GET", "/") not in api  # the split holds
    documented = documented_routes((DOCS / "rest-api.md").read_text(encoding="utf-8"))
    missing = sorted(f"{method} {path}" for method, path in api - documented)
    assert missing == [], "routes the worker serves that docs/rest-api.md does not document"


def test_every_route_the_docs_name_exists(tmp_path: Path) -> None:
    every, _ = served(tmp_path)
    named = {
        (f"{page.relative_to(ROOT)}", method, path)
        for page in pages()
        for method, path in documented_routes(page.read_text(encoding="utf-8"))
    }
    assert len({(m, p) for _, m, p in named}) > 40
    gone = sorted(f"{page}: {m} {p}" for page, m, p in named if (m, p) not in every)
    assert gone == [], "the docs name routes the worker does not serve"


def test_slugs_are_githubs() -> None:
    assert slug("Files in `~/.cairn`") == "files-in-cairn"
    assert slug("Judgment at each prompt") == "judgment-at-each-prompt"
    assert slug("Underneath, module by module") == "underneath-module-by-module"


def test_the_link_checker_finds_a_broken_link(tmp_path: Path) -> None:
    (tmp_path / "other.md").write_text("## A `code` heading, twice\n## A code heading twice\n")
    fake = tmp_path / "page.md"
    fake.write_text(
        "# Top\n[ok](#top) [gone](#nowhere) [file](missing.md) [web](https://example.com)\n"
        "![img](other.md) [b](other.md#a-code-heading-twice-1) [c](other.md#a-code-heading-twice-2)\n"
        "```\n[in a fence](missing-too.md)\n```\n",
        encoding="utf-8",
    )
    assert broken_links([fake], tmp_path) == [
        "page.md: #nowhere (no heading #nowhere)",
        "page.md: missing.md (no such file)",
        "page.md: other.md#a-code-heading-twice-2 (no heading #a-code-heading-twice-2)",
    ]


def test_every_relative_link_leads_somewhere() -> None:
    assert broken_links(pages()) == []


def test_every_docs_page_is_in_the_index() -> None:
    index = (DOCS / "README.md").read_text(encoding="utf-8")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for page in DOCS.glob("*.md"):
        if page.name != "README.md":
            assert f"]({page.name}" in index, f"docs/README.md does not link {page.name}"
            assert f"](docs/{page.name}" in readme, f"README.md does not link docs/{page.name}"


def test_the_readme_stays_short() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) < README_MAX_LINES, "README.md grew: move the reference into docs/"
