"""Media files are served sandboxed: logged HTML can never run with the dashboard's origin."""

from __future__ import annotations

import hashlib

from tests.server.conftest import Api


def test_html_media_is_served_with_a_sandbox_csp(api: Api) -> None:
    """An HTML file comes back as text/html with a CSP `sandbox` (no allow-same-origin) and
    nosniff; other media carries the same policy."""
    page = b"<html><body><script>document.title = 'x'</script></body></html>"
    sha = hashlib.sha256(page).hexdigest()
    assert api.put(f"/api/v1/media/{sha}", content=page).status_code == 201
    got = api.get(f"/api/v1/media/{sha}.html")
    assert got.status_code == 200 and got.content == page
    assert got.headers["content-type"].startswith("text/html")
    csp = got.headers["content-security-policy"]
    directives = {d.strip().split(" ")[0]: d.strip() for d in csp.split(";")}
    assert directives["sandbox"] == "sandbox allow-scripts"
    assert "allow-same-origin" not in csp and "default-src 'none'" in csp
    assert got.headers["x-content-type-options"] == "nosniff"
    wav = b"RIFF....WAVEfmt "
    sha = hashlib.sha256(wav).hexdigest()
    assert api.put(f"/api/v1/media/{sha}.wav", content=wav).status_code == 201
    got = api.get(f"/api/v1/media/{sha}")
    assert got.headers["content-type"] in ("audio/x-wav", "audio/wav")
    assert got.headers["content-security-policy"] == csp
