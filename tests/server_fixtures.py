"""HTTP test helpers: bearer-token headers, the admin principal, the one error shape."""

from __future__ import annotations

from glassrag import Principal  # noqa: E402

ADMIN = Principal("root", admin=True)


def _error_shape(response, status: int) -> dict:  # type: ignore[no-untyped-def]
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"}
    assert {"code", "message", "status"} <= set(body["error"])
    assert body["error"]["status"] == status
    return body["error"]


def _auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}
