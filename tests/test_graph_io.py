"""The output -> input dependency graph (`dependency_graph(mode='outputs')`): hand-written tools, then a synthetic corpus
of 600 tools with declared outputs checked against a brute-force reference.

A cheap deterministic bag-of-words embedder stands in for sentence-transformers (the notebook uses the real one)."""
import functools, hashlib, json, random, re
import numpy as np
import pytest
from envsynth.chains import chain_satisfiable, sample_topology_chain
from envsynth.corpora import CorpusTool, ToolCorpus, synthetic_corpus
from envsynth.graph import (ToolEmbeddings, dependency_graph, embed_corpus, link_names, output_fields, tool_entities,
                            types_compatible)
from envsynth.schema import FunctionSchema, Tool, ToolSchemaError

class HashEmbedder:
    "Bag of words hashed into 256 dimensions, L2-normalized."
    def encode(self, texts):
        out = np.zeros((len(texts), 256), np.float32)
        for i, t in enumerate(texts):
            for w in re.findall(r'[a-z]+', t.lower()): out[i, int(hashlib.md5(w.encode()).hexdigest()[:6], 16) % 256] += 1
        return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-9)

S, I, B = {'type': 'string'}, {'type': 'integer'}, {'type': 'boolean'}

def make_tool(name, params=None, output=None, required=()):
    fn = {'name': name, 'description': f'{name} for the tests.', 'parameters': {'type': 'object', 'properties': params or {}, 'required': list(required)}}
    return Tool.parse(fn | ({'output_schema': output} if output is not None else {}))

def corpus_of(*tools, server='svc'):
    return ToolCorpus([CorpusTool(tool=t, server=s, source='test') for t, s in
                       ((t if isinstance(t, tuple) else (t, server)) for t in tools)])

def obj(**props): return {'type': 'object', 'properties': props}

def outputs_graph(corpus, **kw):
    return dependency_graph(corpus, embed_corpus(corpus, HashEmbedder()), mode='outputs', **({'threshold': 0.99, 'k': 4} | kw))

def test_get_user_feeds_update_user():
    c = corpus_of(make_tool('get_user', {'email': S}, obj(id=S, name=S, email=S)),
                  make_tool('update_user', {'user_id': S, 'name': S, 'phone': S}, obj(updated=B), required=['user_id']),
                  make_tool('notify', {'message': S}))
    g = outputs_graph(c)
    assert list(g.edges) == [('svc/get_user', 'svc/update_user')]           # nothing from `notify` (no output), no self-loop
    d = g['svc/get_user']['svc/update_user']
    assert d['links'] == [('id', 'user_id'), ('name', 'name')] and d['params'] == ['name', 'user_id'] and d['weight'] == 1.0
    assert ('svc/get_user', 'svc/get_user') not in g.edges                  # get_user's `email` output never feeds its own input

def test_type_mismatch_rejected_even_when_names_and_texts_agree():
    c = corpus_of(make_tool('count_logins', {'day': S}, obj(user_id=I)), make_tool('delete_user', {'user_id': S}),
                  make_tool('ban_user', {'user_id': {'type': 'array', 'items': I}}))
    g = outputs_graph(c, threshold=0.0, k=10)
    assert not g.has_edge('svc/count_logins', 'svc/delete_user')
    assert g['svc/count_logins']['svc/ban_user']['links'] == [('user_id', 'user_id')]   # one integer for an array of integers

def test_nested_fields_and_array_items():
    c = corpus_of(make_tool('create_order', {'item': S}, obj(order=obj(id=S, total={'type': 'number'}))),
                  make_tool('list_shipments', {'status': S}, {'type': 'array', 'items': obj(id=S, carrier=S)}),
                  make_tool('cancel_order', {'order_id': S}),
                  make_tool('track_shipment', {'shipment_id': S, 'carrier': S}))
    g = outputs_graph(c)
    assert g['svc/create_order']['svc/cancel_order']['links'] == [('order.id', 'order_id')]
    assert g['svc/list_shipments']['svc/track_shipment']['links'] == [('result[].carrier', 'carrier'), ('result[].id', 'shipment_id')]
    assert not g.has_edge('svc/create_order', 'svc/track_shipment')         # an order's id is not a shipment's

