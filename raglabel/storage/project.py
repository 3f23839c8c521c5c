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
from raglabel.storage.schema import MIGRATIONS, SCHEMA_VERSION, script_statements

#: "RAGL": marks a SQLite file as a raglabel project (SQLite's application_id header).
APPLICATION_ID = 0x5241474C
#: How long a writer waits for another's transaction before giving up.
BUSY_TIMEOUT_S = 30.0


#: What SQLite keeps beside a project in WAL mode: the log of recent writes, and its index.
WAL_SUFFIXES = ("-wal", "-shm")
#: The commands that only read a project, named when one that writes is refused.
READING_COMMANDS = (
    "eval, report, export, backup, agree, progress, assign --list, assign --dry-run, audit --list"
)
#: SQLite's errors for a file, or the files beside it, that it may not create or write.
_READ_ONLY_ERRORS = ("SQLITE_READONLY", "SQLITE_CANTOPEN")


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


def _read_only_uri(path: Path, *, immutable: bool = False) -> str:
    """The URI that opens ``path`` so that nothing can be written through it."""
    # as_uri percent-encodes what a URI cannot hold as it is (?, #, %, spaces).
    uri = f"{path.absolute().as_uri()}?mode=ro"
    return f"{uri}&immutable=1" if immutable else uri


def _connect_read_only(path: Path, *, immutable: bool = False) -> sqlite3.Connection:
    conn = sqlite3.connect(
        _read_only_uri(path, immutable=immutable),
        uri=True,
        timeout=BUSY_TIMEOUT_S,
        isolation_level=None,
        check_same_thread=False,
    )
    conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
    return conn


def _companion(path: Path, suffix: str) -> Path:
    """A file SQLite keeps beside the project: ``project.db-wal``, ``project.db-shm``."""
    return path.with_name(path.name + suffix)


def _writable(path: Path) -> bool:
    """Whether this process may write ``path`` (a file) or create files in it (a folder).
    The file system's own answer: root may write anything, except on a read-only mount."""
    mode = os.W_OK | os.X_OK if path.is_dir() else os.W_OK
    return os.access(path, mode)


def _folder(path: Path) -> Path:
    return path.absolute().parent


def _write_refusal(path: Path) -> str | None:
    """Why this process may not write the project at ``path``, in words (None: it may,
    as far as permissions tell). SQLite writes the file itself and, in WAL mode, the
    ``-wal`` and ``-shm`` files beside it, creating them in the folder when missing."""
    reasons = [] if _writable(path) else [f"{path} is read-only"]
    companions = [_companion(path, suffix) for suffix in WAL_SUFFIXES]
    reasons += [f"{c} is read-only" for c in companions if c.exists() and not _writable(c)]
    if not all(c.exists() for c in companions) and not _writable(_folder(path)):
        reasons.append(
            f"the folder {_folder(path)} is read-only, and SQLite must create"
            f" {path.name}-wal and {path.name}-shm there to write to {path.name}"
        )
    return "; ".join(reasons) or None


def _refusal_error(path: Path, why: str) -> StorageError:
    return StorageError(
        f"nothing was saved: {why}. Commands that only read it work ({READING_COMMANDS});"
        f" to change it, make it writable, or work on a copy: raglabel backup {path} COPY"
    )


def _unreadable(path: Path, exc: sqlite3.Error) -> str:
    """What opening ``path`` to read it failed on, in words."""
    if not os.access(path, os.R_OK):
        return "cannot be read: permission denied"
    if getattr(exc, "sqlite_errorname", "") == "SQLITE_NOTADB":
        return f"is not a SQLite database ({exc})"
    return f"cannot be read ({exc})"


