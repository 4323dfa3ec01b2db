"""``idc-view``: the site in a real headless browser (Debian's chromium + chromedriver through
selenium), and ``idc-view figure``. The ground truth: the demo generator's own change masks,
and the evaluations' per_pair.csv files (the page must sort by exactly those numbers)."""

from __future__ import annotations

import functools
import http.server
import io
import json
import shutil
import threading
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from idc_toolkit.cli.view import main as view_main
from idc_toolkit.errors import IDCError

from conftest import csv_rows, image_size

pytestmark = pytest.mark.java

XSS = "<img src=x onerror=alert(1)>"
CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"


@pytest.fixture(scope="module")
def site(davir_dataset, tmp_path_factory):
    """The demo dataset with masks and entities, and two evaluations of its test split: A says
    each pair's first reference, B one fixed sentence (and, on one pair, an XSS attempt)."""
    from idc_toolkit.evaluators.predictions import load_references_dataset
    from idc_toolkit.evaluators.scoring import evaluate

    root = tmp_path_factory.mktemp("view")
    refs = load_references_dataset(str(davir_dataset), "test")
    ids = list(refs.captions)
    a = {pid: caps[0] for pid, caps in refs.captions.items()}
    b = {pid: "the small sphere changed its colour" for pid in ids}
    b[ids[1]] = XSS
    # RCC's viewpoint-IoU file for A's evaluation: its difficulty groups reach the page through per_pair.csv
    change = [pid for pid in ids if not pid.endswith("_n")]
    iou = root / "change_captions_by_IOU.json"
    iou.write_text(json.dumps({str(int(pid)): 0.9 - 0.1 * k for k, pid in enumerate(change)}))
    for name, preds in (("A", a), ("B", b)):
        evaluate(preds, dataset=str(davir_dataset), split="test", out=root / f"eval_{name}", metrics=["BLEU", "ROUGE_L", "CIDEr"],
                 name=f"system {name}", bootstrap=20, iou_file=str(iou) if name == "A" else None)
    out = root / "site"
    assert view_main(["--dataset", str(davir_dataset), "--eval", str(root / "eval_A"), "--eval", str(root / "eval_B"),
                      "--out", str(out), "--no-progress"]) == 0
    return {"root": root, "out": out, "dataset": davir_dataset, "ids": ids, "categories": refs.categories}


def _per_pair(folder: Path) -> dict[str, dict[str, str]]:
    return {r["pair_id"]: r for r in csv_rows(folder / "per_pair.csv")}


@pytest.fixture(scope="module")
def browser():
    if not (Path(CHROMIUM).is_file() and Path(CHROMEDRIVER).is_file()):
        pytest.skip(f"no headless browser: {CHROMIUM} and {CHROMEDRIVER} (Debian: apt-get install chromium chromium-driver)")
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (the test extra)")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync", "--window-size=1400,1000",
                 "--force-device-scale-factor=1"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    yield driver
    driver.quit()


def _open(browser, url: str):
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get("about:blank")
    browser.get(url)
    WebDriverWait(browser, 20).until(lambda d: d.execute_script("return document.body.dataset.rendered || ''"))
    return browser


def _cards(browser) -> list[dict[str, str]]:
    return browser.execute_script(
        "return Array.from(document.querySelectorAll('article.pair')).map(a => ({key: a.dataset.key,"
        " id: a.querySelector('h3 a').textContent, category: (a.querySelector('.category') || {}).textContent || ''}))")


def _select(browser, element_id: str, value: str) -> None:
    browser.execute_script("const s = document.getElementById(arguments[0]); s.value = arguments[1];"
                           "s.dispatchEvent(new Event('change'));", element_id, value)


def test_page_loads_offline_without_errors_and_shows_every_pair(site, browser):
    _open(browser, site["out"].joinpath("index.html").resolve().as_uri())
    errors = [e for e in browser.get_log("browser") if e["level"] in ("SEVERE", "ERROR")]
    assert errors == []
    assert browser.find_element("id", "status").text.startswith(f"Showing 1-{len(site['ids'])} of {len(site['ids'])} pair(s)")
    assert browser.execute_script("return performance.getEntriesByType('resource').filter(r => !r.name.startsWith('file:')).length") == 0
    tables = browser.find_element("id", "tables").text
    assert "system A [test] (protocol rcc)" in tables and "system B" in tables


