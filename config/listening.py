"""When the server this process runs in listens: the moment background work may start (config/asgi.py).

daphne's command line (``daphne …``, ``python -m daphne …``: the module ``daphne.cli``) imports the
application, binds the sockets in ``Server.run`` and only then runs the Twisted reactor, so a callback the
reactor runs at its start comes after the bind. Without that command line (its ``runserver``, a script
importing config.asgi) there is no such moment: the event is set at once. ``daphne.server`` being imported
says nothing: the ``daphne`` app imports it in every Django process.
"""
from __future__ import annotations

import sys
import threading

# If the reactor has not started this long after the import (daphne failed to start and is
# exiting), the event is set anyway: waiting for ever would only hide the pending documents.
FALLBACK_SECONDS = 120.0


def once_listening() -> threading.Event:
    """An event set once this process's server listens (see the module's docstring)."""
    event = threading.Event()
    if "daphne.cli" in sys.modules:
        from twisted.internet import reactor  # the asyncio reactor daphne.server installed

        reactor.callWhenRunning(event.set)
        fallback = threading.Timer(FALLBACK_SECONDS, event.set)
        fallback.daemon = True
        fallback.start()
    else:
        event.set()
    return event
