#!/usr/bin/env python3
"""tests/integration/roundtrip_check.py — a run read back equals the run (record_roundtrip.sh).

  json A.json B.json          every key and value of bench's result JSON in report's, and no more
  html A.html B.html          every table cell and the charts' data of bench's page in report's,
                              but the command line and the cell that says what was read
  ... --alias X=Y             (json, html) X in report's strings reads as Y: the record file's name
                              when report read rank files and bench named the merged file
  has A.json PATH=VALUE ...   the value at a /-separated path (VALUE as JSON), e.g.
                              latscope/preconnect/connections=4; PATH? = present, PATH! = absent
Exit 0 when equal, 1 with every difference printed."""
import json
import re
import sys


def walk(a, b, path, out):
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if k not in b:
                out.append(f"{path}/{k}: only in bench's ({str(a[k])[:60]})")
            elif k not in a:
                out.append(f"{path}/{k}: only in report's ({str(b[k])[:60]})")
            else:
                walk(a[k], b[k], f"{path}/{k}", out)
    elif isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            out.append(f"{path}: {len(a)} items vs {len(b)}")
            return
        for i, (x, y) in enumerate(zip(a, b)):
            walk(x, y, f"{path}[{i}]", out)
    elif a != b or type(a) is not type(b):
        out.append(f"{path}: {str(a)[:60]} vs {str(b)[:60]}")


def page(path):
    text = open(path, encoding="utf-8").read()
    data = re.findall(r'<script[^>]*id="ls-data"[^>]*>(.*?)</script>', text, flags=re.S)
    body = re.sub(r"<script.*?</script>", "", text, flags=re.S)
    cells = re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", body, flags=re.S)
    return cells, data


def alias(node, pairs):
    if isinstance(node, dict):
        return {k: alias(v, pairs) for k, v in node.items()}
    if isinstance(node, list):
        return [alias(v, pairs) for v in node]
    if isinstance(node, str):
        for x, y in pairs:
            node = node.replace(x, y)
    return node


def main(argv):
    diffs = []
    pairs = []
    while "--alias" in argv:
        i = argv.index("--alias")
        pairs.append(tuple(argv[i + 1].split("=", 1)))
        del argv[i:i + 2]
    if argv[1] == "json":
        walk(json.load(open(argv[2])), alias(json.load(open(argv[3])), pairs), "", diffs)
    elif argv[1] == "html":
        (ca, da), (cb, db) = page(argv[2]), page(argv[3])
        cb, db = alias(cb, pairs), alias(db, pairs)
        if not ca or not da:
            diffs.append(f"{argv[2]}: no table cells or no chart data")
        # The two cells that differ by design: the command line, and what was read.
        if len(ca) != len(cb):
            diffs.append(f"{len(ca)} table cells vs {len(cb)}")
        else:
            for i in range(len(ca)):
                if ca[i].startswith("<code>latscope bench") and cb[i].startswith("<code>latscope report"):
                    continue
                if cb[i].startswith("read back from"):
                    continue
                if ca[i] != cb[i]:
                    diffs.append(f"cell {i}: {ca[i][:70]!r} vs {cb[i][:70]!r}")
        if da != db:
            diffs.append("the charts' data differ")
    elif argv[1] == "has":
        doc = json.load(open(argv[2]))
        for spec in argv[3:]:
            path, _, want = spec.partition("=")
            mode = path[-1] if path[-1] in "?!" else "="
            node, found = doc, True
            for part in path.rstrip("?!").split("/"):
                if isinstance(node, dict) and part in node:
                    node = node[part]
                else:
                    found = False
                    break
            if mode == "?" and not found:
                diffs.append(f"{path}: absent")
            elif mode == "!" and found:
                diffs.append(f"{path}: present ({str(node)[:60]})")
            elif mode == "=" and (not found or node != json.loads(want)):
                diffs.append(f"{path}: {str(node)[:60] if found else 'absent'}, expected {want}")
    for d in diffs:
        print(d)
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
