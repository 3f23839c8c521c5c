"""A run is put in trec_eval order by numbers where it can: the rows must come out
exactly as polars' plain sort and unique put them. trec_eval compares scores as 32-bit
floats; a passage repeated with scores tied only that way keeps its higher float64 one."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from examples import thinned

from raglabel.formats.trec import ranked
from raglabel.formats.trec.frames import read_run
from raglabel.formats.trec.order import score_order, trec_scores
from raglabel.storage import runs


def _plain(frame: pl.DataFrame) -> pl.DataFrame:
    """The order as a plain sort gives it: query, the score as a 32-bit float (as
    trec_eval keeps it), passage id, then the float64 score; then unique."""
    in_order = (
        frame.with_columns(_rank=pl.col("score").cast(pl.Float32))
        .sort(["qid", "_rank", "docid", "score"], descending=[False, True, True, True])
        .drop("_rank")
    )
    return in_order.unique(subset=["qid", "docid"], keep="first", maintain_order=True)


def _frame(rows: list[tuple[str, str, float]]) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "qid": [q for q, _, _ in rows],
            "docid": [d for _, d, _ in rows],
            "score": [s for _, _, s in rows],
        },
        schema={"qid": pl.Categorical, "docid": pl.String, "score": pl.Float64},
    )


def _random_run(seed: int) -> list[tuple[str, str, float]]:
    """Query ids whose string order is not their first-mention order, scores that tie,
    passages repeated in a query, blocks split or kept whole, scores falling or not;
    some scores nudged beyond 32-bit precision, so that they tie only as trec_eval
    compares them (another generator: the runs are otherwise as before)."""
    rng = random.Random(seed)
    nudge = random.Random(-seed - 1)
    queries = [f"{rng.choice(['q', 'Q', 'é', ''])}{rng.randrange(30)}" for _ in range(8)]
    rows: list[tuple[str, str, float]] = []
    for query in queries:
        count = rng.randrange(0, 40)
        scores = [float(rng.randrange(6)) / rng.choice([1, 2, 4]) for _ in range(count)]
        scores = [s * nudge.choice([1.0, 1.0, 1 + 2**-30, 1 - 2**-30]) for s in scores]
        if rng.random() < 0.9:  # most run files: falling scores
            scores.sort(reverse=True)
        for score in scores:
            rows.append((query, f"d{rng.randrange(25)}{rng.choice(['', 'x', 'ü'])}", score))
    if rng.random() < 0.15:
        rng.shuffle(rows)
    elif rng.random() < 0.15 and len(rows) > 2:  # a query's block split in two
        rows.append(rows.pop(0))
    if rng.random() < 0.05 and rows:
        rows.append((rows[0][0], "d-zero", -0.0))
        rows.append((rows[0][0], "d-zero2", 0.0))
    return rows


def test_the_order_is_the_plain_sorts() -> None:
    paths = {True: 0, False: 0}
    for seed in range(120):
        frame = _frame(_random_run(seed))
        expected = _plain(frame)
        got = ranked._first_of_each_pair(ranked.trec_order(frame))
        assert got.to_dicts() == expected.to_dicts(), f"seed {seed}"
        scores = frame["score"].to_numpy()
        if frame.height and not (np.signbit(scores) & (scores == 0)).any():
            ranks = trec_scores(scores)
            paths[score_order(ranked._query_keys(frame["qid"]), ranks)[1]] += 1
    assert min(paths.values()) >= 20, paths  # both the block moves and the sorts


@pytest.mark.parametrize(
    "rows",
    [
        # A query's lines in two places, scores falling in each: no block move.
        [("q1", "a", 9.0), ("q1", "b", 8.0), ("q2", "c", 9.0), ("q1", "d", 7.0)],
        # Grouped, but a score rises inside a block.
        [("q2", "a", 1.0), ("q2", "b", 3.0), ("q1", "c", 2.0), ("q1", "d", 2.0)],
        # Mostly tied and in no order: the plain sort.
        [("q1", f"d{i}", float(i % 2)) for i in (5, 2, 7, 1, 4, 3, 6, 0)]
        + [("q0", f"e{i}", 1.0) for i in (3, 1, 2)],
    ],
)
def test_runs_that_are_not_grouped_and_falling(rows: list[tuple[str, str, float]]) -> None:
    frame = _frame(rows)
    assert ranked.trec_order(frame).to_dicts() == _plain(frame).to_dicts()


def test_a_grouped_run_with_falling_scores_and_ties(tmp_path: Path) -> None:
    """The shape of most run files: a block a query (not in string order), scores
    falling, some of them tied."""
    lines = [
        f"{q} Q0 d{(7 * q + r) % 13} {r} {10 - r // 3} x\n"
        for q in (10, 9, 2, 100)
        for r in range(12)
    ]
    path = tmp_path / "r.run"
    path.write_text("".join(lines))
    frame = read_run(path)
    assert ranked.trec_order(frame).to_dicts() == _plain(frame).to_dicts()
    stored = runs.rank_trec_file("r", path)
    assert stored.queries == ["10", "100", "2", "9"]
    assert runs.decode_ids(stored.id_blobs[0])[:3] == ["d7", "d6", "d5"]
    assert stored.repeats == []
    assert stored.entries == 48
    assert np.frombuffer(stored.scores[0] or b"", "<f8").tolist()[:4] == [10, 10, 10, 9]


def test_repeated_passages_are_kept_once_and_named(tmp_path: Path) -> None:
    path = tmp_path / "r.run"
    path.write_text("q1 Q0 a 1 3 x\nq1 Q0 b 2 2 x\nq1 Q0 a 3 5 x\nq2 Q0 a 1 1 x\n")
    stored = runs.rank_trec_file("r", path)
    assert stored.id_blobs == [b"a\nb", b"a"]
    assert stored.repeats == ["a in q1"]
    assert stored.lengths.tolist() == [2, 1]


@pytest.mark.parametrize("known_passages", [0, 5_000])  # 5,000: the index is probed
def test_a_run_stores_the_same_rows_from_a_list_or_a_column(
    tmp_path: Path, known_passages: int
) -> None:
    """Runs built in Python keep their passage ids in a list, runs read from a file in a
    polars column: both write the same rows, with and without passages already known."""
    import sqlite3

    from raglabel.storage.project import Project

    rng = random.Random(known_passages)
    rankings = [
        runs.Ranking(
            f"q{q}",
            rng.sample([f"d{i}" for i in range(300)], rng.randrange(1, 60)),
            None if q % 3 == 0 else np.arange(60, dtype=np.float64)[::-1][:60].copy(),
        )
        for q in range(30)
    ]
    for ranking in rankings:
        if ranking.scores is not None:
            ranking.scores = ranking.scores[: len(ranking.passages)]
    contents = []
    for as_column in (False, True):
        with Project.create(tmp_path / f"{as_column}.db") as project:
            conn: sqlite3.Connection = project.conn
            with project.write():
                conn.executemany(
                    "INSERT INTO passage (ext_id) VALUES (?)",
                    ((f"d{i * 7}",) for i in range(known_passages)),
                )
                run = runs.Run("r", "r.run", rankings)
                stored = runs.RunColumns.of(run)
                if as_column:
                    stored.docids = pl.Series("docid", stored.docids, dtype=pl.String)
                runs.store(conn, stored, depth=7)
            contents.append(
                {
                    table: conn.execute(f"SELECT * FROM {table} ORDER BY 1, 2").fetchall()
                    for table in ("query", "passage", "ranking", "ranking_rows", "candidate")
                }
            )
            contents[-1]["run"] = conn.execute(
                "SELECT name, queries, entries, passage_rows_upto FROM run"
            ).fetchall()
    assert contents[0] == contents[1]
    rows = [np.frombuffer(blob, "<i4") for _, _, blob in contents[0]["ranking_rows"]]
    assert all((r[:7] > 0).all() for r in rows)  # the pool
    assert any((r[7:] > 0).any() for r in rows) and any((r[7:] == 0).any() for r in rows)


@pytest.mark.parametrize("layout", ["falling", "split", "mostly tied, no order"])
def test_scores_tied_as_32_bit_floats_go_by_passage_id(
    layout: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """1.00000001 and 1.0 (and 1e39 and 1e40, both infinite) tie as trec_eval keeps
    scores: passage id descending decides; a repeated passage keeps its higher float64
    score, and the stored scores are the float64 ones."""
    rows = [
        ("q1", "a", 1e40),
        ("q1", "b", 1e39),
        ("q1", "a", 1.00000001),
        ("q1", "c", 1.00000001),
        ("q1", "c", 1.0),
        ("q1", "d", 1.0),
        ("q1", "e", 0.5),
    ]
    expected = [("b", 1e39), ("a", 1e40), ("d", 1.0), ("c", 1.00000001), ("e", 0.5)]
    if layout == "split":  # the numbers' sort: few ties, a query in two places
        q0 = [("q0", f"x{i}", float(i)) for i in range(5)]
        # c's lower float64 score first: the tie, not the file, keeps the higher one
        rows = [*q0[:3], *rows[:3], *q0[3:], rows[4], rows[3], *rows[5:]]
    elif layout == "mostly tied, no order":  # the plain sort
        rows = rows[::-1] + [("q1", f"t{i}", 0.25) for i in range(8)]
        expected += [(f"t{i}", 0.25) for i in reversed(range(8))]
    frame = _frame(rows)
    plain: list[bool] = []
    plain_order = ranked._plain_order

    def spy(frame: pl.DataFrame) -> pl.DataFrame:
        plain.append(True)
        return plain_order(frame)

    monkeypatch.setattr(ranked, "_plain_order", spy)
    q1 = ranked._first_of_each_pair(ranked.trec_order(frame)).filter(pl.col("qid") == "q1")
    assert plain == ([True] if layout == "mostly tied, no order" else [])
    assert list(zip(q1["docid"], q1["score"], strict=True)) == expected


def _stored(columns: runs.RunColumns, known: list[str]) -> dict[str, list[tuple[object, ...]]]:
    """What storing ``columns`` writes into a project that holds passages ``known``."""
    from raglabel.storage.project import Project

    with Project.memory() as project:
        conn = project.conn
        with project.write():
            conn.executemany("INSERT INTO passage (ext_id) VALUES (?)", ((p,) for p in known))
            runs.store(conn, columns, depth=3)
        return {
            table: conn.execute(f"SELECT * FROM {table} ORDER BY 1, 2").fetchall()
            for table in ("query", "passage", "ranking", "ranking_rows", "candidate")
        }


def _one_block_a_query(rows: list[tuple[str, str, float]]) -> list[tuple[str, str, float]]:
    """``rows`` with each later block of a query renamed as a query of its own."""
    out: list[tuple[str, str, float]] = []
    blocks: set[str] = set()
    name = ""
    for i, (query, passage, score) in enumerate(rows):
        if not out or query != rows[i - 1][0]:
            name = query if query not in blocks else f"{query}~{i}"
            blocks.add(name)
        out.append((name, passage, score))
    return out


def test_a_grouped_run_is_stored_as_the_general_path_stores_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Runs read the grouped way (file order kept, ties rewritten in the joined ids)
    store the same rows as when put in order row by row; runs it refuses take that way."""
    grouped = 0
    seeds = thinned(range(60))
    for seed in seeds:
        rows = _random_run(seed)
        if seed % 4:  # most without a repeated pair nor a query in two blocks
            first: dict[tuple[str, str], tuple[str, str, float]] = {}
            for row in rows:
                first.setdefault(row[:2], row)
            rows = _one_block_a_query(list(first.values()))
        if not rows:
            continue
        path = tmp_path / f"{seed}.run"
        path.write_text(
            "".join(f"{q} Q0 {d} {i + 1} {s!r} x\n" for i, (q, d, s) in enumerate(rows))
        )
        # Random runs tie a lot: the rewrite in place is tried on them all the same.
        with monkeypatch.context() as patch:
            patch.setattr(ranked, "TIES_REWRITTEN", 1.0)
            fast = runs.rank_trec_file("r", path)
        with monkeypatch.context() as patch:
            patch.setattr(runs, "_grouped_columns", lambda *_: None)
            general = runs.rank_trec_file("r", path)
        assert general.order is None
        grouped += fast.order is not None
        assert fast.queries == general.queries, seed
        assert fast.id_blobs == general.id_blobs, seed
        assert fast.scores == general.scores, seed
        assert fast.lengths.tolist() == general.lengths.tolist(), seed
        assert fast.repeats == general.repeats, seed
        known = sorted({d for _, d, _ in rows})[::3]
        assert _stored(fast, known) == _stored(general, known), seed
    # The grouped way taken often, and refused often.
    assert 0.2 <= grouped / len(seeds) <= 0.83, (grouped, len(seeds))


