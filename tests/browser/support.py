"""What the operator browser tests share: the operator's password and the admin login."""

from __future__ import annotations

from typing import Any

PASSWORD = "pw-operator-1"


def login(page: Any, base: str, username: str = "operator-a", password: str = PASSWORD) -> None:
    page.goto(f"{base}/admin/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("input[type=submit]")
    page.wait_for_url(f"{base}/admin/")
