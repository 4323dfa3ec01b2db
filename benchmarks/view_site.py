"""idc-view on 10,000 pairs: writing the site (time, disk), then in headless chromium the time
to first render and to apply a filter, a text search and a sort.

The pairs are the demo generator's CLEVR-Change-format scenes at 160x120 (``--n-per-type 1000``
gives 5,000 scenes = 10,000 pairs over train/validation/test), built with the clevr_change
builder, with change masks; one evaluation of the test split (its first reference as the
caption). Browser figures need Debian's chromium + chromium-driver and selenium.

    python benchmarks/view_site.py [--n-per-type 1000] [--workdir /tmp/idc_view_bench]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path


def disk_usage(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def browser_timings(index: Path) -> dict[str, float]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.support.ui import WebDriverWait

    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync", "--window-size=1400,1000"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    try:
        driver.get(index.resolve().as_uri())
        WebDriverWait(driver, 120).until(lambda d: d.execute_script("return window.IDC_FIRST_RENDER_MS !== undefined"))
        first = driver.execute_script("return window.IDC_FIRST_RENDER_MS")
        timed = """const t0 = performance.now(); const s = document.getElementById(arguments[0]); s.value = arguments[1];
                   s.dispatchEvent(new Event(arguments[2])); return performance.now() - t0;"""
        filter_ms = driver.execute_script(timed, "f-category", "move", "change")
        search_ms = driver.execute_script(timed, "f-text", "cube", "input")
        driver.execute_script(timed, "f-text", "", "input")
        driver.execute_script(timed, "f-category", "", "change")
        sort_ms = driver.execute_script(timed, "s-metric", "CIDEr", "change")
        shown = driver.execute_script("return document.querySelectorAll('article.pair').length")
        return {"first_render_ms": first, "filter_ms": filter_ms, "search_ms": search_ms, "sort_ms": sort_ms, "cards": shown}
    finally:
        driver.quit()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n-per-type", type=int, default=1000)
    ap.add_argument("--workdir", default="/tmp/idc_view_bench")
    args = ap.parse_args()
    from idc_toolkit.builders import make_builder
    from idc_toolkit.building.pipeline import build_dataset
    from idc_toolkit.demo.generator import generate_demo_release
    from idc_toolkit.evaluators.predictions import load_references_dataset
    from idc_toolkit.evaluators.scoring import evaluate
    from idc_toolkit.masks.column import add_change_masks
    from idc_toolkit.viewer.site import write_site

    work = Path(args.workdir)
    ds = work / "masks"
    if not (ds / "README.md").is_file():
        raw = generate_demo_release(work / "raw", n_per_type=args.n_per_type, size=(160, 120), seed=0)
        build_dataset(make_builder("clevr_change", raw), work / "built", progress=False)
        add_change_masks(work / "built", ds, progress=False)
    refs = load_references_dataset(str(ds), "test")
    evaluation = work / "eval"
    evaluate({p: c[0] for p, c in refs.captions.items()}, dataset=str(ds), split="test", out=evaluation,
             metrics=["BLEU", "ROUGE_L", "CIDEr"], name="first reference")
    site = work / "site"
    t0 = time.perf_counter()  # --overwrite removes only what an earlier site of ours wrote: every run writes it afresh
    result = write_site(site, dataset=str(ds), splits=["train", "validation", "test"], evaluations=[evaluation], progress=False,
                        overwrite=True)
    seconds = time.perf_counter() - t0
    size = disk_usage(site)
    pairs_js = (site / "assets" / "pairs.js").stat().st_size
    print(f"pairs: {result.n_pairs}  write_site: {seconds:.1f} s ({result.n_pairs / seconds:.0f} pairs/s, one process)")
    print(f"disk: {size / 2**20:.1f} MiB in all ({size / result.n_pairs / 1024:.1f} KiB per pair); assets/pairs.js {pairs_js / 2**20:.2f} MiB")
    try:
        timings = browser_timings(site / "index.html")
    except Exception as exc:  # no browser here
        print(f"browser: not measured ({type(exc).__name__}: {str(exc).splitlines()[0]})")
        return
    print(f"browser (headless chromium, file://): first render {timings['first_render_ms']:.0f} ms after navigation start; "
          f"filter by category {timings['filter_ms']:.0f} ms; text search {timings['search_ms']:.0f} ms; "
          f"sort by CIDEr {timings['sort_ms']:.0f} ms; {timings['cards']} cards on a page")


if __name__ == "__main__":
    main()