def test_ties_of_ids_of_different_lengths_are_rewritten_in_place(tmp_path: Path) -> None:
    """Tied rows whose ids differ in length (and are not ASCII) swap places: the bytes
    of the joined ids are moved, not the rows' spans."""
    path = tmp_path / "r.run"
    path.write_text(
        "b Q0 x 1 5 t\nb Q0 long-id 2 4 t\nb Q0 zé 3 4 t\nb Q0 m 4 4 t\nb Q0 y 5 1 t\n"
        "b Q0 w 6 0.5 t\nb Q0 v 7 0.25 t\n"
        "a Q0 ab 1 2 t\na Q0 abc 2 2 t\na Q0 c 3 1 t\na Q0 d 4 0 t\n"
    )
    stored = runs.rank_trec_file("r", path)
    assert stored.order is not None
    assert stored.queries == ["a", "b"]
    assert stored.id_blobs == [b"abc\nab\nc\nd", "x\nzé\nm\nlong-id\ny\nw\nv".encode()]
    assert stored.docids.gather(stored.order).to_list() == [
        "abc",
        "ab",
        "c",
        "d",
        "x",
        "zé",
        "m",
        "long-id",
        "y",
        "w",
        "v",
    ]
    assert np.frombuffer(stored.scores[1] or b"", "<f8").tolist() == [5, 4, 4, 4, 1, 0.5, 0.25]


def test_a_grouped_run_of_mostly_ties_is_sorted_whole(tmp_path: Path) -> None:
    """Integer-like scores tie on most rows: rewriting most of the ids' bytes would cost
    more memory than the sort, which orders them instead, as the same rows read one by
    one are ordered."""
    path = tmp_path / "r.run"
    path.write_text(
        "".join(
            f"q{q} Q0 d{(q * 7 + i) % 23} {i + 1} {3 - i // 4} t\n"
            for q in range(3)
            for i in range(8)
        )
    )
    stored = runs.rank_trec_file("r", path)
    assert stored.order is None
    for q, blob in zip(stored.queries, stored.id_blobs, strict=True):
        rows = [
            (d, 3 - i // 4) for i, d in enumerate(f"d{(int(q[1:]) * 7 + i) % 23}" for i in range(8))
        ]
        by_id = sorted(rows, key=lambda row: row[0].encode(), reverse=True)
        expected = sorted(by_id, key=lambda row: -row[1])  # stable: ties by id, descending
        assert blob.decode().split("\n") == [d for d, _ in expected]
