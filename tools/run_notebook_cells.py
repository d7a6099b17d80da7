"Run a notebook's code cells in one namespace (no Jupyter on the device): parameters injected, top-level await allowed."
import ast, asyncio, inspect, json, sys, time
nb_path, params, extra = sys.argv[1], json.loads(sys.argv[2]), (sys.argv[3] if len(sys.argv) > 3 else '')
nb = json.load(open(nb_path)); ns = {'__name__': '__main__'}
loop = asyncio.new_event_loop()
for i, c in enumerate(nb['cells']):
    if c['cell_type'] != 'code': continue
    src = ''.join(c['source'])
    t0 = time.time()
    code = compile(src, f'<cell {i}>', 'exec', flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    r = eval(code, ns)
    if inspect.iscoroutine(r): loop.run_until_complete(r)
    if 'parameters' in c.get('metadata', {}).get('tags', []): ns.update(params)
    if src.startswith('train_trajs = oracle_trajectories') and extra:
        exec(extra, ns)
    print(f'cell {i} {time.time() - t0:.1f}s: {src.splitlines()[0][:80]}', flush=True)
