"""The HTTP edge's shared parts: client addresses and lock-out, disconnects, languages of a socket, CSRF reasons."""
