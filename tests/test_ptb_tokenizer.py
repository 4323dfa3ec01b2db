"""idc_toolkit.metrics.ptb against the jar pycocoevalcap runs: the same tokens, line for line.

The jar runs as tokenizer.py runs it (pycocoevalcap's jar, ``-preserveLines -lowerCase``, its
punctuation filter). Compared: every caption of the real annotation files and published
predictions in ../shared, the demo's captions, the hand-written hard cases
(tests/data/ptb_hard_cases.txt) as one file, before each opener line and each alone in a file,
every BMP character in the contexts the module's character tables come from, and 100,000 lines
from a seeded generator that splices the hard cases into captions. Each comparison is of the
jar's whole output (tokens before the filter, line breaks included) and of the filtered tokens;
a rule changed on purpose is caught.
"""

from __future__ import annotations

import functools
import json
import random
import re
import subprocess
import tempfile
from itertools import zip_longest
from pathlib import Path

import pytest

from idc_toolkit.metrics import ptb, tokenizer

pytestmark = pytest.mark.java

HARD_CASES = Path(__file__).parent / "data" / "ptb_hard_cases.txt"
SHARED = Path(__file__).resolve().parents[1].parent / "shared"
#: lines whose start decides how the tokenizer reads the end of the line before
OPENERS = ["The car", "the car", "I", "It is", "2 cars", "<b>", "", " ", "Mr. Smith", "SO", "etc", ".", "'s"]
SEPARATORS = "\r\n\x0b\x0c\x85\u2028\u2029"


# --- the jar, run as tokenizer.py runs it
def _jar() -> list[str]:
    return [tokenizer.java_executable(), tokenizer.C1_ONLY, "-cp",
            str(tokenizer.pycocoevalcap_dir() / "tokenizer" / "stanford-corenlp-3.4.1.jar"),
            "edu.stanford.nlp.process.PTBTokenizer", *tokenizer.PTB_ARGS]


def jar_output(lines: list[str]) -> list[str]:
    """The jar's output lines for one file of ``lines`` (tokenizer._run_tokenizer's file and command)."""
    with tempfile.NamedTemporaryFile(prefix="idc_ptb_test_", suffix=".txt") as fh:
        fh.write("\n".join(lines).encode())
        fh.flush()
        proc = subprocess.run([*_jar(), fh.name], capture_output=True, timeout=600, check=True)
    return proc.stdout.decode().split("\n")


def jar_files(files: list[list[str]]) -> list[list[str]]:
    """Each list of lines as a file of its own, in one JVM (``-ioFileList``): its output lines."""
    with tempfile.TemporaryDirectory(prefix="idc_ptb_test_") as tmp:
        listing = []
        for k, lines in enumerate(files):
            Path(tmp, f"{k}.txt").write_bytes("\n".join(lines).encode())
            listing.append(f"{tmp}/{k}.txt {tmp}/{k}.out")
        Path(tmp, "list").write_text("\n".join(listing))
        subprocess.run([*_jar(), "-ioFileList", f"{tmp}/list"], capture_output=True, timeout=600, check=True)
        return [Path(tmp, f"{k}.out").read_bytes().decode().split("\n") for k in range(len(files))]


def filtered(output: list[str], n: int) -> list[str]:
    """tokenizer._run_tokenizer's filter over the first ``n`` output lines."""
    punct = set(tokenizer._punctuations())
    return [" ".join(w for w in line.rstrip().split(" ") if w not in punct) for line in output[:n]]


def differences(lines: list[str], jar: list[str]) -> list[tuple]:
    """(line, jar, ptb) wherever the module's output or filtered tokens differ from the jar's."""
    raw = ptb.jar_output("\n".join(lines)).split("\n")
    out = [(k, a, b) for k, (a, b) in enumerate(zip_longest(jar, raw)) if a != b]
    ours = ptb.tokenize_lines(lines)
    out += [(k, a, b) for k, (a, b) in enumerate(zip_longest(filtered(jar, len(lines)), ours)) if a != b]
    return out


