"""The EnvFactory recipe end to end through its command line: the smoke run meets the recipe's contract
(tested environments, satisfiable chains, multi-turn tasks, solutions that replay to the gold state, the
reward check, counts with reasons, the environment-scaling table), bad parameters are a clear error (kills,
shards and resumes of every recipe: test_recipe_shards.py), a role left offline beside one with an endpoint is refused at the start, and a model that fails every
request is counted, never reported as success. The dependency graph's similarity rules
are checked against their definitions."""
import json, os, subprocess, sys
from pathlib import Path
import pytest
from envsynth.pipeline import read_records
from _recipe_runs import finish, start

pytestmark = pytest.mark.timeout(900)
SMOKE = str(Path(__file__).resolve().parents[1] / 'papers_repro' / 'envfactory' / 'smoke.yaml')
ITEM_STAGES = ('02_build', '04_queries', '05_solutions')

def _start(run_dir: Path, *extra) -> subprocess.Popen:
    return start([sys.executable, '-m', 'envsynth.envfactory.recipe', '--run-dir', str(run_dir), '--params', SMOKE, *extra])

_SMOKE_RUNS: list[tuple[Path, dict]] = []

def shared_smoke_run(tmp_path_factory) -> tuple[Path, dict]:
    "One uninterrupted smoke run per test session (other EnvFactory test modules read it too; never write into it)."
    if not _SMOKE_RUNS:
        whole = tmp_path_factory.mktemp('envfactory') / 'whole'
        _SMOKE_RUNS.append((whole, json.loads(finish(_start(whole)).strip().splitlines()[-1])))
    return _SMOKE_RUNS[0]

@pytest.fixture(scope='module')
def smoke_run(tmp_path_factory) -> tuple[Path, dict]:
    "One uninterrupted smoke run: its folder and the command line's summary."
    return shared_smoke_run(tmp_path_factory)

def _satisfiable_chains(run_dir: Path) -> list[list[str]]:
    "The sampled chains, checked: each required internal input is fed by an earlier tool of the chain."
    import networkx as nx
    from envsynth.chains import chain_satisfiable
    from envsynth.envfactory.envgen import EnvProposal
    from envsynth.envfactory.toolgraph import pool_corpus
    lines = (run_dir / '01_propose' / 'propose.jsonl').read_text().splitlines()[1:]   # after the header
    proposals = [EnvProposal.model_validate(json.loads(l)) for l in lines]
    built = {b['name']: b['tools'] for b in read_records(run_dir / '02_build')}
    by_key = {t.key: t for t in pool_corpus(proposals, built)}
    graph = json.loads((run_dir / '03_graph' / 'graph.json').read_text())
    g = nx.DiGraph(); g.add_nodes_from(graph['nodes'])
    for u, v, params in graph['edges']: g.add_edge(u, v, params=params)
    classes = json.loads((run_dir / '03_graph' / 'param_classes.json').read_text())
    kinds = {(key, p): c for key, ps in classes.items() for p, c in ps.items()}
    samples = (run_dir / '03_graph' / 'graph.jsonl').read_text().splitlines()[1:]
    samples = [json.loads(l) for l in samples]
    chains = [[f"{c['env']}/{n}" for n in c['tools']] for c in samples]
    assert chains and all(chain_satisfiable(c, g, kinds, by_key) == [] for c in chains)
    required = lambda key: by_key[key].tool.function.parameters.get('required') or []
    assert any(kinds[(k, p)] == 'internal' for c in chains for k in c for p in required(k))
    return chains

