"""pip's configuration as uv's environment: uv installs what pip would, from the same places, but reads
none of pip's files nor PIP_* variables. Prints `export NAME=value` lines for the bootstrap to eval.

    eval "$(.venv/bin/python scripts/uv_env.py)"
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys

# pip's setting -> (uv's variable, uv's separator for a list); pip's lists are separated by whitespace.
SETTINGS = {
    "index-url": ("UV_INDEX_URL", None),
    "extra-index-url": ("UV_EXTRA_INDEX_URL", " "),
    "find-links": ("UV_FIND_LINKS", ","),
    "constraint": ("UV_CONSTRAINT", " "),
    "default-timeout": ("UV_HTTP_TIMEOUT", None),
    "cert": ("SSL_CERT_FILE", None),
}
# PIP_* variables first, then the [install] section, then [global]: pip's own order of precedence.
SCOPES = (":env:", "install", "global")


def pip_settings(listing: str) -> dict[str, str]:
    """`pip config list` (lines of `scope.name='value'`) as {name: value}, the strongest scope winning."""
    found: dict[tuple[str, str], str] = {}
    for line in listing.splitlines():
        match = re.fullmatch(r"(:env:|[\w-]+)\.([\w-]+)=(.*)", line.strip())
        if match:
            scope, name, value = match.groups()
            found[(scope, name)] = " ".join(shlex.split(value))
    settings: dict[str, str] = {}
    for name in SETTINGS:
        for scope in SCOPES:
            if (scope, name) in found:
                settings[name] = found[(scope, name)]
                break
    return settings


def uv_environment(settings: dict[str, str], environ: dict[str, str]) -> dict[str, str]:
    env = {
        # pip takes the best version that any of its indexes offers; uv's default stops at the first
        # index that has the package.
        "UV_INDEX_STRATEGY": "unsafe-best-match",
        # pip compiles the installed modules; so does uv when asked (a test run would compile them again
        # in every process, PYTHONDONTWRITEBYTECODE being set on some machines).
        "UV_COMPILE_BYTECODE": "1",
    }
    for name, value in settings.items():
        variable, separator = SETTINGS[name]
        if variable in environ:
            continue
        env[variable] = separator.join(value.split()) if separator else value
    return env


def main() -> None:
    listing = subprocess.run(
        [sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True, check=True
    ).stdout
    for name, value in uv_environment(pip_settings(listing), dict(os.environ)).items():
        print(f"export {name}={shlex.quote(value)}")


if __name__ == "__main__":
    main()
