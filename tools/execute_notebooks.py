"""Execute notebooks in place with their default parameters, so they are committed with outputs.

    .venv/bin/python tools/execute_notebooks.py                  # every notebook under nbs/
    .venv/bin/python tools/execute_notebooks.py nbs/core/09b_graph.ipynb nbs/eval

Each notebook runs the way tests/test_notebooks.py runs it (nbdev's in-process shell from execnb,
the working directory set to the notebook's folder, `IN_TEST=1`): code cells flagged with one of
the `tst_flags` of pyproject.toml (notest, slow, gpu) are not run and keep the outputs they have
(from a full run, e.g. papermill at full size; `--clear-skipped` empties them), then `nbdev-clean`
normalises the file. The run is made repeatable: progress bars are off, warnings are
recorded instead of printed (whether a warning shows depends on what ran earlier in the same
process), and absolute paths of the machine are saved as `<repo>`, `<home>` or `<tmp>`. Figures are
saved small: 80 dpi PNGs with a 256-colour palette.

tests/test_notebooks.py executes each notebook once and compares the fresh outputs with the saved
ones through `masked_outputs`, which hides what changes from run to run by design (timings, memory
addresses, temporary paths, dates, ports); figures are not compared, but they must belong to the
notebook: a run fails when a cell starts with a pyplot figure already open (it would be shown as that
cell's output), when the notebook leaves one open or switches matplotlib's backend (the next notebook
run in the same process would show it), and an image may only come from a cell that draws (`DRAWS`).
"""
from __future__ import annotations
import argparse, json, os, re, subprocess, sys, tempfile, traceback, warnings
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

# Set both here and by the test, before a notebook runs.
NOTEBOOK_ENV = {'IN_TEST': '1', 'TQDM_DISABLE': '1', 'HF_DATASETS_DISABLE_PROGRESS_BARS': '1',
                'HF_HUB_DISABLE_PROGRESS_BARS': '1',
                'TRANSFORMERS_NO_ADVISORY_WARNINGS': '1', 'TOKENIZERS_PARALLELISM': 'false',
                'COLUMNS': '80', 'LINES': '24'}   # terminal size: pandas and argparse wrap to it
REFRESH_HINT = 'run `.venv/bin/python tools/execute_notebooks.py {nb}`'
FIGURE_DPI = 80   # saved figures: small enough for the repository, large enough to read


def collect_notebooks(root: Path) -> list[Path]:
    "The notebooks under `root` as nbdev collects them: no `_`/`.` names, no folder with `.notest`."
    found = []
    for p in sorted(root.rglob('*.ipynb')):
        rel = p.relative_to(root)
        if any(part.startswith(('_', '.')) for part in rel.parts): continue
        folders = [root / Path(*rel.parts[:i]) for i in range(len(rel.parts))]
        if any((folder / '.notest').exists() for folder in folders): continue
        found.append(p)
    return found


def _skip_predicate(nb, skip_flags: list[str]):
    "True for the cells nbdev's test runner leaves out: markdown, `#| eval: false`, flagged cells."
    from fastcore.nbio import nb_frontmatter, nb_lang, fm_default_eval, does_cell_eval
    from fastcore.utils import str2bool
    front = nb_frontmatter(nb)
    if str2bool(front.get('skip_exec', False)) or nb_lang(nb) != 'python': return lambda cell: True
    default_eval, flags = fm_default_eval(front), set(skip_flags)
    def skip(cell) -> bool:
        if cell.cell_type != 'code' or not does_cell_eval(cell, default_eval): return True
        return bool(flags & (getattr(cell, 'directives_', None) or {}).keys())
    return skip


