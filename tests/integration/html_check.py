#!/usr/bin/env python3
"""html_check.py — checks one latscope --html page (tests/integration/html_report.sh runs it).

  html_check.py static PAGE [RESULT.json [RECORD.jsonl]]
                                            no network reference; with the result JSON, every number
                                            in the page's tables is found by where it stands (its
                                            row's label and clock, its column, its words) and equals
                                            the JSON's value this check picks for that place itself:
                                            the data-key the page wrote is not trusted, and a number
                                            this check cannot place is a failure. With the record
                                            file (and the attribution file bench writes beside it):
                                            the attribution tables and bars equal the parts of the
                                            requests, the per-second charts' axis and output equal
                                            one-second buckets of the records' frames, and (vLLM's
                                            first-token rule) the TTFT and ITL-per-frame CDFs and
                                            the timeline's rows equal the records' stamps. Not
                                            checked: the in-flight values, the per-token ITL and
                                            client-delay CDFs, the tokens-per-frame bars.
  html_check.py dom DOM.html               after the scripts: data-rendered == data-charts, no
                                            data-error; prints "HEIGHT RECTS-JSON" for the screenshot
  html_check.py pixels PNG RECTS-JSON      every chart region of the screenshot is drawn: several
                                            colours, and not all background
  html_check.py crop PNG ROWS OUT          writes the top ROWS rows of PNG to OUT (a picture only)
Exit 0 ok, 1 with one line per problem. Python's standard library only (zlib for the PNG)."""
import json, os, re, struct, sys, zlib
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from numpy_pct import pct  # noqa: E402  (tests/lib: the one percentile rule)

def fail(msgs):
    for m in msgs:
        print('html_check: ' + m)
    sys.exit(1 if msgs else 0)

def at(tree, path):
    for part in path.split('/'):
        tree = tree.get(part) if isinstance(tree, dict) else None
    return tree

def plain(html):  # the text of an HTML fragment
    return re.sub(r'<[^>]*>', '', html).replace('&mdash;', '—').replace('&amp;', '&').strip()

class Page:
    """The body of a page, its number elements by position, and which of them a check placed."""
    def __init__(self, text):
        self.body = text.split('<script>')[0]
        self.nums = {m.start(): m.group(1) for m in re.finditer(r'<\w+ class="n"[^>]*>([^<]*)<', self.body)}
        self.placed, self.bad, self.n_checked = set(), [], 0

    def same(self, where, pos, shown, want, decimals=None):
        """The number shown at pos equals want (rounded as shown); '—' when want is None."""
        self.placed.add(pos)
        self.n_checked += 1
        shown = shown.strip().rstrip('%')
        if shown in ('—', '&mdash;'):  # the page says it has no value
            if isinstance(want, (int, float)) and not isinstance(want, bool):
                self.bad.append('%s: the page shows none, the independent value is %r' % (where, want))
            return
        if not isinstance(want, (int, float)) or isinstance(want, bool):
            self.bad.append('%s: the page shows %s, the independent value is %r' % (where, shown, want))
            return
        d = decimals if decimals is not None else (len(shown.split('.')[1]) if '.' in shown else 0)
        # Within half a unit of the last decimal shown, ties both ways: cJSON writes a double with
        # %.15g when that reads back within an epsilon, so a page's 2.3049999999999997 (2.30) is
        # 2.305 in the JSON file, which Python rounds to 2.31 (seen once on llama-server's page).
        if abs(want - float(shown)) > 0.5 * 10 ** -d * (1 + 1e-9) + 1e-12 * abs(want):
            self.bad.append('%s: the page shows %s, the independent value is %.6g' % (where, shown, want))

    def nums_in(self, start, end):  # the number elements between two offsets, in order
        return [(k, self.nums[k]) for k in sorted(self.nums) if start <= k < end]

def rows_of(body, start, end):
    """Each <tr> between start and end: [((row start, row end), [cell html, ...])]."""
    out = []
    for m in re.finditer(r'<tr>(.*?)</tr>', body[start:end], re.S):
        cells = re.findall(r'<t[dh][^>]*>(.*?)</t[dh]>', m.group(1), re.S)
        out.append(((start + m.start(), start + m.end()), cells))
    return out