def test_filter_by_category_shows_exactly_that_category(site, browser):
    _open(browser, site["out"].joinpath("index.html").resolve().as_uri())
    _select(browser, "f-category", "move")
    shown = _cards(browser)
    expected = [pid for pid in site["ids"] if site["categories"][pid] == "move"]
    assert [c["id"] for c in shown] == expected and {c["category"] for c in shown} == {"move"}


def test_filter_by_a_group_of_the_evaluation(site, browser):
    rows = _per_pair(site["root"] / "eval_A")
    hardest = [pid for pid, row in rows.items() if "iou_hardest_25" in row["groups"].split(";")]
    change = [pid for pid in site["ids"] if not pid.endswith("_n")]
    assert hardest == [change[-1]]  # the lowest IoU (0.9 - 0.1 k): RCC's hardest quarter of 5 change pairs is 1
    _open(browser, site["out"].joinpath("index.html").resolve().as_uri())
    _select(browser, "f-group", "iou_hardest_25")
    assert [c["id"] for c in _cards(browser)] == hardest


def test_sorting_by_the_cider_difference_puts_the_largest_first(site, browser):
    a, b = _per_pair(site["root"] / "eval_A"), _per_pair(site["root"] / "eval_B")
    diff = {pid: float(a[pid]["CIDEr"]) - float(b[pid]["CIDEr"]) for pid in a}
    _open(browser, site["out"].joinpath("index.html").resolve().as_uri())
    _select(browser, "s-a", "0")
    _select(browser, "s-b", "1")
    _select(browser, "s-metric", "CIDEr")
    order = [c["id"] for c in _cards(browser)]
    assert order[0] == max(diff, key=lambda pid: (diff[pid], -site["ids"].index(pid)))
    assert [diff[pid] for pid in order] == sorted(diff.values(), reverse=True)
    _select(browser, "s-order", "asc")
    assert _cards(browser)[0]["id"] == min(diff, key=lambda pid: (diff[pid], site["ids"].index(pid)))


def test_a_deep_link_opens_that_pair(site, browser):
    pid = site["ids"][3]
    _open(browser, site["out"].joinpath("index.html").resolve().as_uri() + f"#pair=test/{pid}")
    assert [c["id"] for c in _cards(browser)] == [pid]
    _open(browser, site["out"].joinpath("index.html").resolve().as_uri() + f"#pair={pid}")
    assert [c["id"] for c in _cards(browser)] == [pid]


def test_images_render_and_the_mask_outline_sits_on_the_ground_truth_change(site, browser, demo_raw):
    from idc_toolkit.viewer.images import MASK_COLOUR

    pid = next(p for p in site["ids"] if site["categories"][p] == "add")
    _open(browser, site["out"].joinpath("index.html").resolve().as_uri() + f"#pair=test/{pid}")
    browser.execute_script("return Promise.all(Array.from(document.images).map(i => i.decode()))")
    natural = browser.execute_script("return Array.from(document.images).map(i => i.naturalWidth)")
    assert len(natural) >= 3 and all(w > 0 for w in natural)
    diff = browser.find_element("css selector", "article.pair img[alt^='difference']")
    shot = np.asarray(Image.open(io.BytesIO(diff.screenshot_as_png)).convert("RGB")).astype(int)
    assert shot.std() > 5  # not blank
    outline = (np.abs(shot - np.array(MASK_COLOUR)).sum(axis=2) < 60)
    assert outline.sum() > 10
    truth = np.asarray(Image.open(demo_raw / "masks" / f"{pid}.png").convert("L").resize(shot.shape[1::-1], Image.NEAREST)) > 127
    edge = truth & ~_erode(truth)  # the ground truth's boundary
    near_outline = _dilate(outline, 2)
    assert (edge & near_outline).sum() / edge.sum() > 0.8  # the change itself is outlined


def _dilate(mask: np.ndarray, r: int) -> np.ndarray:
    out = mask.copy()
    for dy in range(-r, r + 1):
        for dx in range(-r, r + 1):
            out |= np.roll(np.roll(mask, dy, axis=0), dx, axis=1)
    return out


def _erode(mask: np.ndarray) -> np.ndarray:
    return ~_dilate(~mask, 1)


def test_a_caption_with_markup_shows_as_text_and_runs_nothing(site, browser):
    from selenium.common.exceptions import NoAlertPresentException

    pid = site["ids"][1]
    _open(browser, site["out"].joinpath("index.html").resolve().as_uri() + f"#pair=test/{pid}")
    captions = browser.execute_script("return Array.from(document.querySelectorAll('td.caption')).map(t => t.textContent)")
    assert XSS in captions
    assert browser.execute_script("return document.querySelectorAll('img[src=\"x\"]').length") == 0
    with pytest.raises(NoAlertPresentException):
        browser.switch_to.alert.text