def _read_only_connection(path: Path) -> tuple[sqlite3.Connection, bool]:
    """A connection to ``path`` that cannot write, whose first read succeeded, and
    whether it reads the file as immutable.

    SQLite reads a WAL-mode file with the ``-wal`` and ``-shm`` files beside it,
    creating them when they are missing, which a read-only folder forbids. Where no
    ``-wal`` with content is there, every committed write is in the file itself, and
    ``immutable`` reads it with neither, and without locks: sound while nobody writes
    the file. Someone who may write the folder (its owner) could start writing while it
    is read, and such a reader would neither stop them nor see it: so every reader that
    reads this way says so (:attr:`Project.immutable_note`), and a backup checks the file
    did not change under it. Where a ``-wal`` holds writes, reading without it would
    silently miss them: refused, saying what to do.
    """
    try:
        conn = _connect_read_only(path)
    except sqlite3.Error as exc:
        raise InputError(path, _unreadable(path, exc)) from None
    try:
        _header(conn)  # SQLite opens the files at the first statement, not at connect
        return conn, False
    except sqlite3.Error as exc:
        conn.close()
        refused = getattr(exc, "sqlite_errorname", "").startswith(_READ_ONLY_ERRORS)
        if not refused or not os.access(path, os.R_OK):
            raise InputError(path, _unreadable(path, exc)) from None
    wal, shm = (_companion(path, suffix) for suffix in WAL_SUFFIXES)
    if wal.exists() and wal.stat().st_size > 0:
        cannot = (
            f"which it may not write ({shm.name} is read-only)"
            if _writable(_folder(path))
            else f"which it cannot create in the read-only folder {_folder(path)}"
        )
        raise InputError(
            path,
            f"{wal.name} beside it holds writes not yet copied into the file, and SQLite"
            f" reads them through {shm.name}, {cannot}; reading the file alone would miss"
            f" them. Copy {path.name} and {wal.name} together into a folder you can write"
            " and read the copy, or ask someone who can write the folder to open the"
            " project once with a command that writes (raglabel import, label), which"
            " folds the log into the file",
        )
    conn = _connect_read_only(path, immutable=True)
    try:
        _header(conn)
    except sqlite3.Error as exc:
        conn.close()
        raise InputError(path, _unreadable(path, exc)) from None
    return conn, True


