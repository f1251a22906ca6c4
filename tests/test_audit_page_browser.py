"""The audit page in a real browser: Debian's chromium, driven headless by Playwright.

Playwright's Python package (``pip install -e '.[browser]'``) is launched with the system
Chromium (``/usr/bin/chromium``, Debian's ``chromium`` package; ``CAPC_CHROMIUM`` names
another), never a browser it downloads. Without either the tests skip. The pages are
opened from ``file://`` in an offline context where every request that is not the page
itself is refused and recorded; the tests fail on any such request and on any console
error. A screenshot of each page is kept in ``build/test-artifacts/`` (or
``$CAPC_TEST_ARTIFACTS``), not compared.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from compiler.artifacts.lock_compact import expand_reports
from compiler.cli.main import main
from tests.conftest import OPENROUTER, ROOT

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
CHROMIUM = os.environ.get("CAPC_CHROMIUM") or shutil.which("chromium") or shutil.which(
    "chromium-browser")
if CHROMIUM is None:
    pytest.skip("no chromium on PATH (apt-get install chromium)", allow_module_level=True)
if not OPENROUTER.is_dir():
    pytest.skip("../shared/data/openrouter is absent", allow_module_level=True)

ARTIFACTS = Path(os.environ.get("CAPC_TEST_ARTIFACTS") or ROOT / "build" / "test-artifacts")
FLAGS = ["--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"]


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with sync_api.sync_playwright() as playwright:
        try:
            launched = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        except sync_api.Error as exc:
            pytest.skip(f"{CHROMIUM} did not start: {str(exc).splitlines()[0]}")
        yield launched
        launched.close()


class Page:
    """One page opened offline, with the requests it tried and the console errors."""

    def __init__(self, browser: Any, path: Path) -> None:
        self.requests: list[str] = []
        self.errors: list[str] = []
        self.context = browser.new_context(offline=True, viewport={"width": 1280, "height": 900})
        self.context.route("**/*", self._route)
        self.page = self.context.new_page()
        self.page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.url = path.as_uri()
        self.page.goto(self.url)

    def _route(self, route: Any) -> None:
        if route.request.url == self.url:
            route.continue_()
        else:
            self.requests.append(route.request.url)
            route.abort()

    def visible_cells(self) -> list[tuple[str, str]]:
        cells = self.page.locator("button.cell:visible")
        return [(cells.nth(i).get_attribute("data-stage"), cells.nth(i).get_attribute(
            "data-model")) for i in range(cells.count())]

    def close(self, shot: str) -> None:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        self.page.screenshot(path=str(ARTIFACTS / shot), full_page=True)
        self.context.close()
        assert self.requests == [], "the page asked for something besides itself"
        assert self.errors == [], "console errors"


def _write(argv: list[str], capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    main(argv)
    out = capsys.readouterr().out
    return json.loads(out) if "--json" in argv else {}


def test_the_audit_page_shows_every_pair_filters_and_opens_a_report(
    browser: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One cell per pair; the rung filter and the search narrow it; a report lists the
    pair's adjustments."""
    page_file = tmp_path / "audit.html"
    audit = _write(["audit", "--metadata", str(OPENROUTER / "models-2026-08-19.json"),
                    "--models", str(ROOT / "models.yaml"), "--stages", str(ROOT / "stages.yaml"),
                    "--json", "--html", str(page_file)], capsys)
    rows = audit["rows"]
    view = Page(browser, page_file)
    page = view.page
    assert sorted(view.visible_cells()) == sorted((r["stage"], r["model"]) for r in rows)
    assert page.locator("tr[data-model]").count() == len({r["model"] for r in rows})
    assert page.locator("#shown").text_content() == f"{len(rows)} of {len(rows)} pair(s) shown"
    assert "models-2026-08-19.json" in page.locator(".made-from").first.text_content()

    page.select_option("#f-rung", "none")
    expected = sorted((r["stage"], r["model"]) for r in rows if r["rung"] == "none")
    assert expected and sorted(view.visible_cells()) == expected
    page.select_option("#f-rung", "")
    page.fill("#f-search", "claude")
    expected = sorted((r["stage"], r["model"]) for r in rows if "claude" in r["model"])
    assert expected and sorted(view.visible_cells()) == expected
    page.select_option("#f-rung", "none")
    assert view.visible_cells() == [("draft_reply", "anthropic/claude-sonnet-4.5")]
    page.select_option("#f-rung", "")
    page.fill("#f-search", "")
    page.check("#f-adjusted")
    quiet = {"none", "routing", "na"}
    expected = sorted((r["stage"], r["model"]) for r in rows if r["severity"] not in quiet)
    assert sorted(view.visible_cells()) == expected
    page.uncheck("#f-adjusted")

    row = next(r for r in rows if (r["stage"], r["model"]) == ("draft_reply", "openai/gpt-5.1"))
    page.click('button.cell[data-stage="draft_reply"][data-model="openai/gpt-5.1"]')
    dialog = page.locator("dialog#report")
    assert dialog.is_visible()
    text = dialog.text_content()
    assert "draft_reply / openai/gpt-5.1" in text
    for adjustment in row["details"]:
        assert adjustment["kind"] in text and adjustment["reason"] in text
    assert "reasoning.effort_mapped" in text and "raised" in text
    assert dialog.locator("table.rows").first.locator("tr").count() == len(row["details"]) + 1
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "audit-report.png"))
    page.keyboard.press("Escape")
    assert not dialog.is_visible()
    view.close("audit-page.png")