def assert_same(lines: list[str], jar: list[str], what: str) -> None:
    diffs = differences(lines, jar)
    shown = "\n".join(f"  line {k}: {lines[k] if k < len(lines) else ''!r}\n    jar {a!r}\n    ptb {b!r}"
                      for k, a, b in diffs[:10])
    assert not diffs, f"{what}: {len(diffs)} differences in {len(lines)} lines\n{shown}"
    print(f"{what}: {len(lines)} lines, {sum(map(len, lines))} characters, 0 differences")


# --- the corpora
def _unescape(line: str) -> str:
    return re.sub(r"\\(\\|t|x[0-9a-f]{2}|u[0-9a-f]{4}|U[0-9a-f]{8})",
                  lambda m: {"\\": "\\", "t": "\t"}.get(m.group(1)) or chr(int(m.group(1)[1:], 16)), line)


def hard_cases() -> dict[str, list[str]]:
    kinds: dict[str, list[str]] = {}
    kind = None
    for line in HARD_CASES.read_text(encoding="utf-8").split("\n"):
        if line.startswith("## "):
            kind = kinds.setdefault(line[3:].strip(), [])
        elif line and not line.startswith("# ") and kind is not None:
            kind.append(_unescape(line))
    return kinds


def _strings(obj, out: list[str]) -> None:
    """Every string of a JSON document, and each list of strings joined (tokenized captions)."""
    if isinstance(obj, str):
        out.append(obj)
    elif isinstance(obj, list):
        for x in obj:
            _strings(x, out)
        if obj and all(isinstance(x, str) for x in obj) and len(obj) <= 100:
            out.append(" ".join(obj))
    elif isinstance(obj, dict):
        for v in obj.values():
            _strings(v, out)


#: ids and file names: no captions
_NOT_CAPTION = re.compile(r"[\w.\-]+\.(png|jpe?g|tif|gif)|[\d\s]*")


def real_captions() -> list[str]:
    """Every caption (and caption-like string) of ../shared's annotation and prediction files,
    file by file, in file order; line separators inside one become spaces, as the scorer does."""
    out: list[str] = []
    for sub in ("real_annotations", "paper_predictions"):
        for path in sorted((SHARED / sub).rglob("*")):
            found: list[str] = []
            if path.suffix == ".json":
                _strings(json.loads(path.read_text(encoding="utf-8")), found)
            elif path.suffix == ".txt":
                text = path.read_text(encoding="utf-8")
                if text.startswith("[["):  # LEVIR-MCI's tokenized captions: JSON lists of tokens
                    _strings([t[1:-1] for t in json.loads(text)], found)
                else:
                    found = text.splitlines()
            out.extend(s for s in found if not _NOT_CAPTION.fullmatch(s))
    return [re.sub("[" + SEPARATORS + "]", " ", s) for s in out]


def demo_captions() -> list[str]:
    from idc_toolkit.demo.captions import synthetic_caption_set

    hyps, refs, _ = synthetic_caption_set(2000, n_refs=5, seed=7)
    return [c for k in refs for c in refs[k]] + list(hyps.values())