def section(body, title):  # offsets of the section under <h2>title</h2>
    a = body.find('<h2>' + title)
    if a < 0:
        return None
    b = body.find('<h2>', a + 4)
    return a, b if b >= 0 else len(body)

def check_headline(pg, tree):
    """The headline table: a row's label and clock say which of the JSON's figures it shows."""
    sec = section(pg.body, 'Headline numbers')
    if not sec:
        pg.bad.append('no headline table')
        return
    clock = at(tree, 'latscope/rules/clock')
    rows = rows_of(pg.body, *sec)
    head = [plain(c) for c in rows[0][1]]
    names = {'TTFT': 'ttft', 'TPOT': 'tpot', 'ITL': 'itl', 'E2EL': 'e2el'}
    # The engine's own account (its fields), labelled with where it came from.
    engine = {'engine queue': 'queue', 'engine prefill': 'prompt', 'TTFT outside the engine': 'ttft_outside_prompt',
              'engine decode / token': 'decode_per_token', 'engine end-to-end': 'e2e'}
    sources = ' + '.join('%s %s' % (x.get('engine'), x.get('fields'))
                         for x in (at(tree, 'latscope/engine/sources') or []))
    for off, cells in rows[1:]:
        label, clk = plain(cells[0]), plain(cells[1])
        if label == 'slot wait':
            obj = 'latscope/slot_wait'
        elif label in engine:
            if clk != sources:
                pg.bad.append('headline row %s: labelled %r, the JSON\'s sources are %r' % (label, clk, sources))
            obj = 'latscope/engine/' + engine[label]
        elif clk == 'scheduled' and label in ('TTFT', 'E2EL'):
            obj = 'latscope/%s_by_clock/scheduled' % names[label]
        elif (clk == clock and label in ('TTFT', 'E2EL')) or (clk == 'any' and label in ('TPOT', 'ITL')):
            obj = None
        else:
            pg.bad.append('headline row %s / %s: not a row this check knows' % (label, clk))
            continue
        nums = pg.nums_in(*off)
        for (pos, shown), col in zip(nums, head[2:]):
            stat = col.lower() if col in ('mean', 'median') else 'p' + col[1:].replace('.', '_')
            if obj:
                want = at(tree, '%s/%s_ms' % (obj, stat))
            else:
                want = tree.get('%s_%s_ms' % (stat, names[label]))
                if label == 'ITL' and tree.get('latscope', {}).get('rules', {}).get('itl_percentiles'):
                    want = want if stat in ('mean', 'median') else None
            pg.same('headline %s (%s) %s' % (label, clk, col), pos, shown, want)

def check_words(pg, tree):
    """Numbers inside sentences: the title line, the big figures and the run's rows, by their words."""
    body = pg.body
    top = body[:body.find('<h2>')]
    sub = re.search(r'requests, <span[^>]*>(<span class="n"[^>]*>)', top)
    if sub:
        pos = top.index(sub.group(1), sub.start())
        pg.same('title: failed', pos, pg.nums[pos], tree.get('failed'))
    for m in re.finditer(r'<div>(<b class="n"[^>]*>[^<]*</b>)<span>([^<]*)</span></div>', top):
        label, pos = m.group(2), m.start(1)
        k = re.match(r'(TTFT|ITL|E2EL) P([\d.]+) ', label)
        if k:
            want = tree.get('p%s_%s_ms' % (k.group(2).replace('.', '_'), k.group(1).lower()))
        else:
            want = {'output tokens/s': tree.get('output_throughput'),
                    'requests/s': tree.get('request_throughput')}.get(label, 'unknown label ' + label)
        pg.same('big figure %s' % label, pos, pg.nums[pos], want)
    sec = section(body, 'The run')
    words = {'Request rate (req/s)': [('target', 'request_rate'), ('realised', 'latscope/realised_request_rate')],
             'Concurrency': [('limit', 'max_concurrency'), ('peak in flight', 'max_concurrent_requests'),
                             ("mean (Little's law)", 'latscope/littles_law_concurrency')],
             'Requests': [('', 'completed'), ('ok,', 'failed'), ('of', 'num_prompts'), ('duration', 'duration')]}
    for off, cells in rows_of(body, *sec) if sec else []:
        label = plain(cells[0])
        if label not in words:
            continue
        nums = pg.nums_in(*off)
        text = plain(cells[1])
        for (pos, shown), (word, key) in zip(nums, [w for w in words[label] if word_before(text, w[0], pos)]):
            pg.same('run %s: %s' % (label, word or key), pos, shown, at(tree, key))