def test_smoke_run_meets_the_recipe_contract(smoke_run):
    run_dir, summary = smoke_run
    check = summary['reward_check']
    assert check['ok'] and check['oracle_min'] == 1.0 and check['do_nothing_max'] <= check['floor']
    card = json.loads((run_dir / 'data_card.json').read_text())
    builds = read_records(run_dir / '02_build')
    assert len(builds) >= 2 and all(sum(b['tests'].values()) > 0 for b in builds)   # tests passed
    assert {b['name'] for b in builds} == set(card['environments'])
    chains = _satisfiable_chains(run_dir)
    assert max(len(c) for c in chains) >= 2
    assert any(int(n) >= 2 for n in card['queries']['turns'])             # multi-turn tasks
    for stage, counts in card['stages'].items():                            # counts with reasons
        lost = sum(counts['dropped'].values()) + sum(counts.get('failed', {}).values())
        assert counts['inputs'] == counts['kept'] + lost, stage
    graph = card['stages']['graph']
    assert graph['similarity_edges'] > 0 and 'edits' in graph
    assert set(graph['isolated_tools']) == {'similarity', 'refined'}
    _replays_to_gold(run_dir)
    table = json.loads((run_dir / '07_scaling' / 'scaling.json').read_text())
    rows = table['rows']
    assert [r['pool_size'] for r in rows] == [1, 2, 3]
    assert (run_dir / '07_scaling' / 'scaling.png').stat().st_size > 0
    for small, big in zip(rows, rows[1:]):                                            # nested pools
        assert small['environments'] == big['environments'][:len(small['environments'])]
        assert set(small['task_ids']) <= set(big['task_ids'])
    assert rows[-1]['trajectories'] == summary['rows']['sft_trajectories']
    assert rows[-1]['tasks'] == card['stages']['queries']['kept']
    assert card['scaling'] == [{k: v for k, v in r.items() if k != 'task_ids'} for r in rows]

def _replays_to_gold(run_dir: Path) -> None:
    "Every kept solution's gold calls, replayed in a fresh episode, end in the task's gold state."
    from envsynth.envs import load_environment
    from envsynth.sandbox import SandboxPool
    from envsynth.schema import Task
    sols = read_records(run_dir / '05_solutions')
    assert sols
    with SandboxPool(size=1) as pool:
        envs = {}
        for s in sols:
            task = Task.model_validate(s['task'])
            if task.env_id not in envs:
                envs[task.env_id] = load_environment(run_dir / 'envs' / task.env_id, sandbox=pool)
            env = envs[task.env_id]
            results, end = env.run_actions(task.gold_actions, task)
            assert all(r.ok for r in results) and end == task.gold_state_hash, task.id
        for e in envs.values(): e.close()

def test_bad_parameters_are_a_clear_error(tmp_path):
    for bad in (['--set', 'n_envs=0'], ['--set', 'operators=["shout"]'], ['--set', 'no_such_knob=1'], ['--stages', 'nope']):
        proc = _start(tmp_path / 'bad', *bad)
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 2, (bad, err[-2000:])
        assert len(err.strip().splitlines()) == 1 and 'error' in err, err

