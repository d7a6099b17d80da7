"""How envsynth.corpora, envsynth.graph and envsynth.chains scale: embedding, top-k dependency graphs, Louvain and walks at 1k / 3k / 10k / 30k tools.

    .venv/bin/python benchmarks/graph_scale.py [--sizes 1000,3000,10000,30000] [--k 8]
        [--min-tools 4 --max-tools 40]

Corpus: `synthetic_corpus(n, seed=0)` (servers of 3-12 tools, 2-8 parameters each, deterministic). Each size runs in
its own process (so peak memory is that size's), first with an empty embedding cache (cold), then again with the cache
it filled (warm). Columns: seconds for embedding all tool and parameter texts, the io dependency graph (parameter ->
producing tool, top-k by blocked matrix products), the parameter-list graph (AgentScaler Eq. 1), Louvain on the latter,
1,000 weighted random walks; edges and domains found; peak RSS. Targets at 30k on 2 cores: < 10 min end to end,
< 4 GB peak. The baseline row is the dense alternative the blocked top-k avoids: the memory of one N x P float32
similarity matrix, computed, not allocated.

A second table gives the domain sizes of plain Louvain (`detect_domains`) and of `bounded_domains`
with the bounds of papers_repro/agentscaler/paper.yaml (4..40 tools; `--min-tools`/`--max-tools`
for others, e.g. the smoke's 3..12): count, min, median, p90, max, the share of all tools in a
domain within the bounds, and the seconds each took.
"""
import argparse, json, resource, subprocess, sys, tempfile, time
from pathlib import Path

def size_summary(sizes: list[int], n_tools: int, lo: int, hi: int) -> dict:
    "Count, min, p50, p90, max of domain sizes; the share of `n_tools` in domains of lo..hi tools."
    import numpy as np
    s = np.array(sorted(sizes) or [0])
    inside = int(s[(s >= lo) & (s <= hi)].sum())
    return {'count': len(sizes), 'min': int(s.min()), 'p50': float(np.percentile(s, 50)),
            'p90': float(np.percentile(s, 90)), 'max': int(s.max()), 'in_bounds': inside / n_tools}

def worker(n: int, cache: str, k: int, lo: int, hi: int) -> dict:
    from envsynth.embed import Embedder
    from envsynth.corpora import synthetic_corpus
    from collections import Counter
    from envsynth.graph import bounded_domains, embed_corpus, dependency_graph, detect_domains
    from envsynth.chains import random_walks
    out, t = {'n': n}, time.perf_counter()
    corpus = synthetic_corpus(n, seed=0); out['corpus_s'] = time.perf_counter() - t
    emb_model = Embedder(cache=cache, batch_size=256)
    t = time.perf_counter(); emb = embed_corpus(corpus, emb_model); out['embed_s'] = time.perf_counter() - t
    out['texts'], out['encoded'] = len(emb.tools) + len(emb.params), emb_model.encoded
    t = time.perf_counter(); io = dependency_graph(corpus, emb, mode='io', threshold=0.55, k=k, scope='server'); out['io_graph_s'] = time.perf_counter() - t
    t = time.perf_counter(); pg = dependency_graph(corpus, emb, mode='params', threshold=0.75, k=k); out['param_graph_s'] = time.perf_counter() - t
    t = time.perf_counter(); doms = detect_domains(pg, seed=0); out['louvain_s'] = time.perf_counter() - t
    t = time.perf_counter(); bounded = bounded_domains(pg, lo, hi, seed=0)
    out['bounded_s'] = time.perf_counter() - t
    out['louvain_sizes'] = size_summary(list(Counter(doms.values()).values()), n, lo, hi)
    out['bounded_sizes'] = size_summary([len(d) for d in bounded.domains], n, lo, hi)
    out['left_out'] = len(bounded.left_out)
    t = time.perf_counter(); walks = random_walks(io, n_walks=1000, min_len=2, max_len=5, seed=0); out['walks_s'] = time.perf_counter() - t
    out |= {'params': len(emb.params), 'io_edges': io.number_of_edges(), 'param_edges': pg.number_of_edges(),
            'domains': len(set(doms.values())), 'walks': len(walks),
            'peak_mb': resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            'dense_gb': len(emb.params) * len(emb.tools) * 4 / 1e9}
    return out

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--sizes', default='1000,3000,10000,30000'); ap.add_argument('--k', type=int, default=8)
    ap.add_argument('--min-tools', type=int, default=4)
    ap.add_argument('--max-tools', type=int, default=40)
    ap.add_argument('--worker', type=int); ap.add_argument('--cache'); args = ap.parse_args()
    bounds = ['--min-tools', str(args.min_tools), '--max-tools', str(args.max_tools)]
    if args.worker:
        out = worker(args.worker, args.cache, args.k, args.min_tools, args.max_tools)
        print(json.dumps(out)); return
    tmp = Path(tempfile.mkdtemp(prefix='envsynth-graph-bench-'))
    rows = []
    for n in map(int, args.sizes.split(',')):
        for run in ('cold', 'warm'):
            t = time.perf_counter()
            res = subprocess.run([sys.executable, __file__, '--worker', str(n), '--cache', str(tmp / f'emb-{n}.sqlite'), '--k', str(args.k),
                                  *bounds],
                                 capture_output=True, text=True, check=True)
            r = json.loads(res.stdout.strip().splitlines()[-1]) | {'run': run, 'total_s': time.perf_counter() - t}
            rows.append(r); print(f"{n} {run}: {r['total_s']:.1f}s", file=sys.stderr, flush=True)
    print(f'k={args.k}; times in seconds; total = the whole process (imports, model load, corpus generation included)\n')
    print('| tools | run | corpus | texts (encoded) | embed | io graph | param graph | Louvain | 1k walks | total | io edges | param edges | domains | peak RSS MB | dense N×P matrix GB (avoided) |')
    print('|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|')
    for r in rows:
        print(f"| {r['n']:,} | {r['run']} | {r['corpus_s']:.1f} | {r['texts']:,} ({r['encoded']:,}) | {r['embed_s']:.1f} | {r['io_graph_s']:.1f} | {r['param_graph_s']:.1f} | "
              f"{r['louvain_s']:.1f} | {r['walks_s']:.2f} | {r['total_s']:.1f} | {r['io_edges']:,} | {r['param_edges']:,} | {r['domains']} | "
              f"{r['peak_mb']:.0f} | {r['dense_gb']:.2f} |")

    print(f'\nDomain sizes (warm runs), bounds {args.min_tools}..{args.max_tools} tools; '
          'in bounds = share of all tools in a domain within the bounds\n')
    print('| tools | step | seconds | domains | min | p50 | p90 | max | in bounds | left out |')
    print('|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|')
    for r in rows:
        if r['run'] != 'warm': continue
        for step, key, secs, left in (
                ('Louvain', 'louvain_sizes', r['louvain_s'], '-'),
                ('bounded_domains', 'bounded_sizes', r['bounded_s'], f"{r['left_out']:,}")):
            d = r[key]
            print(f"| {r['n']:,} | {step} | {secs:.1f} | {d['count']:,} | {d['min']} | "
                  f"{d['p50']:.0f} | {d['p90']:.0f} | {d['max']:,} | {d['in_bounds']:.1%} | {left} |")

if __name__ == '__main__': main()
