"""Build the offline docs site: every notebook under nbs/ (with its saved outputs, never re-executed) and the
README as static HTML, with a navigation index on every page. nbdev's own docs need quarto, which is not
installable offline; this renders markdown with mistune (nbconvert's markdown engine) and code with pygments,
in a small page frame of our own.

`python tools/build_docs.py [--out _docs]` writes the site (open `_docs/index.html`) and exits 1 if a page
links to something that is not in the repository: a missing file, a notebook that does not exist, an absolute
path, or a path that climbs out of the repository; paths written in prose (`research/notes.md`) are checked too. Markdown files of the repository that pages link to are
rendered too (their links checked the same way); other linked files are copied next to the pages."""
from __future__ import annotations
import argparse, html, json, posixpath, re, shutil, sys
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

REPO = Path(__file__).resolve().parents[1]
EXTERNAL = ('http://', 'https://', 'mailto:', 'data:', 'ftp://', 'javascript:')

CSS = """
body { margin: 0; font: 15px/1.5 system-ui, sans-serif; color: #222; }
nav { position: fixed; top: 0; bottom: 0; left: 0; width: 260px; overflow-y: auto; padding: 12px 16px;
      background: #f6f6f4; border-right: 1px solid #ddd; font-size: 13px; }
nav h2 { font-size: 12px; text-transform: uppercase; color: #666; margin: 14px 0 4px; }
nav ul { list-style: none; padding: 0; margin: 0; } nav li { margin: 2px 0; }
nav a { color: #245; text-decoration: none; } nav a.here { font-weight: bold; }
main { margin-left: 292px; max-width: 1000px; padding: 12px 24px 48px; }
pre, code { font: 13px/1.4 ui-monospace, monospace; } pre { padding: 8px; overflow-x: auto; margin: 6px 0; }
div.highlight pre, pre.code { background: #f7f7f7; border-left: 3px solid #9ab; }
pre.output { background: #fff; border-left: 3px solid #ddd; max-height: 480px; overflow-y: auto; }
pre.error { border-left-color: #c33; } div.output { overflow-x: auto; } div.cell { margin: 10px 0; }
table { border-collapse: collapse; font-size: 13px; } th, td { border: 1px solid #ddd; padding: 2px 6px; }
img { max-width: 100%; }
"""

@dataclass
class Page:
    "One page of the site: its source file (relative to the repository) and where it goes in the site."
    source: str                       # e.g. 'nbs/core/00_schema.ipynb', 'README.md'
    out: str                          # e.g. 'nbs/core/00_schema.html', 'index.html'
    title: str = ''
    body: str = ''

@dataclass
class Site:
    root: Path
    pages: dict[str, Page] = field(default_factory=dict)     # source -> page
    copies: set[str] = field(default_factory=set)            # other repository files linked from pages
    problems: list[str] = field(default_factory=list)
    highlight: bool = True                                   # pygments colours for code cells

def page_path(source: str) -> str:
    "Where a source file's page goes: README.md is the index, other files keep their path with .html."
    return 'index.html' if source == 'README.md' else str(Path(source).with_suffix('.html'))

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

ANSI = re.compile(r'\x1b\[[0-9;]*[A-Za-z]')

def _markdown():
    import mistune
    return mistune.create_markdown(escape=False, plugins=['table', 'strikethrough', 'url'])

def _code_html(source: str, highlight: bool) -> str:
    if not highlight: return f'<pre class="code">{html.escape(source)}</pre>'
    from pygments import highlight as pyg
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import PythonLexer
    return pyg(source, PythonLexer(), HtmlFormatter())

def output_html(out: dict) -> str:
    "One saved output of a code cell: an image, HTML (tables), markdown or text, as the notebook stored it."
    kind = out.get('output_type')
    text = lambda v: ''.join(v) if isinstance(v, list) else (v or '')
    if kind == 'stream': return f'<pre class="output">{html.escape(ANSI.sub("", text(out.get("text"))))}</pre>'
    if kind == 'error':
        return f'<pre class="output error">{html.escape(ANSI.sub("", chr(10).join(out.get("traceback") or [])))}</pre>'
    data = out.get('data') or {}
    for mime in ('image/png', 'image/jpeg'):
        if mime in data: return f'<img src="data:{mime};base64,{text(data[mime]).strip()}" alt="figure">'
    if 'image/svg+xml' in data: return text(data['image/svg+xml'])
    if 'text/html' in data: return f'<div class="output">{text(data["text/html"])}</div>'
    if 'text/markdown' in data: return _markdown()(text(data['text/markdown']))
    if 'text/plain' in data: return f'<pre class="output">{html.escape(ANSI.sub("", text(data["text/plain"])))}</pre>'
    return ''

