"""A real OpenLDAP server for the LDAP tests: Debian's slapd on a free loopback port, with a seeded directory.

The configuration is written as slapd.conf, the seed loaded with ``slapadd`` and the configuration turned
into a cn=config folder by ``slaptest`` before slapd starts; all of it in a temporary folder removed afterwards. Run as
root (CI), slapd drops to ``nobody``; otherwise it runs as the calling user. Skips with the reason when
slapd is not installed (scripts/ensure_ldap.sh installs it).
"""
from __future__ import annotations

import base64
import hashlib
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

SLAPD = "/usr/sbin/slapd"
SUFFIX = "dc=zhiku,dc=test"
ADMIN_DN = f"cn=admin,{SUFFIX}"
ADMIN_PASSWORD = "admin-secret"
READER_DN = f"cn=reader,ou=services,{SUFFIX}"
READER_PASSWORD = "reader-secret"

# People and groups of the seeded directory: uid → (given name, surname, password), group cn → member uids.
PEOPLE = {"zhang.san": ("三", "张", "zs-directory-pw"), "li.si": ("四", "李", "ls-directory-pw"),
          "wang.wu": ("五", "王", "ww-directory-pw")}
GROUPS = {"kb-editors": ["zhang.san", "li.si"], "zhiku-admins": ["zhang.san"], "finance": ["wang.wu"]}


def person_dn(uid: str) -> str:
    return f"uid={uid},ou=people,{SUFFIX}"


def group_dn(cn: str) -> str:
    return f"cn={cn},ou=groups,{SUFFIX}"


def ssha(password: str) -> str:
    salt = os.urandom(8)
    return "{SSHA}" + base64.b64encode(hashlib.sha1(password.encode() + salt).digest() + salt).decode()


def _attr(name: str, value: str) -> str:
    """An LDIF line; values that are not plain ASCII are base64 (RFC 2849)."""
    if value.isascii():
        return f"{name}: {value}"
    return f"{name}:: {base64.b64encode(value.encode()).decode()}"


def seed_ldif() -> str:
    entries = [
        [f"dn: {SUFFIX}", "objectClass: dcObject", "objectClass: organization", "o: Zhiku test", "dc: zhiku"],
        *([f"dn: ou={ou},{SUFFIX}", "objectClass: organizationalUnit", f"ou: {ou}"] for ou in ("people", "groups", "services")),
        [f"dn: {READER_DN}", "objectClass: organizationalRole", "objectClass: simpleSecurityObject", "cn: reader",
         f"userPassword: {ssha(READER_PASSWORD)}"],
    ]
    for uid, (given, sn, password) in PEOPLE.items():
        entries.append([f"dn: {person_dn(uid)}", "objectClass: inetOrgPerson", f"uid: {uid}", _attr("cn", sn + given),
                        _attr("sn", sn), _attr("givenName", given), f"mail: {uid}@zhiku.test",
                        f"userPassword: {ssha(password)}"])
    for cn, members in GROUPS.items():
        entries.append([f"dn: {group_dn(cn)}", "objectClass: groupOfNames", f"cn: {cn}",
                        *(f"member: {person_dn(m)}" for m in members)])
    return "\n\n".join("\n".join(e) for e in entries) + "\n"


def slapd_conf(folder: Path) -> str:
    schema = Path("/etc/ldap/schema")
    return "\n".join([
        *(f"include {schema / name}.schema" for name in ("core", "cosine", "inetorgperson", "nis")),
        "modulepath /usr/lib/ldap", "moduleload back_mdb",
        f"pidfile {folder / 'slapd.pid'}",
        "database mdb", "maxsize 16777216", f'suffix "{SUFFIX}"', f'rootdn "{ADMIN_DN}"',
        f"rootpw {ssha(ADMIN_PASSWORD)}", f"directory {folder / 'data'}",
        # Passwords are only for binding; the service account reads everything else; people read themselves.
        "access to attrs=userPassword by anonymous auth by * none",
        f'access to * by dn.exact="{READER_DN}" read by self read by * none',
    ]) + "\n"


@dataclass
class Directory:
    uri: str
    folder: Path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run(args: list[str], **kwargs) -> None:
    done = subprocess.run(args, capture_output=True, text=True, timeout=60, **kwargs)
    if done.returncode != 0:
        pytest.fail(f"{' '.join(args[:3])}… failed: {done.stdout}{done.stderr}")


@contextmanager
def slapd_running():
    """Start slapd with the seed; yields a Directory; stops it and removes its folder afterwards."""
    if not (os.access(SLAPD, os.X_OK) and shutil.which("slapadd") and shutil.which("slaptest")):
        pytest.skip("slapd is not installed (scripts/ensure_ldap.sh installs Debian's slapd and ldap-utils)")
    folder = Path(tempfile.mkdtemp(prefix="zhiku-slapd-"))
    try:
        (folder / "data").mkdir()
        (folder / "slapd.d").mkdir()
        (folder / "slapd.conf").write_text(slapd_conf(folder))
        (folder / "seed.ldif").write_text(seed_ldif(), encoding="utf-8")
        # The seed first (slapadd creates the database), then slaptest checks the configuration against it
        # and writes it as the cn=config folder slapd starts from.
        _run(["slapadd", "-f", str(folder / "slapd.conf"), "-b", SUFFIX, "-l", str(folder / "seed.ldif")])
        _run(["slaptest", "-f", str(folder / "slapd.conf"), "-F", str(folder / "slapd.d")])
        drop = []
        if os.geteuid() == 0:  # never a directory server running as root
            nobody = pwd.getpwnam("nobody")
            folder.chmod(0o755)
            for path in [folder, *folder.rglob("*")]:
                os.chown(path, nobody.pw_uid, nobody.pw_gid)
            drop = ["-u", "nobody", "-g", "nogroup"]
        port = _free_port()
        uri = f"ldap://127.0.0.1:{port}"
        _run([SLAPD, "-F", str(folder / "slapd.d"), "-h", uri + "/", *drop])  # returns once it has forked
        yield Directory(uri=uri, folder=folder)
    finally:
        pid_file = folder / "slapd.pid"
        if pid_file.exists():
            pid = int(pid_file.read_text().strip())
            os.kill(pid, 15)
            for _ in range(100):
                try:
                    os.kill(pid, 0)
                except ProcessLookupError:
                    break
                time.sleep(0.05)
        shutil.rmtree(folder, ignore_errors=True)


def directory_modify(directory: Directory, dn: str, changes: list) -> None:
    """Change an entry as the directory's administrator (python-ldap, a real LDAP client)."""
    import ldap

    conn = ldap.initialize(directory.uri)
    try:
        conn.simple_bind_s(ADMIN_DN, ADMIN_PASSWORD)
        conn.modify_s(dn, changes)
    finally:
        conn.unbind_s()
