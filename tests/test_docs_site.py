"""The docs site as a reader sees it: built once (tools/build_docs.py), served on 127.0.0.1 by `python -m http.server`
(started here, stopped by its PID), opened in headless Chromium through playwright. The home page's Status table is a
real table, each paper's recipe page shows a figure of its own, no sampled page scrolls sideways at 1280 px, and the
search box finds a term of the notebooks.

The browser is Debian's `chromium`: tools/ensure_chromium.sh installs it when missing (as root, with apt-get, as
`make test` runs in CI); playwright (a pip package) drives it and downloads nothing. Without a browser these tests
fail with what to install, they do not skip."""
import json, select, subprocess, sys, time
from pathlib import Path
import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / 'tools'))
from build_docs import build_site   # noqa: E402

pytestmark = pytest.mark.timeout(1500)      # a cold build and a first Chromium install on a busy 2-core machine

RECIPES = {'astra': 'nbs/astra/05_recipe.html', 'synthagent': 'nbs/synthagent/03_recipe.html',
           'envfactory': 'nbs/envfactory/05_recipe.html', 'agentscaler': 'nbs/agentscaler/05_recipe.html'}
SAMPLE = ['index.html', *RECIPES.values(), 'nbs/core/10_pipeline.html']

@pytest.fixture(scope='module')
def site(built_docs_site):
    "The built site (its build time in `seconds`) and the http.server serving it: (out, base URL, seconds)."
    out, s, seconds = built_docs_site
    assert not s.problems, '\n'.join(s.problems)
    server = subprocess.Popen([sys.executable, '-u', '-m', 'http.server', '0', '--bind', '127.0.0.1', '-d', str(out)],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        ready, _, _ = select.select([server.stdout], [], [], 30)        # "Serving HTTP on 127.0.0.1 port N (...) ..."
        line = server.stdout.readline() if ready else ''
        assert 'port' in line, f'http.server did not start: {line!r}'
        port = int(line.split('port', 1)[1].split()[0])
        print(f'docs site built in {seconds:.1f}s, served on 127.0.0.1:{port}')
        yield out, f'http://127.0.0.1:{port}/', seconds
    finally:
        server.kill(); server.wait()

@pytest.fixture(scope='module')
def browser():
    "Headless Chromium; tools/ensure_chromium.sh installs Debian's when it is missing (as root), else this fails."
    r = subprocess.run(['bash', str(REPO / 'tools' / 'ensure_chromium.sh')], capture_output=True, text=True, timeout=900)
    if r.returncode: pytest.fail(f'no Chromium for the docs site tests: {r.stderr[-2000:]}', pytrace=False)
    chromium = r.stdout.strip().splitlines()[-1]
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium, args=['--no-sandbox', '--disable-gpu'])
        try: yield b
        finally: b.close()

@pytest.fixture
def page(browser):
    pg = browser.new_page(viewport={'width': 1280, 'height': 900})
    yield pg
    pg.close()

def test_home_status_table_is_a_table(site, page):
    out, base, _ = site
    page.goto(base + 'index.html')
    rows = page.evaluate("""() => { const h = document.getElementById('status');
        let e = h && h.nextElementSibling; while (e && !e.querySelector('table') && e.tagName !== 'TABLE') e = e.nextElementSibling;
        const t = e && (e.tagName === 'TABLE' ? e : e.querySelector('table'));
        return t ? [...t.querySelectorAll('tr')].map(r => r.children.length) : null; }""")
    assert rows, 'no <table> after the Status heading of the home page'
    assert len(rows) > 20 and set(rows) == {3}, f'the Status table has rows of {sorted(set(rows))} cells'
    assert '|---|' not in page.inner_text('article')                    # no table left as raw text

def test_each_recipe_page_shows_a_figure_of_its_own(site, page):
    out, base, _ = site
    lacking = {}
    for paper, path in RECIPES.items():
        page.goto(base + path)
        page.wait_for_load_state('load')
        figures = page.evaluate("""() => [...document.querySelectorAll('article img')]
            .filter(i => /^data:image\\/[a-z+]+;base64,./.test(i.getAttribute('src') || '') && i.naturalWidth > 0).length""")
        if not figures: lacking[paper] = path
    assert not lacking, f'recipe pages without a figure (a decoded <img> in the page): {lacking}'

def test_sampled_pages_do_not_scroll_sideways(site, page):
    out, base, _ = site
    wide = {}
    for path in SAMPLE:
        page.goto(base + path)
        page.wait_for_load_state('load')
        w = page.evaluate('() => [document.documentElement.scrollWidth, window.innerWidth]')
        if w[0] > w[1]: wide[path] = w
    assert not wide, f'pages wider than the window (scrollWidth, innerWidth): {wide}'

def test_search_finds_a_term_of_the_notebooks(site, page):
    out, base, _ = site
    index = json.loads((out / 'search' / 'search_index.json').read_text())
    hits = {d['location'].split('#')[0] for d in index['docs'] if 'Louvain' in d['text']}
    assert 'nbs/core/09b_graph.html' in hits
    page.goto(base + 'index.html')
    page.click('label.md-search__icon, .md-search__input', timeout=10_000)
    page.fill('input.md-search__input', 'Louvain')
    page.wait_for_selector('.md-search-result__item', timeout=30_000)
    links = page.eval_on_selector_all('.md-search-result__item a', 'as => as.map(a => a.getAttribute("href"))')
    assert any('09b_graph.html' in (l or '') for l in links), links
