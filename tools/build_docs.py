"""Build the offline docs site with mkdocs (mkdocs.yml): the README as the home page and every notebook under nbs/
with its saved outputs (never re-executed), through mkdocs-material (navigation, a per-page outline, search that
runs in the browser) and mkdocs-jupyter (notebooks as pages).

`python tools/build_docs.py [--out _docs]` lays the pages into a staging folder (nbdev directives honoured as
nbdev's docs do: `#| hide` cells are left out, `#|` lines dropped), runs `mkdocs build`, and exits 1 if a page links
to something that is not in the repository: a missing file, a notebook that does not exist, an absolute path, or a
path that climbs out of the repository; paths written in prose (`research/notes.md`) are checked too. Markdown files
of the repository that pages link to are pages too (their links checked the same way); other linked files are
copied next to the pages. The built site is checked as well: every relative link of every page must exist in it."""
from __future__ import annotations
import argparse, html, json, posixpath, re, shutil, subprocess, sys, tempfile
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

REPO = Path(__file__).resolve().parents[1]
CONFIG = REPO / 'mkdocs.yml'           # theme, plugins, markdown extensions
EXTERNAL = ('http://', 'https://', 'mailto:', 'data:', 'ftp://', 'javascript:')

# Code and outputs wrap or scroll inside their own block; the page itself never scrolls sideways.
EXTRA_CSS = """
.md-typeset pre, .md-typeset pre > code, .jp-InputArea pre, .jp-OutputArea-output pre, .highlight pre {
  white-space: pre-wrap; overflow-wrap: anywhere; word-break: break-word; }
.jp-Cell, .jp-InputArea, .jp-OutputArea, .jp-OutputArea-output, .jp-RenderedHTMLCommon { max-width: 100%; min-width: 0; }
.jp-OutputArea-output, .jp-RenderedHTMLCommon, .md-typeset .highlight { overflow-x: auto; }
.jp-OutputArea-output img, .md-typeset img { max-width: 100%; height: auto; }
.md-typeset table:not([class]) { display: block; max-width: 100%; overflow-x: auto; }
.md-content { min-width: 0; }
"""

@dataclass
class Page:
    "One page of the site: its source file (relative to the repository) and where it goes in the site."
    source: str                       # e.g. 'nbs/core/00_schema.ipynb', 'README.md'
    out: str                          # e.g. 'nbs/core/00_schema.html', 'index.html'
    title: str = ''

@dataclass
class Site:
    root: Path
    pages: dict[str, Page] = field(default_factory=dict)     # source -> page
    copies: set[str] = field(default_factory=set)            # other repository files linked from pages
    problems: list[str] = field(default_factory=list)

def page_path(source: str) -> str:
    "Where a source file's page goes: README.md is the index, other files keep their path with .html."
    return 'index.html' if source == 'README.md' else str(Path(source).with_suffix('.html'))

def staged_path(source: str) -> str:
    "Where a source file goes in mkdocs' docs folder: README.md is index.md, a folder's README.md its index.md."
    if source == 'README.md': return 'index.md'
    if Path(source).name == 'README.md': return str(Path(source).parent / 'index.md')
    return source

def notebooks(root: Path) -> list[str]:
    "Every notebook under nbs/ (checkpoints and files or folders starting with `_` or `.` left out), sorted."
    nbs = root / 'nbs'
    return sorted(str(p.relative_to(root)) for p in nbs.rglob('*.ipynb')
                  if not any(part.startswith(('_', '.')) for part in p.relative_to(nbs).parts))

def notebook_title(nb: dict, fallback: str) -> str:
    "The first `# Title` of a notebook's markdown cells."
    for c in nb.get('cells', []):
        if c.get('cell_type') == 'markdown':
            m = re.search(r'^#\s+(.+)$', ''.join(c.get('source', '')), re.M)
            if m: return m.group(1).strip()
    return fallback

def notebook_title(nb: dict, fallback: str) -> str:
    "The first `# Title` of a notebook's markdown cells (mkdocs-jupyter names the page the same way)."
    for c in nb.get('cells', []):
        if c.get('cell_type') == 'markdown':
            m = re.search(r'^#\s+(.+)$', ''.join(c.get('source', '')), re.M)
            if m: return m.group(1).strip()
    return fallback

def _markdown():
    import mistune
    return mistune.create_markdown(escape=False, plugins=['table', 'strikethrough', 'url'])

_text = lambda v: ''.join(v) if isinstance(v, list) else (v or '')

