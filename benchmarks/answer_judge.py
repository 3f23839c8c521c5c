"""Time ``raglabel judge --answers`` against a chat-completions server on loopback.

    python benchmarks/answer_judge.py [--calls 2000] [--latency 0.1] [--concurrency 16]

The server is the one the end-to-end tests use (tests/chat_server.py): every reply
waits ``--latency`` seconds. The project holds ``calls / 4`` answer samples, each with a
question, an answer, three contexts and a reference, so every sample is judged on all
four criteria (faithfulness, answer_relevancy, context_recall and ctx_rank_prec's chunk
grades): ``calls`` (answer, criterion) calls in all. With C requests in flight the ideal
time is calls x latency / C, 12.5 s for the defaults; the goal is at most 1.2x that for
a whole ``raglabel judge --answers`` process (start, planning, prompts, requests, reply
checks, writes). A second run finds everything cached and sends nothing.
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from common import (
    HERE,
    add_repeat,
    make_parser,
    markdown_table,
    measure,
    parse,
    utc_stamp,
    verdict,
    write_results,
)

sys.path.insert(0, str(HERE.parent / "tests"))

from chat_server import ChatServer

CRITERIA = 4
_VOCABULARY = (
    "turbine tidal stream rotor blade generator current estuary barrage output grid power"
    " energy water flow speed design cost maintenance corrosion survey site capacity"
)
WORDS = _VOCABULARY.split()


def text(seed: int, words: int) -> str:
    return " ".join(WORDS[(seed * 7 + j * 3) % len(WORDS)] for j in range(words)).capitalize()


def build_project(folder: Path, samples: int) -> Path:
    """A project with one answer system of ``samples`` samples, each judgeable on all
    four criteria."""
    with (folder / "answers.jsonl").open("w") as handle:
        for i in range(samples):
            line = {
                "id": f"s{i:05d}",
                "query_id": f"q{i:05d}",
                "question": f"How does {WORDS[i % len(WORDS)]} affect tidal power {i}?",
                "answer": f"{text(i, 60)}.",
                "contexts": [f"{text(i * 3 + c, 110)} {i}-{c}." for c in range(3)],
                "reference": f"{text(i + 1, 40)}.",
            }
            handle.write(json.dumps(line) + "\n")
    db = folder / "answers.db"
    raglabel(["init", str(db)])
    raglabel(["import", str(db), "--answers", f"bench={folder / 'answers.jsonl'}"])
    return db


def raglabel(args: list[str]) -> tuple[float, str]:
    """The wall time of one whole ``raglabel ARGS`` process, and its summary's first line."""
    sample = measure([sys.executable, "-m", "raglabel", *args])
    if sample.exit_code not in (0, 1):
        raise SystemExit(f"raglabel {' '.join(args)} failed:\n{sample.stderr}")
    said = sample.stdout.strip()
    return sample.wall_s, said.splitlines()[0] if said else ""


def judge_command(db: Path, master: Path, server: ChatServer, concurrency: int) -> list[str]:
    """A fresh copy of the project, and the command that judges its answers."""
    shutil.copy(master, db)
    return [
        "judge",
        str(db),
        "--answers",
        "--base-url",
        server.base_url,
        "--model",
        "m",
        "--concurrency",
        str(concurrency),
    ]


FIRST = "raglabel judge --answers, first run"
CACHED = "raglabel judge --answers, repeated run (all cached)"


def main(argv: list[str] | None = None) -> int:
    parser = make_parser(__doc__)
    parser.add_argument("--calls", type=int, default=2000, help="(answer, criterion) calls")
    parser.add_argument("--latency", type=float, default=0.1, help="seconds per reply")
    parser.add_argument("--concurrency", type=int, default=16)
    add_repeat(parser, "tries of every case; the table shows the best (default 1)", 1)
    args: argparse.Namespace = parse(parser, argv)
    samples = max(1, args.calls // CRITERIA)
    calls = samples * CRITERIA
    ideal = calls * args.latency / args.concurrency
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="raglabel-answer-judge-bench-") as tmp:
        folder = Path(tmp)
        master = build_project(folder, samples)
        with ChatServer(latency=args.latency) as server:
            for attempt in range(args.repeat):
                before = server.count()
                command = judge_command(
                    folder / f"run{attempt}.db", master, server, args.concurrency
                )
                wall, said = raglabel(command)
                sent = server.count() - before
                rows.append({"case": FIRST, "wall_s": wall, "try": attempt, "said": said})
                rows[-1]["requests"] = sent
                before = server.count()
                wall, said = raglabel(command)
                rows.append({"case": CACHED, "wall_s": wall, "try": attempt, "said": said})
                rows[-1]["requests"] = server.count() - before
    print(
        f"\n{calls} (answer, criterion) calls ({samples} samples x {CRITERIA} criteria),"
        f" {args.latency * 1000:.0f} ms per reply, concurrency {args.concurrency};"
        f" ideal {ideal:.1f} s\n"
    )
    table: list[list[str]] = []
    verdicts: list[bool] = []
    for case in (FIRST, CACHED):
        found = [r for r in rows if r["case"] == case]
        best = min(found, key=lambda r: r["wall_s"])
        if case == FIRST:
            met = best["wall_s"] <= 1.2 * ideal and best["requests"] == calls
            goal = f"<= 1.2x ideal, {calls} requests: {verdict(met)}"
            ratio = f"{best['wall_s'] / ideal:.2f}"
            shown_ideal = f"{ideal:.1f} s"
        else:
            met = best["requests"] == 0
            goal = f"sends nothing: {verdict(met)}"
            ratio = shown_ideal = "-"
        verdicts.append(met)
        table.append(
            [case, f"{best['wall_s']:.2f} s", shown_ideal, ratio, str(best["requests"]), goal]
        )
    head = ["case", "wall (best of tries)", "ideal", "x ideal", "requests", "goal"]
    print(markdown_table(head, table))
    for row in rows:
        if row.get("said"):
            print(f"  {row['case']}: {row['said']}")
    report = {
        "calls": calls,
        "samples": samples,
        "latency_s": args.latency,
        "concurrency": args.concurrency,
        "ideal_s": ideal,
        "rows": rows,
        "machine": platform.platform(),
        "python": sys.version,
    }
    out = write_results(f"answer-judge-{utc_stamp(datetime.now(UTC))}", report)
    print(f"\nresults: {out}")
    return 0 if all(verdicts) else 1


if __name__ == "__main__":
    raise SystemExit(main())
