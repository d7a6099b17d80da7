"""ASTRA against the paper, seam by seam: the hop budget is a constraint (an instance off its budget is dropped and
counted), chain sampling is seeded by the servers' content (not the file they were read from), a remote MCP server in
`call_info` is read (its endpoint, never its credentials) and either emulated or skipped, counted either way, and a
paper-scale run with its inputs missing stops with one line."""
import asyncio, json, shutil
from collections import Counter
from pathlib import Path
import pytest
from envsynth.astra.offline import offline_recipe_client
from envsynth.astra.qa import read_knowledge, sample_knowledge_dir, synthesize_qa
from envsynth.astra.recipe import RECIPE, read_params, run_astra
from envsynth.astra.tool_docs import read_mcp_servers, remote_endpoint, sample_servers_file

pytestmark = pytest.mark.timeout(300)
REPO = Path(__file__).resolve().parents[1]
SMOKE = REPO / 'papers_repro' / 'astra' / 'smoke.yaml'

def test_an_instance_off_its_hop_budget_is_dropped_and_counted():
    docs, client = read_knowledge(sample_knowledge_dir()), offline_recipe_client()
    for doc in docs:
        free, gated, drops = [], [], Counter()
        for h in (2, 3, 4):
            free += asyncio.run(synthesize_qa(doc, client, hop_budget=h, n=2))
            gated += asyncio.run(synthesize_qa(doc, client, hop_budget=h, n=2, hop_tolerance=0, drops=drops))
        assert all(i.hops == i.hop_budget for i in gated)
        off = [i for i in free if i.hops != i.hop_budget]
        assert drops.get('off_hop_budget', 0) == len(off) and len(gated) == len(free) - len(off)
    loose = Counter()
    kept = asyncio.run(synthesize_qa(docs[0], client, hop_budget=3, n=2, hop_tolerance=1, drops=loose))
    assert all(abs(i.hops - 3) <= 1 for i in kept) and 'off_hop_budget' not in loose

def test_remote_endpoints_keep_no_credentials():
    assert remote_endpoint({'url': 'https://h/mcp?api_key=SECRET', 'headers': {'Authorization': 'Bearer SECRET'}}) == 'https://h/mcp'
    assert remote_endpoint({'python_sdk_url': 'https://server.example/{config_b64}/mcp', 'python_sdk_config': {'k': 1}}) \
        == 'https://server.example/{config_b64}/mcp'
    assert remote_endpoint({'mock_tool': True, 'url': 'https://h'}) == '' and remote_endpoint({'deployed': {'a': 'sqlite'}}) == ''
    servers, _ = read_mcp_servers(sample_servers_file())
    assert [s.name for s in servers if s.remote] == ['library-catalog']
    assert 'Bearer' not in json.dumps([s.model_dump(mode='json') for s in servers])

def _chains(run_dir: Path) -> list[str]:
    return sorted(json.dumps(c, sort_keys=True) for c in RECIPE.run_folder(run_dir).records('chains'))

def test_chains_and_remote_counts_do_not_depend_on_the_file_name(tmp_path):
    "The same servers under another file name give the same chains; a remote server is emulated, or skipped and counted."
    renamed = tmp_path / 'other_name.jsonl'
    shutil.copy(sample_servers_file(), renamed)
    p = read_params(SMOKE, decontamination=False)
    asyncio.run(run_astra(p, tmp_path / 'a', stages=['chains']))
    asyncio.run(run_astra(p.model_copy(update={'mcp_servers_files': [str(renamed)]}), tmp_path / 'b', stages=['chains']))
    assert _chains(tmp_path / 'a') == _chains(tmp_path / 'b') and _chains(tmp_path / 'a')
    docs = json.loads((tmp_path / 'a' / '01_tool_docs' / 'dropped.json').read_text())
    assert docs['remote_servers'] == {'read': 1, 'emulated': 1}
    asyncio.run(run_astra(p.model_copy(update={'remote_servers': 'skip'}), tmp_path / 'c', stages=['chains']))
    skipped = json.loads((tmp_path / 'c' / '01_tool_docs' / 'dropped.json').read_text())
    assert skipped['remote_servers'] == {'read': 1, 'skipped': 1} and skipped['dropped']['remote_server'] == 4
    assert 'library-catalog' not in {c['server'] for c in RECIPE.run_folder(tmp_path / 'c').records('chains')}

@pytest.mark.parametrize('command,params,word', [('run', 'paper.yaml', 'mcp_servers_files: no file data/astra/mcp_servers.jsonl'),
                                                 ('rl', 'rl_paper.yaml', 'knowledge source data/astra/knowledge does not exist')])
def test_paper_scale_without_its_inputs_stops_with_one_line(tmp_path, monkeypatch, capsys, command, params, word):
    from envsynth.astra import recipe, rl_recipe
    monkeypatch.chdir(tmp_path)                    # the parameter files name data/astra/... relative to where the run starts
    main = recipe.main if command == 'run' else rl_recipe.main
    rc = main(['--run-dir', str(tmp_path / 'r'), '--params', str(REPO / 'papers_repro' / 'astra' / params), '--set', 'allow_offline_roles=true'])
    err = capsys.readouterr().err
    assert rc == 2 and len(err.strip().splitlines()) == 1 and word in err, err[-1500:]
