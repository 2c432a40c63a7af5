"""Requests to the studio server as another program on this machine (or
another site's page in the browser) would make them: no token, a foreign
Origin or Host. Loopback only."""

import base64
import os
import socket
import urllib.error
import urllib.parse
import urllib.request


def port_and_token(url):
    parts = urllib.parse.urlsplit(url)
    return parts.port, urllib.parse.parse_qs(parts.query)["token"][0]


def get_status(url):
    """The HTTP status of a plain GET (no cookie)."""
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


def upgrade_status(port, path, origin, host=None):
    """The status of a WebSocket upgrade request (RFC 6455 §4.1) sent over a
    raw socket to 127.0.0.1:port; the connection is closed right after."""
    key = base64.b64encode(os.urandom(16)).decode()
    request = (f"GET {path} HTTP/1.1\r\n"
               f"Host: {host or f'127.0.0.1:{port}'}\r\n"
               "Upgrade: websocket\r\n"
               "Connection: Upgrade\r\n"
               f"Sec-WebSocket-Key: {key}\r\n"
               "Sec-WebSocket-Version: 13\r\n"
               f"Origin: {origin}\r\n\r\n")
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(request.encode())
        head = b""
        while b"\r\n" not in head:
            chunk = s.recv(1024)
            if not chunk:
                break
            head += chunk
    line = head.split(b"\r\n", 1)[0].decode(errors="replace")
    parts = line.split()
    if len(parts) < 2 or not parts[0].startswith("HTTP/") or not parts[1].isdigit():
        raise AssertionError(f"not an HTTP status line: {line!r}")
    return int(parts[1])
