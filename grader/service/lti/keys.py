"""LTI 1.3, the tool's side of trust: its key pairs, and the platforms the course registered (`lti.json`).

`grader lti keys` makes an RSA key pair named by a `kid` in the course's private
folder (private/lti/<kid>.pem, 0600); a second one is added beside the first
for a rotation, and `/lti/jwks` publishes every public key until the old file
is removed. The tool signs with the newest key (or the one a registration's
`private_key_file` names).

`lti.json` in the course folder lists the platforms the course trusts, in the
format `pylti1p3` users already have: `{"<issuer>": [{"client_id",
"auth_login_url", "auth_token_url", "key_set_url", "private_key_file",
"public_key_file", "deployment_ids", "default"}]}`. Every endpoint is read
from it; none is built in. A platform's signing keys are fetched from its
`key_set_url` and kept by `kid`; an unknown `kid` fetches the set again (at
most once a minute), so a platform's rotation is followed.
"""

from __future__ import annotations

import base64
import hashlib
import json
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grader.base import files
from grader.base.errors import GraderError
from grader.lesson import course

REGISTRATION = "lti.json"
KEYS = "lti"


class LtiRefused(GraderError):
    """An LTI message or setting refused, in one line a person can act on."""


# -- the tool's keys ----------------------------------------------------------------------------------------------
def folder() -> Path:
    """Where the tool's keys and its LTI records (contexts, users, grades sent) are kept: private/lti/."""
    found = course.private_folder() / KEYS
    files.make_dirs(found)
    return found


def make_key() -> str:
    """A new RSA key pair beside any earlier one; its kid."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    public = key.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    kid = base64.urlsafe_b64encode(hashlib.sha256(public).digest()[:12]).decode().rstrip("=")
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption())
    files.write_bytes(folder() / f"{kid}.pem", pem, private=True)
    return kid


def _keys() -> list[tuple[str, Any, float]]:
    """(kid, private key, made at) of every key the tool has, newest first."""
    from cryptography.hazmat.primitives import serialization

    found = []
    for path in folder().glob("*.pem"):
        try:
            key = serialization.load_pem_private_key(files.read_regular(path, 1 << 16), password=None)
        except (OSError, ValueError, TypeError):
            continue
        found.append((path.stem, key, path.stat().st_mtime))
    return sorted(found, key=lambda k: -k[2])


def signing_key(named: str | None = None) -> tuple[str, Any]:
    """(kid, private key) the tool signs with: the one a registration names, else the newest."""
    keys = _keys()
    if named:
        keys = [k for k in keys if k[0] == Path(named).stem] or keys
    if not keys:
        raise LtiRefused("the tool has no key: run `grader lti keys` first")
    return keys[0][0], keys[0][1]


def jwks() -> dict[str, Any]:
    """Every public key of the tool as a JSON Web Key Set."""
    from jwt.algorithms import RSAAlgorithm

    listed = []
    for kid, key, _ in _keys():
        jwk = json.loads(RSAAlgorithm.to_jwk(key.public_key()))
        listed.append(jwk | {"kid": kid, "alg": "RS256", "use": "sig"})
    return {"keys": listed}


# -- the platforms ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Platform:
    """One registration of a platform (an issuer and a client id) the course trusts."""

    issuer: str
    client_id: str
    auth_login_url: str
    auth_token_url: str
    key_set_url: str
    deployment_ids: tuple[str, ...] = ()
    private_key_file: str = ""
    auth_audience: str = ""
    default: bool = False


def platforms() -> list[Platform]:
    """Every registration in the course's lti.json (none when there is no file)."""
    root = course.current().root
    path = (root / REGISTRATION) if root else None
    if path is None or not path.is_file():
        return []
    try:
        data = json.loads(files.read_regular(path, 1 << 20), parse_constant=_no_constant)
    except (OSError, ValueError) as err:
        raise LtiRefused(f"{path} cannot be read as JSON ({type(err).__name__}): fix it, or remove it") from None
    if not isinstance(data, dict):
        raise LtiRefused(f"{path}: the registration is an object of issuers, each with a list of clients")
    found = []
    for issuer, entries in data.items():
        for entry in entries if isinstance(entries, list) else [entries]:
            missing = [k for k in ("client_id", "auth_login_url", "auth_token_url", "key_set_url")
                       if not isinstance(entry, dict) or not isinstance(entry.get(k), str)]
            if missing:
                raise LtiRefused(f"{path}: issuer {issuer!r} lacks {', '.join(missing)}")
            found.append(Platform(issuer, entry["client_id"], entry["auth_login_url"], entry["auth_token_url"],
                                  entry["key_set_url"], tuple(str(d) for d in entry.get("deployment_ids") or ()),
                                  str(entry.get("private_key_file") or ""), str(entry.get("auth_audience") or ""),
                                  bool(entry.get("default"))))
    return found


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON knows")


def platform(issuer: str, client_id: str | None = None) -> Platform:
    """The registration of this issuer (and client id, where given), or one line saying none is registered."""
    matches = [p for p in platforms() if p.issuer == issuer and (client_id is None or p.client_id == client_id)]
    if not matches:
        raise LtiRefused(f"no platform {issuer[:80]!r}" + (f" with client {client_id[:60]!r}" if client_id else "")
                         + f" is registered in the course's {REGISTRATION}")
    return next((p for p in matches if p.default), matches[0])


class PlatformKeys:
    """A platform's public keys by kid, fetched from its key_set_url and fetched again for an unknown kid."""

    REFETCH_S = 60.0

    def __init__(self) -> None:
        self.known: dict[tuple[str, str], Any] = {}
        self.fetched: dict[str, float] = {}
        self.lock = threading.Lock()

    def key(self, where: Platform, kid: str) -> Any:
        with self.lock:
            if (where.key_set_url, kid) not in self.known and \
                    time.monotonic() - self.fetched.get(where.key_set_url, -1e9) > self.REFETCH_S:
                self._fetch(where)
            try:
                return self.known[(where.key_set_url, kid)]
            except KeyError:
                raise LtiRefused(f"the launch is signed with key {kid[:40]!r}, which {where.issuer} does not "
                                 "publish: a foreign or retired key") from None

    def _fetch(self, where: Platform) -> None:
        import httpx
        from jwt.algorithms import RSAAlgorithm

        self.fetched[where.key_set_url] = time.monotonic()
        try:
            data = httpx.get(where.key_set_url, timeout=10).json()
        except (httpx.HTTPError, ValueError) as err:
            raise LtiRefused(f"the platform's keys could not be fetched from {where.key_set_url} "
                             f"({type(err).__name__})") from None
        for jwk in data.get("keys", []) if isinstance(data, dict) else []:
            if isinstance(jwk, dict) and jwk.get("kid") and jwk.get("kty") == "RSA":
                self.known[(where.key_set_url, str(jwk["kid"]))] = RSAAlgorithm.from_jwk(json.dumps(jwk))