def test_embedding_links_score_by_similarity():
    c = corpus_of(make_tool('find_customer', {'name': S}, obj(mail_address=S | {'description': 'email address of the customer'})),
                  make_tool('write_email', {'recipient': S | {'description': 'email address of the customer to write to'}, 'body': I}))
    emb = embed_corpus(c, HashEmbedder())
    sim = float(emb.outputs[0] @ emb.params[emb.param_name.index('recipient')])
    assert 0.5 < sim < 1
    g = dependency_graph(c, emb, mode='outputs', threshold=0.5, k=3)
    d = g['svc/find_customer']['svc/write_email']
    assert d['links'] == [('mail_address', 'recipient')] and d['weight'] == pytest.approx(sim, abs=1e-6)
    assert not dependency_graph(c, emb, mode='outputs', threshold=sim + 0.01, k=3).has_edge('svc/find_customer', 'svc/write_email')

def test_scope_server():
    c = corpus_of((make_tool('get_user', {}, obj(id=S)), 'a'), (make_tool('update_user', {'user_id': S}), 'a'),
                  (make_tool('delete_user', {'user_id': S}), 'b'))
    assert set(outputs_graph(c).edges) == {('a/get_user', 'a/update_user'), ('a/get_user', 'b/delete_user')}
    assert set(outputs_graph(c, scope='server', threshold=0.0).edges) == {('a/get_user', 'a/update_user')}

def test_names_and_types():
    assert tool_entities('getUserProfile') == ['user_profile', 'user', 'profile']
    assert link_names('id', ['user']) == {'user_id'} and link_names('id', []) == set()      # generic names need an owner
    assert link_names('orderIds', []) == {'order_id'}
    assert types_compatible(I, {'type': 'number'}) and not types_compatible({'type': 'number'}, I)
    assert types_compatible({'type': 'array', 'items': S}, {'type': 'array'}) and not types_compatible(obj(), S)

def test_bad_input_gets_clear_errors():
    c = corpus_of(make_tool('get_user', {}, obj(id=S)), make_tool('update_user', {'user_id': S}))
    emb = embed_corpus(c, HashEmbedder())
    with pytest.raises(ValueError, match="mode must be"): dependency_graph(c, emb, mode='output')
    with pytest.raises(ValueError, match="scope must be"): dependency_graph(c, emb, mode='outputs', scope='servers')
    with pytest.raises(ValueError, match='not those of this corpus'): dependency_graph(ToolCorpus(c.tools[:1]), emb, mode='outputs')
    bare = ToolEmbeddings(emb.keys, emb.tools, emb.params, emb.param_tool, emb.param_name)
    with pytest.raises(ValueError, match='embeddings of the output fields'): dependency_graph(c, bare, mode='outputs')
    unchecked = Tool.model_construct(function=FunctionSchema.model_construct(name='raw', description='', parameters={}, output_schema=['id']))
    with pytest.raises(ToolSchemaError, match='output_schema must be a JSON Schema object'): output_fields(unchecked)
    with pytest.raises(ToolSchemaError):              # rejected when the tool is parsed, or when its fields are read
        output_fields(make_tool('bad', {}, obj(id='string')))

# --- a synthetic corpus with declared outputs, against a brute-force reference ---

def with_outputs(corpus: ToolCorpus, seed: int) -> ToolCorpus:
    "Give the lookup/create/list/count tools of a synthetic corpus output schemas (counts as integers, a type trap)."
    rng, out = random.Random(seed), []
    for t in corpus:
        fn, (verb, _, entity) = t.tool.function, t.name.partition('_')
        entity = re.sub(r'_\d+$', '', entity)
        schema = {'get': obj(id=S, name=S, status=S, owner=obj(id=S, email=S)), 'create': obj(**{f'{entity}_id': S, 'created': B}),
                  'list': obj(items={'type': 'array', 'items': obj(id=S, name=S)}, total=I),
                  'count': obj(count=I, **{f'{entity}_id': I})}.get(verb)
        if schema is not None and rng.random() < 0.8:
            t = CorpusTool(tool=Tool.parse(fn.model_dump(exclude_none=True) | {'output_schema': schema}), server=t.server, source=t.source)
        out.append(t)
    return ToolCorpus(out)

