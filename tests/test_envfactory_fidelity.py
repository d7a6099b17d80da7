"""EnvFactory against its paper: EnvGen grows a pool of 85+ environments from a folder of documents (the shipped
service catalog, one source per `## ` section), `paper.yaml` carries the official graph rule and the paper's embedder,
the exact-name rule and the identifier guard are options whose effect is measured, and the smoke run applies all
four refinement operators with no two tasks opening alike (the offline agent would replay the wrong gold)."""
import asyncio, json
from pathlib import Path
import pytest
from envsynth.envfactory.envgen import SEED_CATEGORIES, authentic_sources, propose_environments
from envsynth.envfactory.offline import offline_envfactory_teacher
from envsynth.envfactory.queries import OPERATORS
from envsynth.envfactory.recipe import read_params
from envsynth.llm import LLMClient
from test_envfactory_recipe import shared_smoke_run

ROOT = Path(__file__).resolve().parents[1]
REPRO = ROOT / 'papers_repro' / 'envfactory'
CATALOG = REPRO / 'sources'

def test_the_shipped_catalog_gives_the_offline_proposer_85_distinct_environments():
    sources = authentic_sources(CATALOG)
    assert len(sources) == len({s['name'] for s in sources}) >= 100
    assert len({s['document'] for s in sources}) == 7                       # the paper's seven domains
    client = LLMClient(offline_envfactory_teacher(), 'offline-teacher')
    out = asyncio.run(propose_environments(client, sources, 90, sources_per_ask=20))
    assert len(out.proposals) == 90 and not out.dropped, out.dropped
    assert len({p.name for p in out.proposals}) == 90 and len({p.category for p in out.proposals}) == 90
    assert all(4 <= len(p.tools) <= 12 for p in out.proposals)
    # each proposal's tools come from its own section's resources, not a shared template
    assert len({tuple(sorted(t.name for t in p.parsed_tools())) for p in out.proposals}) >= 80

def test_the_proposer_is_shown_a_bounded_number_of_sources():
    seen = []
    client = LLMClient(offline_envfactory_teacher(), 'offline-teacher')
    responder = client.backend.responders['envfactory.propose']
    def spy(req):
        from envsynth.offline_envs import request_json
        seen.append(len(request_json(req)['sources'])); return responder(req)
    client.backend.register('envfactory.propose', spy)
    asyncio.run(propose_environments(client, authentic_sources(CATALOG), 3, sources_per_ask=5))
    assert seen == [5, 5, 5]
    with pytest.raises(ValueError, match='sources_per_ask'):
        asyncio.run(propose_environments(client, SEED_CATEGORIES, 1, sources_per_ask=0))

def test_paper_yaml_carries_the_official_graph_rule_the_papers_embedder_and_a_documents_folder():
    p = read_params(REPRO / 'paper.yaml')
    assert (p.name_links, p.id_guard, p.embed_model, p.threshold, p.k) == (False, False, 'BAAI/bge-m3', 0.85, None)
    assert p.n_envs >= 85 and len(authentic_sources(ROOT / p.sources_dir)) >= p.n_envs
    assert max(p.pool_sizes) == 85
    d = read_params(REPRO / 'smoke.yaml')                                  # ours by default, MiniLM offline
    assert (d.name_links, d.id_guard, d.embed_model) == (True, True, None)
    s = read_params(REPRO / 'scale_offline.yaml')
    assert (s.sources_dir, s.name_links, s.id_guard, s.pool_sizes) == (p.sources_dir, False, False, [50, 85])

@pytest.fixture(scope='module')
def pool():
    from envsynth.envfactory.toolgraph import pool_corpus
    props = asyncio.run(propose_environments(LLMClient(offline_envfactory_teacher(), 'offline-teacher'),
                                             SEED_CATEGORIES, 3)).proposals
    return pool_corpus(props, {p.name: [t.name for t in p.parsed_tools()] for p in props})

def _mismatched(g, corpus) -> list[tuple]:
    "Links joining an identifier to another thing's identifier or to a non-identifier."
    from envsynth.graph import id_entities, output_fields, tool_entities
    fields = {(t.key, f.path): f for t in corpus for f in output_fields(t.tool)}
    out = []
    for u, v, d in g.edges(data=True):
        for path, p in d['links']:
            f = fields[(u, path)]
            a = id_entities(f.name, [f.owner] if f.owner else tool_entities(g.nodes[u]['name']))
            b = id_entities(p, tool_entities(g.nodes[v]['name']))
            if (a is None) != (b is None) or (a is not None and not a & b): out.append((u, v, path, p))
    return out

def test_the_name_rule_and_the_identifier_guard_are_options_with_measured_effects(pool):
    from envsynth.embed import Embedder
    from envsynth.envfactory.toolgraph import tool_graph
    emb = Embedder(cache=False)
    official = tool_graph(pool, emb, name_links=False, id_guard=False)
    bad = _mismatched(official, pool)
    assert ('clinic/get_appointment', 'clinic/get_doctor', 'patient_id', 'doctor_id') in bad
    guarded = tool_graph(pool, emb, name_links=False, id_guard=True)
    assert _mismatched(guarded, pool) == [] and set(guarded.edges) <= set(official.edges)
    ours = tool_graph(pool, emb)                                            # names + guard (the default)
    assert _mismatched(ours, pool) == [] and set(guarded.edges) < set(ours.edges)
    # the name rule only adds links of equal names: what it adds over the guarded cosine graph is such a link
    for u, v in set(ours.edges) - set(guarded.edges):
        assert any(path.split('.')[-1].removesuffix('[]') == p for path, p in ours[u][v]['links']), (u, v)

def test_the_smoke_run_applies_every_refinement_operator_and_no_two_tasks_open_alike(tmp_path_factory):
    run_dir, _ = shared_smoke_run(tmp_path_factory)
    card = json.loads((run_dir / 'data_card.json').read_text())
    assert set(card['queries']['operators']) == set(OPERATORS) and all(card['queries']['operators'].values())
    assert card['queries']['shared_openings'] == 0 and card['stages']['graph']['embedder'] == 'all-MiniLM-L6-v2'
    from envsynth.pipeline import read_records
    tasks = read_records(run_dir / '04_queries')
    assert len({t['instruction'] for t in tasks}) == len(tasks)
    for t in tasks:                              # an operator is named exactly where the refined query differs
        m = t['metadata']
        assert [o is not None for o in m['operators']] == [q != q0 for q, q0 in zip(t['user_queries'], m['unrefined_queries'])]
    solved = {s['task']['metadata']['chain_id'] for s in read_records(run_dir / '05_solutions')}
    assert solved == {t['metadata']['chain_id'] for t in tasks}    # the stand-in replays each task's own gold
