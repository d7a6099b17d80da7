"""Cost and throughput of envsynth.llm against a fake OpenAI endpoint with fixed latency, measured in one run.

    .venv/bin/python benchmarks/llm_throughput.py [--latency 1.0] [--levels 128] [--cache-items 5000]

The endpoint is a minimal asyncio HTTP/1.1 server (keep-alive, one fixed chat completion) in its own process: it
answers every request `latency` seconds after reading it and costs microseconds per request, so it is never the
bottleneck, and the ideal throughput at concurrency c is c / latency. For each client, in the same run: requests
per second (and % of ideal) and the client process's CPU time per request (`time.process_time`, event loop and
all): `LLMClient` (envsynth), the bare `openai` SDK (AsyncOpenAI + a semaphore), and a raw `httpx.AsyncClient`
posting the JSON (the floor: HTTP and JSON only), also split over 8 clients (httpx's pool checks every
connection it holds before each request, so its CPU per request grows with the requests in flight on it);
`LLMClient` with one SDK client and with up to 8 (`OpenAIBackend(clients=8)`, the default: a request goes to
the least busy client, a new one is made when all have 16 in flight). The last column is the event loop's lag:
how late a 5 ms timer fires while the requests run (median / max), i.e. how long a reply waits for the loop.
Then cache hits per second through `LLMClient.chat` (replay mode, messages built beforehand): the path a hit took
before (the key by `content_hash`, a SQLite read and a pydantic validation per hit, the message copied), then
the client with `ChatCache(memory_items=0)` (SQLite every hit), the client's first pass over a cache written by
another process (SQLite, then memory) and its later passes (memory); and `ChatCache.get` alone.
Targets: >= 90% of ideal at concurrency 128 and 1 s latency; >= 50,000 cache hits/s through the client.
"""
import argparse, asyncio, json, os, socket, sqlite3, subprocess, sys, tempfile, time
from pathlib import Path
import httpx, openai
from envsynth.formats import split_think
from envsynth.llm import ChatCache, ChatResult, LLMClient, OfflineTeacher, OpenAIBackend
from envsynth.schema import content_hash, user

SERVER = r'''
import asyncio, json, sys
port, latency = int(sys.argv[1]), float(sys.argv[2])
BODY = json.dumps({'id': 'chatcmpl-fake', 'object': 'chat.completion', 'created': 0, 'model': 'fake',
                   'choices': [{'index': 0, 'message': {'role': 'assistant', 'content': 'ok'}, 'finish_reason': 'stop'}],
                   'usage': {'prompt_tokens': 10, 'completion_tokens': 5, 'total_tokens': 15}}).encode()
REPLY = b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s' % (len(BODY), BODY)
async def serve(reader, writer):
    try:
        while True:
            head = await reader.readuntil(b'\r\n\r\n')
            n = next((int(l.split(b':', 1)[1]) for l in head.split(b'\r\n') if l.lower().startswith(b'content-length:')), 0)
            if n: await reader.readexactly(n)
            await asyncio.sleep(latency)
            writer.write(REPLY)
    except (asyncio.IncompleteReadError, ConnectionError): pass
    finally: writer.close()
async def main():
    server = await asyncio.start_server(serve, '127.0.0.1', port, backlog=1024)
    async with server: await server.serve_forever()
asyncio.run(main())
'''

def free_port() -> int:
    with socket.socket() as s: s.bind(('127.0.0.1', 0)); return s.getsockname()[1]

def timed(n_warm, n, make_one, close):
    """Run `n_warm` then `n` requests of `make_one(i)` concurrently; wall seconds and CPU seconds of the `n`,
    and the lags of a 5 ms timer meanwhile (sorted)."""
    async def run():
        await asyncio.gather(*(make_one(f'warm{i}') for i in range(n_warm)))       # warm-up: open the connections
        lags, done = [], []
        async def ticker():
            while not done:
                t = time.perf_counter(); await asyncio.sleep(0.005); lags.append(time.perf_counter() - t - 0.005)
        tick = asyncio.ensure_future(ticker())
        t0, c0 = time.perf_counter(), time.process_time()
        await asyncio.gather(*(make_one(i) for i in range(n)))
        out = time.perf_counter() - t0, time.process_time() - c0
        done.append(True); await tick
        await close(); return (*out, sorted(lags))
    return asyncio.run(run())

def bare_sdk(base_url, conc, n):
    client, sem = openai.AsyncOpenAI(base_url=base_url, api_key='x', max_retries=0), asyncio.Semaphore(conc)
    async def one(i):
        async with sem: await client.chat.completions.create(model='fake', messages=[{'role': 'user', 'content': f'q{i}'}])
    return timed(conc, n, one, client.close)

