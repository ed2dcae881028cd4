#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Split a guest's kernel log into reports and sort them into known
(listed in known-splats.conf, with the reason) and unknown ones.

    classify-splats.py [--series 6.1] KNOWN_CONF LOG...

Prints every report line prefixed 'known <name>:' or 'unknown:'; exits 1
when any unknown report is present, else 0. An entry of KNOWN_CONF applies
only to the kernel series it names (--series; without it, no entry
applies) and only up to its count per log file: one report more is
unknown.

Exits 2, with the reason on stderr, when it cannot tell: KNOWN_CONF
missing, unreadable or with a malformed line, a log that exists but cannot
be read, or any error of its own. A log that does not exist is none to
check (the guest wrote no dmesg.txt, no kmemleak report). Its callers take
only 0 and 1 for a verdict.
"""
import re
import sys

HEADER = re.compile(r'(BUG:|WARNING:|Oops|KASAN|kernel BUG|general protection|'
                    r'INFO: task .* blocked|INFO: possible .*(recursive|circular)|'
                    r'unreferenced object|UBSAN|Kernel panic|'
                    r'INFO: rcu_.* detected stall|watchdog: BUG: soft lockup)')
# lines that belong to a report but do not start one
PART = re.compile(r'Call Trace:')
WINDOW = 160


class CheckError(Exception):
    """The check itself failed: no verdict."""


def load_known(path):
    known = []
    try:
        with open(path) as f:
            lines = f.read().splitlines()
    except OSError as e:
        raise CheckError(f'{path}: {e.strerror}') from e
    for no, line in enumerate(lines, 1):
        line = line.strip()
        if not line or line.startswith('#'):
            continue
        where = f'{path}:{no}'
        fields = line.split('|', 5)
        if len(fields) != 6:
            raise CheckError(f'{where}: {len(fields)} fields, not 6 '
                             '(name|series|count|head|inside|why)')
        name, series, count, head, inside, why = fields
        if not name or not series or not why:
            raise CheckError(f'{where}: empty name, series or reason')
        if not count.isdigit() or int(count) < 1:
            raise CheckError(f'{where}: count {count!r} is not a number of 1 or more')
        try:
            known.append((name, series, int(count), re.compile(head),
                          re.compile(inside), why))
        except re.error as e:
            raise CheckError(f'{where}: bad regex: {e}') from e
    return known


def main():
    args = sys.argv[1:]
    series = None
    if len(args) >= 2 and args[0] == '--series':
        series = args[1]
        args = args[2:]
    if not args:
        raise CheckError('usage: classify-splats.py [--series 6.1] KNOWN_CONF LOG...')
    known = [k for k in load_known(args[0]) if k[1] == series]
    bad = False
    for path in args[1:]:
        try:
            with open(path, errors='replace') as f:
                lines = f.read().splitlines()
        except FileNotFoundError:
            continue
        except OSError as e:
            raise CheckError(f'{path}: {e.strerror}') from e
        covered = set()
        seen = {}
        for i, line in enumerate(lines):
            if not HEADER.search(line):
                continue
            body = '\n'.join(lines[i:i + WINDOW])
            verdict = None
            for name, _, count, head, inside, why in known:
                if head.search(line) and inside.search(body):
                    verdict = (name, count, why)
                    break
            if verdict:
                name, count, why = verdict
                seen[name] = seen.get(name, 0) + 1
                if seen[name] > count:
                    bad = True
                    print(f'unknown: {path}: {line.strip()}  '
                          f'[{name} seen {seen[name]} times, at most {count} allowed]')
                    continue
                covered.update(range(i, min(i + WINDOW, len(lines))))
                print(f'known {name}: {path}: {line.strip()}  [{why}]')
            else:
                bad = True
                print(f'unknown: {path}: {line.strip()}')
        for i, line in enumerate(lines):
            if PART.search(line) and i not in covered and not HEADER.search(line):
                # a trace with no report header around it is a report too
                if not any(HEADER.search(x) for x in lines[max(0, i - 60):i]):
                    bad = True
                    print(f'unknown: {path}: {line.strip()}')
    return 1 if bad else 0


if __name__ == '__main__':
    # any failure of the check is status 2, never the 1 of "reports found"
    # that an uncaught exception would exit with
    try:
        sys.exit(main())
    except CheckError as e:
        print(f'classify-splats.py: error: {e}', file=sys.stderr)
        sys.exit(2)
    except Exception as e:
        print(f'classify-splats.py: error: {type(e).__name__}: {e}', file=sys.stderr)
        sys.exit(2)