def word_before(text, word, pos):  # a figure the row shows (target/limit are words, "inf"/"none" not)
    return not word or word in text and not re.search(re.escape(word) + r' (inf|none)\b', text)

def check_failures(pg, tree):
    sec = section(pg.body, 'Failures')
    fails = at(tree, 'latscope/failures') or {}
    seen = set()
    for off, cells in rows_of(pg.body, *sec)[1:] if sec else []:
        reason = plain(cells[0])
        seen.add(reason)
        for pos, shown in pg.nums_in(*off):
            pg.same('failures %s' % reason, pos, shown, fails.get(reason))
    if set(fails) != seen:
        pg.bad.append('failures table: reasons %s, the JSON has %s' % (sorted(seen), sorted(fails)))

def load_jsonl(path):
    return [json.loads(l) for l in open(path) if l.strip()]

def attr_samples(lines, win):
    """The samples of one window (TTFT, ITL, E2EL) of the measured requests of an attribution
    file: [(total ms, {part: ms})], as the section reads them (no warmup, no failed request)."""
    out = []
    def parts(o):
        return (o.get('total_ns', 0) / 1e6, {k[:-3]: v / 1e6 for k, v in o.items() if k.endswith('_ns') and k != 'total_ns'})
    for r in lines:
        if 'id' not in r or set(r.get('flags', [])) & {'warmup', 'not_ok'}:
            continue
        if win == 'ITL':
            out += [parts(g) for g in r.get('itl', [])]
        elif win.lower() in r:
            out.append(parts(r[win.lower()]))
    return out

def check_attr_tables(pg, lines):
    """Each attribution table: every part's percentiles and share, from the attribution file."""
    sec = section(pg.body, 'Where the latency went')
    tables = re.finditer(r'<table>(.*?)</table>', pg.body[sec[0]:sec[1]], re.S) if sec else []
    n_tables = 0
    for t in tables:
        rows = rows_of(pg.body, sec[0] + t.start(), sec[0] + t.end())
        head = [plain(c) for c in rows[0][1]]
        m = re.match(r'(TTFT|ITL|E2EL) \(ms, n=(\d+)\)', head[0])
        samples = attr_samples(lines, m.group(1))
        n_tables += 1
        if int(m.group(2)) != len(samples):
            pg.bad.append('attribution %s: the page says n=%s, the file has %d samples' % (m.group(1), m.group(2), len(samples)))
        total = sum(t for t, _ in samples)
        names = [plain(c[0]) for _, c in rows[1:]]
        if 'total' not in names or 'client' not in names:
            pg.bad.append('attribution %s: rows %s lack total or client' % (m.group(1), names))
        for off, cells in rows[1:]:
            part = plain(cells[0])
            v = [t if part == 'total' else p.get(part, 0.0) for t, p in samples]
            nums = pg.nums_in(*off)
            for (pos, shown), col in zip(nums, head[1:]):
                if col == 'share':
                    want = 100.0 * sum(v) / total if total > 0 else 0.0
                else:
                    want = pct(v, float(col[1:]))
                pg.same('attribution %s %s %s' % (m.group(1), part, col), pos, shown, want)
            if len(nums) != len(head) - 1:
                pg.bad.append('attribution %s %s: %d numbers under %d columns' % (m.group(1), part, len(nums), len(head) - 1))
    return n_tables

def band(samples, q):
    """The parts averaged over the samples ranked within 1% of n around percentile q of the total
    (report_attribution.c's bars): (mean total, {part: mean ms})."""
    s = sorted(samples, key=lambda x: x[0])
    n = len(s)
    pos, half = q / 100.0 * (n - 1), n / 100.0
    lo = int(pos - half + 0.5) if pos - half > 0 else 0
    hi = min(int(pos + half + 0.5), n - 1)
    hi = max(hi, lo)
    got = s[lo:hi + 1]
    parts = {}
    for _, p in got:
        for k, v in p.items():
            parts[k] = parts.get(k, 0.0) + v / len(got)
    return sum(t for t, _ in got) / len(got), parts

