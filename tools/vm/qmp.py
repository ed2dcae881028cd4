#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Send one QMP command to a QEMU and print its answer.

    tools/vm/qmp.py SOCKET COMMAND [JSON-ARGUMENTS]

e.g. qmp.py out/host/qmp.sock set_link '{"name": "n0", "up": false}'.
Exit status 0 when QEMU returned, 1 on an error reply or no QEMU.
"""
import json
import socket
import sys


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    path, cmd = sys.argv[1], sys.argv[2]
    args = json.loads(sys.argv[3]) if len(sys.argv) > 3 else {}
    try:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(30)
        sock.connect(path)
    except OSError as e:
        sys.exit(f"qmp: cannot reach {path}: {e}")
    f = sock.makefile("rw")

    def call(execute, arguments=None):
        msg = {"execute": execute}
        if arguments:
            msg["arguments"] = arguments
        f.write(json.dumps(msg) + "\n")
        f.flush()
        while True:
            line = f.readline()
            if not line:
                sys.exit(f"qmp: {path} closed the connection")
            reply = json.loads(line)
            if "event" in reply:
                continue
            return reply

    f.readline()  # greeting
    call("qmp_capabilities")
    reply = call(cmd, args)
    if "error" in reply:
        print(f"qmp: {cmd}: {reply['error'].get('desc')}", file=sys.stderr)
        sys.exit(1)
    print(json.dumps(reply.get("return", {})))


if __name__ == "__main__":
    main()