def reference_links(corpus, emb, threshold, scope):
    "Every (producer, consumer, field, parameter, score) by brute force over all pairs (k unbounded)."
    tools, ref = list(corpus), {}
    pschema = [json.dumps(tools[j].tool.function.parameters['properties'][n], sort_keys=True) for j, n in zip(emb.param_tool.tolist(), emb.param_name)]
    pnames = [link_names(n, tool_entities(tools[j].name)) for j, n in zip(emb.param_tool.tolist(), emb.param_name)]
    fits = functools.lru_cache(None)(lambda a, b: types_compatible(json.loads(a), json.loads(b)))
    sims = emb.outputs @ emb.params.T
    for f, (i, of) in enumerate(zip(emb.output_tool.tolist(), emb.output_fields)):
        fnames, fschema = link_names(of.name, [of.owner] if of.owner else tool_entities(tools[i].name)), json.dumps(of.schema, sort_keys=True)
        for p, j in enumerate(emb.param_tool.tolist()):
            if i == j or (scope == 'server' and tools[i].server != tools[j].server) or not fits(fschema, pschema[p]): continue
            score = 1.0 if fnames & pnames[p] else None
            if sims[f, p] >= threshold: score = max(score or 0.0, round(float(sims[f, p]), 6))
            if score is not None:
                key = (emb.keys[i], emb.keys[j], of.path, emb.param_name[p])
                ref[key] = max(ref.get(key, score), score)
    return ref

@pytest.mark.parametrize('scope', ['server', 'all'])
def test_outputs_graph_matches_brute_force(scope):
    corpus = with_outputs(synthetic_corpus(600, seed=2), seed=2)
    emb = embed_corpus(corpus, HashEmbedder())
    assert len(emb.outputs) > 300
    g = dependency_graph(corpus, emb, mode='outputs', threshold=0.77, k=10 ** 6, scope=scope)
    ref = reference_links(corpus, emb, 0.77, scope)
    got = {(u, v, f, p) for u, v, d in g.edges(data=True) for f, p in d['links']}
    assert got == set(ref) and got
    for u, v, d in g.edges(data=True):
        assert u != v and d["weight"] == pytest.approx(max(ref[(u, v, f, p)] for f, p in d["links"]), abs=1e-5)
        assert d['params'] == sorted({p for _, p in d['links']})
    assert any(ref[k] == 1.0 for k in ref) and any(ref[k] < 1.0 for k in ref)           # both kinds of link occur
    assert list(g.edges(data=True)) == list(dependency_graph(corpus, emb, mode='outputs', threshold=0.77, k=10 ** 6, scope=scope).edges(data=True))
    producers = {t.key for t in corpus if output_fields(t.tool)}
    assert {u for u, _ in g.edges} <= producers

def test_topk_bounds_embedding_links_per_field():
    corpus = with_outputs(synthetic_corpus(600, seed=3), seed=3)
    emb = embed_corpus(corpus, HashEmbedder())
    g = dependency_graph(corpus, emb, mode='outputs', threshold=0.3, k=2, scope='server')
    full = reference_links(corpus, emb, 0.3, 'server')
    got = {(u, v, f, p) for u, v, d in g.edges(data=True) for f, p in d['links']}
    assert got <= set(full) and {k for k, s in full.items() if s == 1.0} <= got                # name links are never cut by k
    per_field = {}
    for (u, v, f, p) in got - {k for k, s in full.items() if s == 1.0}: per_field[(u, f)] = per_field.get((u, f), 0) + 1
    assert per_field and max(per_field.values()) <= 2

def test_topology_chains_on_an_outputs_graph():
    corpus = with_outputs(synthetic_corpus(600, seed=4), seed=4)
    g = dependency_graph(corpus, embed_corpus(corpus, HashEmbedder()), mode='outputs', threshold=0.9, k=4, scope='server')
    by_key, kinds = corpus.by_key(), {(v, p): 'internal' for _, v, d in g.edges(data=True) for p in d.get('params', [])}
    assert any(v == 'internal' for v in kinds.values())
    rng = random.Random(0)
    chains = [c for c in (sample_topology_chain(g, kinds, by_key, rng) for _ in range(300)) if c]
    assert chains and all(chain_satisfiable(c, g, kinds, by_key) == [] for c in chains)
    assert any(len(c) > 1 for c in chains)