def chart_data(text):
    m = re.search(r'<script type="application/json" id="ls-data">(.*?)</script>', text, re.S)
    return json.loads(m.group(1).replace('<\\/', '</')) if m else []

def check_attr_bars(pg, lines, charts):
    stacks = [c for c in charts if c['kind'] == 'stack']
    wins = [w for w in ('TTFT', 'ITL', 'E2EL') if attr_samples(lines, w)]
    if len(stacks) != len(wins):
        pg.bad.append('attribution bars: %d charts for windows %s' % (len(stacks), wins))
    for c, w in zip(stacks, wins):
        samples = attr_samples(lines, w)
        for k, q in enumerate((50, 90, 99)):
            tot, parts = band(samples, q)
            if not re.match(r'P%g ≈ %.2f ms$' % (q, tot), c['labels'][k]):
                pg.bad.append('attribution bar %s P%g: labelled %r, the band of the file totals %.2f ms' % (w, q, c['labels'][k], tot))
            for p in c['parts']:
                if abs(p['values'][k] - round(parts.get(p['name'], 0.0), 3)) > 0.0011:
                    pg.bad.append('attribution bar %s P%g %s: %.3f, the file gives %.3f' % (w, q, p['name'], p['values'][k], parts.get(p['name'], 0.0)))

def check_per_second(pg, tree, rec, charts):
    """The per-second charts: their time axis (one-second buckets from the first start of an ok
    request, in s from the run's start) and the output tokens per bucket, from the records."""
    reqs = [r for r in rec if 'id' in r and not r.get('warmup')]
    end = [r for r in rec if 'latscope_run_end' in r]
    ok = [r for r in reqs if r.get('fail') == 'ok']
    lines = [c for c in charts if c['kind'] == 'lines']
    if not ok:
        return
    t0 = end[0]['start_ns'] if end and end[0].get('start_ns') else min(r['scheduled_ns'] for r in reqs if r['scheduled_ns'])
    first = min(r['started_ns'] for r in ok)
    for c in lines:
        want_x = [round((first - t0) / 1e9 + b, 2) for b in range(len(c['x']))]
        if [round(x, 2) for x in c['x']] != want_x:
            pg.bad.append('%s: its time axis starts at %s s, the records\' first start is at %.2f s' % (c['series'][0]['name'], c['x'][:2], want_x[0]))
    rules = tree.get('latscope', {}).get('rules', {})
    out = [c for c in lines if c['series'][0]['name'] == 'output tokens/s']
    if not out or rules.get('itl') != 'frame' or rules.get('ttft_gate') != 'choices':
        return  # per-token counts come from the token estimate: only the axis is checked
    bins = {}
    for r in ok:
        for f in r['frames']:
            if f[6] & 1 and f[0] >= first:  # a frame with choices is a token under these rules
                b = (f[0] - first) // 1000000000
                bins[b] = bins.get(b, 0) + 1
    got = out[0]['series'][0]['values']
    want = [bins.get(b, 0) for b in range(len(got))]
    if got != want or sum(bins.values()) != sum(want):
        pg.bad.append('output tokens/s: the page draws %s, the records\' frames give %s' % (got[:8], want[:8]))

def cdf_percents():  # report_html_page.c's: every half percent, finer in the tail
    return [i * 0.5 for i in range(199)] + [99.0 + i * 0.1 for i in range(11)]

def same_cdf(pg, what, pts, values):
    """A CDF series' points are [percentile of values (3 decimals), percent]."""
    want = [[round(pct(values, q), 3), round(q, 1)] for q in cdf_percents()]
    if len(pts) != len(want) or any(abs(a[0] - b[0]) > 0.0011 or abs(a[1] - b[1]) > 1e-9 for a, b in zip(pts, want)):
        diff = next(((a, b) for a, b in zip(pts, want) if abs(a[0] - b[0]) > 0.0011 or a[1] != b[1]), None)
        pg.bad.append('%s: %d points, first difference %s (page) vs %s (records)' % (what, len(pts), diff and diff[0], diff and diff[1]))

