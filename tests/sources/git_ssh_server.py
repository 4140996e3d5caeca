"""An SSH server on loopback that serves Git repositories the way a Git host does (asyncssh, in a thread).

A client authenticates with its public key (only the keys given are authorised); the one command it may run
is ``git-upload-pack '<path>'``, which this server runs as git's own ``git-upload-pack`` on the repository
under ``root``, its standard streams joined to the channel (the SSH transport of git's pack protocol,
Documentation/technical/pack-protocol.txt in git's sources). ``GIT_PROTOCOL`` sent by the client is passed on.
"""
from __future__ import annotations

import asyncio
import os
import shlex
import threading
from pathlib import Path

import asyncssh


def new_key() -> asyncssh.SSHKey:
    return asyncssh.generate_private_key("ssh-ed25519")


class SSHGitServer:
    def __init__(self, root: Path, client_keys: list[asyncssh.SSHKey]):
        self.root = root
        self.host_key = new_key()
        self.authorised = asyncssh.import_authorized_keys(
            "".join(key.export_public_key().decode() for key in client_keys))
        self.commands: list[str] = []
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)

    def __enter__(self) -> SSHGitServer:
        self._thread.start()
        self.server = asyncio.run_coroutine_threadsafe(self._listen(), self.loop).result(30)
        self.port = self.server.sockets[0].getsockname()[1]
        return self

    def __exit__(self, *exc) -> None:
        async def stop():
            self.server.close()
            await self.server.wait_closed()
        asyncio.run_coroutine_threadsafe(stop(), self.loop).result(30)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)

    async def _listen(self):
        return await asyncssh.listen("127.0.0.1", 0, server_host_keys=[self.host_key], encoding=None,
                                     authorized_client_keys=self.authorised, process_factory=self._serve,
                                     allow_scp=False, agent_forwarding=False, x11_forwarding=False,
                                     line_editor=False)

    async def _serve(self, process: asyncssh.SSHServerProcess) -> None:
        command = process.command or ""
        self.commands.append(command)
        argv = shlex.split(command)
        if len(argv) != 2 or argv[0] != "git-upload-pack":
            process.stderr.write(b"only git-upload-pack is served here\n")
            process.exit(1)
            return
        env = {"PATH": os.environ["PATH"], "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}
        if process.env.get("GIT_PROTOCOL"):
            env["GIT_PROTOCOL"] = process.env["GIT_PROTOCOL"]
        child = await asyncio.create_subprocess_exec(
            "git-upload-pack", str(self.root / argv[1].lstrip("/")), env=env,
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        feeding = asyncio.ensure_future(self._feed(process, child))
        await asyncio.gather(self._copy(child.stdout, process.stdout), self._copy(child.stderr, process.stderr))
        code = await child.wait()
        feeding.cancel()
        process.exit(code)

    @staticmethod
    async def _feed(process, child) -> None:
        try:
            while data := await process.stdin.read(65536):
                child.stdin.write(data)
                await child.stdin.drain()
        except (BrokenPipeError, ConnectionResetError):
            pass
        finally:
            child.stdin.close()

    @staticmethod
    async def _copy(reader, writer) -> None:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()

    def url(self, name: str) -> str:
        return f"ssh://git@127.0.0.1:{self.port}/{name}"

    def known_hosts(self, key: asyncssh.SSHKey | None = None) -> str:
        public = (key or self.host_key).export_public_key().decode().strip()
        return f"[127.0.0.1]:{self.port} {public}"
