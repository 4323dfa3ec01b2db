"""Birds-to-Words (Forbes et al., EMNLP 2019): paragraphs comparing two bird photographs.

Raw release: ``birds-to-words-v1.0.tsv``, one row per annotation in eleven columns
(``img1ObservationURL img1ImgURL img1Species img1Selection img2… split annN description``);
rows of the same two photos are grouped into one pair whose ``captions`` are its paragraphs
in ``annN`` order (up to five). The category is ``img2Selection`` (how the second photo was
chosen: visual, sameSpecies, sameGenus, ...). Whether the TSV has a header row was not
verified, so both are read, and a first row of another width stops the build.

The release ships URLs, not photos: missing photos are fetched from iNaturalist into
``RAW/images/<photo id>.<ext>`` (resumable, rate-limited, retried; :mod:`idc_toolkit.building.fetch`)
with each photo's licence from iNaturalist's API, recorded in ``images/fetch_manifest.json``
and in the columns ``licence_1`` / ``licence_2``. A pair whose photo is gone is skipped and
named in the build report with the link's answer. ``fetch=false`` builds from the photos
already in ``images/`` (e.g. downloaded by other means) without touching the network.
"""

from __future__ import annotations

import csv
import json
import re
from dataclasses import dataclass
from functools import cached_property
from typing import Iterator, Optional

from datasets import Value

from idc_toolkit.building.builder import BuilderConfig, CardMeta, PairBuilder
from idc_toolkit.building.fetch import FetchJob, Fetcher, fetch_all, read_manifest
from idc_toolkit.building.report import BuildReport
from idc_toolkit.cards import citations
from idc_toolkit.checks import positive_float
from idc_toolkit.errors import RawFormatError
from idc_toolkit.schema import PairRecord

TSV = "birds-to-words-v1.0.tsv"
COLUMNS = ("img1ObservationURL", "img1ImgURL", "img1Species", "img1Selection", "img2ObservationURL", "img2ImgURL",
           "img2Species", "img2Selection", "split", "annN", "description")
SELECTIONS = ("visual", "sameSpecies", "sameGenus", "sameFamily", "sameOrder", "sameClass", "base")
RAW_LAYOUT = """\
RAW/
  birds-to-words-v1.0.tsv     one row per annotation: img1ObservationURL img1ImgURL img1Species img1Selection
                              img2ObservationURL img2ImgURL img2Species img2Selection split annN description
  images/<photo id>.<ext>     the photos (fetched from the URLs when missing, unless fetch=false)
"""


def photo_name(url: str) -> str:
    """``https://static.inaturalist.org/photos/123/medium.jpg`` -> ``123.jpg`` (the photo id names it)."""
    m = re.search(r"/photos/(\d+)/[^/]*?(\.\w+)?(?:\?.*)?$", url)
    if not m:
        raise ValueError(f"image URL {url!r} names no iNaturalist photo id")
    return m.group(1) + (m.group(2) or ".jpg").lower()


def observation_id(url: str) -> Optional[str]:
    m = re.search(r"/observations/(\d+)", url or "")
    return m.group(1) if m else None


@dataclass
class BirdsToWordsConfig(BuilderConfig):
    """``fetch``: fetch missing photos (else build from ``images/`` as it is); ``rate``: requests per
    second; ``retries``: per URL; ``timeout``: seconds one read may wait; ``deadline``: seconds one
    photo may take in all, retries included; ``max_mb``: the largest photo accepted, in MB (10⁶ bytes;
    a larger ``Content-Length`` is refused before reading); ``api``: iNaturalist's API, where each
    photo's licence is looked up (empty: no lookup; its answer is at most 1 MB); ``allow_private_hosts``:
    also fetch from loopback, private, link-local and other non-public addresses (refused by default,
    after every redirect too, as are URLs other than http(s) and answers that are not a JPEG, PNG,
    GIF or WebP image; a refused photo is named in the build report and tried again on the next build)."""

    fetch: bool = True
    rate: float = 1.0
    retries: int = 3
    timeout: float = 30.0
    deadline: float = 120.0
    max_mb: float = 50.0
    api: str = "https://api.inaturalist.org/v1"
    allow_private_hosts: bool = False