def generate(n: int, seed: int, base: list[str], kinds: dict[str, list[str]]) -> list[str]:
    """``n`` lines: captions with hard cases spliced in (glued to a word or not, at a line's end
    where the next line decides), case changes, random characters from every plane, blanks, empty
    and blank lines, short strings over the characters the rules turn on, lines of plain ASCII
    words (the module's fast path and its near misses), and a line separator in 1 line of 100."""
    rng = random.Random(seed)
    frags = [f for fs in kinds.values() for f in fs]
    soup = list("aAeEinNtTsSdDlLoOyYcCpPwWhHmMxXrRuUzZ0123456789.'-/@&;:, <>\"()#$\\*_=^~`!?[]{}%+|") + frags
    plain = ("the a an car is gone no longer there person man white blue red small left right of in on near moved "
             "I A a x no No fig etc Mr vs co pty Inc Jan al est pp The There It cannot gonna wanna 1 2 12 345 2nd x1").split()

    def char():
        r = rng.random()
        cp = rng.randrange(0x20, 0x250) if r < 0.5 else rng.randrange(0x250, 0x3100) if r < 0.8 else \
            rng.randrange(0x3100, 0x10000) if r < 0.95 else rng.randrange(0x10000, 0x30000)
        return "?" if 0xD800 <= cp <= 0xDFFF else chr(cp)

    out = []
    for _ in range(n):
        r = rng.random()
        if r < 0.03:
            line = rng.choice(["", " ", "\t", "\u00a0", "  ", "\u3000", "\u200b", "\ufeff", "\x00", "\x01"])
        elif r < 0.06:
            line = rng.choice(frags)
        elif r < 0.22:
            line = "".join(rng.choice(soup) for _ in range(rng.randrange(1, 25)))
        elif r < 0.42:
            words = [rng.choice(plain) + ("." if rng.random() < 0.15 else "," if rng.random() < 0.08 else "")
                     for _ in range(rng.randrange(0, 12))]
            line = rng.choice([" ", " ", "  ", "\t"]).join(words)
        else:
            toks = rng.choice(base).split(" ") if rng.random() < 0.8 else [rng.choice(plain) for _ in range(6)]
            for _ in range(rng.choice([0, 1, 1, 2, 2, 3, 4, 6])):
                frag = rng.choice(kinds[rng.choice(list(kinds))])
                at = rng.randrange(len(toks) + 1)
                if toks and rng.random() < 0.35:
                    at = min(at, len(toks) - 1)
                    toks[at] = toks[at] + frag if rng.random() < 0.5 else frag + toks[at]
                else:
                    toks.insert(at, frag)
            if rng.random() < 0.15:
                toks.append(rng.choice(kinds["abbrev"] + kinds["emoji"]))
            line = " ".join(toks)
            line = line.upper() if r < 0.48 else line.capitalize() if r < 0.54 else line.title() if r < 0.57 else line
            for _ in range(rng.choice([0, 0, 0, 0, 1, 1, 2])):
                at = rng.randrange(len(line) + 1)
                line = line[:at] + char() + line[at:]
        if rng.random() < 0.01:
            at = rng.randrange(len(line) + 1)
            line = line[:at] + rng.choice(["\r", "\r\n", *SEPARATORS]) + line[at:]
        out.append(line)
    return out


@pytest.fixture(scope="module")
def kinds():
    return hard_cases()


@pytest.fixture(scope="module")
def real():
    if not (SHARED / "real_annotations").is_dir():
        pytest.skip(f"{SHARED} is absent: the real annotation files live beside the repository in ../shared")
    lines = real_captions()
    return lines, jar_output(lines)


@pytest.fixture(scope="module")
def generated(kinds):
    base = real_captions() if (SHARED / "real_annotations").is_dir() else demo_captions()
    base = [s for s in base if len(s) < 300]
    lines = generate(100_000, seed=20261127, base=base, kinds=kinds)
    return lines, jar_output(lines)


# --- the comparisons
def test_punctuations_are_pycocoevalcaps():
    assert ptb.PUNCTUATIONS == set(tokenizer._punctuations())


@pytest.mark.scale
def test_real_captions(real):
    lines, jar = real
    assert len(lines) > 90_000
    assert_same(lines, jar, "real captions (../shared)")


def test_demo_captions():
    lines = demo_captions()
    assert_same(lines, jar_output(lines), "demo captions")