def directives(src: str) -> set[str]:
    "The nbdev directives (`#| hide`, `#| echo: false` ...) of a code cell, spaces removed."
    return {l[2:].strip().replace(' ', '') for l in src.splitlines() if l.startswith('#|')}

def shown_notebook(nb: dict) -> dict:
    """The notebook as nbdev's docs show it: `hide` cells left out, `#|` lines dropped, no code for
    `hide_input`/`echo: false`, no outputs for `hide_output`/`output: false`."""
    cells = []
    for c in nb.get('cells', []):
        if c.get('cell_type') == 'code':
            src = _text(c.get('source'))
            flags = directives(src)
            if 'hide' in flags: continue
            c = dict(c, source='\n'.join(l for l in src.splitlines() if not l.startswith('#|')).strip('\n'))
            if flags & {'hide_input', 'echo:false'}: c['source'] = ''
            if flags & {'hide_output', 'output:false'}: c['outputs'] = []
            if not c['source'] and not c.get('outputs'): continue
        cells.append(c)
    return dict(nb, cells=cells)

def _output_links_html(out: dict) -> str:
    "The part of a saved output that can hold links: its HTML or markdown."
    data = out.get('data') or {}
    if 'text/html' in data: return _text(data['text/html'])
    if 'text/markdown' in data: return _markdown()(_text(data['text/markdown']))
    return ''

def read_notebook(path: Path) -> tuple[str, str, list[str]]:
    """(title, HTML with the notebook's links, prose) of a notebook as shown: the markdown cells rendered and the
    outputs' HTML (for the link check), the markdown and the code comments (for `mention_problems`)."""
    nb, md = shown_notebook(json.loads(path.read_text())), _markdown()
    parts, prose = [], []
    for c in nb['cells']:
        src = _text(c.get('source'))
        if c.get('cell_type') == 'markdown':
            parts.append(md(src)); prose.append(src)
        elif c.get('cell_type') == 'code':
            prose += [l.split('#', 1)[1] for l in src.splitlines() if '#' in l]
            parts += [_output_links_html(o) for o in c.get('outputs', [])]
    return notebook_title(nb, path.stem), '\n'.join(parts), prose

def read_markdown(path: Path) -> tuple[str, str, list[str]]:
    "(title, HTML, prose) of a markdown file."
    text = path.read_text()
    m = re.search(r'^#\s+(.+)$', text, re.M)
    return (m.group(1).strip() if m else path.stem), _markdown()(text), [text]

# Paths written in prose (`research/notes.md`, `../shared/x.md`): they must lie in the repository too.
PATH_MENTION = re.compile(r'(?<![\w/.{}$-])((?:\.\./)*[\w.-]+(?:/[\w.{}-]+)+\.(?:md|ipynb|py|json|ya?ml|txt|csv|sh))\b')

def mention_problems(root: Path, source: str, texts: list[str]) -> list[str]:
    """Paths mentioned in prose that point outside the repository: climbing out of it (`../x/y.md`), or under a
    top folder that neither the repository nor the page's folder has (`research/notes.md`)."""
    here, out = (root / source).parent, []
    for text in texts:
        text = re.sub(r'\]\([^)]*\)|(?:href|src)=(["\']).*?\1', ' ', text)     # link targets: checked as links
        for m in PATH_MENTION.finditer(text):
            path = m.group(1)
            top = path.split('/', 1)[0]
            if top.isupper(): continue                  # a placeholder: `DIR/chain.json`, `OUT/results.json`
            if top == '..':
                if not posixpath.normpath(posixpath.join(posixpath.dirname(source), path)).startswith('..') \
                        and ((root / posixpath.dirname(source) / path).exists()): continue
                out.append(f'{source}: mentions {path!r}, outside the repository')
            elif not ((root / top).exists() or (here / top).exists()):
                out.append(f'{source}: mentions {path!r}, which is not in the repository')
    return out

class _Links(HTMLParser):
    "Every href/src of a HTML fragment, with its position, in order."
    def __init__(self):
        super().__init__(convert_charrefs=True); self.found = []
    def handle_starttag(self, tag, attrs):
        for k, v in attrs:
            if k in ('href', 'src') and v is not None: self.found.append(v)

def links(body: str) -> list[str]:
    p = _Links(); p.feed(body); return p.found

