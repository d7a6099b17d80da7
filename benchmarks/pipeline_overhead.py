"""Per-item overhead of envsynth.pipeline stages against a plain loop, measured in the same run.

    .venv/bin/python benchmarks/pipeline_overhead.py [--items 20000]

The stage function is trivial, so the table shows pure bookkeeping cost: hashing the input into a
key, one flushed JSONL append per item, the final in-order rewrite and the stats. Baseline: a plain
loop that calls the function and writes one JSONL file at the end (no resume, no keys, no stats).
"""
import argparse, asyncio, json, platform, tempfile, time
from pathlib import Path
from envsynth.pipeline import arun_stage, run_stage

def work(rec): return {'id': rec['id'], 'text': rec['text'].upper(), 'n': len(rec['text'])}
async def awork(rec): return work(rec)

def timed(f):
    t0 = time.perf_counter(); f(); return time.perf_counter() - t0

def main():
    ap = argparse.ArgumentParser(); ap.add_argument('--items', type=int, default=20000); args = ap.parse_args()
    inputs = [{'id': i, 'text': f'item number {i} ' * 4} for i in range(args.items)]
    tmp = Path(tempfile.mkdtemp(prefix='envsynth-bench-'))

    def baseline():
        with open(tmp / 'baseline.jsonl', 'w') as f:
            for rec in inputs: f.write(json.dumps(work(rec)) + '\n')

    rows = [('plain loop + one JSONL write (baseline)', timed(baseline))]
    rows.append(('run_stage, fresh', timed(lambda: run_stage(work, inputs, tmp / 'a', progress=False))))
    rows.append(('run_stage, everything already done (resume scan)', timed(lambda: run_stage(work, inputs, tmp / 'a', progress=False))))
    rows.append(('run_stage, fresh, tqdm bar on', timed(lambda: run_stage(work, inputs, tmp / 'b', progress=True))))
    rows.append(('arun_stage, fresh, concurrency 8', timed(lambda: asyncio.run(arun_stage(awork, inputs, tmp / 'c', progress=False)))))
    n_durable = min(args.items, 2000)
    t = timed(lambda: run_stage(work, inputs[:n_durable], tmp / 'd', durable=True, progress=False))
    rows.append((f'run_stage, durable=True (fsync per item; {n_durable} items, scaled)', t * args.items / n_durable))

    base = rows[0][1]
    print(f'{args.items} items, Python {platform.python_version()}, {platform.machine()}, temp dir {tmp.name}\n')
    print(f"| {'variant':<62} | {'total s':>8} | {'µs / item':>9} | {'overhead µs / item':>18} |")
    print(f"|{'-' * 64}|{'-' * 9}:|{'-' * 10}:|{'-' * 19}:|")
    for name, t in rows:
        print(f'| {name:<62} | {t:8.3f} | {t / args.items * 1e6:9.1f} | {(t - base) / args.items * 1e6:18.1f} |')

if __name__ == '__main__': main()