@contextmanager
def _progress_bars_off():
    """transformers' and huggingface_hub's progress bars off while a notebook runs (restored after).
    They read the environment once, at import: in a test session an earlier test may have imported
    them with bars on, and a bar then lands in whatever cell prints at that moment."""
    hub = sys.modules.get('huggingface_hub.utils')
    tf = sys.modules.get('transformers.utils.logging')
    hub_off = hub.are_progress_bars_disabled() if hub else None
    tf_on = tf.is_progress_bar_enabled() if tf else None
    if hub: hub.disable_progress_bars()
    if tf: tf.disable_progress_bar()
    try: yield
    finally:
        if tf and tf_on: tf.enable_progress_bar()
        if hub and not hub_off: hub.enable_progress_bars()
        elif hub: hub.disable_progress_bars()


@contextmanager
def _notebook_context():
    """NOTEBOOK_ENV set, progress bars off and warnings recorded (not printed) while a notebook runs;
    restored after."""
    before = {k: os.environ.get(k) for k in NOTEBOOK_ENV}
    os.environ.update(NOTEBOOK_ENV)
    try:
        with warnings.catch_warnings(record=True) as caught, _progress_bars_off():
            warnings.simplefilter('always')
            yield caught
    finally:
        for k, v in before.items():
            if v is None: os.environ.pop(k, None)
            else: os.environ[k] = v


def _reset_display_options() -> None:
    """pandas' options and matplotlib's rc back to their defaults: an earlier notebook in the same
    process (the test session) may have changed them, and they change how outputs look."""
    if 'pandas' in sys.modules: sys.modules['pandas'].reset_option('all')
    if 'matplotlib' in sys.modules: sys.modules['matplotlib'].rcdefaults()
    # figures left open by an earlier notebook would be shown again by this one's first plt.show()
    if 'matplotlib.pyplot' in sys.modules: sys.modules['matplotlib.pyplot'].close('all')


def _set_figure_dpi(dpi: int) -> None:
    "Matplotlib's default figure resolution, when the notebooks' kernel has matplotlib."
    try: import matplotlib
    except ImportError: return
    matplotlib.rcParams['figure.dpi'] = dpi


class NotebookFailed(Exception):
    "A cell raised; the message is the notebook traceback."


def open_figures() -> list[int]:
    "The numbers of the pyplot figures open in this process (none when pyplot is not imported)."
    plt = sys.modules.get('matplotlib.pyplot')
    return plt.get_fignums() if plt else []


def _backend() -> str | None:
    return sys.modules['matplotlib'].get_backend() if 'matplotlib' in sys.modules else None


@contextmanager
def _figures_owned(shell, path: Path):
    """Fails the run (`NotebookFailed`) when a figure crosses a cell or notebook boundary: a cell that
    starts with a pyplot figure open (matplotlib's inline backend shows every open figure at the end of
    a cell, so it would become that cell's output), a notebook that leaves figures open or changes the
    backend (the next notebook in the process would show them). Library code that draws returns a
    `Figure` and chooses no backend; the notebook displays it."""
    carried, backend = [], _backend()
    def before(info):
        if nums := open_figures():
            first = (info.raw_cell or '').strip().splitlines()[:1] or ['']
            carried.append(f'cell `{first[0][:60]}` started with pyplot figure(s) {nums} open')
    shell.events.register('pre_run_cell', before)
    try: yield
    finally: shell.events.unregister('pre_run_cell', before)
    problems = list(carried)
    if nums := open_figures():
        problems.append(f'pyplot figure(s) {nums} left open at the end')
        sys.modules['matplotlib.pyplot'].close('all')
    if backend is not None and _backend() != backend:
        problems.append(f"matplotlib's backend switched from {backend} to {_backend()}")
    if problems:
        raise NotebookFailed(f'{path}: figures cross notebook or cell boundaries: ' + '; '.join(problems)
                             + ' (return a Figure from library code, choose no backend)')


# A cell whose saved images are its own: it draws, shows or displays an image.
DRAWS = re.compile(r'plot|fig|plt\.|draw|curves?\b|Image\(|imshow|hist|\.show\(|display\(|Figure|\bax\b')