def check_distributions(pg, rec, charts, gate):
    """The TTFT CDFs (each clock), the ITL-per-frame CDF and the timeline's rows, from the records,
    under a profile whose first token is the first frame with choices (vLLM's)."""
    if gate != 'choices':
        return
    reqs = sorted((r for r in rec if 'id' in r and not r.get('warmup')), key=lambda r: r['id'])  # the run's order
    end = [r for r in rec if 'latscope_run_end' in r]
    tok = lambda r: [f[0] for f in r['frames'] if f[6] & 1]
    ok = [r for r in reqs if r.get('fail') == 'ok' and tok(r)]
    cdfs = [c for c in charts if c['kind'] == 'cdf']
    by_name = {e['name']: e['pts'] for c in cdfs for e in c['series']}
    for clock in ('scheduled', 'admitted', 'started'):
        if 'from ' + clock in by_name:
            same_cdf(pg, 'TTFT CDF from ' + clock, by_name['from ' + clock], [(tok(r)[0] - r[clock + '_ns']) / 1e6 for r in ok])
    if 'per frame' in by_name:
        same_cdf(pg, 'ITL CDF per frame', by_name['per frame'], [(b - a) / 1e6 for r in ok for a, b in zip(tok(r), tok(r)[1:])])
    tl = [c for c in charts if c['kind'] == 'timeline']
    if not tl:
        return
    t0 = end[0]['start_ns'] if end and end[0].get('start_ns') else min(r['scheduled_ns'] for r in reqs if r['scheduled_ns'])
    step = max(1, (len(reqs) + 1999) // 2000)  # LS_HTML_TIMELINE_MAX rows at most
    for row, rid, r in zip(tl[0]['rows'], tl[0]['ids'], reqs[::step]):
        good = r in ok
        last = max([r['finished_ns']] + [f[0] for f in r['frames']]) if good else r['finished_ns']
        s = [r['scheduled_ns'] or r['started_ns'], r['admitted_ns'], r['started_ns'], max(r['tls_ns'], r['connect_ns']),
             r['sent_ns'], tok(r)[0] if good else 0, last]
        for k in range(1, 7):
            s[k] = max(s[k], s[k - 1])
        want = [round((x - t0) / 1e6, 2) if x > t0 else 0 for x in s]
        if rid != r['id'] or any(abs(a - b) > 0.011 for a, b in zip(row, want)):
            pg.bad.append('timeline row of request %s: %s, the records give %s (request %s)' % (rid, row, want, r['id']))
            return
    if len(tl[0]['rows']) != len(reqs[::step]):
        pg.bad.append('timeline: %d rows for %d requests' % (len(tl[0]['rows']), len(reqs[::step])))

def check_records(pg, tree, record, text):
    rec = load_jsonl(record)
    charts = chart_data(text)
    attr = re.sub(r'\.jsonl$', '', record) + '.attribution.jsonl'
    try:
        lines = load_jsonl(attr)
    except FileNotFoundError:
        lines = None
    sec = section(pg.body, 'Where the latency went')
    if lines is None:
        if sec and '<table>' in pg.body[sec[0]:sec[1]]:
            pg.bad.append('attribution tables drawn, but no %s to check them with' % attr)
    else:
        n = check_attr_tables(pg, lines)
        check_attr_bars(pg, lines, charts)
        print('html_check: %d attribution tables and their bars equal %s' % (n, attr))
    check_per_second(pg, tree, rec, charts)
    check_distributions(pg, rec, charts, tree.get('latscope', {}).get('rules', {}).get('ttft_gate'))

def check_static(page, result=None, record=None):
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
        pg = Page(text)
        check_headline(pg, tree)
        check_words(pg, tree)
        check_failures(pg, tree)
        sec = section(pg.body, 'Where the latency went')
        if record:
            check_records(pg, tree, record, text)
        elif sec:  # the attribution tables are placed by check_records only
            pg.placed.update(k for k in pg.nums if sec[0] <= k < sec[1])
        for pos in sorted(set(pg.nums) - pg.placed):
            key = re.search(r'data-key="([^"]*)"', pg.body[pos - 200:pos + 1])
            pg.bad.append('a number this check does not place: %s (%s)' % (pg.nums[pos], key.group(1) if key else 'no data-key'))
        if pg.n_checked < 20:
            pg.bad.append('only %d numbers checked' % pg.n_checked)
        print('html_check: %d numbers on the page equal the values the check placed them at' % pg.n_checked)
        bad += pg.bad
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

def read_png(path, max_rows=None):
    """Its rows as bytes, the first max_rows only (the rest are not decoded). Filters None, Up and
    Sub undo a whole row at once as one integer (bytewise sums without carries: Chromium's
    screenshots are mostly Up rows); Average and Paeth go byte by byte."""
    data = open(path, 'rb').read()
    if data[:8] != b'\x89PNG\r\n\x1a\n':
        fail(['%s is not a PNG' % path])
    pos, idat, w = 8, [], 0
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
            idat.append(chunk)
    stride = w * bpp
    n_rows = h if max_rows is None else min(h, max_rows)
    raw = zlib.decompressobj().decompress(b''.join(idat), n_rows * (stride + 1))
    if len(raw) < n_rows * (stride + 1):
        fail(['%s: its image data ends before row %d' % (path, n_rows)])
    lo7, hi1 = int.from_bytes(b'\x7f' * stride, 'little'), int.from_bytes(b'\x80' * stride, 'little')
    full = (1 << (8 * stride)) - 1
    def add(x, y):  # every byte of x plus the same byte of y, mod 256
        return ((x & lo7) + (y & lo7)) ^ ((x ^ y) & hi1)
    rows, prev = [], bytes(stride)
    for y in range(n_rows):
        f, line = raw[y * (stride + 1)], raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)]
        if f == 0:
            out = line
        elif f == 1:  # a running sum per channel: log2(width) shifted adds
            x, s = int.from_bytes(line, 'little'), 8 * bpp
            while s < 8 * stride:
                x = add(x, (x << s) & full)
                s *= 2
            out = x.to_bytes(stride, 'little')
        elif f == 2:
            out = add(int.from_bytes(line, 'little'), int.from_bytes(prev, 'little')).to_bytes(stride, 'little')
        elif f in (3, 4):
            cur = bytearray(line)
            for i in range(bpp):  # no left neighbour: Average adds b / 2, Paeth b
                cur[i] = (cur[i] + (prev[i] >> 1 if f == 3 else prev[i])) & 255
            if f == 3:
                for i in range(bpp, stride):
                    cur[i] = (cur[i] + ((cur[i - bpp] + prev[i]) >> 1)) & 255
            else:
                for i in range(bpp, stride):
                    a, b, c = cur[i - bpp], prev[i], prev[i - bpp]
                    pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
                    cur[i] = (cur[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
            out = bytes(cur)
        else:
            fail(['%s: row %d has filter type %d' % (path, y, f)])
        rows.append(out)
        prev = out
    return w, h, bpp, rows

def crop_png(png, n_rows, out):  # the top n_rows of a screenshot, as a PNG of its own
    w, h, bpp, rows = read_png(png, n_rows)
    def chunk(kind, body):
        return struct.pack('>I', len(body)) + kind + body + struct.pack('>I', zlib.crc32(kind + body))
    ihdr = struct.pack('>IIBBBBB', w, len(rows), 8, 2 if bpp == 3 else 6, 0, 0, 0)
    idat = zlib.compress(b''.join(b'\0' + r for r in rows), 9)
    with open(out, 'wb') as f:
        f.write(b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', ihdr) + chunk(b'IDAT', idat) + chunk(b'IEND', b''))

def check_pixels(png, rects):
    regions = json.loads(rects)
    w, h, bpp, rows = read_png(png, max([y + rh for _, y, _, rh in regions], default=0))
    bad = []
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
        check_static(sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else None, sys.argv[4] if len(sys.argv) > 4 else None)
    elif len(sys.argv) == 3 and sys.argv[1] == 'dom':
        check_dom(sys.argv[2])
    elif len(sys.argv) == 4 and sys.argv[1] == 'pixels':
        check_pixels(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 5 and sys.argv[1] == 'crop':
        crop_png(sys.argv[2], int(sys.argv[3]), sys.argv[4])
    else:
        print(__doc__)
        sys.exit(2)