def resolve(site: Site, source: str, link: str) -> tuple[str | None, str | None]:
    """(repository path the link points at, problem): external links and same-page anchors give (None, None);
    a link out of the repository, an absolute path or a missing file gives a problem."""
    if link.startswith(EXTERNAL) or link.startswith('#') or not link.strip(): return None, None
    parts = urlsplit(link)
    if parts.scheme or parts.netloc: return None, None
    target = unquote(parts.path)
    if target.startswith('/'): return None, f'absolute path {link!r}'
    joined = posixpath.normpath(posixpath.join(posixpath.dirname(source), target))
    if joined == '..' or joined.startswith('../'): return None, f'{link!r} points outside the repository'
    path = site.root / joined
    if not path.exists(): return None, f'{link!r}: no such file in the repository ({joined})'
    return joined, None

def site_target(site: Site, repo_path: str) -> str:
    "Where a linked repository path lives in the site: a page (notebook, markdown), or a copy of the file."
    p = site.root / repo_path
    if p.is_dir():
        readme = posixpath.join(repo_path, 'README.md')
        if (site.root / readme).exists(): return site_target(site, readme)
        site.copies.add(repo_path); return repo_path
    if repo_path.endswith('.ipynb') or repo_path.endswith('.md'):
        if repo_path.endswith('.md') and repo_path not in site.pages: add_page(site, repo_path)
        return page_path(repo_path)
    site.copies.add(repo_path)
    return repo_path

def add_page(site: Site, source: str):
    "Check one source file's links into `site` (markdown files it links to are added as they are found)."
    path = site.root / source
    title, body, prose = read_notebook(path) if source.endswith('.ipynb') else read_markdown(path)
    site.pages[source] = Page(source, page_path(source), title)
    for link in links(body):
        repo_path, problem = resolve(site, source, link)
        if problem: site.problems.append(f'{source}: {problem}')
        if repo_path is not None: site_target(site, repo_path)
    site.problems += mention_problems(site.root, source, prose)

def check_sources(root: Path = REPO) -> Site:
    "The pages of `root` (the README, every notebook, the markdown files they link to) and their link problems."
    site = Site(Path(root))
    if not (site.root / 'README.md').exists(): raise FileNotFoundError(f'no README.md in {root}')
    add_page(site, 'README.md')
    for nb in notebooks(site.root): add_page(site, nb)
    return site

def nav(site: Site) -> list:
    "The navigation: the home page, then the notebooks grouped by folder in file order, then other linked pages."
    groups: dict[str, list[str]] = {}
    for src in sorted(site.pages):
        if src.endswith('.ipynb'): groups.setdefault(str(Path(src).parent.relative_to('nbs')), []).append(src)
    out: list = [{'Home': 'index.md'}]
    for folder in sorted(groups, key=lambda f: (f != '.', f)):
        out.append({'start here' if folder == '.' else folder: [staged_path(s) for s in groups[folder]]})
    others = [staged_path(s) for s in sorted(site.pages) if s.endswith('.md') and s != 'README.md']
    if others: out.append({'more': others})
    return out

def stage(site: Site, docs: Path):
    "Lay the pages (notebooks as shown) and the linked files into mkdocs' docs folder `docs`."
    for source in site.pages:
        dest = docs / staged_path(source)
        dest.parent.mkdir(parents=True, exist_ok=True)
        if source.endswith('.ipynb'):
            dest.write_text(json.dumps(shown_notebook(json.loads((site.root / source).read_text()))))
        else: shutil.copy2(site.root / source, dest)
    for rel in sorted(site.copies):
        src, dest = site.root / rel, docs / rel
        if dest.exists(): continue
        dest.parent.mkdir(parents=True, exist_ok=True)
        if src.is_dir(): shutil.copytree(src, dest, dirs_exist_ok=True, ignore=shutil.ignore_patterns('*.ipynb', '*.md'))
        else: shutil.copy2(src, dest)
    (docs / 'stylesheets').mkdir(exist_ok=True)
    (docs / 'stylesheets' / 'extra.css').write_text(EXTRA_CSS)

# --- the mkdocs hook (mkdocs loads this file as a module: `hooks:` in the staged config) --------------------------
_ATTR = re.compile(r'''(\s(?:href|src)=)(["'])(.*?)\2''', re.S)

