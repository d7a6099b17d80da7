"""Episodes per second of envsynth.rollout: the agent loop must never be the bottleneck.

    .venv/bin/python benchmarks/rollout.py [--episodes 4000] [--concurrency 32]

Workload: every task of every curated environment (60 tasks, 2-8 gold calls each), round-robin until `--episodes`,
with the oracle policy (replays the gold actions, one call per turn) and a scripted user (opens with the instruction,
stops after the first answer without a tool call); in-process environments. Each episode builds its messages,
validates and runs each call, records per-turn timing and computes the final state hash.

Rows, all measured in this run:
- baseline: the same gold calls with no agent loop (`Environment.gold_run`: fresh episode, steps, state hash), one
  process. The gap between this and the 1-process loop is what the loop costs.
- `rollout_env` in 1 process, and in 2 worker processes (each a shard of the episodes, its own event loop).
Target: >= 200 episodes/s on 2 cores.
"""
import argparse, asyncio, json, os, platform, subprocess, sys, time

def workload(n: int):
    from envsynth.env_library import list_environments, load_curated
    envs = {name: load_curated(name) for name in list_environments()}
    pairs = [(name, tid) for name, e in envs.items() for tid in sorted(e.tasks)]
    return envs, [pairs[i % len(pairs)] for i in range(n)]

def run_baseline(n: int) -> dict:
    envs, jobs = workload(n)
    t = time.perf_counter(); calls = 0
    for name, tid in jobs:
        results, _ = envs[name].gold_run(tid); calls += len(results)
    return {'episodes': n, 'calls': calls, 'seconds': time.perf_counter() - t}

def run_loop(n: int, concurrency: int, shard: int = 0, shards: int = 1) -> dict:
    from envsynth.rollout import OraclePolicy, ScriptedUser, rollout_env
    envs, jobs = workload(n)
    mine = jobs[shard::shards]
    by_env = {}
    for name, tid in mine: by_env.setdefault(name, []).append(tid)
    async def main():
        out = []
        for name, tids in by_env.items():
            out += await rollout_env(envs[name], tids, OraclePolicy, lambda t: ScriptedUser([t.instruction]), concurrency=concurrency)
        return out
    t = time.perf_counter()
    trajs = asyncio.run(main())
    dt = time.perf_counter() - t
    wrong = sum(tr.final_state_hash != envs[tr.info['env']].tasks[tr.task_id].gold_state_hash for tr in trajs)
    return {'episodes': len(trajs), 'calls': sum(tr.info['tool_calls'] for tr in trajs), 'seconds': dt, 'not_gold': wrong,
            'messages': sum(len(tr.messages) for tr in trajs)}

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--episodes', type=int, default=4000); ap.add_argument('--concurrency', type=int, default=32)
    ap.add_argument('--worker', type=int); ap.add_argument('--shards', type=int, default=1)
    args = ap.parse_args()
    if args.worker is not None:
        print(json.dumps(run_loop(args.episodes, args.concurrency, args.worker, args.shards))); return
    rows = [('baseline: gold calls, no agent loop (1 process)', run_baseline(args.episodes))]
    rows.append(('rollout_env, oracle + scripted user, 1 process', run_loop(args.episodes, args.concurrency)))
    t = time.perf_counter()
    procs = [subprocess.Popen([sys.executable, __file__, '--worker', str(i), '--shards', '2', '--episodes', str(args.episodes),
                               '--concurrency', str(args.concurrency)], stdout=subprocess.PIPE, text=True) for i in range(2)]
    parts = [json.loads(p.communicate()[0].strip().splitlines()[-1]) for p in procs]
    wall = time.perf_counter() - t          # includes the workers' start-up (imports, loading the environments)
    rows.append(('rollout_env, 2 worker processes (wall incl. start-up)',
                 {'episodes': sum(p['episodes'] for p in parts), 'calls': sum(p['calls'] for p in parts), 'seconds': wall,
                  'not_gold': sum(p['not_gold'] for p in parts)}))
    rows.append(('rollout_env, 2 worker processes (loop time, slowest worker)',
                 {'episodes': sum(p['episodes'] for p in parts), 'calls': sum(p['calls'] for p in parts),
                  'seconds': max(p['seconds'] for p in parts), 'not_gold': sum(p['not_gold'] for p in parts)}))
    print(f'Python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} CPUs; {args.episodes} episodes over the 60 curated '
          f'tasks; concurrency {args.concurrency} per process\n')
    print('| what | episodes | tool calls | seconds | episodes/s | tool calls/s | episodes off the gold state |')
    print('|---|---:|---:|---:|---:|---:|---:|')
    for what, r in rows:
        print(f"| {what} | {r['episodes']:,} | {r['calls']:,} | {r['seconds']:.2f} | {r['episodes'] / r['seconds']:,.0f} | "
              f"{r['calls'] / r['seconds']:,.0f} | {r.get('not_gold', '-')} |")
    print(f"\nloop overhead vs baseline (1 process): {rows[1][1]['seconds'] / rows[0][1]['seconds']:.2f}x the time; target >= 200 episodes/s")

if __name__ == '__main__': main()
