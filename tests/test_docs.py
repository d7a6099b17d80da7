"""`make docs` builds the offline site (tools/build_docs.py, mkdocs.yml): every notebook with its saved outputs and
the README as pages with navigation. The build must find no link to a missing file and no path outside the
repository, in links or in prose, and no link of the built site may lead to nothing; the small fake repositories
below check that such links are caught. tests/test_docs_site.py opens the built site in a browser."""
import json, re, sys
from pathlib import Path
import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / 'tools'))
from build_docs import build_site, check_sources, notebook_title, notebooks, main   # noqa: E402

@pytest.fixture(scope='module')
def site(built_docs_site):
    out, summary, _ = built_docs_site
    return out, summary

def test_docs_site_has_no_broken_or_outside_links(site):
    out, s = site
    assert not s.problems, f'{len(s.problems)} links out of the repository or to nothing:\n' + '\n'.join(s.problems)

def test_every_notebook_and_the_readme_has_a_titled_page_in_the_navigation(site):
    out, s = site
    index = (out / 'index.html').read_text()
    nbs = notebooks(REPO)
    assert len(nbs) > 40 and 'nbs/00_quickstart.ipynb' in nbs
    for nb in nbs:
        page = out / Path(nb).with_suffix('.html')
        assert page.exists(), f'no page for {nb}'
        assert f'href="{Path(nb).with_suffix(".html").as_posix()}"' in index       # in the home page's navigation
    untitled = [nb for nb in nbs if notebook_title(json.loads((REPO / nb).read_text()), None) is None]
    assert not untitled, f'notebooks without a `# Title` in their first markdown cells: {untitled}'
    quick = (out / 'nbs' / '00_quickstart.html').read_text()
    assert '<title>Quickstart' in quick and 'href="../index.html"' in quick and 'search/search_index.json' not in quick
    assert '<span class="c1">#|' not in quick and 'warnings.filterwarnings' not in quick         # no directives, no hidden cells
    assert (out / 'search' / 'search_index.json').stat().st_size > 100_000
    for html_page in (index, quick):                                     # offline: no script or style from the web
        assert not re.search(r'<(?:script|link)\b[^>]*(?:src|href)="(?:https?:)?//', html_page)

def fake_repo(root: Path, markdown: str, readme: str = '# Fake\n\nSee [the notebook](nbs/a.ipynb).\n') -> Path:
    (root / 'nbs' / 'sub').mkdir(parents=True)
    (root / 'README.md').write_text(readme)
    cell = lambda kind, src: {'cell_type': kind, 'metadata': {}, 'source': src} | (
        {'outputs': [{'output_type': 'stream', 'name': 'stdout', 'text': 'hello\n'}], 'execution_count': None} if kind == 'code' else {})
    nb = lambda *cells: json.dumps({'cells': list(cells), 'metadata': {}, 'nbformat': 4, 'nbformat_minor': 5})
    (root / 'nbs' / 'a.ipynb').write_text(nb(cell('markdown', '# A\n' + markdown), cell('code', '#| export\nx = 1 # a comment'),
                                             cell('code', '#| hide\nsecret_scaffolding = 2')))
    (root / 'nbs' / 'sub' / 'b.ipynb').write_text(nb(cell('markdown', '# B\nBack to [A](../a.ipynb#top).')))
    (root / 'docs').mkdir(); (root / 'docs' / 'facts.md').write_text('# Facts\nSee [B](../nbs/sub/b.ipynb).\n')
    return root

