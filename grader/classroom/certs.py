"""A cluster only the course can use: a course CA and the certificates of mutual TLS for Dask.

`grader cluster certs DIR` makes a course CA (its key kept in `DIR/ca-private/`, needed only to make more
certificates, never on a worker) and one certificate and key per role, each signed by that CA:

    DIR/ca.pem                                   every machine: whom to trust
    DIR/scheduler.pem, DIR/scheduler-key.pem     the scheduler's machine
    DIR/worker.pem, DIR/worker-key.pem           each grading machine
    DIR/client.pem, DIR/client-key.pem           the machine that runs `grader batch`

Keys are written 0600, certificates and the CA 0644 in a folder 0755, whatever the umask (nobody else may add
a CA every machine trusts). With Dask's `tls://` and these files on both ends, a client or a worker whose
certificate the course CA did not sign cannot connect. Each certificate names its role (its common name, and
its extended key usage: the client's may only dial), and the cluster's guard (cluster_guard.py, a Dask preload
on the scheduler, the workers and the nannies) lets each role ask only for what it needs: a worker's
certificate, which sits on every grading machine, cannot submit work or run code anywhere. What TLS cannot
give: a course machine that is itself compromised can still forge what it grades.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grader.base import files
from grader.base.errors import GraderError

ROLES = ("scheduler", "worker", "client")
CA = "ca.pem"
CA_KEY = Path("ca-private") / "ca-key.pem"
DAYS = 400


@dataclass(frozen=True)
class Files:
    """One role's TLS files in a certificate folder."""

    ca: Path
    cert: Path
    key: Path

    @classmethod
    def of(cls, folder: Path, role: str) -> Files:
        folder = Path(folder)
        return cls(folder / CA, folder / f"{role}.pem", folder / f"{role}-key.pem")


def _key() -> Any:
    from cryptography.hazmat.primitives.asymmetric import ec

    return ec.generate_private_key(ec.SECP256R1())


def _pem_key(key: Any) -> bytes:
    from cryptography.hazmat.primitives import serialization

    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _certificate(subject: str, key: Any, issuer: Any, issuer_key: Any, ca: bool) -> Any:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    name = x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "inference-grader course"),
                      x509.NameAttribute(NameOID.COMMON_NAME, subject)])
    now = _dt.datetime.now(_dt.UTC)
    builder = (x509.CertificateBuilder().subject_name(name).issuer_name(issuer or name).public_key(key.public_key())
               .serial_number(x509.random_serial_number()).not_valid_before(now - _dt.timedelta(minutes=5))
               .not_valid_after(now + _dt.timedelta(days=DAYS))
               .add_extension(x509.BasicConstraints(ca=ca, path_length=0 if ca else None), critical=True))
    if ca:
        builder = builder.add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False),
                                        critical=True)
    elif subject.endswith(" client"):  # the course's client only dials: it can never serve as the scheduler
        builder = builder.add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=True)
    else:  # the scheduler and a worker both serve and dial (a worker listens for peers and dials the scheduler)
        builder = builder.add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH,
                                                                ExtendedKeyUsageOID.CLIENT_AUTH]), critical=True)
    return builder.sign(issuer_key or key, hashes.SHA256())


def make(folder: Path) -> list[Path]:
    """Make the course CA and a certificate per role in `folder`; an existing CA is never overwritten."""
    from cryptography.hazmat.primitives import serialization

    folder = Path(folder)
    if (folder / CA).exists() or (folder / CA_KEY).exists():
        raise GraderError(f"{folder / CA} already exists; keep it (every machine trusts it), or make new "
                          "certificates in another folder")
    files.trusted_dir(folder)  # whatever the umask: nobody else may add a CA every machine trusts
    ca_key = _key()
    ca = _certificate("inference-grader course CA", ca_key, None, None, ca=True)
    written = [files.write_bytes(folder / CA, ca.public_bytes(serialization.Encoding.PEM), mode=0o644)]
    (folder / CA_KEY).parent.mkdir(mode=0o700, exist_ok=True)
    files.write_bytes(folder / CA_KEY, _pem_key(ca_key), private=True)
    for role in ROLES:
        key = _key()
        cert = _certificate(f"inference-grader {role}", key, ca.subject, ca_key, ca=False)
        paths = Files.of(folder, role)
        written.append(files.write_bytes(paths.cert, cert.public_bytes(serialization.Encoding.PEM), mode=0o644))
        written.append(files.write_bytes(paths.key, _pem_key(key), private=True))
    return written


def security(folder: Path, role: str = "client") -> Any:
    """Dask's `Security` for one role from a certificate folder: encryption required, the course CA trusted."""
    from distributed import Security

    paths = Files.of(folder, role)
    missing = [str(p) for p in (paths.ca, paths.cert, paths.key) if not p.is_file()]
    if missing:
        raise GraderError(f"--tls {folder}: {', '.join(missing)} missing (make them with grader cluster certs DIR)")
    return Security(tls_ca_file=str(paths.ca), tls_client_cert=str(paths.cert), tls_client_key=str(paths.key),
                    tls_scheduler_cert=str(paths.cert), tls_scheduler_key=str(paths.key),
                    tls_worker_cert=str(paths.cert), tls_worker_key=str(paths.key), require_encryption=True)


def check_address(address: str, folder: Path | None) -> None:
    """Refuse, in one line, a scheduler address that is not `tls://` or a TLS batch without its certificates."""
    if not address.startswith("tls://"):
        raise GraderError(f"--scheduler {address}: a cluster runs students' code, so only the course may use it: "
                          "start it with TLS (grader cluster certs DIR; dask scheduler --protocol tls ...) and pass "
                          "--scheduler tls://HOST:PORT --tls DIR")
    if folder is None:
        raise GraderError("--scheduler tls://... needs --tls DIR, the folder grader cluster certs wrote")