def render_notebook(path: Path, highlight: bool = True) -> tuple[str, str, list[str]]:
    """(title, HTML body, prose) of a notebook with its saved outputs (never executed). nbdev directives (`#| ...`)
    are dropped from the code and honoured as nbdev's docs do (`hide`: no cell; `hide_input`/`echo: false`: no code;
    `hide_output`/`output: false`: no outputs); `prose` is the markdown cells and code comments, for `mention_problems`."""
    nb, md = json.loads(path.read_text()), _markdown()
    parts, prose = [], []
    for c in nb.get('cells', []):
        src = ''.join(c.get('source', []))
        if c.get('cell_type') == 'markdown':
            parts.append(f'<div class="md">{md(src)}</div>'); prose.append(src)
        elif c.get('cell_type') == 'code':
            flags = {l[2:].strip().replace(' ', '') for l in src.splitlines() if l.startswith('#|')}
            if 'hide' in flags: continue                    # as in nbdev's docs: test scaffolding and set-up
            code = '\n'.join(l for l in src.splitlines() if not l.startswith('#|')).strip('\n')
            prose += [l.split('#', 1)[1] for l in code.splitlines() if '#' in l]
            if flags & {'hide_input', 'echo:false'}: code = ''
            outs = '' if flags & {'hide_output', 'output:false'} else ''.join(output_html(o) for o in c.get('outputs', []))
            if code or outs:
                parts.append('<div class="cell">' + (_code_html(code, highlight) if code else '') + outs + '</div>')
    return notebook_title(nb, path.stem), '\n'.join(parts), prose

def render_markdown(path: Path) -> tuple[str, str, list[str]]:
    "(title, HTML body, prose) of a markdown file."
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
    "Render one source file into `site.pages` (markdown files it links to are added as they are found)."
    path = site.root / source
    title, body, prose = render_notebook(path, site.highlight) if source.endswith('.ipynb') else render_markdown(path)
    page = site.pages[source] = Page(source, page_path(source), title)
    page.body = rewrite_links(site, source, body)
    site.problems += mention_problems(site.root, source, prose)

_ATTR = re.compile(r'''(\s(?:href|src)=)(["'])(.*?)\2''', re.S)

def rewrite_links(site: Site, source: str, body: str) -> str:
    "Check every link of a page and point the internal ones at their page (or copied file) in the site."
    here = page_path(source)
    def fix(m):
        link = html.unescape(m.group(3))
        repo_path, problem = resolve(site, source, link)
        if problem: site.problems.append(f'{source}: {problem}')
        if repo_path is None: return m.group(0)
        target = site_target(site, repo_path)
        frag = urlsplit(link).fragment
        rel = posixpath.relpath(target, posixpath.dirname(here) or '.') + (f'#{frag}' if frag else '')
        return f'{m.group(1)}{m.group(2)}{html.escape(rel, quote=True)}{m.group(2)}'
    return _ATTR.sub(fix, body)

def nav_html(site: Site, here: str) -> str:
    "The navigation: the README, then the notebooks grouped by folder, in file order."
    up = lambda target: posixpath.relpath(target, posixpath.dirname(here) or '.')
    def item(p: Page) -> str:
        cls = ' class="here"' if p.out == here else ''
        return f'<li><a{cls} href="{html.escape(up(p.out))}">{html.escape(p.title)}</a></li>'
    groups: dict[str, list[Page]] = {}
    for src in sorted(site.pages):
        if src.endswith('.ipynb'): groups.setdefault(str(Path(src).parent.relative_to('nbs')), []).append(site.pages[src])
    out = ['<nav>', '<ul>' + item(site.pages['README.md']) + '</ul>']
    for folder in sorted(groups, key=lambda f: (f != '.', f)):
        out.append(f'<h2>{html.escape("start here" if folder == "." else folder)}</h2><ul>' + ''.join(map(item, groups[folder])) + '</ul>')
    others = [site.pages[s] for s in sorted(site.pages) if s.endswith('.md') and s != 'README.md']
    if others: out.append('<h2>more</h2><ul>' + ''.join(map(item, others)) + '</ul>')
    return '\n'.join(out + ['</nav>'])

def frame(site: Site, page: Page) -> str:
    css = posixpath.relpath('style.css', posixpath.dirname(page.out) or '.')
    return (f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>{html.escape(page.title)} · envsynth</title>'
            f'<link rel="stylesheet" href="{css}"></head><body>\n{nav_html(site, page.out)}\n<main>\n{page.body}\n</main></body></html>\n')

def build_site(out: Path, root: Path = REPO, highlight: bool = True) -> Site:
    "Render the README and every notebook of `root` into `out` (emptied first); the site, with its link problems."
    site = Site(Path(root), highlight=highlight)
    if not (root / 'README.md').exists(): raise FileNotFoundError(f'no README.md in {root}')
    add_page(site, 'README.md')
    for nb in notebooks(root): add_page(site, nb)
    if out.exists(): shutil.rmtree(out)
    out.mkdir(parents=True)
    from pygments.formatters import HtmlFormatter
    (out / 'style.css').write_text(CSS + HtmlFormatter(style='default').get_style_defs('.highlight'))
    for page in site.pages.values():
        dest = out / page.out
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(frame(site, page))
    for rel in sorted(site.copies):
        src, dest = root / rel, out / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        if src.is_dir(): shutil.copytree(src, dest, dirs_exist_ok=True)
        else: shutil.copy2(src, dest)
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
