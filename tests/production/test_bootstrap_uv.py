"""The set-up step installs with uv from where pip is configured to install from (scripts/uv_env.py):
pip's files and PIP_* variables become uv's variables, the strongest scope winning as in pip."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent.parent


def _uv_env() -> ModuleType:
    spec = importlib.util.spec_from_file_location("engram_uv_env", ROOT / "scripts" / "uv_env.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


LISTING = """\
:env:.find-links='/opt/wheels'
:env:.default-timeout='180'
global.constraint='/etc/xdg/pip/constraints.txt'
global.extra-index-url='file:///a/simple file:///b/simple'
global.find-links='/elsewhere'
global.index-url='https://mirror.invalid/simple'
install.index-url='https://install.invalid/simple'
global.cert='/etc/ssl/certs/ca.crt'
"""


def test_pip_settings_take_the_variable_over_the_install_section_over_global() -> None:
    settings = _uv_env().pip_settings(LISTING)
    assert settings == {
        "find-links": "/opt/wheels",
        "default-timeout": "180",
        "constraint": "/etc/xdg/pip/constraints.txt",
        "extra-index-url": "file:///a/simple file:///b/simple",
        "index-url": "https://install.invalid/simple",
        "cert": "/etc/ssl/certs/ca.crt",
    }


def test_uv_gets_pips_indexes_links_and_constraints_and_picks_the_best_version_across_indexes() -> None:
    uv_env = _uv_env()
    settings = uv_env.pip_settings(LISTING + "global.find-links='/w1 /w2'\n:env:.find-links='/w1 /w2'\n")
    env = uv_env.uv_environment(settings, {"SSL_CERT_FILE": "/already/set.pem"})
    assert env == {
        "UV_INDEX_STRATEGY": "unsafe-best-match",
        "UV_COMPILE_BYTECODE": "1",
        "UV_INDEX_URL": "https://install.invalid/simple",
        "UV_EXTRA_INDEX_URL": "file:///a/simple file:///b/simple",
        "UV_FIND_LINKS": "/w1,/w2",
        "UV_CONSTRAINT": "/etc/xdg/pip/constraints.txt",
        "UV_HTTP_TIMEOUT": "180",
    }


def test_a_machine_with_no_pip_configuration_gives_uv_its_defaults() -> None:
    uv_env = _uv_env()
    assert uv_env.uv_environment(uv_env.pip_settings(""), {}) == {
        "UV_INDEX_STRATEGY": "unsafe-best-match",
        "UV_COMPILE_BYTECODE": "1",
    }