def test_good_links_are_rewritten_to_pages(tmp_path):
    root = fake_repo(tmp_path / 'repo', 'See [B](sub/b.ipynb), [facts](../docs/facts.md), [home](../README.md), '
                     '[the config](../docs/cfg.yaml), [the papers](../papers) and [the web](https://example.org).')
    (root / 'docs' / 'cfg.yaml').write_text('k: 1\n')
    (root / 'papers').mkdir(); (root / 'papers' / 'README.md').write_text('# Papers\nBack [home](../README.md).\n')
    s = build_site(tmp_path / 'out', root)
    assert s.problems == []
    a = (tmp_path / 'out' / 'nbs' / 'a.html').read_text()
    assert 'href="sub/b.html"' in a and 'href="../docs/facts.html"' in a and 'href="https://example.org"' in a
    assert 'href="../index.html"' in a and 'href="../papers/index.html"' in a and 'href="../docs/cfg.yaml"' in a
    assert (tmp_path / 'out' / 'docs' / 'cfg.yaml').read_text() == 'k: 1\n'          # linked files are copied
    assert 'href="../index.html"' in (tmp_path / 'out' / 'papers' / 'index.html').read_text()
    assert 'hello' in a and '#| export' not in a and 'x = 1' in a
    assert 'secret_scaffolding' not in a                                 # `#| hide` cells are not shown
    assert 'href="../a.html#top"' in (tmp_path / 'out' / 'nbs' / 'sub' / 'b.html').read_text()
    assert 'href="../nbs/sub/b.html"' in (tmp_path / 'out' / 'docs' / 'facts.html').read_text()   # linked markdown is a page too

@pytest.mark.parametrize('markdown, problem', [
    ('See [the notes](research/notes.md).', "'research/notes.md': no such file"),
    ('See [C](sub/c.ipynb).', "'sub/c.ipynb': no such file"),
    ('See [shared](../../shared/DESIGN.md).', 'points outside the repository'),
    ('See [abs](/etc/passwd).', 'absolute path'),
    ('Facts are in `research/benchmarks.md` §2.', "mentions 'research/benchmarks.md', which is not in the repository"),
    ('As `../shared/research/x.md` says.', "mentions '../shared/research/x.md', outside the repository"),
])
def test_a_dead_or_outside_link_is_a_problem(tmp_path, markdown, problem):
    root = fake_repo(tmp_path / 'repo', markdown)
    s = check_sources(root)
    assert len(s.problems) == 1 and s.problems[0].startswith('nbs/a.ipynb: ') and problem in s.problems[0], s.problems

def test_placeholders_and_repository_paths_in_prose_are_fine(tmp_path):
    root = fake_repo(tmp_path / 'repo', 'It writes `DIR/chain.json`; see `docs/facts.md` and `nbs/sub/b.ipynb`.')
    assert check_sources(root).problems == []

def test_command_line_exits_1_on_a_broken_link(tmp_path, monkeypatch, capsys):
    import build_docs
    monkeypatch.setattr(build_docs, 'REPO', fake_repo(tmp_path / 'repo', 'See [gone](gone.ipynb).'))
    monkeypatch.setattr(build_docs, 'build_site', lambda out: check_sources(tmp_path / 'repo'))   # the exit code only
    assert main(['--out', str(tmp_path / 'out')]) == 1
    assert "'gone.ipynb': no such file" in capsys.readouterr().err
    (tmp_path / 'repo' / 'nbs' / 'gone.ipynb').write_text(json.dumps({'cells': [], 'metadata': {}, 'nbformat': 4, 'nbformat_minor': 5}))
    assert main(['--out', str(tmp_path / 'out')]) == 0

def test_a_repository_without_readme_is_an_error(tmp_path):
    (tmp_path / 'nbs').mkdir()
    with pytest.raises(FileNotFoundError, match='no README.md'): check_sources(tmp_path)

def test_a_built_page_linking_to_nothing_is_a_problem(tmp_path):
    from build_docs import built_problems
    (tmp_path / 'nbs').mkdir(); (tmp_path / 'index.html').write_text('<a href="nbs/a.html#x">a</a>')
    (tmp_path / 'nbs' / 'a.html').write_text('<img src="data:image/png;base64,AAAA"><a href="../index.html">home</a>'
                                             '<a href="gone.html">gone</a><link href="../../up.css"><a href="/abs.html">')
    assert built_problems(tmp_path) == ["site nbs/a.html: 'gone.html' leads to nothing",
                                        "site nbs/a.html: '../../up.css' leaves the site",
                                        "site nbs/a.html: absolute link '/abs.html'"]