def on_page_content(html_text, page, config, files, **kwargs):
    """Point a page's links to repository files at their place in the site: a notebook at its page, a folder at
    its README's page, the README at the home page. mkdocs does this itself for markdown pages; notebook pages come
    from nbconvert untouched. Links that resolve to nothing are left as written (the source check reports them)."""
    here = posixpath.dirname(page.file.src_uri)
    def fix(m):
        link = html.unescape(m.group(3))
        parts = urlsplit(link)
        if parts.scheme or parts.netloc or link.startswith(('#', '/')) or not parts.path: return m.group(0)
        target = posixpath.normpath(posixpath.join(here, unquote(parts.path)))
        for candidate in (target, staged_path(target), posixpath.join(target, 'index.md')):
            f = files.get_file_from_path(candidate)
            if f is not None:
                rel = posixpath.relpath(f.url, posixpath.dirname(page.url) or '.')
                rel += f'#{parts.fragment}' if parts.fragment else ''
                return f'{m.group(1)}{m.group(2)}{html.escape(rel, quote=True)}{m.group(2)}'
        return m.group(0)
    return _ATTR.sub(fix, html_text)

def built_problems(out: Path) -> list[str]:
    "Relative links of the built site that lead to no file of it (a page, an asset, a copied file)."
    problems = []
    for page in sorted(out.rglob('*.html')):
        rel_page = page.relative_to(out).as_posix()
        if rel_page == '404.html': continue          # served for any missing path, so its links are absolute
        for link in (html.unescape(m.group(3)) for m in _ATTR.finditer(page.read_text())):   # fast on big pages
            parts = urlsplit(link)
            if parts.scheme or parts.netloc or link.startswith(('#', 'data:', 'javascript:')) or not parts.path: continue
            if parts.path.startswith('/'): problems.append(f'site {rel_page}: absolute link {link!r}'); continue
            target = (page.parent / unquote(parts.path)).resolve()
            if not target.is_relative_to(out.resolve()): problems.append(f'site {rel_page}: {link!r} leaves the site')
            elif not (target.is_file() or (target / 'index.html').is_file()):
                problems.append(f'site {rel_page}: {link!r} leads to nothing')
    return problems

def cache_dir(root: Path) -> Path:
    "mkdocs-jupyter's cache of notebook HTML: keyed by content there, by the converters' versions here."
    from importlib.metadata import version
    tag = '-'.join(f'{p}{version(p)}' for p in ('mkdocs-jupyter', 'nbconvert', 'pygments'))
    return Path(root).resolve() / '.envsynth_cache' / f'mkdocs-jupyter-{tag}'

def build_site(out: Path, root: Path = REPO) -> Site:
    "Check and build the site of `root` into `out` (emptied first); the site, with its link problems."
    import yaml
    site = check_sources(root)
    out = Path(out).resolve()
    with tempfile.TemporaryDirectory(prefix='envsynth-docs-') as tmp:
        docs = Path(tmp) / 'docs'
        stage(site, docs)
        config = yaml.safe_load(CONFIG.read_text())
        config |= {'docs_dir': str(docs), 'site_dir': str(out), 'nav': nav(site), 'hooks': [str(Path(__file__).resolve())],
                   'extra_css': ['stylesheets/extra.css']}
        for plugin in config['plugins']:     # notebooks' HTML cached by content (the plugin evicts entries this build
            # did not use, so each repository has its own cache): a rebuild converts only the notebooks that changed
            if isinstance(plugin, dict) and 'mkdocs-jupyter' in plugin:
                plugin['mkdocs-jupyter'] |= {'cache': True, 'cache_dir': str(cache_dir(site.root))}
        (Path(tmp) / 'mkdocs.yml').write_text(yaml.safe_dump(config, sort_keys=False))
        if out.exists(): shutil.rmtree(out)
        run = subprocess.run([sys.executable, '-m', 'mkdocs', 'build', '--quiet', '-f', str(Path(tmp) / 'mkdocs.yml')],
                             capture_output=True, text=True)
        if run.returncode: raise RuntimeError(f'mkdocs build failed:\n{run.stdout}{run.stderr}')
    site.problems += built_problems(out)
    return site

def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--out', default=str(REPO / '_docs'), help='the site folder (emptied first; default _docs/)')
    args = ap.parse_args(argv)
    out = Path(args.out)
    site = build_site(out)
    print(f'{len(site.pages)} pages, {len(site.copies)} linked files → {out / "index.html"}')
    if site.problems:
        print(f'{len(site.problems)} links out of the repository or to nothing:', *site.problems, sep='\n  ', file=sys.stderr)
        return 1
    return 0

if __name__ == '__main__': sys.exit(main())
