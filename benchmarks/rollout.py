"""Episodes per second of envsynth.rollout: the agent loop must never be the bottleneck.

    .venv/bin/python benchmarks/rollout.py [--episodes 4000] [--concurrency 32] [--sandboxed 100] [--no-fresh]

Workload: every task of every curated environment (60 tasks, 2-8 gold calls each), round-robin until `--episodes`,
with the oracle policy (replays the gold actions, one call per turn) and a scripted user (opens with the instruction,
stops after the first answer without a tool call). Each episode builds its messages, validates and runs each call,
records per-turn timing and computes the final state hash and the trajectory's content id.

Rows, all measured in this run (wall time of the episodes; CPU time of this process and its children):
- ceiling: the same gold calls with no agent loop (`Environment.gold_run`: fresh episode, steps, state hash), one
  process. The gap between this and the 1-process loop is what the loop costs.
- `rollout_jobs` in 1 process; `rollout_processes` with `processes=2`: this process runs half the jobs while one
  forked worker runs the other half (wall includes the fork, the worker's pickling and this process unpickling
  its trajectories).
- before: 2 fresh interpreters (`python benchmarks/rollout.py --worker i`), each importing envsynth and loading the
  environments: what running a shard per process cost before `rollout_processes` (`--no-fresh` skips it).
- sandboxed: `rollout_jobs` on the same environments loaded in a `SandboxPool` (untrusted-code path), 1 process;
  `--sandboxed 0` skips it. Twice: with the default `SandboxLimits` (4 environment templates and 8
  open episodes per worker: the 8 curated environments take turns on both workers, so templates are
  reloaded over and over and episodes parked), then with limits sized to the workload (every
  template stays loaded) at concurrency 4.
Targets: >= 1,000 oracle episodes/s in one process; 2 processes >= 1.8x one (needs 2 idle cores: the load
average is printed with the table).
"""
import argparse, asyncio, json, os, platform, resource, subprocess, sys, time

def workload(n: int, sandbox=None):
    from envsynth.env_library import list_environments, load_curated
    envs = {name: load_curated(name, sandbox=sandbox) for name in list_environments()}
    pairs = [(name, tid) for name, e in envs.items() for tid in sorted(e.tasks)]
    return envs, [pairs[i % len(pairs)] for i in range(n)]

def cpu_seconds() -> float:
    "CPU time of this process and of its children that have been waited for."
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime

def measured(run) -> dict:
    t, c = time.perf_counter(), cpu_seconds()
    out = run()
    return out | {'seconds': time.perf_counter() - t, 'cpu': cpu_seconds() - c}

def summary(envs, trajs) -> dict:
    wrong = sum(tr.final_state_hash != envs[tr.info['env']].tasks[tr.task_id].gold_state_hash for tr in trajs)
    return {'episodes': len(trajs), 'calls': sum(tr.info['tool_calls'] for tr in trajs), 'not_gold': wrong}

def gold_only(envs, jobs) -> dict:
    calls = 0
    for name, tid in jobs: calls += len(envs[name].gold_run(tid)[0])
    return {'episodes': len(jobs), 'calls': calls}

def scripted(task):
    from envsynth.rollout import ScriptedUser
    return ScriptedUser([task.instruction])

def fresh_worker(args):
    "A shard in a fresh interpreter: import, load, run (the old way to use 2 cores); prints its summary as JSON."
    from envsynth.rollout import rollout_jobs
    envs, jobs = workload(args.episodes)
    mine = jobs[args.worker::args.shards]
    t = time.perf_counter()
    trajs = asyncio.run(rollout_jobs(envs, mine, make_user=scripted, concurrency=args.concurrency))
    print(json.dumps(summary(envs, trajs) | {'loop_seconds': time.perf_counter() - t}))

