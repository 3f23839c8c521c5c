"""Opening a project file: connection settings, schema upgrades, write transactions and
WAL checkpoints.

Several annotators may grade one file from several processes. WAL lets readers and the
one writer proceed together; every write takes the write lock up front (``BEGIN
IMMEDIATE``) and holds it for milliseconds, and the busy timeout makes a second writer
wait for it instead of failing with "database is locked".
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from datetime import UTC, datetime
from pathlib import Path

from raglabel.errors import InputError, StorageError
from raglabel.storage.schema import MIGRATIONS, SCHEMA_VERSION

#: "RAGL": marks a SQLite file as a raglabel project (SQLite's application_id header).
APPLICATION_ID = 0x5241474C
#: How long a writer waits for another's transaction before giving up.
BUSY_TIMEOUT_S = 30.0


def now() -> str:
    """UTC time as ISO 8601 with milliseconds: sortable as text, exact enough for timing."""
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def _connect(path: Path | str) -> sqlite3.Connection:
    conn = sqlite3.connect(
        str(path), timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
    )
    conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
    conn.execute("PRAGMA foreign_keys = ON")
    # FULL makes each commit survive power loss, not only a crash; it costs well
    # under a millisecond a grade here (benchmarks/project.py, recording a grade).
    conn.execute("PRAGMA synchronous = FULL")
    return conn


class Project:
    """One project file, open. The app, the CLI and the tests all reach SQLite through it."""

    def __init__(self, conn: sqlite3.Connection, path: Path | None) -> None:
        self.path = path
        self.conn = conn
        self.backup: Path | None = None  # where the pre-upgrade copy went, if one was made

    # -- opening ---------------------------------------------------------------------

    @classmethod
    def create(cls, path: str | Path) -> Project:
        """A new, empty project; an existing file is never overwritten."""
        path = Path(path)
        if path.exists():
            raise InputError(path, "already exists; raglabel init never overwrites a file")
        if not path.parent.is_dir():
            raise InputError(path, f"directory {str(path.parent)!r} does not exist")
        project = cls(_connect(path), path)
        project.conn.execute("PRAGMA journal_mode = WAL")
        project._migrate(from_version=0)
        return project

    @classmethod
    def open(cls, path: str | Path) -> Project:
        """An existing project, upgraded (after a backup beside it) if an older raglabel made it."""
        path = Path(path)
        if not path.is_file():
            raise InputError(path, "no such project file (create one with raglabel init)")
        conn: sqlite3.Connection | None = None
        try:
            conn = _connect(path)
            app_id, version = _header(conn)
        except sqlite3.DatabaseError as exc:
            if conn is not None:
                conn.close()
            raise InputError(path, f"is not a SQLite database ({exc})") from None
        project = cls(conn, path)
        if app_id != APPLICATION_ID:
            conn.close()
            raise InputError(path, "is a SQLite file but not a raglabel project")
        if version > SCHEMA_VERSION:
            conn.close()
            raise InputError(
                path,
                f"was written by a newer raglabel (schema {version}; this one knows "
                f"{SCHEMA_VERSION}); upgrade raglabel to open it",
            )
        if conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
            conn.execute("PRAGMA journal_mode = WAL")
        if version < SCHEMA_VERSION:
            project._migrate(from_version=version, backup=True)
        return project

    @classmethod
    def memory(cls) -> Project:
        """A private in-memory project, for tests and throwaway evaluations."""
        project = cls(_connect(":memory:"), None)
        project._migrate(from_version=0)
        return project

    @classmethod
    def reader(cls, path: Path) -> Project:
        """A read-only second connection to a project this process has open, for reading
        in another thread: WAL lets it read while the first connection writes."""
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)
        return cls(conn, path)

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """One read transaction: every read in the block sees the file as it was at the
        first one, whatever other connections commit meanwhile."""
        self.conn.execute("BEGIN")
        try:
            yield
        finally:
            if self.conn.in_transaction:
                self.conn.execute("COMMIT")

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> Project:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the write-ahead log ---------------------------------------------------------

    def defer_checkpoints(self) -> None:
        """Stop SQLite's automatic checkpoint, which runs inside whichever commit crosses
        its threshold (a 100-200 ms stall on one grade); the owner calls ``checkpoint``
        at quiet moments instead."""
        self.conn.execute("PRAGMA wal_autocheckpoint = 0")

    def checkpoint(self, *, aside: bool = False) -> None:
        """Copy committed pages from the WAL into the database file. Passive, so it never
        waits for a writer nor blocks one; busy or read-only, it does nothing, and the
        next checkpoint (or the next opener) does the work. ``aside`` runs it on a
        connection of its own, so that any thread may call it."""
        if self.path is None:
            return
        conn = sqlite3.connect(str(self.path), timeout=1.0) if aside else self.conn
        try:
            with suppress(sqlite3.OperationalError):
                conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
        finally:
            if aside:
                conn.close()

    # -- writing ---------------------------------------------------------------------

    @contextmanager
    def write(self) -> Iterator[None]:
        """One short transaction holding the write lock from its first statement.

        It commits on leaving the block, so whatever the block wrote is on disk when the
        ``with`` statement returns; any exception rolls all of it back.
        """
        try:
            self.conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            raise self._refused(exc) from exc
        try:
            yield
            self.conn.execute("COMMIT")
        except BaseException as exc:
            if self.conn.in_transaction:
                # SQLite may have rolled back already (a full disk does that).
                with suppress(sqlite3.Error):
                    self.conn.execute("ROLLBACK")
            if isinstance(exc, sqlite3.OperationalError):
                raise self._refused(exc) from exc
            raise

    def _refused(self, exc: sqlite3.OperationalError) -> StorageError:
        """What the user reads when the file refuses a write, in words that say what
        to do; every caller has rolled back, so nothing was saved."""
        where = str(self.path) if self.path is not None else "the in-memory project"
        text = str(exc).lower()
        if "readonly" in text or "read-only" in text:
            why = f"{where} is read-only (or its folder is)"
        elif "full" in text:
            why = f"the disk holding {where} is full; free some space and try again"
        elif "locked" in text or "busy" in text:
            why = f"another process kept {where} locked for over {BUSY_TIMEOUT_S:.0f} s; try again"
        elif "i/o" in text:
            why = f"the disk reported an I/O error on {where}"
        else:
            why = f"{where} refused the write ({exc})"
        return StorageError(f"nothing was saved: {why}")

    def backup_to(self, target: Path) -> int:
        """A consistent copy of the whole project at ``target`` (which must not exist),
        taken while other processes may be writing; returns the events it holds."""
        if not target.parent.is_dir():
            raise InputError(target, f"folder {str(target.parent)!r} does not exist")
        partial = target.with_name(target.name + ".partial")
        try:
            partial.unlink(missing_ok=True)
            copy = sqlite3.connect(str(partial))
            try:
                self.conn.backup(copy)
                copy.execute("PRAGMA journal_mode = WAL")
                copy.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                events = int(copy.execute("SELECT count(*) FROM event").fetchone()[0])
            finally:
                copy.close()
            # Only a finished copy takes the name, and a hard link never replaces a file
            # that appeared meanwhile (rename would).
            os.link(partial, target)
        except FileExistsError:
            exists = "already exists; raglabel backup never overwrites a file"
            raise InputError(target, exists) from None
        except (sqlite3.Error, OSError) as exc:
            raise StorageError(f"nothing was saved: the copy to {target} failed ({exc})") from exc
        finally:
            for leftover in (partial, Path(f"{partial}-wal"), Path(f"{partial}-shm")):
                leftover.unlink(missing_ok=True)
        return events

    # -- schema ----------------------------------------------------------------------

    @property
    def version(self) -> int:
        return int(self.conn.execute("PRAGMA user_version").fetchone()[0])

    def _write_backup(self, version: int) -> Path:
        assert self.path is not None
        target = self.path.with_name(f"{self.path.name}.v{version}.bak")
        if target.exists():
            stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
            target = self.path.with_name(f"{self.path.name}.v{version}.{stamp}.bak")
        # Called holding the write lock, and SQLite will not back up from a connection in
        # a write transaction; a second connection reads the file as it stands, which
        # nobody can change until the lock is released.
        source = _connect(self.path)
        copy = sqlite3.connect(str(target))
        try:
            source.backup(copy)
        finally:
            copy.close()
            source.close()
        return target

    def _migrate(self, from_version: int, *, backup: bool = False) -> None:
        with self.write():
            # Another process may have upgraded the file while this one waited.
            version = max(from_version, self.version)
            if backup and version < SCHEMA_VERSION:
                # Under the write lock: of several processes opening an old file at once,
                # only the one that upgrades it backs it up, and never after an upgrade.
                self.backup = self._write_backup(version)
            # Imported here, not at the top: only a new or upgraded file needs it, and
            # its import would cost the grading app's start a tenth of a second.
            from sqlite_utils import Database

            # Inside a transaction sqlite-utils runs a script statement by statement,
            # where sqlite3's executescript() would COMMIT first.
            db = Database(self.conn, execute_plugins=False, recursive_triggers=False)
            for step in MIGRATIONS:
                if step.version > version:
                    db.executescript(step.sql)
                    if step.fill is not None:
                        step.fill(self.conn)
            self.conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            self.conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")


def _header(conn: sqlite3.Connection) -> tuple[int, int]:
    app_id = int(conn.execute("PRAGMA application_id").fetchone()[0])
    version = int(conn.execute("PRAGMA user_version").fetchone()[0])
    return app_id, version
