"""Run benchmarks and refresh docs/benchmarks.md: `python -m benchmarks [--quick] [NAME ...]`."""
import argparse
import os
import shutil
import importlib
import pkgutil
import re
import sys
import textwrap
from pathlib import Path

import benchmarks

DOC = Path(__file__).resolve().parent.parent / "docs" / "benchmarks.md"
HEADER = ("# Benchmarks\n\nMedians on a shared 2-core machine, where other work may run beside a benchmark: read "
          "the load\naverages the sections give. `make bench` refreshes every section, `python -m benchmarks NAME` "
          "one.\n")
WIDTH = 100  # prose lines wrap here so that the page reads without scrolling; tables stay one row a line


def available():
    return sorted(m.name for m in pkgutil.iter_modules(benchmarks.__path__) if not m.name.startswith("_"))


def wrap_prose(body, width=WIDTH):
    """Markdown with every prose line longer than `width` wrapped (list items keep their indent);
    table rows, headings, code and HTML comments are left as they are."""
    out = []
    for line in body.split("\n"):
        stripped = line.lstrip()
        if len(line) <= width or stripped.startswith(("|", "#", "<!--", "```")) or line.startswith("    "):
            out.append(line)
            continue
        bullet = stripped.startswith(("- ", "* "))
        indent = line[:len(line) - len(stripped)]
        out.extend(textwrap.wrap(stripped, width, initial_indent=indent,
                                 subsequent_indent=indent + ("  " if bullet else ""),
                                 break_long_words=False, break_on_hyphens=False))
    return "\n".join(out)


def replace_section(text, name, body):
    begin, end = f"<!-- begin {name} -->", f"<!-- end {name} -->"
    block = f"{begin}\n{wrap_prose(body.strip())}\n{end}"
    pattern = re.compile(re.escape(begin) + r".*?" + re.escape(end), re.S)
    if pattern.search(text):
        return pattern.sub(lambda _: block, text)
    return text.rstrip() + "\n\n" + block + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument("names", nargs="*", help=f"benchmarks to run (default all): {', '.join(available())}")
    parser.add_argument("--quick", action="store_true", help="smaller sizes, fewer repeats (a smoke run)")
    parser.add_argument("--no-write", action="store_true", help="print only; leave docs/benchmarks.md alone")
    args = parser.parse_args(argv)
    names = args.names or available()
    unknown = sorted(set(names) - set(available()))
    if unknown:
        parser.error(f"unknown benchmark(s) {unknown}; available: {available()}")
    # a benchmark that opens windows needs a display or Xvfb: refused before any runs, not after the
    # others' minutes (the start-up benchmark reaches its app launches only after its compiles and warm-ups)
    windowed = [name for name in names if getattr(importlib.import_module(f"benchmarks.{name}"), "NEEDS_DISPLAY", False)]
    if windowed and not os.environ.get("DISPLAY") and shutil.which("Xvfb") is None:
        parser.error(f"{', '.join(windowed)} need a display: no DISPLAY is set and Xvfb is not on PATH "
                     f"(Debian's xvfb; .ci/run installs it)")
    text = DOC.read_text() if DOC.exists() else HEADER
    for name in names:
        section = importlib.import_module(f"benchmarks.{name}").main(quick=args.quick)
        print(section, flush=True)
        text = replace_section(text, name, section)
    if not args.no_write:
        DOC.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