def test_a_role_left_offline_beside_one_with_an_endpoint_is_refused(tmp_path):
    """The teacher has an endpoint, the agent (`policy`) none: the run stops at its start with one line (exit 2) and
    writes no stage; with `allow_offline_roles=true` the same run starts (and fails later: nothing listens there)."""
    env = {**os.environ, 'ENVSYNTH_LLM_TEACHER_ENDPOINT': 'http://127.0.0.1:9/v1', 'ENVSYNTH_LLM_TEACHER_MAX_RETRIES': '0',
           'ENVSYNTH_LLM_TEACHER_TIMEOUT_S': '5'}
    run_dir = tmp_path / 'run'
    cmd = [sys.executable, '-m', 'envsynth.envfactory.recipe', '--run-dir', str(run_dir), '--params', SMOKE]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr[-2000:]
    assert 'policy has no endpoint' in r.stderr and 'allow_offline_roles' in r.stderr
    assert not any((run_dir / f).exists() for f in ('params.json', '01_propose', '03_graph', *ITEM_STAGES))
    r = subprocess.run([*cmd, '--set', 'allow_offline_roles=true'], env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 1 and 'no endpoint' not in r.stderr, r.stderr[-2000:]
    assert (run_dir / 'params.json').exists()                       # past the role check: the run began

def test_a_model_that_always_fails_is_counted_not_passed(tmp_path):
    import asyncio
    from envsynth.llm import LLMClient, OfflineTeacher
    from envsynth.envfactory.envgen import TAGS
    from envsynth.envfactory.recipe import read_params, run_envfactory
    teacher = OfflineTeacher({tag: (lambda req: 'I cannot help with that.') for tag in TAGS.values()})   # every answer is unusable
    out = asyncio.run(run_envfactory(read_params(SMOKE, n_envs=2), tmp_path / 'r', LLMClient(teacher, 'broken')))
    assert out['reward_check']['ok'] is False and out['reward_check']['tasks'] == 0, out['reward_check']   # no success claimed
    assert out['status'] != 'ok'                                                                      # the command exits 1
    assert (out['rows']['sft_trajectories'], out['rows']['rl_rows']) == (0, 0) and out['stages']['build']['kept'] == 0
    stats = json.loads((tmp_path / 'r' / '01_propose' / 'stats.json').read_text())
    assert stats['kept'] == 0 and stats['dropped'] == {'proposal_failed': 4}

def test_graph_links_every_pair_above_the_threshold_with_no_neighbour_cap():
    """The official rule (no exact-name links, no identifier guard): an edge for every (output field, input
    parameter) pair of one environment, of compatible types, whose texts `name (type): description` have
    cosine >= 0.85; `similarity='weighted'` the same with 0.6 cos(`name (type)`) + 0.4 cos(`description`).
    No edge below the threshold."""
    import asyncio
    from envsynth.embed import Embedder
    from envsynth.graph import output_fields, param_text, types_compatible
    from envsynth.llm import LLMClient
    from envsynth.envfactory.envgen import SEED_CATEGORIES, propose_environments
    from envsynth.envfactory.offline import offline_envfactory_teacher
    from envsynth.envfactory.toolgraph import pool_corpus, tool_graph
    client = LLMClient(offline_envfactory_teacher(), 'offline')
    props = asyncio.run(propose_environments(client, SEED_CATEGORIES, 3)).proposals
    corpus = list(pool_corpus(props, {p.name: [t.name for t in p.parsed_tools()] for p in props}))
    embedder = Embedder()
    cos = lambda a, b: float(embedder.encode([a])[0] @ embedder.encode([b])[0])
    typed = lambda n, s: f"{n} ({s.get('type', 'any')})"
    describe = lambda schema: schema.get('description', '')
    desc_cos = lambda a, b: cos(a, b) if a.strip() and b.strip() else 0.0   # no description: adds 0
    inputs = lambda tool: (tool.function.parameters.get('properties') or {}).items()
    pairs = [(u, f, v, p, s) for u in corpus for f in output_fields(u.tool)
             for v in corpus if v.server == u.server and v is not u
             for p, s in inputs(v.tool) if types_compatible(f.schema, s)]
    assert len(pairs) > 100
    rules = {'text': lambda f, p, s: cos(param_text(f.path, f.schema), param_text(p, s)),
             'weighted': lambda f, p, s: 0.6 * cos(typed(f.path, f.schema), typed(p, s))
                                         + 0.4 * desc_cos(describe(f.schema), describe(s))}
    for similarity, score in rules.items():
        g = tool_graph(corpus, embedder, similarity=similarity, name_links=False, id_guard=False)
        above = [(u.key, v.key, (f.path, p)) for u, f, v, p, s in pairs
                 if score(f, p, s) >= 0.85 + 1e-5]
        assert above, similarity
        assert all(g.has_edge(a, b) and link in g[a][b]['links'] for a, b, link in above)
        assert all(d['weight'] >= 0.85 - 1e-5 for _, _, d in g.edges(data=True))
        loose = tool_graph(corpus, embedder, similarity=similarity, threshold=0.5, k=8, name_links=False, id_guard=False)
        assert g.number_of_edges() < loose.number_of_edges()

def test_each_call_goes_to_its_role(tmp_path):
    "Synthesis to the teacher, the solving agent's turns to the policy: the ledger names each client's calls."
    import asyncio
    from envsynth.llm import LLMClient, OfflineTeacher
    from envsynth.envfactory.envgen import TAGS
    from envsynth.envfactory.offline import offline_envfactory_teacher
    from envsynth.envfactory.recipe import read_params, run_envfactory
    teacher, agent = LLMClient(offline_envfactory_teacher(), 'teacher'), LLMClient(OfflineTeacher(), 'agent')
    out = asyncio.run(run_envfactory(read_params(SMOKE, n_envs=2), tmp_path / 'r', {'teacher': teacher, 'policy': agent}))
    assert out['status'] == 'ok' and out['rows']['sft_trajectories'] > 0
    assert set(agent.ledger.to_dict()) == {TAGS['agent']}
    assert TAGS['agent'] not in teacher.ledger.to_dict() and TAGS['propose'] in teacher.ledger.to_dict()
    from envsynth.envfactory.recipe import RECIPE
    from envsynth.recipe_frame import run_ledger
    tags = set(run_ledger(RECIPE.run_folder(tmp_path / 'r')))      # the given clients' spending, journaled at the end
    assert f"policy/{TAGS['agent']}" in tags and f"teacher/{TAGS['querygen']}" in tags
