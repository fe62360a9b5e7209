#!/usr/bin/env python3
"""html_check.py — checks one latscope --html page (tests/integration/html_report.sh runs it).

  html_check.py static PAGE [RESULT.json]   no network reference; every data-key number equals
                                            the result JSON's value at that path (when given)
  html_check.py dom DOM.html               after the scripts: data-rendered == data-charts, no
                                            data-error; prints "HEIGHT RECTS-JSON" for the screenshot
  html_check.py pixels PNG RECTS-JSON      every chart region of the screenshot is drawn: several
                                            colours, and not all background
Exit 0 ok, 1 with one line per problem. Python's standard library only (zlib for the PNG)."""
import json, re, struct, sys, zlib

def fail(msgs):
    for m in msgs:
        print('html_check: ' + m)
    sys.exit(1 if msgs else 0)

def check_static(page, result=None):
    text = open(page, encoding='utf-8').read()
    bad = []
    for m in re.finditer(r'''\b(src|href)\s*=\s*["']?\s*([^"'\s>]*)''', text, re.I):
        if re.match(r'(https?:)?//', m.group(2), re.I):
            bad.append('a network reference: %s=%s' % (m.group(1), m.group(2)))
    for tag in ('<link', '<iframe', '<img', '@import', 'url('):
        if tag in text.split('<script>')[0]:
            bad.append('the page head/body has %s (everything must be inline)' % tag)
    if result:
        tree = json.load(open(result))
        cells = re.findall(r'data-key="([^"]+)">([^<]*)<', text)
        if len(cells) < 20:
            bad.append('only %d numbers marked with data-key' % len(cells))
        for key, shown in cells:
            node = tree
            for part in key.split('/'):
                node = node.get(part) if isinstance(node, dict) else None
            if shown in ('&mdash;', '—'):
                if isinstance(node, (int, float)) and not isinstance(node, bool):
                    bad.append('%s: the JSON has %r, the page none' % (key, node))
                continue
            if not isinstance(node, (int, float)) or isinstance(node, bool):
                bad.append('%s: the page says %s, the JSON has %r' % (key, shown, node))
                continue
            d = len(shown.split('.')[1]) if '.' in shown else 0
            if abs(round(node, d) - float(shown)) > 0.51 * 10 ** -d:
                bad.append('%s: the page says %s, the JSON %r' % (key, shown, node))
        print('html_check: %d numbers on the page equal the result JSON' % len(cells))
    fail(bad)

def check_dom(dom):
    text = open(dom, encoding='utf-8', errors='replace').read()
    body = re.search(r'<body([^>]*)>', text)
    if not body:
        fail(['no <body> in the DOM dump'])
    attrs = dict(re.findall(r'([\w-]+)="([^"]*)"', body.group(1)))
    bad = []
    if 'data-error' in attrs:
        bad.append('script error: ' + attrs['data-error'])
    want, got = attrs.get('data-charts'), attrs.get('data-rendered')
    if want is None or got != want:
        bad.append('charts drawn: %s of %s' % (got, want))
    if 'data-rects' not in attrs:
        bad.append('no data-rects: the script did not finish')
    if bad:
        fail(bad)
    rects = attrs['data-rects'].replace('&quot;', '"')
    print(attrs.get('data-height', '2000'), rects.replace(' ', ''))

def read_png(path):
    data = open(path, 'rb').read()
    if data[:8] != b'\x89PNG\r\n\x1a\n':
        fail(['%s is not a PNG' % path])
    pos, idat, w = 8, b'', 0
    while pos < len(data):
        n, kind = struct.unpack('>I4s', data[pos:pos + 8])
        chunk = data[pos + 8:pos + 8 + n]
        pos += 12 + n
        if kind == b'IHDR':
            w, h, depth, ctype, _, _, interlace = struct.unpack('>IIBBBBB', chunk)
            if depth != 8 or ctype not in (2, 6) or interlace:
                fail(['%s: PNG depth %d colour type %d interlace %d not read here' % (path, depth, ctype, interlace)])
            bpp = 3 if ctype == 2 else 4
        elif kind == b'IDAT':
            idat += chunk
    raw, stride = zlib.decompress(idat), w * bpp
    rows, prev = [], bytearray(stride)
    for y in range(h):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1: line[i] = (line[i] + a) & 255
            elif f == 2: line[i] = (line[i] + b) & 255
            elif f == 3: line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return w, h, bpp, rows

def check_pixels(png, rects):
    w, h, bpp, rows = read_png(png)
    bad, regions = [], json.loads(rects)
    if not regions:
        bad.append('no chart regions')
    for n, (x, y, rw, rh) in enumerate(regions):
        if y + rh > h or x + rw > w:
            bad.append('chart %d at %d,%d is outside the %dx%d screenshot' % (n, x, y, w, h))
            continue
        colours, inked = set(), 0
        for yy in range(y, y + rh, 2):
            row = rows[yy]
            for xx in range(x, x + rw, 2):
                px = row[xx * bpp:xx * bpp + 3]
                colours.add(px)
                inked += px != b'\xff\xff\xff'
        total = ((rh + 1) // 2) * ((rw + 1) // 2)
        if len(colours) < 4 or inked < total * 0.01:
            bad.append('chart %d at %d,%d looks blank: %d colours, %.2f%% not white' % (n, x, y, len(colours), 100.0 * inked / total))
    print('html_check: %d chart regions drawn in %s' % (len(regions), png))
    fail(bad)

if __name__ == '__main__':
    if len(sys.argv) >= 3 and sys.argv[1] == 'static':
        check_static(sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else None)
    elif len(sys.argv) == 3 and sys.argv[1] == 'dom':
        check_dom(sys.argv[2])
    elif len(sys.argv) == 4 and sys.argv[1] == 'pixels':
        check_pixels(sys.argv[2], sys.argv[3])
    else:
        print(__doc__)
        sys.exit(2)