class Project:
    """One project file, open. The app, the CLI and the tests all reach SQLite through it."""

    def __init__(self, conn: sqlite3.Connection, path: Path | None) -> None:
        self.path = path
        self.conn = conn
        self.backup: Path | None = None  # where the pre-upgrade copy went, if one was made
        # Opened read-only as it stands, without SQLite's locks (see open_read).
        self.immutable = False

    # -- opening ---------------------------------------------------------------------

    @classmethod
    def create(cls, path: str | Path) -> Project:
        """A new, empty project; an existing file is never overwritten."""
        path = Path(path)
        if path.exists():
            raise InputError(path, "already exists; raglabel init never overwrites a file")
        if not path.parent.is_dir():
            raise InputError(path, f"directory {str(path.parent)!r} does not exist")
        if not _writable(_folder(path)):
            raise StorageError(f"nothing was created: the folder {_folder(path)} is read-only")
        project = cls(_connect(path), path)
        project.conn.execute("PRAGMA journal_mode = WAL")
        project._migrate(from_version=0)
        return project

    @classmethod
    def open(cls, path: str | Path) -> Project:
        """An existing project to write to, upgraded (after a backup beside it) if an
        older raglabel made it. One this process may not write is refused before
        anything is read, saying which file or folder is read-only."""
        path = Path(path)
        if not path.is_file():
            raise InputError(path, "no such project file (create one with raglabel init)")
        why = _write_refusal(path)
        if why is not None:
            raise _refusal_error(path, why)
        conn: sqlite3.Connection | None = None
        try:
            conn = _connect(path)
            app_id, version = _header(conn)
        except sqlite3.DatabaseError as exc:
            if conn is not None:
                conn.close()
            if getattr(exc, "sqlite_errorname", "").startswith(_READ_ONLY_ERRORS):
                raise _refusal_error(path, f"{path} cannot be opened for writing ({exc})") from None
            raise InputError(path, _unreadable(path, exc)) from None
        project = cls(conn, path)
        try:
            _check_header(path, app_id, version)
        except InputError:
            conn.close()
            raise
        if conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
            conn.execute("PRAGMA journal_mode = WAL")
        if version < SCHEMA_VERSION:
            project._migrate(from_version=version, backup=True)
        return project

    @classmethod
    def open_read(cls, path: str | Path, *, upgrade: bool = True) -> Project:
        """An existing project for a command that only reads it, opened read-only
        (SQLite ``mode=ro``): nothing done through it can change the file, and a project
        in a folder, or a file, this process may not write reads as well as any (as
        immutable when it must: :func:`_read_only_connection`).

        A file an older raglabel made is read once upgraded: with ``upgrade``, by
        :meth:`open` (after a backup beside it) where this process may write it, and
        refused where it may not; without, it is returned as it is, for the caller to
        look at its version."""
        path = Path(path)
        if not path.is_file():
            raise InputError(path, "no such project file (create one with raglabel init)")
        conn, immutable = _read_only_connection(path)
        app_id, version = _header(conn)
        try:
            _check_header(path, app_id, version)
        except InputError:
            conn.close()
            raise
        if upgrade and version < SCHEMA_VERSION:
            conn.close()
            why = _write_refusal(path)
            if why is not None:
                raise InputError(
                    path,
                    f"was written by an older raglabel (schema {version}); it is read once"
                    f" upgraded to schema {SCHEMA_VERSION}, which writes it, but {why}: copy"
                    " it (with its -wal file, if there is one) into a folder you can write,"
                    " and read the copy",
                )
            return cls.open(path)
        project = cls(conn, path)
        project.immutable = immutable
        return project

    @property
    def immutable_note(self) -> str | None:
        """What reading the file as immutable assumes, for the reader to be told; None
        when it is read with SQLite's locks, as usual."""
        if not self.immutable:
            return None
        return (
            f"{self.path} is read as it stands (SQLite immutable): SQLite cannot make its"
            " -shm file in the read-only folder, so it takes no lock, and a change someone"
            " makes to the file while it is read is not seen and may make a read fail"
        )

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
        conn = sqlite3.connect(_read_only_uri(path), uri=True, check_same_thread=False)
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
        before = self._unlocked_state()
        try:
            partial.unlink(missing_ok=True)
            copy = sqlite3.connect(str(partial))
            try:
                self.conn.backup(copy)
                if self._unlocked_state() != before:
                    # Read without locks (immutable), the copy may mix two states.
                    raise StorageError(
                        f"nothing was saved: {self.path} changed while it was copied without"
                        " locks (its folder is read-only for this account); run the backup"
                        " again, or as someone who may write the folder"
                    )
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

    def _unlocked_state(self) -> tuple[float, int, bool] | None:
        """The file's modification time and size and whether a ``-wal`` or ``-shm`` is
        beside it, when it is read without locks (None otherwise): a writer changes one."""
        if not self.immutable or self.path is None:
            return None
        stat = self.path.stat()
        companions = any(_companion(self.path, suffix).exists() for suffix in WAL_SUFFIXES)
        return stat.st_mtime, stat.st_size, companions

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
            for step in MIGRATIONS:
                if step.version > version:
                    for statement in script_statements(step.sql):
                        self.conn.execute(statement)
                    if step.fill is not None:
                        step.fill(self.conn)
            self.conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            self.conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")


def _header(conn: sqlite3.Connection) -> tuple[int, int]:
    app_id = int(conn.execute("PRAGMA application_id").fetchone()[0])
    version = int(conn.execute("PRAGMA user_version").fetchone()[0])
    return app_id, version


def _check_header(path: Path, app_id: int, version: int) -> None:
    """A raglabel project this raglabel can read (an older one once upgraded)."""
    if app_id != APPLICATION_ID:
        raise InputError(path, "is a SQLite file but not a raglabel project")
    if version > SCHEMA_VERSION:
        raise InputError(
            path,
            f"was written by a newer raglabel (schema {version}; this one knows "
            f"{SCHEMA_VERSION}); upgrade raglabel to open it",
        )
