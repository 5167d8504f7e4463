"""A fuzzer for the app's settings file (app.settings): the fuzzer's kind "settings", run in this
process (reading a settings file needs no kernel and no window).

    python -m app.settings_fuzz --cases 10000 [--seed 0] [--keep DIR]

A case is a settings.json drawn by hypothesis: a document of the file's keys and made-up ones with
values of every JSON type (hostile numbers among them, nested lists and objects), perhaps written
back as corrupted text (truncated, bytes flipped, brackets nested 10^5 deep, invalid UTF-8), or a
special file in its place: a FIFO, a directory, a socket, a link to /dev/zero, /dev/urandom or
/dev/stdin, a link to itself, or a regular file past SETTINGS_BYTES_MAX. Each is read by
`app.settings.load` under a time limit and a memory bound, as the app does before its first frame.

A case ends as (physics.tools.fuzz's outcomes):
- ran: the settings loaded with no complaint, every value of the right type and range (saving and
  loading them again gives them back), the file left as it was;
- refused: set aside: the defaults, one line naming the file (`app.settings.problem`), a regular
  file renamed to settings.json.bad and anything else left where it is;
- failed: anything else (an exception, a hang past TIMEOUT, a multi-line or nameless complaint, a
  value of the wrong type, a file lost, memory past physics.tools.fuzz.MEMORY_MAX).
"""
import argparse
import json
import os
import pickle
import signal
import sys
import tempfile
import traceback
from pathlib import Path

from physics.tools import fuzz
from physics.tools.fuzz_models import SPECIAL, place_files

TIMEOUT = 5.0       # s for one load: a settings file is a few hundred bytes
KEYS = ("overlays", "arrow_scale", "time_scale", "shadows", "numbers", "timeline_budget_mb", "physics",
        "keep_physics", "panel_width", "msaa", "last_scene", "frames", "integrator", "")


def draw_settings_case(data):
    """One settings.json: a drawn document as JSON text, perhaps corrupted, or a special file."""
    from hypothesis import strategies as st

    mutations = []
    form = data.draw(st.sampled_from(["document"] * 6 + ["corrupted"] * 3 + ["special", "large"]), label="form")
    if form == "special":
        special = data.draw(st.sampled_from([s for s in SPECIAL if s != "missing"]), label="special")
        mutations.append(f"settings.json is {special}")
        return fuzz.Case("settings", b"", mutations=mutations, kind="settings", files=[("settings.json", special)])
    if form == "large":
        size = data.draw(st.sampled_from([2**20, 2**20 + 1, 3 * 2**20]), label="bytes")
        mutations.append(f"{size} bytes")
        return fuzz.Case("settings", b'{"arrow_scale": 0.5, "last_scene": "' + b"x" * size + b'"}', mutations=mutations,
                         kind="settings")
    scalar = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False),
                       st.sampled_from([1e308, -1e308, 5e-324, 0, -1, 2**63, 10**400, 0.25, 240.0, 4096.0, 16384.0]),
                       st.text(max_size=12), st.sampled_from(["rk4", "semi-implicit-euler", "tank", "../../etc/passwd"]))
    value = st.recursive(scalar, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                          st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=6),
                                                                          inner, max_size=4)), max_leaves=12)
    document = data.draw(st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=8), value, max_size=8)
                         | value, label="document")
    text = json.dumps(document, allow_nan=True).encode()
    mutations.append(f"document {text[:200]!r}")
    if form == "corrupted":
        how = data.draw(st.sampled_from(["cut", "flip", "nest", "bytes", "nan"]), label="corruption")
        if how == "cut":
            text = text[:data.draw(st.integers(0, len(text)))]
        elif how == "flip":
            at = data.draw(st.integers(0, max(0, len(text) - 1)))
            text = text[:at] + bytes([text[at] ^ (1 << data.draw(st.integers(0, 7)))]) + text[at + 1:] if text else text
        elif how == "nest":
            depth = data.draw(st.sampled_from([100, 1000, 10**5]))
            text = b"[" * depth + b"]" * depth
        elif how == "bytes":
            text = data.draw(st.binary(max_size=64))
        else:
            text = b'{"arrow_scale": NaN, "time_scale": Infinity, "panel_width": -Infinity}'
        mutations.append(f"corrupted: {how}")
    return fuzz.Case("settings", text, mutations=mutations, kind="settings")


