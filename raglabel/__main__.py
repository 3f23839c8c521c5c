"""``python -m raglabel``."""

from raglabel.cli.main import main

raise SystemExit(main())
