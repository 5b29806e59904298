"""`make demo`'s kind of database (SQLite, `finops.settings`, no Redis) for tests that run `manage.py` as a user does.

Migrating a new SQLite database costs ~10 s of CPU (Django renders the model states of 38 migrations) and loading the
demo into it ~30 s more; four test modules need one. Each kind is built once per test run, by the first test that
asks, into the run's pytest temp directory (shared by pytest-xdist workers, a lock making the other wait), and every
test gets its own copy of the file: what a test does to its database stays in its copy.

Building runs the real commands (`migrate`, `load_demo`) in a subprocess with the environment `sqlite_env` gives,
so a copy is exactly what `make demo` leaves; `load_demo`'s output is kept beside the file for tests that read it.
"""

import fcntl
import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.demo_helpers import TODAY
from tests.demo_snapshot import run_dir

PROJECT_ROOT = Path(__file__).resolve().parent.parent
# Where `make demo PORT=18200` would serve the demo: the emails its load prints link there.
DEMO_URL = "http://127.0.0.1:18200"


def sqlite_env(database: Path) -> dict[str, str]:
    """The environment of `make demo`'s commands on `database`: the process's PATH and locale only (never this
    run's Django, database or pytest variables), DEBUG on, no Redis (tasks inline), no .env read."""
    env = {key: value for key, value in os.environ.items() if key in ("PATH", "HOME", "LANG", "LC_ALL")}
    env.update(
        DATABASE_URL=f"sqlite:///{database}",
        DJANGO_SETTINGS_MODULE="finops.settings",
        DJANGO_READ_DOT_ENV_FILE="0",
        DEBUG="1",
        REDIS_URL="",
        SECRET_KEY="sqlite-test-secret-key-0123456789-abcdefghijklmnopqrstuvwxyz",
        # A fixed key, so the copies of one build decrypt what it stored.
        FINOPS_ENCRYPTION_KEY="kOL8dHCzx48fB3gyjXsY1nidzh1ogUCTwB-7LV_9Zzo=",
    )
    return env


def manage(database: Path, *args: str, check: bool = True, timeout: int = 600) -> subprocess.CompletedProcess:
    """`python manage.py <args>` on `database`, as `make demo` runs it; a failure shows its stderr's end."""
    done = subprocess.run(
        [sys.executable, str(PROJECT_ROOT / "manage.py"), *args],
        env=sqlite_env(database),
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if check:
        assert done.returncode == 0, done.stderr[-3000:]
    return done


def _built(tmp_path_factory, name: str, build) -> Path:
    """The run's copy of database `name`, built by `build(path)` the first time (under a lock)."""
    folder = run_dir(tmp_path_factory)
    path = folder / f"{name}.sqlite3"
    with (folder / f"{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not path.exists():
            building = folder / f"{name}.building.sqlite3"
            building.unlink(missing_ok=True)
            build(building)
            building.rename(path)  # only a finished build is ever copied
    return path


def _migrated(tmp_path_factory) -> Path:
    return _built(tmp_path_factory, "migrated", lambda path: manage(path, "migrate", "--no-input", "-v", "0"))


def migrated_sqlite(tmp_path_factory, target: Path) -> Path:
    """A migrated, empty SQLite database of its own at `target` (the migrations' seed rows in it)."""
    shutil.copyfile(_migrated(tmp_path_factory), target)
    return target


def demo_sqlite(tmp_path_factory, target: Path) -> str:
    """`make demo`'s database at `target`: migrated, then the demo loaded for TODAY (tests/demo_helpers.py) as if
    served at DEMO_URL. Returns what `load_demo` printed."""

    name = f"demo-{TODAY.isoformat()}"
    printed = run_dir(tmp_path_factory) / f"{name}.out"

    def build(path: Path) -> None:
        shutil.copyfile(_migrated(tmp_path_factory), path)
        printed.write_text(
            manage(path, "load_demo", "--today", TODAY.isoformat(), "--url", DEMO_URL, timeout=1200).stdout
        )

    shutil.copyfile(_built(tmp_path_factory, name, build), target)
    return printed.read_text()
