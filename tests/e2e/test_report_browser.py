"""The HTML report in a real headless Chromium: it loads from a file, offline, and draws."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from browser import chromium
from estimate_project import build

if TYPE_CHECKING:
    from cli_helpers import Cli


async def test_the_demo_report_renders_every_chart(demo_db: Path, tmp_path: Path, cli: Cli) -> None:
    out = tmp_path / "report.html"
    code, _, err = cli("report", demo_db, "--answers", "-o", out)
    assert code == 0, err
    async with chromium(1200, 900) as browser:
        tab = await browser.tab()
        # Every request the page makes is recorded: a file report must make none but itself.
        await tab.send("Network.enable")
        assert await tab.goto(out.as_uri()) in (0, 200)
        requests = [
            e["params"]["request"]["url"]
            for e in tab.events
            if e.get("method") == "Network.requestWillBeSent"
        ]
        assert requests == [out.as_uri()], requests
        text = await tab.text()
        assert "Summary" in text and "tie for the best score" in text
        sizes = await tab.evaluate(
            "[...document.querySelectorAll('svg')].map(s => {"
            " const r = s.getBoundingClientRect(); return [r.width, r.height]; })"
        )
        assert len(sizes) >= 40
        assert all(width > 100 and height > 50 for width, height in sizes), sizes
        drawn = await tab.evaluate(
            "[...document.querySelectorAll('svg')].every(s => s.querySelectorAll("
            "'circle, rect, polygon, line').length > 3)"
        )
        assert drawn is True
        height = await tab.evaluate("document.body.scrollHeight")
        assert height > 3000
        png = await tab.screenshot("report-demo")
        # A blank page compresses to a few kilobytes; charts and text do not.
        assert len(png) > 50_000


async def test_on_a_phone_the_report_fits_its_width(
    demo_db: Path, tmp_path: Path, cli: Cli
) -> None:
    out = tmp_path / "report.html"
    code, _, err = cli("report", demo_db, "-o", out)
    assert code == 0, err
    async with chromium(390, 844) as browser:
        tab = await browser.tab()
        await tab.send(
            "Emulation.setDeviceMetricsOverride",
            width=390,
            height=844,
            deviceScaleFactor=1,
            mobile=True,
        )
        assert await tab.goto(out.as_uri()) in (0, 200)
        # Charts shrink to the screen; a wide table scrolls in its own box.
        assert await tab.evaluate("document.documentElement.scrollWidth") == 390
        widest = await tab.evaluate(
            "Math.max(...[...document.querySelectorAll('svg')]"
            ".map(s => s.getBoundingClientRect().right))"
        )
        assert widest <= 390


async def test_the_judge_corrected_section_draws_its_forest_plots(tmp_path: Path, cli: Cli) -> None:
    built = build(tmp_path)
    out = tmp_path / "report.html"
    code, _, err = cli("report", built.db, "--metrics", "ndcg@10", "--baseline", "bm25", "-o", out)
    assert code == 0, err
    async with chromium(1200, 900) as browser:
        tab = await browser.tab()
        assert await tab.goto(out.as_uri()) in (0, 200)
        # The section's two charts: each run's three estimates, then each difference's.
        charts = await tab.evaluate(
            "(() => { const h = [...document.querySelectorAll('h2')]"
            ".find(e => e.textContent === 'Judge-corrected');"
            " let box = h.nextElementSibling;"
            " while (!box.classList.contains('charts')) box = box.nextElementSibling;"
            " return [...box.querySelectorAll('svg')].map(s => {"
            " const r = s.getBoundingClientRect();"
            " return [r.width, r.height, s.querySelectorAll('title').length - 1]; }); })()"
        )
        # Three runs times three estimates, then two differences times three; every
        # point has its tooltip and the chart its size on the page.
        assert [points for _, _, points in charts] == [9, 6], charts
        assert all(width > 300 and height > 100 for width, height, _ in charts), charts
