"""An environment build inside its sandbox, which has no network: runs the given commands
(uv's install, then an import check) with their HTTPS proxy on a loopback port that relays
every connection to the index proxy's Unix socket, the only way out. Speaks the lab
protocol on file descriptor 3: `hello` first, `result` last.

Usage: python buildRelay.py SOCKET COMMANDS_JSON
"""
import json
import os
import socket
import subprocess
import sys
import threading

protocol = os.fdopen(3, "w", buffering=1)
protocol.write(json.dumps({"type": "hello"}) + "\n")
proxy_socket, commands = sys.argv[1], json.loads(sys.argv[2])

listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
listener.bind(("127.0.0.1", 0))
listener.listen(64)
port = listener.getsockname()[1]


def pipe(src, dst):
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    finally:
        try:
            dst.shutdown(socket.SHUT_WR)
        except OSError:
            pass


def serve():
    while True:
        client, _ = listener.accept()
        upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            upstream.connect(proxy_socket)
        except OSError:
            client.close()
            continue
        threading.Thread(target=pipe, args=(client, upstream), daemon=True).start()
        threading.Thread(target=pipe, args=(upstream, client), daemon=True).start()


threading.Thread(target=serve, daemon=True).start()
proxy = f"http://127.0.0.1:{port}"
env = dict(os.environ, HTTPS_PROXY=proxy, HTTP_PROXY=proxy, https_proxy=proxy, http_proxy=proxy, NO_PROXY="", no_proxy="")
code = 0
for command in commands:
    code = subprocess.run(command, env=env).returncode
    if code:
        print(f"{command[0]} exited with {code}", file=sys.stderr)
        break
protocol.write(json.dumps({"type": "result", "status": "completed" if code == 0 else "failed", "exit_code": code}) + "\n")
protocol.flush()
sys.exit(code)
