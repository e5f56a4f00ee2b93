"""One connection to a database the grader keeps its records in: SQLite (WAL) in a file, or PostgreSQL at a
`postgresql://` address (several servers sharing it), shared by a process's threads one transaction at a time,
its statements written with `?` for both.

A PostgreSQL address never carries its password: `ps` shows a command line to every user of the machine, and a
server's processes keep it. libpq reads the password from its own sources instead (~/.pgpass or PGPASSFILE,
PGPASSWORD, a service file), and an address with one is refused, saying so.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from grader.base import files
from grader.base.errors import GraderError

SCHEMA_LOCK = 0x67726164  # "grad": the advisory lock every server takes to make its tables


def is_address(where: str | Path) -> bool:
    """Whether `where` names a PostgreSQL database (else a SQLite file)."""
    return str(where).startswith(("postgresql://", "postgres://"))


class Database:
    """One connection, SQLite or PostgreSQL by its address; `what` names it in a refusal (`queue`), `error` is the
    refusal's kind."""

    def __init__(self, where: str | Path, what: str, error: type[GraderError] = GraderError) -> None:
        self.where = str(where)
        self.what = what
        self.error = error
        self.postgres = is_address(self.where)
        self._lock = threading.RLock()
        self._db: Any = self._connect()

    @property
    def order(self) -> str:
        """The column that orders a table's rows as they were added: SQLite's own `rowid`, PostgreSQL's `n` (a table
        made with `serial_column`)."""
        return "n" if self.postgres else "rowid"

    @property
    def serial_column(self) -> str:
        """The column a table whose rows are read in the order they were added gets on PostgreSQL (SQLite has
        `rowid`)."""
        return ", n BIGINT GENERATED ALWAYS AS IDENTITY" if self.postgres else ""

    def _connect(self) -> Any:
        if self.postgres:
            try:
                import psycopg
            except ImportError:
                raise GraderError(f"a PostgreSQL {self.what} needs psycopg: pip install '.[postgres]'") from None
            refuse_password(self.where)
            try:
                return psycopg.connect(self.where, autocommit=True, connect_timeout=10)
            except psycopg.Error as err:
                raise GraderError(f"the {self.what}'s database cannot be reached "
                                  f"({str(err).strip().splitlines()[0]})") from None
        files.make_dirs(Path(self.where).parent)
        try:
            db = sqlite3.connect(self.where, timeout=30, isolation_level=None, check_same_thread=False)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=FULL")  # a receipt promises the row survives a power cut
        except sqlite3.DatabaseError as err:
            raise self.error(f"{self.where} is not a {self.what} this tool can use ({err})") from None
        return db

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Cursor]:
        """One transaction, under this connection's lock: everything in it or nothing."""
        with self._lock:
            if self.postgres:
                with self._db.transaction():
                    yield Cursor(self._db.cursor(), True)
                return
            self._db.execute("BEGIN IMMEDIATE")  # writers queue here: a claim never interleaves with another
            try:
                yield Cursor(self._db.cursor(), False)
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    @contextlib.contextmanager
    def schema(self) -> Iterator[Cursor]:
        """A transaction to make tables in, one process at a time: PostgreSQL's `CREATE TABLE IF NOT EXISTS` is not
        safe against itself (two servers starting at once on an empty database: UniqueViolation on pg_type), so
        every maker waits on one advisory lock, held until its transaction ends."""
        with self.writing(SCHEMA_LOCK) as db:
            yield db

    @contextlib.contextmanager
    def writing(self, lock: int) -> Iterator[Cursor]:
        """A transaction that writes one writer at a time, on every server of the database: SQLite's writers queue
        at BEGIN IMMEDIATE; PostgreSQL's on the advisory lock `lock`, held until the transaction ends (a check and
        the write it allows are never split by another writer's)."""
        with self.transaction() as db:
            if self.postgres:
                db.execute("SELECT pg_advisory_xact_lock(?)", (lock,))
            yield db

    def columns(self, db: Cursor, table: str) -> set[str]:
        """The columns a table has now (for a schema that grew since a database was made)."""
        if self.postgres:
            rows = db.all("SELECT column_name FROM information_schema.columns WHERE table_name=?", (table,))
            return {str(row[0]) for row in rows}
        return {str(row[1]) for row in db.all(f"PRAGMA table_info({table})", ())}

    def close(self) -> None:
        with self._lock:
            self._db.close()