def undrawn_images(cells: list[dict]) -> list[str]:
    "One message per code cell with an image output whose source does not draw (see `DRAWS`)."
    out = []
    for i, cell in enumerate(cells):
        if cell.get('cell_type') != 'code': continue
        images = sum(any(m.startswith('image/') for m in o.get('data', {})) for o in cell.get('outputs', []))
        if images and not DRAWS.search(_joined(cell.get('source', ''))):
            out.append(f'cell {i} `{_first_line(cell)}` shows {images} image(s) but draws nothing')
    return out


def execute(path: Path) -> list[list[dict] | None]:
    """Run the notebook at `path` in this process; per cell, its fresh outputs (plain JSON dicts),
    or None for a cell that is not run (markdown, or flagged with one of the `tst_flags`)."""
    from execnb.shell import CaptureShell
    from fastcore.foundation import working_directory
    from nbdev.config import get_config
    from nbdev.process import NBProcessor
    path, cfg = Path(path).resolve(), get_config()
    if str(cfg.config_path) not in sys.path: sys.path.insert(0, str(cfg.config_path))
    nb = NBProcessor(path, rm_directives=False, process=True).nb
    skip = _skip_predicate(nb, cfg.tst_flags.split())
    with _notebook_context():
        _reset_display_options()
        shell = CaptureShell(path, mpl_format='png')
        _set_figure_dpi(FIGURE_DPI)
        try:
            with _figures_owned(shell, path):
                try:
                    with working_directory(path.parent):
                        shell.run_all(nb, exc_stop=True, preproc=skip, cell_timeout=600)
                except Exception:
                    raise NotebookFailed(shell.prettytb(fname=path) or traceback.format_exc()) from None
        finally:
            shell.close()
    fresh = [None if skip(c) else json.loads(json.dumps(c.get('outputs', []))) for c in nb.cells]
    ran = [{'cell_type': 'code', 'source': c.source, 'outputs': o or []} if c.cell_type == 'code'
           else {'cell_type': c.cell_type} for c, o in zip(nb.cells, fresh)]
    if problems := undrawn_images(ran):
        raise NotebookFailed(f'{path}: ' + '; '.join(problems))
    return fresh


def _small_png(b64: str) -> str:
    "A PNG as a 256-colour palette image over white: a third of the bytes, same look for plots."
    import base64, io
    from PIL import Image
    image = Image.open(io.BytesIO(base64.b64decode(b64))).convert('RGBA')
    flat = Image.alpha_composite(Image.new('RGBA', image.size, 'white'), image).convert('RGB')
    buf = io.BytesIO()
    flat.quantize(colors=256, method=Image.Quantize.MEDIANCUT).save(buf, 'PNG', optimize=True)
    return base64.b64encode(buf.getvalue()).decode() + '\n'


def _for_saving(out: dict) -> dict:
    "One output as it is saved: machine paths scrubbed from its text, PNGs made small."
    out = dict(out)
    lines = lambda text: scrub_paths(_joined(text)).splitlines(True)
    if 'text' in out: out['text'] = lines(out['text'])
    if 'data' in out:
        out['data'] = {mime: _small_png(_joined(v)) if mime == 'image/png'
                       else lines(v) if mime.startswith('text/') else v
                       for mime, v in out['data'].items()}
    return out


def save_outputs(path: Path, fresh: list[list[dict] | None], source_text: str,
                 clear_skipped: bool = False) -> None:
    """Write `fresh` into the notebook's code cells, then `nbdev-clean` it. A cell that was not run
    (flagged `slow`, `gpu`, `notest`) keeps the outputs saved from a full run (papermill at full
    size, say) unless `clear_skipped`. Refuses when the file changed since `source_text` was read,
    so a concurrent edit is not lost."""
    path = Path(path)
    if path.read_text(encoding='utf-8') != source_text:
        raise RuntimeError(f'{path} changed while it ran; outputs not saved, run it again')
    nb = json.loads(source_text)
    if len(nb['cells']) != len(fresh):
        raise RuntimeError(f'{path}: {len(nb["cells"])} cells on disk, {len(fresh)} executed')
    for cell, outputs in zip(nb['cells'], fresh):
        if cell['cell_type'] != 'code': continue
        if outputs is not None: cell['outputs'] = [_for_saving(o) for o in outputs]
        elif clear_skipped: cell['outputs'] = []
        cell['execution_count'] = None
    text = json.dumps(nb, sort_keys=True, indent=1, ensure_ascii=False) + '\n'
    path.write_text(text, encoding='utf-8')
    nbdev_clean = Path(sys.executable).parent / 'nbdev-clean'
    subprocess.run([str(nbdev_clean), '--fname', str(path)], check=True)