def test_hard_cases(kinds):
    cases = [c for cs in kinds.values() for c in cs]
    assert_same(cases, jar_output(cases), "hard cases, one file")
    # each case before each opener, and each case alone in its file (its end read as a file's end)
    paired = [line for c in cases for opener in OPENERS for line in (c, opener)]
    assert_same(paired, jar_output(paired), "hard cases before each opener")
    alone = [[c] for c in cases] + [[c, "x"] for c in cases] + [[o, c] for c in cases[::7] for o in OPENERS]
    bad = []
    for lines, jar, ours in zip(alone, jar_files(alone), ptb.tokenize_files(alone)):
        raw = ptb.jar_output("\n".join(lines)).split("\n")
        if raw != jar or ours != filtered(jar, len(lines)):
            bad.append((lines, jar, raw, ours))
    assert not bad, bad[:10]
    print(f"hard cases: {len(cases)} cases, {len(paired)} paired lines, {len(alone)} files, 0 differences")


#: files whose tokens reach across a line break, end at the file's end, or hold a line separator
ACROSS_LINES = [
    ["<a b='x", "y'> z", "next"], ['a <p class="one', "two", 'three">b', "c"], ["x ^.[^x=", "foo<>] y", "z"],
    ["etc. <b>", "x"], ["U.S. <b> x", "The"], ["U.S.", "\tThe "], ["U.S.", " The\u2028"], ["I.", "<b>"], ["Mr.", "Smith"],
    ["etc.\U0001F600", "x"], ["etc.a\U0001F600", "b"], ["etc.", ""], ["etc."], ["no.", "5"], ["fig.", "\u0663"],
    ["co.", " ltd"], ["co.\u00a0ltd"], ["'90", ""], ["'90"], [":)"], ["x :)", "y"], ["a\r\nb", "c"], ["a\rb\x85c\x0bd", "e"],
    ["", "", ""], [""], ["a", ""], ["cannot"], ["gonna"], ["\u00ad"], ['"', "x"], ['a "', "$5"], ["'", "x"],
]


def test_tokens_across_lines():
    ours = [ptb.jar_output("\n".join(f)).split("\n") for f in ACROSS_LINES]
    jar = jar_files(ACROSS_LINES)
    assert ours == jar
    assert ptb.tokenize_files(ACROSS_LINES) == [filtered(j, len(f)) for f, j in zip(ACROSS_LINES, jar)]
    # one SGML token holds the first line break: the jar writes it as it is, so it still ends a line
    assert ptb.tokenize_lines(ACROSS_LINES[0]) == ["<a\u00a0b='x", "y'> z", "next"]


def test_ascii_text_takes_the_cut_classes(kinds, monkeypatch):
    """A text with no non-ASCII character is lexed by the rules with their Unicode classes cut to
    ASCII members (:func:`ptb.ascii_only`): the hard cases' ASCII lines, as one file of their own
    and each before each opener, give the jar's tokens that way, and a class cut wrongly (no digit
    in the cut [:digit:]) is found."""
    cases = [c for cs in kinds.values() for c in cs if c.isascii()]
    paired = [line for c in cases for opener in OPENERS if opener.isascii() for line in (c, opener)]
    assert ptb.ascii_from("\n".join(paired)) == 0
    jar = jar_output(paired)
    assert_same(paired, jar, "hard cases' ASCII lines before each opener")
    wrong = tuple((body, cut.replace("\\u0030-\\u0039", "\\u0030-\\u0031") if body == ptb.D else cut)
                  for body, cut in ptb._ASCII_BODIES)
    monkeypatch.setattr(ptb, "_ASCII_BODIES", wrong)
    monkeypatch.setattr(ptb, "compiled_rules", functools.lru_cache(None)(ptb.compiled_rules.__wrapped__))
    monkeypatch.setattr(ptb, "_BY_CHAR", {})
    assert len(differences(paired, jar)) >= 10


