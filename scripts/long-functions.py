#!/usr/bin/env python3
"""long-functions.py — lists C functions longer than a limit (default 80 lines, body braces
included), so `make check-layout` can keep the ~80-line rule. Data tables (a static array
initialiser) are not functions and are not counted. Usage: long-functions.py [--max N] FILE..."""
import re, sys

def functions(path):
    lines = open(path, encoding='utf-8', errors='replace').read().split('\n')
    head = re.compile(r'^[A-Za-z_][\w \*,()\[\]]*\b(\w+)\s*\(')
    i = 0
    while i < len(lines):
        if lines[i] == '{' and i > 0:
            # the signature may span lines above: walk up to its first line
            j = i - 1
            while j > 0 and not head.match(lines[j]) and lines[j].startswith((' ', '\t')):
                j -= 1
            m = head.match(lines[j])
            k = i + 1
            while k < len(lines) and lines[k] != '}':
                k += 1
            if m and '=' not in lines[j]:
                yield m.group(1), j + 1, k - j + 1
            i = k
        i += 1

def main():
    args = sys.argv[1:]
    limit = 80
    if args[:1] == ['--max']:
        limit = int(args[1]); args = args[2:]
    bad = 0
    for path in args:
        for name, line, n in functions(path):
            if n > limit:
                print(f'{path}:{line}: {name}() is {n} lines (over {limit}): split it')
                bad = 1
    return bad

if __name__ == '__main__':
    sys.exit(main())