class _Hang(BaseException):
    pass


def _alarm(signum, frame):
    raise _Hang


def run_settings_case(case, folder):
    """Read one case's settings.json in `folder` as the app does -> (outcome, detail)."""
    from app import settings

    folder = Path(folder)
    path = folder / "settings.json"
    if case.files:
        place_files(folder, case.files)
    else:
        path.write_bytes(case.text)
    regular = path.is_file() and not path.is_symlink()
    before = path.read_bytes() if regular else None
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, TIMEOUT)
    try:
        loaded = settings.load(path)
    except _Hang:
        return "failed", f"hang: no settings within {TIMEOUT:g} s"
    except BaseException:
        return "failed", traceback.format_exc()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    problem = settings.problem
    again = folder / "again.json"
    if not settings.save(loaded, again) or settings.load(again) != loaded or settings.problem is not None:
        return "failed", f"the settings read do not save and load as themselves: {loaded!r:.500}"
    if problem is None:
        if regular and path.read_bytes() != before:
            return "failed", "a file read without complaint was changed"
        return "ran", "loaded"
    if "\n" in problem or str(path) not in problem:
        return "failed", f"the complaint is not one line naming the file: {problem!r}"
    if loaded != settings.load(folder / "missing.json"):
        return "failed", f"set aside, but the settings are not the defaults: {loaded!r:.500}"
    bad = path.with_name(path.name + ".bad")
    if regular and (path.exists() or bad.read_bytes() != before):
        return "failed", f"a regular file set aside is not kept whole as {bad.name}"
    if not regular and bad.exists():
        return "failed", "a special file was moved"
    return "refused", problem


class InProcess:
    """Runs each case in this process, in a fresh folder, with the memory bound of the worker's."""

    def run(self, case):
        held, peak = fuzz.memory()
        with tempfile.TemporaryDirectory(prefix="settings-fuzz-") as folder:
            answer = run_settings_case(case, folder)
        grown = fuzz.memory()[1]
        if grown > peak and grown - held > fuzz.MEMORY_MAX:
            return "failed", f"memory: a peak of {grown / 2**20:.0f} MiB from {held / 2**20:.0f} MiB"
        return answer


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m app.settings_fuzz", description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=1000, help="cases (default 1000)")
    parser.add_argument("--seed", type=int, default=0, help="hypothesis seed (default 0: a repeatable run)")
    parser.add_argument("--keep", default="fuzz-failures", help="directory for failed cases (default fuzz-failures)")
    parser.add_argument("--replay", help="run one saved case (.pickle) and print its outcome")
    args = parser.parse_args(argv)
    if args.replay:
        case = pickle.loads(Path(args.replay).read_bytes())
        print("mutations:", *case.mutations, sep="\n  ")
        outcome, detail = InProcess().run(case)
        print(f"{outcome}: {detail}")
        return 1 if outcome == "failed" else 0
    tally = fuzz.fuzz(args.cases, args.seed, progress=max(1, args.cases // 10), kind="settings", runner=InProcess(),
                      draw=draw_settings_case)
    print(f"settings: {tally.report()}", flush=True)
    for path, detail in fuzz.save_failures(tally, args.keep, prefix="settings-case"):
        print(f"\nFAILED {path} (python -m app.settings_fuzz --replay {path}):\n{detail.rstrip()}")
    return 1 if tally.counts["failed"] else 0


if __name__ == "__main__":
    os.environ.pop("HIERARCHY_SANDBOX_CONFIG_DIR", None)    # every path is the case's own
    sys.exit(main())