TEMP_ROOTS = sorted({tempfile.gettempdir(), '/tmp', '/var/tmp', '/private/var/folders',
                     '/var/folders'})
_NOT_IN_PATH = r'[^/\s\'"<>(){}\[\],;:]'
# A folder made by `tempfile` (a random 8-character suffix) or by pytest, right under a temp root;
# fixed names such as /tmp/sandbox are kept.
TEMP_NAME = (r'/(?:[\w.-]*?(?:tmp|[-_.])[a-z0-9_]{8}|pytest-of-[\w-]+(?:/pytest-\d+)?)'
             rf'(?!{_NOT_IN_PATH})')


def _path_masks() -> list[tuple[re.Pattern, str]]:
    """Absolute paths of this checkout, of the home folder and of temporary folders (the root and
    the random name below it) become `<repo>`, `<home>` and `<tmp>`; what follows them is kept."""
    roots = {str(REPO): '<repo>', str(REPO.resolve()): '<repo>', str(Path.home()): '<home>'}
    masks = [(re.escape(root), token) for root, token in roots.items() if len(root) > 1]
    masks += [(re.escape(root) + TEMP_NAME, '<tmp>') for root in TEMP_ROOTS]
    masks.sort(key=lambda m: -len(m[0]))
    return [(re.compile(r'(?<![\w.\-/<])' + pattern), token) for pattern, token in masks]


def scrub_paths(text: str) -> str:
    "`text` with no absolute path of this machine: see `_path_masks`."
    for pattern, token in _path_masks(): text = pattern.sub(token, text)
    return text


_NUM = r'\d+(?:[.,]\d+)?(?:e[-+]?\d+)?'
# What changes from run to run by design, in the order applied. Each is replaced by a fixed token,
# so a changed count, name, score or row still shows as stale.
VOLATILE = [
    ('other temporary paths', re.compile(r'(?<![\w.\-/<])(?:' + '|'.join(map(re.escape, TEMP_ROOTS))
                                         + rf')/{_NOT_IN_PATH}+'), '<tmp>'),
    ('object ids in reprs', re.compile(r' at 0x[0-9a-fA-F]+(?=>)'), ''),   # as nbdev-clean does
    ('hex addresses', re.compile(r'0x[0-9a-fA-F]{4,}'), '0x<addr>'),
    ('uuids', re.compile(r'\b[0-9a-f]{8}-(?:[0-9a-f]{4}-){3}[0-9a-f]{12}\b'), '<uuid>'),
    ('dates and times', re.compile(r'\b\d{4}-\d{2}-\d{2}(?:[T _]\d{2}[:\-]\d{2}'
                                   r'(?:[:\-]\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?\b'),
     '<date>'),
    ('clock times', re.compile(r'\b\d{2}:\d{2}:\d{2}(?:\.\d+)?\b'), '<clock>'),
    ('local ports', re.compile(r'\b(127\.0\.0\.1|localhost|0\.0\.0\.0)(:|\', |", |, )\d{2,5}\b'),
     r'\1\2<port>'),
    ('process ids', re.compile(r'\b(pid[ =:]+)\d+', re.I), r'\1<pid>'),
    ('durations', re.compile(_NUM + r'\s?(?:ms|µs|us|ns|s|sec|secs|seconds|min|mins|minutes|h)\b'),
     '<time>'),
    ('rates', re.compile(_NUM + r'\s?(?:[\w-]+)?/(?:s|sec|second|min)\b'), '<rate>'),
    ('timing fields', re.compile(r'(\b[\w-]*(?:elapsed|wall|second|seconds|duration|latency|time'
                                 r'|_s|_ms|_sec|secs|per_s|per_sec|throughput)["\']?\s*[:=]\s*'
                                 r'["\']?)' + _NUM, re.I),
     r'\1<time>'),
]
# Table columns whose values are timings, by header: `seconds`, `mean s`, `wall_s`, `latency`...
TIMING_HEADER = re.compile(r'(?:(?:mean|max|min|median|total|p\d+) )?(?:s|ms|sec|secs|seconds|wall'
                           r'|elapsed|time|runtime|latency|duration|[a-z_]*_(?:s|ms|sec|seconds))',
                           re.I)


