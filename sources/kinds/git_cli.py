"""The ``git`` command line, run the safe way for a repository an owner names (sources/kinds/git.py).

Every command has a timeout and an environment built from nothing (no user or system config, credential helpers,
prompts or hooks; only the transports the URL needs), so a hostile remote can neither run code nor ask for a
password. Credentials never reach the command line or the URL: an HTTPS token is an ``http.extraHeader`` given
through ``GIT_CONFIG_COUNT``, an SSH key a 0600 file named in ``GIT_SSH_COMMAND``. The clone is bare, shallow and
blob-less; the blobs a scan needs come in one ``git fetch --stdin``, read once their size is checked (docs/sources/git.md).
"""
from __future__ import annotations

import base64
import os
import re
import shlex
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass

from sources.kinds.base import SourceError


class OutOfTime(SourceError):
    """The scan's whole time budget is spent (raised before a command starts, not when one times out)."""

    def __init__(self) -> None:
        super().__init__("source_unreachable", "the Git source ran out of its time budget")


@dataclass(frozen=True)
class Entry:
    path: str
    oid: str


@dataclass(frozen=True)
class Access:
    """How to reach the remote: its URL, which transports git may use, and the decrypted credentials."""

    url: str
    protocols: tuple[str, ...]
    token: str = ""
    username: str = "x-access-token"
    ssh_key: str = ""
    known_hosts: str = ""


# (what git prints, the code it means); the first that matches wins. LC_ALL=C keeps git's messages English.
_STDERR_CODES = (
    ("authentication failed", "source_auth_failed"),
    ("could not read username", "source_auth_failed"),
    ("could not read password", "source_auth_failed"),
    ("permission denied (publickey", "source_auth_failed"),
    ("host key verification failed", "source_auth_failed"),
    ("the requested url returned error: 401", "source_auth_failed"),
    ("the requested url returned error: 403", "source_auth_failed"),
    ("remote branch", "git_branch_not_found"),
    ("repository not found", "git_repository_not_found"),
    ("' not found", "git_repository_not_found"),         # fatal: repository 'https://host/x/' not found
    ("does not appear to be a git repository", "git_repository_not_found"),
    ("the requested url returned error: 404", "git_repository_not_found"),
    ("could not resolve host", "source_unreachable"),
    ("could not resolve hostname", "source_unreachable"),
    ("connection refused", "source_unreachable"),
    ("connection timed out", "source_unreachable"),
    ("failed to connect", "source_unreachable"),
    ("operation too slow", "source_unreachable"),
)


_KEY_ARMOUR = re.compile(r"^\s*(-----BEGIN ([A-Z0-9 ]+)-----)(.*?)(-----END \2-----)\s*$", re.S)


def private_key_text(key: str) -> str:
    """The key as ssh reads it, even when a one-line box (a password input) dropped its line breaks: the armour
    lines on their own, the base64 body wrapped at 70 columns (OpenSSH's own width; PEM readers take it too)."""
    match = _KEY_ARMOUR.match(key.replace("\r", ""))
    if not match:
        return key.strip() + "\n"
    body = "".join(match[3].split())
    if ":" in match[3]:            # a PEM key with headers (an encrypted one): leave it as given
        return key.strip() + "\n"
    lines = [body[i:i + 70] for i in range(0, len(body), 70)]
    return "\n".join([match[1], *lines, match[4]]) + "\n"


def error_code(stderr: str) -> str:
    text = stderr.lower()
    for needle, code in _STDERR_CODES:
        if needle in text:
            return code
    return "git_failed"