def test_the_route_plan_is_in_the_report(
    browser: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """With endpoint data (the bundled seed's), a report shows every attempt's body and the
    route table with its exclusions."""
    page_file = tmp_path / "seed.html"
    audit = _write(["audit", "--models", str(ROOT / "models.yaml"), "--stages",
                    str(ROOT / "stages.yaml"), "--json", "--html", str(page_file)], capsys)
    row = max(audit["rows"], key=lambda r: len(r["attempts"]))
    assert len(row["attempts"]) >= 2
    view = Page(browser, page_file)
    view.page.click(f'button.cell[data-stage="{row["stage"]}"][data-model="{row["model"]}"]')
    text = view.page.locator("dialog#report").text_content()
    for number, attempt in enumerate(row["attempts"], start=1):
        assert f"attempt {number}: rung {attempt['rung']}" in text
    assert text.count("request body (messages aside)") == len(row["attempts"])
    for route in row["routes"]:
        assert route["endpoint"] in text
        if route["excluded_by"]:
            assert f"excluded: {route['excluded_by']}" in text
    view.close("audit-route-plan.png")


def test_the_diff_page_shows_only_the_changed_pairs(
    browser: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """models-2026-05-01 -> models-2026-08-19: the two changed pairs, each with its
    changes and the old and the new report."""
    page_file = tmp_path / "diff.html"
    diff = _write(["diff", str(OPENROUTER / "models-2026-05-01.json"),
                   str(OPENROUTER / "models-2026-08-19.json"), "--models",
                   str(ROOT / "models.yaml"), "--stages", str(ROOT / "stages.yaml"), "--json",
                   "--html", str(page_file)], capsys)
    changed = sorted({(c["stage"], c["model"]) for c in diff["changes"]})
    assert changed == [("deep_analysis", "deepseek/deepseek-chat-v3.1"),
                       ("draft_reply", "openai/gpt-5.1")]
    view = Page(browser, page_file)
    page = view.page
    assert sorted(view.visible_cells()) == changed
    header = page.locator("body").text_content()
    assert "models-2026-05-01.json" in header and "models-2026-08-19.json" in header
    page.click('button.cell[data-stage="draft_reply"][data-model="openai/gpt-5.1"]')
    dialog = page.locator("dialog#report")
    text = dialog.text_content()
    assert re.search(r"reasoning\.effort: \"minimal\" \u2192 \"low\"", text)
    assert dialog.locator("section[aria-label=old]").count() == 1
    assert "reasoning.effort_mapped" in dialog.locator("section[aria-label=new]").text_content()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "diff-report.png"))
    page.keyboard.press("Escape")
    view.close("diff-page.png")


EVIL_IDS = ['evil/</script><script>document.title="pwned"</script>',
            "x/<img/src=x/onerror=document.title='pwned'>",
            "huge/" + "a" * 3000, 'q/"quoted\'`tick`${x}\\u003c<!--']
EVIL_REASON = '<script>document.title="pwned"</script><img src=x onerror=alert(1)>'


def _evil_inputs(tmp_path: Path) -> tuple[Path, Path]:
    """A models list with hostile ids (copies of openai/gpt-4o-mini) and a stages.yaml
    that lists them for classify_ticket."""
    import yaml

    document = json.loads((OPENROUTER / "models-2026-08-19.json").read_text(encoding="utf-8"))
    base = next(m for m in document["data"] if m["id"] == "openai/gpt-4o-mini")
    for model_id in EVIL_IDS:
        document["data"].append({**base, "id": model_id, "canonical_slug": model_id,
                                 "name": f"<b>{model_id}</b>"})
    metadata = tmp_path / "evil-models.json"
    metadata.write_text(json.dumps(document), encoding="utf-8")
    stages = yaml.safe_load((ROOT / "stages.yaml").read_text(encoding="utf-8"))
    stage = stages["stages"]["classify_ticket"]
    stages["stages"] = {"classify_ticket": stage}
    stage["models"] = ["openai/gpt-4o-mini", *EVIL_IDS]
    path, _, name = stage["contract"].partition(":")
    stage["contract"] = f"{ROOT / path}:{name}"
    stages_file = tmp_path / "stages.yaml"
    stages_file.write_text(yaml.safe_dump(stages), encoding="utf-8")
    return metadata, stages_file


def _assert_inert(view: Page) -> None:
    page = view.page
    assert "pwned" not in page.title()
    assert page.locator("img").count() == 0 and page.locator("b").count() == 0
    assert page.locator("script").count() == 3  # the pool, the data, the page's own
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 1280, "a long id widened the page beyond the window"