def _mask_text_table_columns(text: str) -> str:
    """In fixed-width tables (pandas' text repr, `Ledger`): the numbers right-aligned under a timing
    header (header cells are split by two or more spaces) become `<time>`, up to a blank line."""
    lines, ends = text.split('\n'), []
    for i, line in enumerate(lines):
        if not line.strip(): ends = []; continue
        heads = [(m.group(), m.end()) for m in re.finditer(r'\S+(?: \S+)*', line)]
        timing = [end for head, end in heads if TIMING_HEADER.fullmatch(head)]
        if timing: ends = timing; continue
        for end in sorted(ends, reverse=True):
            number = re.search(r'(?:^| )(-?\d[\d.,]*(?:e[-+]?\d+)?)$', line[:end])
            if number: line = line[:number.start(1)] + '<time>' + line[end:]
        lines[i] = line
    return '\n'.join(lines)


def _mask_html_table_columns(text: str) -> str:
    "In HTML tables: the cells under a `<th>` timing header become `<time>`."
    def table(m: re.Match) -> str:
        rows, cols = re.findall(r'<tr[^>]*>.*?</tr>', m.group(), re.S), set()
        cell = re.compile(r'(<t[hd][^>]*>)(.*?)(</t[hd]>)', re.S)
        out = m.group()
        for row in rows:
            cells = cell.findall(row)
            heads = {i for i, c in enumerate(cells) if c[0].startswith('<th')
                     and TIMING_HEADER.fullmatch(c[1].strip())}
            if heads: cols = heads; continue
            if not cols: continue
            parts = iter(range(len(cells)))
            masked = cell.sub(lambda c: c.group(1) + ('<time>' if next(parts) in cols
                                                       else c.group(2)) + c.group(3), row)
            out = out.replace(row, masked, 1)
        return out
    return re.sub(r'<table.*?</table>', table, text, flags=re.S)


def mask(text: str) -> str:
    "`text` with paths and the VOLATILE fields replaced by fixed tokens."
    text = _mask_html_table_columns(_mask_text_table_columns(scrub_paths(text)))
    for _, pattern, token in VOLATILE: text = pattern.sub(token, text)
    return text


def _joined(value) -> str:
    return ''.join(value) if isinstance(value, list) else value if isinstance(value, str) \
        else json.dumps(value, sort_keys=True)


def _overwritten_lines(text: str) -> str:
    "What a terminal shows: each line keeps only what follows its last carriage return."
    return '\n'.join(line.rsplit('\r', 1)[-1] for line in text.split('\n'))


def masked_outputs(outputs: list[dict]) -> list[dict]:
    """The comparable content of a cell's outputs: consecutive streams merged, execution counts and
    output metadata dropped, text masked, and figures left out: whether matplotlib's inline backend
    shows an open figure once more at the end of a cell depends on what ran before in the same
    process, so figures are refreshed by saving, not compared."""
    shown = []
    for out in outputs:
        kind = out.get('output_type')
        if kind == 'stream':
            if shown and shown[-1].get('stream') == out.get('name'):
                shown[-1]['text'] += _joined(out.get('text', ''))
            else: shown.append({'stream': out.get('name'), 'text': _joined(out.get('text', ''))})
        elif kind == 'error':
            shown.append({'error': out.get('ename'), 'value': mask(out.get('evalue', ''))})
        elif any(mime.startswith('image/') for mime in out.get('data', {})): continue
        else:
            shown.append({kind: {mime: '<image>' if mime.startswith('image/') else mask(_joined(v))
                                 for mime, v in sorted(out.get('data', {}).items())}})
    for s in shown:
        if 'stream' in s: s['text'] = mask(_overwritten_lines(s['text']))
    return shown


