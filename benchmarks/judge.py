"""Time ``raglabel judge`` against a chat-completions server on loopback.

    python benchmarks/judge.py [--pairs 2000] [--latency 0.1] [--concurrency 16] [--repeat 1]

The server is the one the end-to-end tests use (tests/chat_server.py): every call
sleeps ``--latency`` seconds before answering. With C requests in flight the ideal time
is pairs x latency / C, 12.5 s for the defaults; the goal is at most 1.2x that for a
whole ``raglabel judge`` process (start, selection, requests, writes), and under 2 s
for a second run that finds everything cached.

Beside it, in the same run, a bare peer: a few lines of httpx with a semaphore sending
the same prompts with no parsing, retries or database. raglabel's ratio to it is its
overhead. A third row runs raglabel against the same server with 5% of calls failing
(429 with a short Retry-After, 5xx, dropped connections, broken JSON) to show what
faults cost.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import shutil
import sys
import tempfile
import time
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

_VOCABULARY = (
    "turbine tidal stream rotor blade generator current estuary barrage output grid power"
    " energy water flow speed design cost maintenance corrosion survey site capacity"
)
WORDS = _VOCABULARY.split()


def build_project(folder: Path, pairs: int, per_query: int = 20) -> Path:
    """A project of ``pairs`` ungraded candidates: queries x ``per_query`` passages."""
    queries = pairs // per_query
    (folder / "q.tsv").write_text(
        "".join(
            f"q{q:04d}\thow does {WORDS[q % len(WORDS)]} affect tidal power {q}\n"
            for q in range(queries)
        )
    )
    with (folder / "p.jsonl").open("w") as handle:
        for q in range(queries):
            for i in range(per_query):
                words = [WORDS[(q * 7 + i * 3 + j) % len(WORDS)] for j in range(110)]
                text = " ".join(words).capitalize() + "."
                handle.write(json.dumps({"id": f"d{q:04d}-{i:02d}", "text": text}) + "\n")
    with (folder / "r.txt").open("w") as handle:
        for q in range(queries):
            for i in range(per_query):
                handle.write(f"q{q:04d} Q0 d{q:04d}-{i:02d} {i + 1} {100 - i} bench\n")
    db = folder / "judge.db"
    raglabel(["init", str(db)])
    raglabel(
        [
            "import",
            str(db),
            "--queries",
            str(folder / "q.tsv"),
            "--passages",
            str(folder / "p.jsonl"),
            "--run",
            f"bench={folder / 'r.txt'}",
        ]
    )
    return db


def raglabel(args: list[str]) -> tuple[float, str]:
    """The wall time of one whole ``raglabel ARGS`` process, and the first line it printed."""
    sample = measure([sys.executable, "-m", "raglabel", *args])
    if sample.exit_code not in (0, 1):
        raise SystemExit(f"raglabel {' '.join(args)} failed:\n{sample.stderr}")
    said = sample.stdout.strip()
    return sample.wall_s, said.splitlines()[0] if said else ""


async def bare_peer(url: str, prompts: list[str], concurrency: int) -> float:
    import httpx

    gate = asyncio.Semaphore(concurrency)
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(limits=limits, timeout=60) as client:

        async def one(prompt: str) -> None:
            async with gate:
                body = {"model": "m", "messages": [{"role": "user", "content": prompt}]}
                response = await client.post(url, json=body)
                response.json()

        started = time.perf_counter()
        await asyncio.gather(*(one(p) for p in prompts))
        return time.perf_counter() - started


PEER = "bare httpx peer (no parsing, no database)"


def judge_command(
    db: Path, master: Path, server: ChatServer, args: argparse.Namespace
) -> list[str]:
    """A fresh copy of the project, and the command that judges it."""
    shutil.copy(master, db)
    return [
        "judge",
        str(db),
        "--base-url",
        server.base_url,
        "--model",
        "m",
        "--concurrency",
        str(args.concurrency),
    ]


def record(rows: list[dict[str, Any]], case: str, attempt: int, command: list[str]) -> None:
    wall, said = raglabel(command)
    rows.append({"case": case, "wall_s": wall, "try": attempt, "said": said})


def main(argv: list[str] | None = None) -> int:
    parser = make_parser(__doc__)
    parser.add_argument("--pairs", type=int, default=2000)
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--concurrency", type=int, default=16)
    add_repeat(parser, "tries of every case; the table shows the best (default 1)", 1)
    args = parse(parser, argv)
    ideal = args.pairs * args.latency / args.concurrency
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="raglabel-judge-bench-") as tmp:
        folder = Path(tmp)
        master = build_project(folder, args.pairs)
        from raglabel.judge.prompt import Template

        template = Template.builtin()
        prompts = [
            template.render(f"how does {WORDS[i % len(WORDS)]} affect tidal power", "x" * 700)
            for i in range(args.pairs)
        ]
        with ChatServer(latency=args.latency) as server:
            for attempt in range(args.repeat):
                peer = asyncio.run(bare_peer(server.url, prompts, args.concurrency))
                rows.append({"case": PEER, "wall_s": peer, "try": attempt})
                command = judge_command(folder / f"run{attempt}.db", master, server, args)
                record(rows, "raglabel judge, first run", attempt, command)
                record(rows, "raglabel judge, repeated run (all cached)", attempt, command)
        with ChatServer(latency=args.latency, fault_rate=0.05, seed=7, retry_after=0.2) as server:
            for attempt in range(args.repeat):
                command = judge_command(folder / f"faults{attempt}.db", master, server, args)
                record(rows, "raglabel judge, 5% faulty calls", attempt, command)
    cases: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        cases.setdefault(row["case"], []).append(row)
    peer = min(r["wall_s"] for r in cases[PEER])
    print(
        f"\n{args.pairs} pairs, {args.latency * 1000:.0f} ms per call,"
        f" concurrency {args.concurrency}; ideal {ideal:.1f} s\n"
    )
    table: list[list[str]] = []
    verdicts = []
    for case, found in cases.items():
        best = min(r["wall_s"] for r in found)
        goal = ""
        if case == "raglabel judge, first run":
            met = best <= 1.2 * ideal
            goal = f"<= 1.2x ideal: {verdict(met)}"
            verdicts.append(met)
        elif case.startswith("raglabel judge, repeated"):
            met = best < 2.0
            goal = f"< 2 s: {verdict(met)}"
            verdicts.append(met)
        table.append([case, f"{best:.2f} s", f"{best / ideal:.2f}", f"{best / peer:.2f}", goal])
    head = ["case", "wall (best of tries)", "x ideal", "x bare peer", "goal"]
    print(markdown_table(head, table))
    for case, found in cases.items():
        for row in found:
            if row.get("said"):
                print(f"  {case}: {row['said']}")
    report = {
        "pairs": args.pairs,
        "latency_s": args.latency,
        "concurrency": args.concurrency,
        "ideal_s": ideal,
        "rows": rows,
        "machine": platform.platform(),
        "python": sys.version,
    }
    out = write_results(f"judge-{utc_stamp(datetime.now(UTC))}", report)
    print(f"\nresults: {out}")
    return 0 if all(verdicts) else 1


if __name__ == "__main__":
    raise SystemExit(main())
