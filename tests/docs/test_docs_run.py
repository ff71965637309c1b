"""The documentation runs: every fenced block of README.md and docs/*.md meant to run is run against
the live test server, as a reader would run it, so a doc cannot drift from the code unnoticed.

Shell blocks run in bash from the repository's root with `set -euo pipefail`, curl failing on an
HTTP error, the documented address (http://127.0.0.1:8000) replaced by the live server's and
.data/credentials.txt by a file holding the test tenant's key as DEMO_API_KEY; ENGRAM_URL and
ENGRAM_API_KEY are set as docs/agents.md tells the reader to. Python blocks run as written, the blocks
of one page in one namespace, in order (a reader's session), with the client's environment pointed
at the live server. `http` blocks (a method and path, then a JSON body) are sent with the test key.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import types
from pathlib import Path

import httpx
import pytest
from engram_client import EngramClient
from pytest_django.live_server_helper import LiveServer

from tests.conftest import TenantContext
from tests.docs.blocks import DOCUMENTS, ROOT, SHOWN, Block, blocks

DOCUMENTED_URL = "http://127.0.0.1:8000"
CREDENTIALS = ".data/credentials.txt"
SHELL_TIMEOUT = 60

# What a page's runnable blocks must print between them, as patterns (a run that prints nothing has not
# shown the reader what the page promises).
EXPECTED: dict[str, tuple[str, ...]] = {
    # the tenant the key belongs to, from GET /v1/tenant
    "README.md": (r'"slug":"tenant-a"',),
    "docs/agents.md": (
        # the first snippet prints the facts drawn from its episode
        # (a statement holding the value, then its confidence: the extractor's wording may change)
        r"PostgreSQL 16[^\n]* [01](\.[0-9]+)?\n",
        # what an answer used: the fact it restates and the episode it cites, not the one it leaves
        r"\['fact:1', 'episode:8'\]\n",
        # the example agent: a later conversation answered from memory, then the same without memory
        r"user:  Which database are we on\?\nagent: From what you told me before: [^\n]*PostgreSQL 16",
        r"user:  Which database are we on\?\nagent: Could you tell me a bit more",
    ),
}

ALL_BLOCKS = [block for path in DOCUMENTS for block in blocks(path)]
RUNNABLE = sorted({str(b.path.relative_to(ROOT)) for b in ALL_BLOCKS if b.runner})


def test_every_block_runs_or_says_why_not() -> None:
    unexplained = [
        f"{b.where} ({b.language or 'no info string'})"
        for b in ALL_BLOCKS
        if b.runner is None and b.language not in SHOWN and not b.not_run
    ]
    assert unexplained == [], "give each block a language the runner speaks, or a `<!-- not run: why -->` line"


def test_json_blocks_are_json() -> None:
    for block in ALL_BLOCKS:
        if block.language == "json" and block.not_run is None:
            json.loads(block.code)


def test_the_pages_have_blocks_that_run() -> None:
    assert {"README.md", "docs/agents.md", "docs/router.md"} <= set(RUNNABLE)


def _shell(block: Block, *, url: str, key: str, tmp_path: Path) -> str:
    credentials = tmp_path / "credentials.txt"
    credentials.write_text(f"DEMO_API_KEY={key}\n")
    code = block.code.replace(DOCUMENTED_URL, url).replace(CREDENTIALS, str(credentials))
    script = 'set -euo pipefail\ncurl() { command curl --silent --show-error --fail-with-body "$@"; }\n' + code
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "LANG": "C.UTF-8",
        "ENGRAM_URL": url,
        "ENGRAM_API_KEY": key,
    }
    # A session of its own, so that whatever the block starts is stopped with it when it overruns.
    bash = shutil.which("bash") or "/bin/bash"
    with subprocess.Popen(  # noqa: S603 - the documentation's own blocks
        [bash, "-c", script], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,
    ) as shell:  # fmt: skip
        try:
            out, err = shell.communicate(timeout=SHELL_TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(shell.pid, signal.SIGKILL)
            out, err = shell.communicate()
            pytest.fail(f"{block.where} ran over {SHELL_TIMEOUT} s:\n{out}\n{err}")
    assert shell.returncode == 0, f"{block.where} failed ({shell.returncode}):\n{out}\n{err}"
    return out


def _http(block: Block, *, url: str, key: str) -> str:
    request_line, _, body = block.code.partition("\n")
    method, path = request_line.split()
    response = httpx.request(
        method, url + path, json=json.loads(body) if body.strip() else None,
        headers={"Authorization": f"Bearer {key}"}, timeout=60,
    )  # fmt: skip
    assert response.status_code < 400, f"{block.where}: {response.status_code} {response.text}"
    return response.text


def _python(block: Block, module: types.ModuleType, capsys: pytest.CaptureFixture[str]) -> str:
    exec(compile(block.code, block.where, "exec"), module.__dict__)  # noqa: S102 - the documentation's own code
    return capsys.readouterr().out


@pytest.mark.live
@pytest.mark.parametrize("page", RUNNABLE)
def test_the_runnable_blocks_of_the_page_run(
    page: str,
    live_server: LiveServer,
    ctx_a: TenantContext,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    url, key = live_server.url, ctx_a.raw_key
    monkeypatch.setenv("ENGRAM_URL", url)
    monkeypatch.setenv("ENGRAM_API_KEY", key)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    # The page's blocks share one module, registered as modules are (LangGraph reads a state class's
    # annotations through its module).
    module = types.ModuleType("docs_page")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    printed = []
    for block in blocks(ROOT / page):
        if block.runner == "sh":
            printed.append(_shell(block, url=url, key=key, tmp_path=tmp_path))
        elif block.runner == "python":
            printed.append(_python(block, module, capsys))
        elif block.runner == "http":
            printed.append(_http(block, url=url, key=key))
    # A reader's session ends with its clients: close the ones the page left open, so that the live
    # server's threads let go of the connections they serve.
    for value in list(vars(module).values()):
        for client in (value, getattr(value, "client", None)):
            if isinstance(client, EngramClient):
                client.close()
    output = "\n".join(printed)
    for expected in EXPECTED.get(page, ()):
        assert re.search(expected, output), f"{page} did not print {expected!r}:\n{output}"