class Held:
    """Short-lived values every server on one database shares, each kept until its time: an LMS login waiting for
    its launch, a launch's used nonce, a deep-linking choice, a session a launch opened. A login on one server is
    launched on another; a replayed nonce is refused by whichever server it reaches. Wall-clock times: the servers'
    clocks agree (NTP), their monotonic clocks do not."""

    TABLE = ("CREATE TABLE IF NOT EXISTS held (kind TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, "
             "until DOUBLE PRECISION NOT NULL, PRIMARY KEY (kind, key))")

    def __init__(self, db: Database) -> None:
        self.db = db
        with db.schema() as cursor:
            cursor.execute(self.TABLE)

    def put(self, kind: str, key: str, value: str, seconds: float) -> None:
        """Keep `value` under (kind, key) for `seconds` (what had expired is let go on the way)."""
        now = time.time()
        with self.db.transaction() as cursor:
            cursor.execute("DELETE FROM held WHERE until < ?", (now,))
            cursor.execute("DELETE FROM held WHERE kind=? AND key=?", (kind, key))
            cursor.execute("INSERT INTO held (kind, key, value, until) VALUES (?, ?, ?, ?)",
                           (kind, key, value, now + seconds))

    def get(self, kind: str, key: str) -> str | None:
        """The value kept under (kind, key), while it lasts."""
        with self.db.transaction() as cursor:
            row = cursor.one("SELECT value FROM held WHERE kind=? AND key=? AND until >= ?", (kind, key, time.time()))
        return str(row[0]) if row else None

    def take(self, kind: str, key: str) -> str | None:
        """The value kept under (kind, key), once: whoever takes it first has it, on any server."""
        with self.db.transaction() as cursor:
            row = cursor.one("SELECT value, until FROM held WHERE kind=? AND key=?", (kind, key))
            if row is not None:
                cursor.execute("DELETE FROM held WHERE kind=? AND key=?", (kind, key))
        return str(row[0]) if row is not None and float(row[1]) >= time.time() else None

    def first(self, kind: str, key: str, seconds: float) -> bool:
        """Whether (kind, key) is seen here for the first time in `seconds` (then it is kept as seen)."""
        with self.db.transaction() as cursor:
            row = cursor.one("SELECT until FROM held WHERE kind=? AND key=?", (kind, key))
            if row is not None and float(row[0]) >= time.time():
                return False
            cursor.execute("DELETE FROM held WHERE kind=? AND key=?", (kind, key))
            cursor.execute("INSERT INTO held (kind, key, value, until) VALUES (?, ?, '', ?)",
                           (kind, key, time.time() + seconds))
        return True


def refuse_password(address: str) -> None:
    """A database address that carries its password is refused in one line saying where the password goes."""
    from psycopg import conninfo

    try:
        given = conninfo.conninfo_to_dict(address)
    except Exception:  # psycopg's own parser says what is wrong when it connects
        return
    if given.get("password"):
        raise GraderError("the database address carries a password, which `ps` shows to every user of this machine: "
                          "give postgresql://USER@HOST/DB and put the password in ~/.pgpass (or the file PGPASSFILE "
                          "names: HOST:PORT:DB:USER:PASSWORD, mode 0600), in PGPASSWORD, or in a service file "
                          "(postgresql:///?service=NAME)")


class Cursor:
    """One transaction's statements, written with `?` for both databases."""

    def __init__(self, cursor: Any, postgres: bool) -> None:
        self.cursor, self.postgres = cursor, postgres

    def execute(self, sql: str, params: tuple[Any, ...] = ()) -> int:
        self.cursor.execute(sql.replace("?", "%s") if self.postgres else sql, params)
        return int(self.cursor.rowcount)

    def one(self, sql: str, params: tuple[Any, ...]) -> Any:
        self.execute(sql, params)
        return self.cursor.fetchone()

    def all(self, sql: str, params: tuple[Any, ...]) -> list[Any]:
        self.execute(sql, params)
        return list(self.cursor.fetchall())


def errors() -> tuple[type[BaseException], ...]:
    """The errors either database raises (psycopg's where it is installed)."""
    try:
        import psycopg
    except ImportError:
        return (sqlite3.Error,)
    return (sqlite3.Error, psycopg.Error)


def disk_full(err: BaseException) -> bool:
    """Whether a database's error says its disk is full, told apart by its code, not its text: SQLite's
    `SQLITE_FULL` (the disk, or `max_page_count`), PostgreSQL's SQLSTATE 53100 (`disk_full`)."""
    if isinstance(err, sqlite3.Error):
        return getattr(err, "sqlite_errorname", None) == "SQLITE_FULL"
    return getattr(err, "sqlstate", None) == "53100"