def raw_httpx(base_url, conc, n, pools=1):
    "Raw httpx: `pools` clients used in turn, each with conc / pools connections."
    size = max(1, conc // pools)
    clients = [httpx.AsyncClient(base_url=base_url, limits=httpx.Limits(max_connections=size, max_keepalive_connections=size),
                                 timeout=60) for _ in range(pools)]
    sem = asyncio.Semaphore(conc)
    async def one(i):
        async with sem:
            r = await clients[hash(i) % pools].post('/chat/completions',
                                                    json={'model': 'fake', 'messages': [{'role': 'user', 'content': f'q{i}'}]})
            r.raise_for_status(); r.json()['choices'][0]['message']['content']
    async def close():
        for c in clients: await c.aclose()
    return timed(conc, n, one, close)

def envsynth_client(base_url, conc, n, sdk_clients=8):
    client = LLMClient(OpenAIBackend(base_url, clients=sdk_clients), 'fake', max_concurrency=conc)
    async def one(i): await client.chat([user(f'q{i}')])
    out = timed(conc, n, one, client.aclose)
    assert client.ledger['default'].retries == 0, client.ledger
    return out

def hit_before(client, messages):
    "A hit as `LLMClient.chat` served it before the memory and the orjson key (no ledger, no semaphore)."
    key = content_hash({'backend': client.backend.id, 'model': client.model, 'messages': [m.to_openai() for m in messages],
                        'tools': [], 'schema': None, 'sampling': {}}, 32)
    out = client.cache.get(key)                    # SQLite read and pydantic validation (memory_items=0)
    reasoning, answer = split_think(out.message.content)
    message = out.message.model_copy(update={'content': answer or None,
                                             'reasoning_content': out.message.reasoning_content or reasoning})
    return ChatResult(message=message, cached=True, prompt_tokens=out.prompt_tokens,
                      completion_tokens=out.completion_tokens, problems=out.problems)

async def cache_hits(n, passes=3):
    "Hits per second: before, memory off, first pass, best later pass, `ChatCache.get` alone."
    path = Path(tempfile.mkdtemp()) / 'llm.sqlite'
    teacher = OfflineTeacher({'default': lambda req: 'ok'})
    warm = LLMClient(teacher, 'offline', cache=path)
    for i in range(n): await warm.chat([user(f'q{i}')])
    requests = [[user(f'q{i}')] for i in range(n)]          # built beforehand: the caller's work is not timed
    async def rate(client):
        t0 = time.perf_counter()
        for messages in requests: await client.chat(messages)
        return n / (time.perf_counter() - t0)
    uncached = LLMClient(teacher, 'offline', cache=ChatCache(path, memory_items=0), replay=True)
    t0 = time.perf_counter()
    for messages in requests: hit_before(uncached, messages)
    before = n / (time.perf_counter() - t0)
    no_memory = await rate(uncached)
    client = LLMClient(teacher, 'offline', cache=ChatCache(path, memory_items=max(n, 4096)), replay=True)
    first = await rate(client)
    later = max([await rate(client) for _ in range(passes)])
    assert client.ledger['default'].cache_hits == n * (1 + passes), client.ledger
    cache = ChatCache(path)
    rows = sqlite3.connect(path).execute('SELECT key FROM completions').fetchall()
    t0 = time.perf_counter()
    for (k,) in rows: cache.get(k)
    return before, no_memory, first, later, len(rows) / (time.perf_counter() - t0)

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--latency', type=float, default=1.0)
    ap.add_argument('--levels', type=int, nargs='+', default=[128])
    ap.add_argument('--rounds', type=int, default=6, help='requests per level = rounds x concurrency')
    ap.add_argument('--cache-items', type=int, default=5000)
    a = ap.parse_args()
    port = free_port()
    server = subprocess.Popen([sys.executable, '-c', SERVER, str(port), str(a.latency)])
    base_url = f'http://127.0.0.1:{port}/v1'
    load = os.getloadavg()
    try:
        for _ in range(100):
            try: socket.create_connection(('127.0.0.1', port), timeout=0.2).close(); break
            except OSError: time.sleep(0.1)
        print(f'fake endpoint latency {a.latency * 1000:.0f} ms (asyncio server, own process), {os.cpu_count()} CPUs, '
              f'Python {sys.version.split()[0]}, load average {load[0]:.1f} at the start\n')
        print('| concurrency | requests | client | req/s | % of ideal | client CPU ms per request | loop lag ms (median / max) |')
        print('|---:|---:|---|---:|---:|---:|---:|')
        for c in a.levels:
            n, ideal = a.rounds * c, c / a.latency
            eight_pools = lambda url, c, n: raw_httpx(url, c, n, pools=8)
            for name, run in (('ideal (c / latency)', None), ('raw httpx.AsyncClient (floor)', raw_httpx),
                              ('raw httpx, 8 clients of c/8 connections in turn', eight_pools),
                              ('bare openai SDK', bare_sdk),
                              ('envsynth LLMClient, 1 SDK client', lambda url, c, n: envsynth_client(url, c, n, 1)),
                              ('envsynth LLMClient (up to 8 SDK clients, the default)', envsynth_client)):
                if run is None: print(f'| {c} | {n} | {name} | {ideal:,.0f} | 100% | - | - |'); continue
                wall, cpu, lags = run(base_url, c, n)
                print(f'| {c} | {n} | {name} | {n / wall:,.0f} | {n / wall / ideal:.0%} | {1000 * cpu / n:.2f} | '
                      f'{1000 * lags[len(lags) // 2]:.1f} / {1000 * lags[-1]:.0f} |')
    finally:
        server.kill(); server.wait()
    before, no_memory, first, later, get = asyncio.run(cache_hits(a.cache_items))
    print(f'\ncache hits, {a.cache_items:,} entries (target >= 50,000/s through the client), '
          f'load average {os.getloadavg()[0]:.1f} now:\n')
    print('| path | hits/s |\n|---|---:|')
    for name, rate in (('before: content_hash key, SQLite read and validation every hit', before),
                       ('LLMClient.chat, ChatCache(memory_items=0): SQLite every hit', no_memory),
                       ('LLMClient.chat, first pass (SQLite, validated once into memory)', first),
                       ('LLMClient.chat, later passes (memory), best of 3', later),
                       ('ChatCache.get alone, one pass (SQLite read, validated into memory, copied)', get)):
        print(f'| {name} | {rate:,.0f} |')

if __name__ == '__main__': main()