class BirdsToWords(PairBuilder):
    name = "birds_to_words"
    config_class = BirdsToWordsConfig
    categories = SELECTIONS
    required = (TSV,)
    extra_features = {"species_1": Value("string"), "species_2": Value("string"), "licence_1": Value("string"),
                      "licence_2": Value("string"), "observation_1": Value("string"), "observation_2": Value("string")}
    extra_docs = {"species_1": "species of the first (before) photo", "species_2": "species of the second photo",
                  "licence_1": "the first photo's licence on iNaturalist (empty: not known)",
                  "licence_2": "the second photo's licence", "observation_1": "iNaturalist observation of the first photo",
                  "observation_2": "iNaturalist observation of the second photo"}
    card = CardMeta(
        pretty_name="Birds-to-Words",
        description=("Pairs of iNaturalist bird photographs with paragraphs describing how the second bird differs "
                     "from the first (\"Animal 1 ... Animal 2 ...\"), up to five per pair."),
        license="cc-by-sa-4.0",
        license_note=("The annotations are CC BY-SA 4.0; every photograph keeps its own iNaturalist licence "
                      "(recorded per pair in `licence_1` / `licence_2`), often non-commercial."),
        homepage="https://github.com/google-research-datasets/birds-to-words",
        download="birds-to-words-v1.0.tsv from the repository; the photos from the URLs it lists (idc-build fetches them)",
        raw_layout=RAW_LAYOUT,
        citation=citations.BIRDS_TO_WORDS,
        size="≈3.3k in all (paper)",
        images_from="iNaturalist URLs, fetched by the builder",
        category_note="`img2Selection`: how the second photo was chosen for the first.",
    )

    # -- the TSV ----------------------------------------------------------------------------
    @cached_property
    def rows(self) -> list[dict[str, str]]:
        path = self.raw_dir / TSV
        with open(path, encoding="utf-8", newline="") as f:
            table = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
        if table and table[0][:1] == [COLUMNS[0]]:
            header, table = table[0], table[1:]
            missing = [c for c in COLUMNS if c not in header]
            if missing:
                raise RawFormatError(path, f"header lacks {missing}", "line 1")
            return [dict(zip(header, r)) for r in table if r]
        if table and len(table[0]) != len(COLUMNS):
            raise RawFormatError(path, f"{len(table[0])} columns, the release has {len(COLUMNS)} ({' '.join(COLUMNS)})", "line 1")
        return [dict(zip(COLUMNS, r)) for r in table if r]

    @cached_property
    def pairs(self) -> dict[tuple[str, str], list[tuple[int, dict[str, str]]]]:
        grouped: dict[tuple[str, str], list[tuple[int, dict[str, str]]]] = {}
        for i, row in enumerate(self.rows):
            grouped.setdefault((row.get("img1ImgURL", ""), row.get("img2ImgURL", "")), []).append((i, row))
        return grouped

    # -- the photos -------------------------------------------------------------------------
    def check_raw(self) -> None:
        super().check_raw()
        if self.config.fetch:
            self._fetch()

    def _fetch(self) -> None:
        c = self.config
        fetcher = Fetcher(rate=c.rate, retries=c.retries, timeout=positive_float("timeout", c.timeout),
                          deadline=positive_float("deadline", c.deadline),
                          max_bytes=int(positive_float("max_mb", c.max_mb) * 1e6), allow_private=c.allow_private_hosts)
        folder, jobs, seen = self.raw_dir / "images", [], set()
        for (url1, url2), rows in self.pairs.items():
            first = rows[0][1]
            for url, obs in ((url1, first.get("img1ObservationURL")), (url2, first.get("img2ObservationURL"))):
                try:
                    name = photo_name(url)
                except ValueError:
                    continue  # reported per pair by generate
                if url not in seen:
                    seen.add(url)
                    jobs.append(FetchJob(url, folder / name, self._licence_lookup(fetcher, obs, name)))
        self.fetched = fetch_all(jobs, folder, fetcher)

    def _licence_lookup(self, fetcher: Fetcher, observation_url: Optional[str], name: str):
        obs = observation_id(observation_url or "")
        if not self.config.api or obs is None:
            return None
        photo = name.split(".")[0]

        def lookup() -> Optional[str]:
            data = json.loads(fetcher.get(f"{self.config.api.rstrip('/')}/observations/{obs}"))
            photos = [p for r in data.get("results", []) for p in r.get("photos", [])]
            return next((p.get("license_code") for p in photos if str(p.get("id")) == photo), None)

        return lookup

    # -- the pairs --------------------------------------------------------------------------
    def generate(self, split: str, report: BuildReport) -> Iterator[PairRecord]:
        tsv = str(self.raw_dir / TSV)
        folder = self.raw_dir / "images"
        manifest = read_manifest(folder)
        for (url1, url2), rows in self.pairs.items():
            first = rows[0][1]
            if self.split_map.get(first.get("split", "")) != split:
                continue
            lines = ",".join(str(i + 1) for i, _ in rows)
            record = f"rows {lines}"
            try:
                names = photo_name(url1), photo_name(url2)
            except ValueError as exc:
                report.skip(split, tsv, record, str(exc))
                continue
            gone = [(u, manifest.get(u, {})) for u, n in ((url1, names[0]), (url2, names[1])) if not (folder / n).is_file()]
            if gone:
                url, entry = gone[0]
                why = entry.get("dead") or entry.get("error") or "not fetched (fetch=false)"
                report.skip(split, tsv, record, f"photo {url}: {why}")
                continue
            if first.get("img2Selection") not in SELECTIONS:
                report.skip(split, tsv, record, f"img2Selection {first.get('img2Selection')!r} is not one of {SELECTIONS}")
                continue
            ordered = sorted(rows, key=lambda r: str(r[1].get("annN", "")))
            yield PairRecord(
                pair_id=f"{names[0].split('.')[0]}_{names[1].split('.')[0]}",
                before=folder / names[0], after=folder / names[1],
                captions=[r.get("description", "") for _, r in ordered], category=first["img2Selection"],
                extra={"species_1": first.get("img1Species"), "species_2": first.get("img2Species"),
                       "licence_1": manifest.get(url1, {}).get("licence"), "licence_2": manifest.get(url2, {}).get("licence"),
                       "observation_1": first.get("img1ObservationURL"), "observation_2": first.get("img2ObservationURL")},
                source=f"{tsv}#{record}")

    def summarize(self, report: BuildReport) -> None:
        outcome = getattr(self, "fetched", None)
        if outcome is not None:
            report.count("photos_fetched", outcome.fetched)
            report.count("photos_dead", len(outcome.dead))
            report.count("photos_unreachable", len(outcome.failed))
            for url, why in {**outcome.dead, **outcome.failed}.items():
                report.note(None, url, None, f"photo not fetched: {why}" + (" (retried on the next build)" if url in outcome.failed else ""))