def _first_line(cell: dict) -> str:
    src = _joined(cell.get('source', '')).strip().splitlines()
    code = [ln for ln in src if not ln.startswith('#|')] or src or ['']
    return code[0][:60]


def _diff(saved: list[dict], fresh: list[dict], limit: int = 12) -> str:
    import difflib
    as_lines = lambda outs: json.dumps(outs, indent=1, ensure_ascii=False).splitlines()
    lines = list(difflib.unified_diff(as_lines(saved), as_lines(fresh), 'saved', 'fresh', n=1,
                                      lineterm=''))
    return '\n'.join(lines[:limit] + (['...'] if len(lines) > limit else []))


def stale_cells(saved_nb: dict, fresh: list[list[dict] | None]) -> list[str]:
    """One message per code cell whose saved outputs differ from `fresh` after masking; cells not
    run (fresh is None) are not compared."""
    if len(saved_nb['cells']) != len(fresh):
        return [f'{len(saved_nb["cells"])} cells saved, {len(fresh)} executed']
    problems = []
    for i, (cell, outputs) in enumerate(zip(saved_nb['cells'], fresh)):
        if cell['cell_type'] != 'code' or outputs is None: continue
        saved, new = masked_outputs(cell.get('outputs', [])), masked_outputs(outputs)
        if saved == new: continue
        where = f'cell {i} `{_first_line(cell)}`'
        what = 'has no saved output but the run shows some' if not saved else 'differs'
        problems.append(f'{where} {what}:\n{_diff(saved, new)}')
    return problems


def _resolve(args: list[str]) -> list[Path]:
    nbs = REPO / 'nbs'
    if not args: return collect_notebooks(nbs)
    found = []
    for a in map(Path, args):
        if a.is_dir(): found += collect_notebooks(a)
        elif a.suffix == '.ipynb' and a.exists(): found.append(a)
        else: raise SystemExit(f'not a notebook or folder: {a}')
    return found


def main(argv: list[str] | None = None) -> int:
    import time
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('paths', nargs='*', help='notebooks or folders (default: all under nbs/)')
    ap.add_argument('--check', action='store_true', help='compare with the saved outputs only')
    ap.add_argument('--clear-skipped', action='store_true',
                    help='also empty the outputs of cells not run (flagged slow/gpu/notest)')
    args = ap.parse_args(argv)
    os.environ.update(NOTEBOOK_ENV)
    failed = []
    for path in _resolve(args.paths):
        text, start = path.read_text(encoding='utf-8'), time.monotonic()
        try: fresh = execute(path)
        except NotebookFailed as e:
            print(f'FAILED {path}\n{e}', file=sys.stderr); failed.append(path); continue
        took = f'{time.monotonic() - start:.1f}s'
        if args.check:
            problems = stale_cells(json.loads(text), fresh)
            status = 'stale' if problems else 'ok'
            print(f'{status} {path} ({took})', *problems, sep='\n', flush=True)
            if problems: failed.append(path)
            continue
        try: save_outputs(path, fresh, text, clear_skipped=args.clear_skipped)
        except RuntimeError as e:
            print(f'NOT SAVED {e}', file=sys.stderr); failed.append(path); continue
        run = [o for o in fresh if o is not None]
        shown = sum(bool(o) for o in run)
        print(f'saved {path}: {shown} of {len(run)} run cells show output ({took})', flush=True)
    if failed:
        print(f'{len(failed)} notebook(s) failed or stale:', *failed, sep='\n', file=sys.stderr)
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