class GitRepo:
    """One bare partial clone in a private temporary directory, removed by :meth:`close`."""

    def __init__(self, access: Access, *, stall_s: float, deadline: float):
        self.access = access
        self.stall_s = max(1, int(stall_s))
        self.deadline = deadline
        self.root = tempfile.mkdtemp(prefix="zhiku-git-")
        self.repo = os.path.join(self.root, "repo.git")
        self._env = self._environment()

    # --- the environment ----------------------------------------------------------------------------------------
    def _environment(self) -> dict[str, str]:
        config = [
            ("core.hooksPath", os.devnull),
            ("credential.helper", ""),
            ("http.followRedirects", "false"),     # a redirect would skip the address check (netguard.py)
            ("http.lowSpeedLimit", "1000"),         # abort a transfer slower than 1 kB/s ...
            ("http.lowSpeedTime", str(self.stall_s)),   # ... for the per-request timeout
            ("protocol.version", "2"),
            ("advice.detachedHead", "false"),
        ]
        if self.access.token:
            pair = f"{self.access.username}:{self.access.token}".encode()
            config.append(("http.extraHeader", "Authorization: Basic " + base64.b64encode(pair).decode()))
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": self.root,
            "LC_ALL": "C",
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_ALLOW_PROTOCOL": ":".join(self.access.protocols),
            "GIT_CONFIG_COUNT": str(len(config)),
        }
        for i, (key, value) in enumerate(config):
            env[f"GIT_CONFIG_KEY_{i}"] = key
            env[f"GIT_CONFIG_VALUE_{i}"] = value
        if self.access.ssh_key:
            env["GIT_SSH_COMMAND"] = self._ssh_command()
            env["GIT_SSH_VARIANT"] = "ssh"
        return env

    def _private_file(self, name: str, text: str) -> str:
        path = os.path.join(self.root, name)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text if text.endswith("\n") else text + "\n")
        return path

    def _ssh_command(self) -> str:
        key = self._private_file("id_key", private_key_text(self.access.ssh_key))
        known = self._private_file("known_hosts", self.access.known_hosts or "")
        # Without known_hosts the first key a host shows is accepted (trust on first use): a machine in the middle
        # on that first connection goes unnoticed. Giving known_hosts pins the host (docs/sources/git.md).
        checking = "yes" if self.access.known_hosts.strip() else "accept-new"
        return " ".join(shlex.quote(part) for part in (
            "ssh", "-F", os.devnull, "-i", key, "-o", "IdentitiesOnly=yes", "-o", "BatchMode=yes",
            "-o", f"UserKnownHostsFile={known}", "-o", f"StrictHostKeyChecking={checking}",
            "-o", f"ConnectTimeout={self.stall_s}", "-o", f"ServerAliveInterval={self.stall_s}",
            "-o", "ServerAliveCountMax=1"))

    # --- running git --------------------------------------------------------------------------------------------
    def _run(self, args: list[str], *, stdin: bytes | None = None, bare: bool = True) -> bytes:
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            raise OutOfTime()
        label = next(a for a in args if not a.startswith("-") and "=" not in a)
        command = ["git", *(["--git-dir", self.repo] if bare else []), *args]
        try:
            done = subprocess.run(command, input=stdin, capture_output=True, env=self._env, cwd=self.root,
                                  timeout=remaining, check=False)
        except subprocess.TimeoutExpired:
            raise SourceError("source_unreachable", f"git {label} timed out") from None
        except FileNotFoundError:
            raise SourceError("git_failed", "the git program is not installed on the server") from None
        if done.returncode != 0:
            stderr = done.stderr.decode("utf-8", "replace").strip()
            raise SourceError(error_code(stderr), f"git {label}: {stderr[-500:]}")
        return done.stdout

    def clone(self, branch: str) -> tuple[str, str]:
        """Clone the tip of ``branch`` (the remote's default when empty); answer (commit id, branch name)."""
        args = ["clone", "--bare", "--quiet", "--no-tags", "--single-branch", "--depth", "1", "--filter=blob:none"]
        if branch:
            args += ["--branch", branch]
        self._run([*args, "--", self.access.url, self.repo], bare=False)
        name = branch or self._run(["symbolic-ref", "--short", "-q", "HEAD"]).decode().strip()
        try:
            commit = self._run(["rev-parse", "--verify", "-q", "HEAD^{commit}"]).decode().strip()
        except SourceError:
            commit = ""       # an empty repository: no commit yet, no files
        return commit, name

    def tree(self) -> list[Entry]:
        """Every regular file of the tip with its blob id (symbolic links and submodules left out)."""
        out = self._run(["ls-tree", "-r", "-z", "--full-tree", "HEAD"])
        entries = []
        for record in out.split(b"\0"):
            if not record:
                continue
            meta, _, path = record.partition(b"\t")
            mode, kind, oid = meta.decode().split(" ")
            if kind == "blob" and mode in ("100644", "100755"):
                entries.append(Entry(path.decode("utf-8", "surrogateescape"), oid))
        return entries

    def fetch_blobs(self, oids: list[str]) -> None:
        """Bring the blobs still missing from the partial clone in one request."""
        if not oids:
            return
        listed = self._run(["rev-list", "--objects", "--missing=print", "HEAD"]).decode()
        missing = {line[1:] for line in listed.splitlines() if line.startswith("?")}
        wanted = [oid for oid in dict.fromkeys(oids) if oid in missing]
        if wanted:
            self._run(["-c", "fetch.negotiationAlgorithm=noop", "fetch", "--quiet", "--no-tags",
                       "--no-write-fetch-head", "--recurse-submodules=no", "--filter=blob:none", "--stdin",
                       "origin"], stdin="".join(oid + "\n" for oid in wanted).encode())

    def sizes(self, oids: list[str]) -> dict[str, int]:
        if not oids:
            return {}
        out = self._run(["cat-file", "--batch-check"], stdin="".join(oid + "\n" for oid in oids).encode())
        found = {}
        for line in out.decode().splitlines():
            parts = line.split()
            if len(parts) == 3 and parts[1] == "blob":
                found[parts[0]] = int(parts[2])
        return found

    def read(self, oid: str) -> bytes:
        return self._run(["cat-file", "blob", oid])

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)
