"""Build ``project-v4.db``: a project file as raglabel's schema version 4 wrote them.

Version 4 added the full-text index over passages (built here from the passages
stored); version 5 added answer systems, samples and answer grades, which a version-4
file lacks and its upgrade creates empty. The file holds version 2's content
(``make_v2_project``) at schema version 4. Rebuild it (only if this script changes) with:

    .venv/bin/python tests/data/make_v4_project.py
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import make_v1_project
import make_v3_project

TARGET = Path(__file__).with_name("project-v4.db")


def build(path: Path) -> None:
    make_v3_project.build(path, version=4)


if __name__ == "__main__":
    make_v1_project.main(build, TARGET)
