"""Cut the LLMJudge fixture: human labels and two submissions' labels on the same pairs.

The source files are TREC qrels (``qid 0 docid label``, labels 0-3) over the LLMJudge
challenge's test pairs, with the challenge's own ids (``q49``, ``p3659``):

- the human labels: ``data/llmjudge_test_qrel_idx.txt`` of ``llm4eval/LLMJudge``;
- two submissions: ``submissions/scores/{willia-umbrela1,Olz-gpt4o}.txt`` of
  ``llm4eval/LLMJudge-benchmark``.

The slice, chosen without looking at any label: the ten queries with the fewest test
pairs, and of each the 24 pairs whose passage ids come first in numeric order. Every line
of the slice is a line of its source file, in the source's order. Run it with the two
repositories' git directories (bare clones will do) and the output folder:

    python tests/data/llmjudge/slice.py BENCHMARK_GIT CHALLENGE_GIT [OUT]
"""

from __future__ import annotations

import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

BENCHMARK_COMMIT = "968a1f9c962fddfc6508faa2d45e3e7edd1c3829"
CHALLENGE_COMMIT = "81159c68260d383f8da1dad8a14f6d914a9054a9"
HUMANS = "data/llmjudge_test_qrel_idx.txt"
SUBMISSIONS = {"umbrela1": "willia-umbrela1", "gpt4o": "Olz-gpt4o"}
QUERIES = 10
PAIRS_PER_QUERY = 24


def show(git_dir: Path, commit: str, path: str) -> list[str]:
    text = subprocess.run(
        ["git", f"--git-dir={git_dir}", "show", f"{commit}:{path}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [line for line in text.splitlines() if line.strip()]


def pair(line: str) -> tuple[str, str]:
    qid, _, docid, _ = line.split()
    return qid, docid


def chosen(human: list[str]) -> set[tuple[str, str]]:
    per_query: dict[str, list[str]] = defaultdict(list)
    for line in human:
        qid, docid = pair(line)
        per_query[qid].append(docid)
    sizes = Counter({qid: len(docids) for qid, docids in per_query.items()})
    smallest = sorted(sizes, key=lambda qid: (sizes[qid], int(qid[1:])))[:QUERIES]
    keep: set[tuple[str, str]] = set()
    for qid in smallest:
        first = sorted(per_query[qid], key=lambda docid: int(docid[1:]))[:PAIRS_PER_QUERY]
        keep.update((qid, docid) for docid in first)
    return keep


def main(benchmark: Path, challenge: Path, out: Path) -> None:
    human = show(challenge, CHALLENGE_COMMIT, HUMANS)
    keep = chosen(human)
    files = {"humans": human}
    for name, stem in SUBMISSIONS.items():
        path = f"submissions/scores/{stem}.txt"
        files[name] = show(benchmark, BENCHMARK_COMMIT, path)
    for name, lines in files.items():
        sliced = [line for line in lines if pair(line) in keep]
        # The three files label exactly the same pairs, once each, on the 0-3 scale.
        assert sorted(map(pair, sliced)) == sorted(keep), name
        assert {line.split()[3] for line in sliced} <= {"0", "1", "2", "3"}, name
        (out / f"{name}.qrels").write_text("\n".join(sliced) + "\n", encoding="utf-8")
        print(f"{name}.qrels: {len(sliced)} lines")


if __name__ == "__main__":
    here = Path(__file__).parent
    benchmark, challenge = Path(sys.argv[1]), Path(sys.argv[2])
    main(benchmark, challenge, Path(sys.argv[3]) if len(sys.argv) > 3 else here)