def test_hostile_ids_and_reasons_are_text_and_long_ids_wrap(
    browser: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Model ids and reason strings holding markup show as text; a 3,000-character id
    wraps; a cell opens with Enter and Escape closes it, giving the focus back."""
    metadata, stages = _evil_inputs(tmp_path)
    common = ["--metadata", str(metadata), "--models", str(ROOT / "models.yaml"),
              "--stages", str(stages)]
    _write(["audit", *common, "--html", str(tmp_path / "evil.html")], capsys)
    view = Page(browser, tmp_path / "evil.html")
    page = view.page
    _assert_inert(view)
    assert sorted(m for _, m in view.visible_cells()) == sorted(
        ["openai/gpt-4o-mini", *EVIL_IDS])
    page.fill("#f-search", "<img")
    assert view.visible_cells() == [("classify_ticket", EVIL_IDS[1])]
    page.fill("#f-search", "")
    page.focus("#f-search")
    page.keyboard.press("Tab")
    focused = page.evaluate("document.activeElement.dataset.model")
    assert focused in EVIL_IDS or focused == "openai/gpt-4o-mini"
    page.keyboard.press("Enter")
    dialog = page.locator("dialog#report")
    assert dialog.is_visible() and focused in dialog.text_content()
    page.keyboard.press("Escape")
    assert not dialog.is_visible()
    assert page.evaluate("document.activeElement.dataset.model") == focused
    for model_id in EVIL_IDS:
        page.click(f"button.cell[data-model={json.dumps(model_id)}]")
        assert model_id in dialog.text_content()
        assert page.evaluate("document.getElementById('report').scrollWidth") <= 1280
        page.keyboard.press("Escape")
    _assert_inert(view)
    view.close("audit-hostile-ids.png")

    # A lock whose reasons and evidence were edited to hold markup, diffed against its
    # original (a length limit changed too, so every pair is on the page).
    old_lock, new_lock = tmp_path / "old.lock.json", tmp_path / "new.lock.json"
    main(["lock", *common, "--output", str(old_lock)])
    lock = json.loads(old_lock.read_text(encoding="utf-8"))

    def taint(value: Any) -> None:  # every reason, wherever the lock keeps it
        if isinstance(value, dict):
            if isinstance(value.get("reason"), str):
                value["reason"] = EVIL_REASON + value["reason"]
            for item in value.values():
                taint(item)
        elif isinstance(value, list):
            for item in value:
                taint(item)

    taint(lock["stages"])
    taint(lock.get("schema_adjustments"))
    for record in (lock.get("evidence") or {}).values():
        record["text"] = EVIL_REASON
    for entry in lock["stages"]["classify_ticket"].values():
        if entry.get("status") == "ok":
            entry["request"]["max_tokens"] = 12345
    new_lock.write_text(json.dumps(lock), encoding="utf-8")
    assert json.dumps(EVIL_REASON)[1:-1] in json.dumps(expand_reports(lock)["stages"])
    assert main(["diff", str(old_lock), str(new_lock), "--html",
                 str(tmp_path / "diff.html")]) == 1, capsys.readouterr().err
    capsys.readouterr()
    view = Page(browser, tmp_path / "diff.html")
    page = view.page
    assert len(view.visible_cells()) == len(EVIL_IDS) + 1
    page.click('button.cell[data-model="openai/gpt-4o-mini"]')
    assert EVIL_REASON in page.locator("dialog#report section[aria-label=new]").text_content()
    page.keyboard.press("Escape")
    _assert_inert(view)
    view.close("diff-hostile-reasons.png")


def test_a_failed_pair_says_it_has_no_request(
    browser: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An audit cell whose compile failed (an unknown model) names the error, and says it
    has no cost and no route table because there was no request, not that a lock has no
    prices or that endpoint data is missing."""
    import yaml

    stages = yaml.safe_load((ROOT / "stages.yaml").read_text(encoding="utf-8"))
    stage = stages["stages"]["classify_ticket"]
    stages["stages"] = {"classify_ticket": {**stage, "models": ["nope/<i>missing</i>"]}}
    path, _, name = stage["contract"].partition(":")
    stages["stages"]["classify_ticket"]["contract"] = f"{ROOT / path}:{name}"
    stages_file = tmp_path / "stages.yaml"
    stages_file.write_text(yaml.safe_dump(stages), encoding="utf-8")
    _write(["audit", "--models", str(ROOT / "models.yaml"), "--stages", str(stages_file),
            "--html", str(tmp_path / "failed.html")], capsys)
    view = Page(browser, tmp_path / "failed.html")
    view.page.click("button.cell")
    text = view.page.locator("dialog#report").text_content()
    assert "UnknownModelError: unknown model 'nope/<i>missing</i>'" in text
    assert "none: no request" in text and "none: no request was compiled" in text
    assert "a lock has no prices" not in text and "no endpoint data" not in text
    view.page.keyboard.press("Escape")
    _assert_inert(view)
    view.close("audit-failed-pair.png")