def test_the_site_also_works_through_a_local_http_server(site, browser):
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    handler = functools.partial(Quiet, directory=str(site["out"]))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        _open(browser, f"http://127.0.0.1:{server.server_address[1]}/index.html")
        assert len(_cards(browser)) == len(site["ids"])
        assert [e for e in browser.get_log("browser") if e["level"] == "SEVERE"] == []
    finally:
        # leave the page before the server goes: its lazy images would otherwise ask a closed port and
        # log "connection refused" into the shared browser's log, read by the next test
        browser.get("about:blank")
        browser.get_log("browser")
        server.shutdown()
        server.server_close()


def test_site_folder_rule(site, tmp_path, capsys):
    out = site["out"]
    args = ["--dataset", str(site["dataset"]), "--eval", str(site["root"] / "eval_A"), "--eval", str(site["root"] / "eval_B"),
            "--out", str(out), "--no-progress"]
    assert view_main(args) == 0 and "already holds this site" in capsys.readouterr().out
    assert view_main([*args, "--image-size", "100"]) == 1
    assert "holds a view run with other settings (image_size: 320 -> 100)" in capsys.readouterr().err
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("mine")
    assert view_main([*args[:-3], "--out", str(mine), "--overwrite", "--no-progress"]) == 1 and (mine / "notes.txt").is_file()
    # an evaluation of other pairs is refused, naming them
    other = tmp_path / "other"
    shutil.copytree(site["root"] / "eval_A", other)
    text = (other / "per_pair.csv").read_text().replace(site["ids"][0] + ",", "no_such_pair,", 1)
    (other / "per_pair.csv").write_text(text)
    with pytest.raises(IDCError, match="1 pair id.*not in split 'test'.*no_such_pair"):
        from idc_toolkit.viewer.site import write_site

        write_site(tmp_path / "s2", dataset=str(site["dataset"]), evaluations=[other], progress=False)


def test_figure_pdf_png_and_latex(site, tmp_path):
    pairs = site["ids"][:3]
    out = tmp_path / "fig"
    assert view_main(["figure", "--pairs", ",".join(pairs), "--dataset", str(site["dataset"]), "--eval",
                      str(site["root"] / "eval_A"), "--eval", str(site["root"] / "eval_B"), "--out", str(out),
                      "--width", "6.5", "--dpi", "100"]) == 0
    pdf = (out / "figure.pdf").read_bytes()
    import re

    assert len(re.findall(rb"/Type\s*/Page\b", pdf)) == 1  # one page
    assert len(re.findall(rb"/Subtype\s*/Image", pdf)) == 2 * len(pairs)  # before + after per pair
    assert image_size(out / "figure.png")[0] == 650
    tex = (out / "figure.tex").read_text()
    assert "\\includegraphics[width=\\textwidth]{figure.pdf}" in tex and pairs[0].replace("_", "\\_") in tex
    assert view_main(["figure", "--pairs", "nope", "--dataset", str(site["dataset"]), "--out", str(tmp_path / "f2")]) == 1


def test_figure_without_pairs_shows_the_first_pair_of_each_category(site, tmp_path):
    from datasets import load_dataset

    from idc_toolkit.viewer.figure import write_figure

    test = load_dataset(str(site["dataset"]), split="test")
    names = test.features["category"].names
    expected = {}
    for row in test:  # an independent reading: the first id per category, in the label order
        expected.setdefault(row["category"], row["pair_id"])
    result = write_figure(tmp_path / "fig", dataset=str(site["dataset"]), evaluations=[site["root"] / "eval_A"], dpi=50)
    assert list(result.pairs) == [expected[k] for k in sorted(expected)][:6] and len(result.pairs) == min(6, len(names))


def test_evaluations_alone_without_a_dataset(site, tmp_path):
    from idc_toolkit.viewer.site import write_site

    result = write_site(tmp_path / "s", evaluations=[site["root"] / "eval_A"], progress=False)
    pairs = json.loads((tmp_path / "s" / "assets" / "pairs.js").read_text().split("=", 1)[1].rstrip().rstrip(";"))
    assert result.n_pairs == len(site["ids"]) and pairs[0]["img"] is None and pairs[0]["refs"]