@pytest.mark.scale
def test_generated_ascii_lines(generated):
    """The generated lines without a non-ASCII character, as a file of their own: every rule a
    caption reaches with the cut classes."""
    ascii = [line for line in generated[0] if line.isascii()]
    assert len(ascii) > 20_000
    assert_same(ascii, jar_output(ascii), "generated ASCII lines (seeded)")


@pytest.mark.scale
def test_every_bmp_character():
    """The contexts the character tables were measured in (a letter inside a word and after a
    hyphen, a digit before a decimal, an uppercase letter after "etc."), and the other classes."""
    chars = [chr(c) for c in range(0x10000) if not 0xD800 <= c <= 0xDFFF and chr(c) not in SEPARATORS]
    lines = [f"x{c}y x-{c} {c}.5 etc. {c} {c}{c}" for c in chars]
    assert_same(lines, jar_output(lines), "every BMP character")


@pytest.mark.scale
def test_generated_lines(generated):
    lines, jar = generated
    assert len(lines) >= 100_000
    assert_same(lines, jar, "generated lines (seeded)")


def test_the_api_is_tokenizer_pys(kinds, monkeypatch):
    """tokenize_lines is tokenizer._run_tokenizer (one file), tokenize_files is pycocoevalcap's
    PTBTokenizer on each file, and ptb_tokenize_blocks gives it with either scorer: a file's last
    caption is read at the file's true end (a smiley or "'NN" there reads otherwise)."""
    from pycocoevalcap.tokenizer.ptbtokenizer import PTBTokenizer

    from idc_toolkit.metrics.implementation import using

    monkeypatch.setenv("IDC_TOKENIZER_CACHE", "0")
    cases = [c for cs in kinds.values() for c in cs if not re.search("[" + SEPARATORS + "]", c)]
    assert ptb.tokenize_lines(cases) == tokenizer._run_tokenizer(cases, 600)
    ends = ["I.", "the man in fig.", "nice :)", "in the '90", ""]
    blocks = [cases[k::5] + [end] for k, end in enumerate(ends)] + [[]]
    for scorer in ("java", "python"):
        with using(scorer):
            assert tokenizer.ptb_tokenize_blocks(blocks) == ptb.tokenize_files(blocks), scorer
    for block in blocks[1:4]:
        theirs = PTBTokenizer().tokenize({str(i): [{"caption": c}] for i, c in enumerate(block)})
        assert ptb.tokenize_files([block])[0] == [theirs[str(i)][0] for i in range(len(block))]
    assert [b[-1] for b in ptb.tokenize_files(blocks[1:4])] == ["the man in fig", "nice -rrb-", "in the 90"]


def test_a_wrong_rule_is_caught(real, kinds, monkeypatch):
    """The comparisons find a rule changed on purpose: British spellings made American (CoreNLP's
    americanize option, which the jar's command line leaves off), and sentence-final acronyms read
    without their next line."""
    lines, jar = real
    american = {"colour": "color", "grey": "gray", "centre": "center", "metre": "meter"}
    spell = re.compile("\\b(" + "|".join(american) + ")\\b")
    for name in ("jar_output", "tokenize_lines"):
        original = getattr(ptb, name)
        monkeypatch.setattr(ptb, name, lambda x, f=original: (
            spell.sub(lambda m: american[m.group(1)], f(x)) if isinstance(x, str)
            else [spell.sub(lambda m: american[m.group(1)], t) for t in f(x)]))
    assert len(differences(lines, jar)) >= 10
    monkeypatch.undo()

    cases = [c for cs in kinds.values() for c in cs]
    paired = [line for c in cases for opener in OPENERS for line in (c, opener)]
    jar = jar_output(paired)
    assert not differences(paired, jar)
    without = [r for r in ptb.compiled_rules() if r.name != "ACRONYM/"]
    monkeypatch.setattr(ptb, "compiled_rules", lambda: without)
    monkeypatch.setattr(ptb, "_BY_CHAR", {})
    assert len(differences(paired, jar)) >= 10
