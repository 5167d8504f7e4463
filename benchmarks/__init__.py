"""Benchmarks: `make bench` (= `python -m benchmarks [NAME ...]`).

Each module `benchmarks/<name>.py` defines `main(quick: bool) -> str` returning a Markdown section
(tables of medians, with the target beside each number). The runner prints it and replaces the
section between `<!-- begin NAME -->` and `<!-- end NAME -->` in docs/benchmarks.md, so the doc
always holds the last measured numbers.
"""