def test_a_leaderboard_heads_the_page_and_judge_columns_show(site, browser, tmp_path):
    """``idc-view --leaderboard``: the table ``idc-eval leaderboard`` wrote, as it wrote it (mean
    (sd) x100, protocol, sources, caveats), on a page of its own or above the evaluations'."""
    from idc_toolkit.evaluators.leaderboard import leaderboard

    evals = [site["root"] / f"eval_{n}" for n in "AB"]
    files = []
    for k, ev in enumerate(evals):
        per_pair = _per_pair(ev)
        files.append(tmp_path / f"{k}.json")
        files[-1].write_text(json.dumps({pid: r["prediction"] for pid, r in per_pair.items()}))
    board = leaderboard([str(f) for f in files], dataset=str(site["dataset"]), names=["A", "B"], metrics=["BLEU", "CIDEr"],
                        out=str(tmp_path / "board"))
    assert view_main(["--leaderboard", str(tmp_path / "board"), "--eval", str(evals[0]), "--out", str(tmp_path / "s"),
                      "--no-progress"]) == 0
    _open(browser, (tmp_path / "s" / "index.html").resolve().as_uri())
    assert [e for e in browser.get_log("browser") if e["level"] in ("SEVERE", "ERROR")] == []
    rows = browser.execute_script("return Array.from(document.querySelectorAll('table.leaderboard tr'))"
                                  ".map(r => Array.from(r.children).map(c => c.textContent))")
    assert rows[0][:5] == ["system", "runs", "n", "B4", "C"]
    assert rows[1][:5] == ["A", "1", str(board["rows"][0]["n"]), f"{100 * board['rows'][0]['mean']['Bleu_4']:.1f}",
                           f"{100 * board['rows'][0]['mean']['CIDEr']:.1f}"]
    assert rows[2][0] == "B" and "sha256" in rows[2][6]
    assert view_main(["--leaderboard", str(tmp_path / "board"), "--out", str(tmp_path / "alone"), "--no-progress"]) == 0


def test_view_and_figure_take_their_options_as_one_dataclass_or_field_by_field(site, tmp_path):
    """``write_site`` / ``write_figure`` have the toolkit's call shape ``fn(out, args=None, **fields)``;
    the command line is derived from the same dataclasses (defaults, checks, repeatable flags)."""
    from idc_toolkit.cli.view import make_figure_parser, make_parser
    from idc_toolkit.options import from_namespace
    from idc_toolkit.viewer.args import FigureArgs, ViewArgs
    from idc_toolkit.viewer.figure import write_figure
    from idc_toolkit.viewer.site import write_site

    evals = [str(site["root"] / "eval_A"), str(site["root"] / "eval_B")]
    namespace = make_parser().parse_args(["--eval", evals[0], "--eval", evals[1], "--split", "test", "--out", "o"])
    assert from_namespace(ViewArgs, namespace) == ViewArgs(evaluations=evals, splits=["test"], out="o")
    figure = make_figure_parser().parse_args(["--dataset", "d", "--out", "f", "--pairs", " a, b ,,c", "--no-mask"])
    assert from_namespace(FigureArgs, figure) == FigureArgs(dataset="d", out="f", pairs=["a", "b", "c"], mask=False)
    for bad, message in (({"image_size": 0}, "--image-size"), ({"limit": -1}, "--limit")):
        with pytest.raises(IDCError, match=message):
            ViewArgs(out="o", **bad)
    with pytest.raises(IDCError, match="--dpi 5000: must be at most 1200"):
        FigureArgs(dataset="d", out="f", dpi=5000)

    args = ViewArgs(out=tmp_path / "ignored", evaluations=evals[:1], progress=False)
    by_object = write_site(tmp_path / "a", args)
    by_fields = write_site(tmp_path / "b", evaluations=evals[:1], progress=False)
    assert by_object.out_dir == tmp_path / "a" and not (tmp_path / "ignored").exists()  # ``out`` given replaces args.out
    for name in ("site.js", "pairs.js"):
        assert (tmp_path / "a" / "assets" / name).read_bytes() == (tmp_path / "b" / "assets" / name).read_bytes()
    assert write_site(args=args, out=tmp_path / "a").already_written and by_fields.n_pairs == by_object.n_pairs
    with pytest.raises(IDCError, match="name the site's folder"):
        write_site(args=ViewArgs(evaluations=evals[:1]))
    result = write_figure(args=FigureArgs(dataset=str(site["dataset"]), out=tmp_path / "fig", dpi=40, width=4),
                          pairs=site["ids"][:1])
    assert result.pairs == tuple(site["ids"][:1]) and result.png.is_file()
