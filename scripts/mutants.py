#!/usr/bin/env python3
"""mutants.py — do the tests bite? Applies each realistic single-point bug of tests/mutants.list to a
scratch copy of the tree (never to the tree itself), builds it, runs the tests named for it, and
says which bugs the tests let through. Exit 0 when every bug was caught; 1 with the survivors
listed (a bug whose tests skip here, or whose text is no longer in its file, counts as not caught:
the list must be kept true).

  scripts/mutants.py [--list] [--keep] [NAME-GLOB ...]

The copy: every file git knows (tracked, and untracked not ignored) plus build/, mtimes kept, so a
mutant rebuilds one object and the links. Tests run inside the copy with LATSCOPE_* unset, so they
use the copy's binaries. Not part of `make test` (minutes: one build and one test per bug).

tests/mutants.list, one block per bug:
  [name]           what the bug is, in a few words
  stage: ...       where it lives (driver, backend, metrics, attribution, probes, watch, report,
                   html, mpi, sim, peer)
  file: PATH       the file it changes
  from: TEXT       text that occurs exactly once in the file (one line, verbatim)
  to: TEXT         what it becomes
  test: COMMAND    run from the copy's root; the bug is caught when it exits non-zero (77: skipped)
"""
import fnmatch, os, re, shutil, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LIST = os.path.join(ROOT, 'tests', 'mutants.list')
TEST_TIMEOUT_S = 600


def read_list(path):
    out, cur = [], None
    for n, line in enumerate(open(path, encoding='utf-8'), 1):
        line = line.rstrip('\n')
        if not line.strip() or line.startswith('#'):
            continue
        m = re.match(r'\[([\w.-]+)\]\s*(.*)$', line)
        if m:
            cur = {'name': m.group(1), 'what': m.group(2), 'line': n}
            out.append(cur)
            continue
        m = re.match(r'(stage|file|from|to|test): (.*)$', line)
        if not m or cur is None:
            raise SystemExit('%s:%d: not "[name] what" nor "key: value"' % (path, n))
        cur[m.group(1)] = m.group(2)
    for mu in out:
        missing = [k for k in ('stage', 'file', 'from', 'to', 'test') if k not in mu]
        if missing:
            raise SystemExit('%s:%d: [%s] lacks %s' % (path, mu['line'], mu['name'], ', '.join(missing)))
    return out


def copy_tree(dst):
    files = subprocess.run(['git', 'ls-files', '-co', '--exclude-standard', '-z'], cwd=ROOT, check=True,
                           capture_output=True).stdout.decode().split('\0')
    for f in filter(None, files):
        src = os.path.join(ROOT, f)
        if not os.path.isfile(src) or os.path.islink(src):
            continue
        os.makedirs(os.path.dirname(os.path.join(dst, f)), exist_ok=True)
        shutil.copy2(src, os.path.join(dst, f))
    if os.path.isdir(os.path.join(ROOT, 'build')):
        shutil.copytree(os.path.join(ROOT, 'build'), os.path.join(dst, 'build'), symlinks=True)


def run(cmd, cwd, env, timeout):
    try:
        p = subprocess.run(cmd, shell=True, cwd=cwd, env=env, capture_output=True, timeout=timeout)
        return p.returncode, (p.stdout + p.stderr).decode(errors='replace')
    except subprocess.TimeoutExpired as e:
        return 124, ((e.stdout or b'') + (e.stderr or b'')).decode(errors='replace')


def verdict(rc, out):
    """caught, survived or skipped, from a test's exit and (tests/run) its last line."""
    if rc == 77:
        return 'skipped'
    last = re.findall(r'^(\d+) passed, (\d+) failed, (\d+) skipped', out, re.M)
    if rc == 0 and last and int(last[-1][0]) == 0:
        return 'skipped'  # everything it selected skipped (or nothing was selected)
    return 'survived' if rc == 0 else 'caught'


def first_failure(out):
    for line in out.splitlines():
        if re.search(r'Assertion failed|FAIL|Error|html_check: (?!\d+ (numbers|attribution|chart))', line):
            return line.strip()[:160]
    return out.strip().splitlines()[-1][:160] if out.strip() else ''


def one(mu, scratch, env):
    path = os.path.join(scratch, mu['file'])
    try:
        text = open(path, encoding='utf-8').read()
    except OSError as e:
        return 'stale', str(e)
    if text.count(mu['from']) != 1:
        return 'stale', '"from" occurs %d times in %s' % (text.count(mu['from']), mu['file'])
    open(path, 'w', encoding='utf-8').write(text.replace(mu['from'], mu['to']))
    try:
        rc, out = run('make -j2 all unit-bins', scratch, env, 900)
        if rc:
            return 'stale', 'does not build: ' + first_failure(out)
        rc, out = run(mu['test'], scratch, env, TEST_TIMEOUT_S)
        return verdict(rc, out), first_failure(out)
    finally:
        open(path, 'w', encoding='utf-8').write(text)  # a newer mtime: the next build recompiles it


def main(argv):
    keep = '--keep' in argv
    globs = [a for a in argv if not a.startswith('--')]
    mutants = [m for m in read_list(LIST) if not globs or any(fnmatch.fnmatch(m['name'], g) for g in globs)]
    if '--list' in argv:
        for m in mutants:
            print('%-32s %-12s %s' % (m['name'], m['stage'], m['what']))
        print('%d mutants over %d stages' % (len(mutants), len({m['stage'] for m in mutants})))
        return 0
    scratch = tempfile.mkdtemp(prefix='latscope-mutants.', dir=os.environ.get('TMPDIR', '/tmp'))
    env = {k: v for k, v in os.environ.items() if not k.startswith('LATSCOPE_')}
    results = []
    try:
        copy_tree(scratch)
        for m in mutants:
            t = time.time()
            v, why = one(m, scratch, env)
            results.append((m, v))
            print('%-8s %-32s %-12s %5.0fs  %s' % (v, m['name'], m['stage'], time.time() - t, why), flush=True)
    finally:
        if keep:
            print('the copy stays at ' + scratch)
        else:
            shutil.rmtree(scratch, ignore_errors=True)
    bad = [(m, v) for m, v in results if v != 'caught']
    print('%d mutants, %d caught; %s' % (len(results), len(results) - len(bad),
          'not caught: ' + ', '.join('%s (%s)' % (m['name'], v) for m, v in bad) if bad else 'every one caught'))
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
