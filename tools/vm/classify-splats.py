#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Split a guest's kernel log into reports and sort them into known
(listed in known-splats.conf, with the reason) and unknown ones.

    classify-splats.py KNOWN_CONF LOG...

Prints every report line prefixed 'known <name>:' or 'unknown:'; exits 1
when any unknown report is present, else 0.
"""
import re
import sys

HEADER = re.compile(r'(BUG:|WARNING:|Oops|KASAN|kernel BUG|general protection|'
                    r'INFO: task .* blocked|INFO: possible .*(recursive|circular)|'
                    r'unreferenced object|UBSAN)')
# lines that belong to a report but do not start one
PART = re.compile(r'Call Trace:')
WINDOW = 160


def load_known(path):
    known = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith('#'):
                continue
            name, head, inside, why = line.split('|', 3)
            known.append((name, re.compile(head), re.compile(inside), why))
    return known


def main():
    known = load_known(sys.argv[1])
    bad = False
    seen = set()
    for path in sys.argv[2:]:
        try:
            with open(path, errors='replace') as f:
                lines = f.read().splitlines()
        except OSError:
            continue
        covered = set()
        for i, line in enumerate(lines):
            if not HEADER.search(line):
                continue
            body = '\n'.join(lines[i:i + WINDOW])
            verdict = None
            for name, head, inside, why in known:
                if head.search(line) and inside.search(body):
                    verdict = (name, why)
                    break
            key = (path, i)
            if verdict:
                covered.update(range(i, min(i + WINDOW, len(lines))))
                if key not in seen:
                    print(f'known {verdict[0]}: {path}: {line.strip()}  [{verdict[1]}]')
            else:
                bad = True
                print(f'unknown: {path}: {line.strip()}')
            seen.add(key)
        for i, line in enumerate(lines):
            if PART.search(line) and i not in covered and not HEADER.search(line):
                # a trace with no report header around it is a report too
                if not any(HEADER.search(x) for x in lines[max(0, i - 60):i]):
                    bad = True
                    print(f'unknown: {path}: {line.strip()}')
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
