"""envsynth.mcp against real MCP servers from PyPI (ASTRA's "deployed MCP servers"), over stdio.

Each server runs from `.venv-mcp-servers/` (created on first use, pinned by tests/mcp_servers_constraints.txt);
the client is envsynth's, on mcp 2.x. Everything is offline and local: a temp git repo, a temp SQLite file."""
import subprocess, tempfile
from pathlib import Path
import pytest
from envsynth.mcp import MCPClient
from _mcp import ensure_mcp_servers

pytestmark = pytest.mark.timeout(300)

@pytest.fixture(scope='module')
def bin_dir(): return ensure_mcp_servers()

def test_time_server(bin_dir):
    with MCPClient(str(bin_dir / 'mcp-server-time'), ['--local-timezone', 'UTC']) as c:
        names = {t.name for t in c.tools}
        assert {'get_current_time', 'convert_time'} <= names and not c.problems
        assert set(c.tool('get_current_time').function.parameters['required']) == {'timezone'}
        r = c.call('get_current_time', {'timezone': 'Europe/Paris'})
        assert r.ok and 'Europe/Paris' in r.content()
        r = c.call('convert_time', {'source_timezone': 'UTC', 'time': '12:00', 'target_timezone': 'Asia/Tokyo'})
        assert r.ok and '21:00' in r.content()
        assert c.call('get_current_time', {'timezone': 'Mars/Olympus'}).error.type == 'execution_error'
        assert c.call('get_current_time', {}).error.type == 'invalid_arguments'       # checked before sending

def test_git_server(bin_dir, tmp_path):
    repo = tmp_path / 'repo'
    subprocess.run(['git', 'init', '-q', str(repo)], check=True)
    (repo / 'notes.txt').write_text('first\n')
    with MCPClient(str(bin_dir / 'mcp-server-git'), ['--repository', str(repo)]) as c:
        assert {'git_status', 'git_add', 'git_commit', 'git_log', 'git_diff_staged'} <= {t.name for t in c.tools}
        assert 'notes.txt' in c.call('git_status', {'repo_path': str(repo)}).content()
        assert c.call('git_add', {'repo_path': str(repo), 'files': ['notes.txt']}).ok
        assert 'first' in c.call('git_diff_staged', {'repo_path': str(repo)}).content()
    # the server commits with the repo's identity: give it one, then commit through MCP
    subprocess.run(['git', '-C', str(repo), 'config', 'user.email', 't@example.invalid'], check=True)
    subprocess.run(['git', '-C', str(repo), 'config', 'user.name', 'envsynth test'], check=True)
    with MCPClient(str(bin_dir / 'mcp-server-git'), ['--repository', str(repo)]) as c:
        assert c.call('git_commit', {'repo_path': str(repo), 'message': 'add notes'}).ok
        assert 'add notes' in c.call('git_log', {'repo_path': str(repo)}).content()
    assert 'add notes' in subprocess.run(['git', '-C', str(repo), 'log', '--oneline'], capture_output=True, text=True).stdout

def test_sqlite_server(bin_dir, tmp_path):
    db = tmp_path / 'shop.db'
    with MCPClient(str(bin_dir / 'mcp-server-sqlite'), ['--db-path', str(db)]) as c:
        assert {'read_query', 'write_query', 'create_table', 'list_tables', 'describe_table'} <= {t.name for t in c.tools}
        assert c.call('create_table', {'query': 'CREATE TABLE parts (id INTEGER PRIMARY KEY, name TEXT, qty INTEGER)'}).ok
        assert c.call('write_query', {'query': "INSERT INTO parts (name, qty) VALUES ('bolt', 40), ('nut', 7)"}).ok
        r = c.call('read_query', {'query': 'SELECT name, qty FROM parts WHERE qty > 10'})
        assert r.ok and 'bolt' in r.content() and 'nut' not in r.content()
        assert 'parts' in c.call('list_tables', {}).content()
        # this server reports SQL errors as ordinary text, without MCP's isError flag: the client passes that on as is
        bad = c.call('read_query', {'query': 'SELECT * FROM missing_table'})
        assert bad.ok and 'no such table: missing_table' in bad.content()
    import sqlite3
    assert sqlite3.connect(db).execute('SELECT sum(qty) FROM parts').fetchone() == (47,)

def test_calculator_server(bin_dir):
    with MCPClient(str(bin_dir / 'mcp-server-calculator'), []) as c:
        assert [t.name for t in c.tools] == ['calculate']
        r = c.call('calculate', {'expression': '2*21'})
        assert r.ok and r.output == {'result': '42'}     # FastMCP wraps a str return as structured {'result': ...}
        assert not c.call('calculate', {'expression': '1/0'}).ok
        assert c.call('calculate', {'expr': '1'}).error.type == 'invalid_arguments'

def test_server_killed_mid_session(bin_dir):
    "A server that dies between calls gives `unavailable`, not a hang or an exception."
    with MCPClient(str(bin_dir / 'mcp-server-calculator'), [], timeout_s=10) as c:
        assert c.call('calculate', {'expression': '1+1'}).ok
        out = subprocess.run(['pkill', '-f', 'mcp-server-calculator'], capture_output=True)
        r = c.call('calculate', {'expression': '1+1'})
        assert not r.ok and r.error.type in ('unavailable', 'timeout'), r

def test_mcp_servers_as_a_tool_corpus(bin_dir, tmp_path):
    "envsynth.corpora reads a live server's tools into a corpus, tagged with the server."
    from envsynth.corpora import corpus_from_mcp, filter_corpus
    with MCPClient(str(bin_dir / 'mcp-server-sqlite'), ['--db-path', str(tmp_path / 'x.db')]) as c:
        corpus = corpus_from_mcp(c, 'sqlite')
    assert {t.key for t in corpus} >= {'sqlite/read_query', 'sqlite/write_query', 'sqlite/list_tables'}
    assert all(t.source == 'mcp' and t.benchmark is None for t in corpus)
    assert len(filter_corpus(corpus)) >= 3
