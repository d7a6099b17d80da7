"""`envsynth.graph.bounded_domains` on graphs far larger than the notebook's: every domain within its bounds,
every tool accounted for, and the same domains whatever order the graph was built in."""
import random
from collections import Counter
import networkx as nx
from envsynth.graph import bounded_domains, detect_domains

def planted(n_groups: int = 60, size: int = 50, seed: int = 0) -> nx.DiGraph:
    "Groups of `size` tools with dense weighted edges inside and a few across, as a directed tool graph."
    g = nx.random_partition_graph([size] * n_groups, 0.2, 0.002, seed=seed, directed=True)
    rng = random.Random(seed)
    return nx.DiGraph((f't{a:05d}', f't{b:05d}', {'weight': round(rng.uniform(0.5, 1), 3)}) for a, b in g.edges)

def test_domains_stay_within_bounds_and_cover_every_connected_tool():
    g = planted()
    g.add_nodes_from(['lone_a', 'lone_b'])
    plain = detect_domains(g, seed=0)
    assert max(Counter(plain.values()).values()) > 40          # groups of 50: Louvain alone overshoots
    out = bounded_domains(g, 4, 40, seed=0)
    assert all(4 <= len(d) <= 40 for d in out.domains)
    assert sorted([n for d in out.domains for n in d] + out.left_out) == sorted(g.nodes)
    assert {'lone_a', 'lone_b'} <= set(out.left_out) and len(out.left_out) < 10
    assert out.labels()[out.domains[0][0]] == 0

def test_same_domains_whatever_the_build_order():
    g = planted(n_groups=20)
    edges = list(g.edges(data=True)); random.Random(1).shuffle(edges)
    shuffled = nx.DiGraph(); shuffled.add_nodes_from(sorted(g.nodes, reverse=True)); shuffled.add_edges_from(edges)
    assert bounded_domains(shuffled, 3, 12, seed=3) == bounded_domains(g, 3, 12, seed=3)
