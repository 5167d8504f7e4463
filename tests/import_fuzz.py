"""Mutations of a URDF or MJCF text for the bad-file tests (tests/test_urdf.py, tests/test_mjcf.py):
an attribute's value replaced by a hostile one, an element removed or doubled, the text cut short."""
import re

HOSTILE = ("nan", "inf", "-1", "0", "1e300", "-1e300", "", "x", "1 2", "0 0 0", "0 0 0 0", "1e-300",
           "3 3 3 3 3 3", "-0.5 0.2 0.1", "package://nowhere/none.stl", "hinge", "free", "ball", "none")


def mutations(text, rng, count):
    """`count` mutated texts of `text` (deterministic for a seeded numpy Generator `rng`)."""
    attributes = [m.span(2) for m in re.finditer(r'(\w+)="([^"]*)"', text)]
    elements = [m.span() for m in re.finditer(r"<(\w+)[^<>]*/>", text)]
    for _ in range(count):
        kind = rng.integers(4)
        if kind <= 1 and attributes:        # twice as often: a hostile attribute value
            start, end = attributes[rng.integers(len(attributes))]
            yield text[:start] + HOSTILE[rng.integers(len(HOSTILE))] + text[end:]
        elif kind == 2 and elements:        # an empty element removed or doubled
            start, end = elements[rng.integers(len(elements))]
            yield text[:start] + (text[start:end] * 2 if rng.integers(2) else "") + text[end:]
        else:                               # cut short
            yield text[:rng.integers(len(text))]
