"""What the operator browser tests share: the operator's password, the admin login and the
documentation's screenshots."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from django.conf import settings

PASSWORD = "pw-operator-1"
# The screenshots docs/admin.md shows are taken by the browser tests; they are written there only when
# asked (ENGRAM_DOC_SCREENSHOTS=1), so that a test run leaves the tree as it was.
DOC_IMAGES = Path(settings.BASE_DIR) / "docs" / "images"
SCREENSHOTS = Path(settings.BASE_DIR) / "artifacts" / "screenshots"


def doc_screenshot(page: Any, name: str) -> Path:
    """The window as it is (1280x800 in these tests), as docs/images/<name>.png when asked."""
    folder = DOC_IMAGES if os.environ.get("ENGRAM_DOC_SCREENSHOTS") == "1" else SCREENSHOTS
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.png"
    page.screenshot(path=str(path))
    return path


def login(page: Any, base: str, username: str = "operator-a", password: str = PASSWORD) -> None:
    page.goto(f"{base}/admin/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("input[type=submit]")
    page.wait_for_url(f"{base}/admin/")