def fresh_processes(args) -> dict:
    procs = [subprocess.Popen([sys.executable, __file__, '--worker', str(i), '--shards', '2', '--episodes', str(args.episodes),
                               '--concurrency', str(args.concurrency)], stdout=subprocess.PIPE, text=True) for i in range(2)]
    parts = [json.loads(p.communicate()[0].strip().splitlines()[-1]) for p in procs]
    return {k: sum(p[k] for p in parts) for k in ('episodes', 'calls', 'not_gold')} | {'loop': max(p['loop_seconds'] for p in parts)}

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--episodes', type=int, default=4000); ap.add_argument('--concurrency', type=int, default=32)
    ap.add_argument('--sandboxed', type=int, default=100, help='episodes with sandboxed environments (0: skip)')
    ap.add_argument('--no-fresh', action='store_true', help='skip the fresh-interpreter row')
    ap.add_argument('--worker', type=int); ap.add_argument('--shards', type=int, default=1)
    args = ap.parse_args()
    if args.worker is not None: return fresh_worker(args)
    from envsynth.rollout import rollout_jobs, rollout_processes
    load_before = os.getloadavg()
    envs, jobs = workload(args.episodes)
    rollout_jobs_1 = lambda: summary(envs, asyncio.run(rollout_jobs(envs, jobs, make_user=scripted, concurrency=args.concurrency)))
    rows = [('ceiling: gold calls only, no agent loop (1 process)', measured(lambda: gold_only(envs, jobs))),
            ('`rollout_jobs`, oracle + scripted user, 1 process', measured(rollout_jobs_1)),
            ('`rollout_processes(processes=2)`: this process + 1 forked worker', measured(lambda: summary(envs, rollout_processes(
                envs, jobs, make_user=scripted, processes=2, concurrency=args.concurrency))))]
    if not args.no_fresh:
        r = measured(lambda: fresh_processes(args))
        rows.append(('before: 2 fresh interpreters (wall incl. imports + loading)', r))
        rows.append(('  same, episodes only (slowest worker)', r | {'seconds': r['loop'], 'cpu': None}))
    if args.sandboxed:
        from envsynth.sandbox import SandboxLimits, SandboxPool
        sized = SandboxLimits(environments=len(envs), episodes=16)
        for what, limits, conc in (('default limits', SandboxLimits(), args.concurrency),
                                   (f'`environments={len(envs)}`, concurrency 4', sized, 4)):
            with SandboxPool(size=2, limits=limits) as pool:
                boxed, boxed_jobs = workload(args.sandboxed, sandbox=pool)
                # one job per environment, twice: start the workers, load the templates on both
                warm = list({name: (name, tid) for name, tid in boxed_jobs}.values()) * 2
                asyncio.run(rollout_jobs(boxed, warm, make_user=scripted))
                run = lambda: rollout_jobs(boxed, boxed_jobs, make_user=scripted, concurrency=conc)
                rows.append((f'sandboxed (`SandboxPool(size=2)`, {what}), 1 process',
                             measured(lambda: summary(boxed, asyncio.run(run())))))
    load_after = os.getloadavg()
    print(f'Python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} CPUs; {args.episodes} episodes over the '
          f'{len(set(jobs))} curated tasks; concurrency {args.concurrency} per process; load average (1, 5, 15 min) '
          f'{", ".join(f"{x:.1f}" for x in load_before)} before, {", ".join(f"{x:.1f}" for x in load_after)} after\n')
    print('| what | episodes | tool calls | wall s | episodes/s | CPU s | ms per episode (wall) | episodes off the gold state |')
    print('|---|---:|---:|---:|---:|---:|---:|---:|')
    for what, r in rows:
        cpu = '-' if r['cpu'] is None else f"{r['cpu']:.2f}"
        print(f"| {what} | {r['episodes']:,} | {r['calls']:,} | {r['seconds']:.2f} | {r['episodes'] / r['seconds']:,.0f} | {cpu} | "
              f"{1000 * r['seconds'] / r['episodes']:.2f} | {r.get('not_gold', '-')} |")
    one, two = rows[1][1], rows[2][1]
    print(f"\nloop vs ceiling (1 process): {one['seconds'] / rows[0][1]['seconds']:.2f}x the time; "
          f"2 processes vs 1: {one['seconds'] / two['seconds']:.2f}x the episodes/s (target >= 1.8x on 2 idle cores)")

if __name__ == '__main__': main()
