"""Throughput of envsynth.llm against a fake OpenAI server with fixed latency, measured in one run.

    .venv/bin/python benchmarks/llm_throughput.py [--latency 0.1] [--levels 1 8 32 128]

The server (envsynth.fake_server, real HTTP on 127.0.0.1) runs in its own process and answers every
request after `latency` seconds, so the ideal throughput at concurrency c is c / latency. Baselines
in the same run: that ideal, and the bare `openai` SDK (AsyncOpenAI + a semaphore, no envsynth).
Then cache-hit lookups per second through `LLMClient.chat` and through `ChatCache.get` alone.
"""
import argparse, asyncio, os, socket, sqlite3, subprocess, sys, tempfile, time
from pathlib import Path
import openai
from envsynth.llm import ChatCache, LLMClient, OfflineTeacher, OpenAIBackend
from envsynth.schema import user

SERVER = '''
import sys, time, threading
from envsynth.fake_server import FakeOpenAIServer, Reply
srv = FakeOpenAIServer(lambda body: Reply({'content': 'ok'}, delay=float(sys.argv[2])), port=int(sys.argv[1])).start()
threading.Event().wait()
'''

def free_port() -> int:
    with socket.socket() as s: s.bind(('127.0.0.1', 0)); return s.getsockname()[1]

async def bare_sdk(base_url, conc, n):
    client, sem = openai.AsyncOpenAI(base_url=base_url, api_key='x', max_retries=0), asyncio.Semaphore(conc)
    async def one(i):
        async with sem: await client.chat.completions.create(model='fake', messages=[{'role': 'user', 'content': f'q{i}'}])
    await asyncio.gather(*(one(f'warm{i}') for i in range(min(n, 2 * conc))))            # warm-up: connections
    t0 = time.perf_counter(); await asyncio.gather(*(one(i) for i in range(n))); dt = time.perf_counter() - t0
    await client.close(); return dt

async def envsynth_client(base_url, conc, n):
    client = LLMClient(OpenAIBackend(base_url), 'fake', max_concurrency=conc)
    await asyncio.gather(*(client.chat([user(f'warm{i}')]) for i in range(min(n, 2 * conc))))   # warm-up, as for the SDK
    t0 = time.perf_counter(); await asyncio.gather(*(client.chat([user(f'q{i}')]) for i in range(n))); dt = time.perf_counter() - t0
    assert client.ledger['default'].retries == 0, client.ledger
    await client.aclose(); return dt

async def cache_hits(n):
    path = Path(tempfile.mkdtemp()) / 'llm.sqlite'
    teacher = OfflineTeacher({'default': lambda req: 'ok'})
    warm = LLMClient(teacher, 'offline', cache=path)
    for i in range(n): await warm.chat([user(f'q{i}')])
    client = LLMClient(teacher, 'offline', cache=path, replay=True)
    t0 = time.perf_counter()
    for i in range(n): await client.chat([user(f'q{i}')])
    chat_s = time.perf_counter() - t0
    cache = ChatCache(path)
    rows = sqlite3.connect(path).execute('SELECT key FROM completions').fetchall()
    t0 = time.perf_counter()
    for (k,) in rows: cache.get(k)
    return n / chat_s, len(rows) / (time.perf_counter() - t0)

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--latency', type=float, default=0.1)
    ap.add_argument('--levels', type=int, nargs='+', default=[1, 8, 32, 128])
    ap.add_argument('--cache-items', type=int, default=2000)
    a = ap.parse_args()
    port = free_port()
    server = subprocess.Popen([sys.executable, '-c', SERVER, str(port), str(a.latency)])
    base_url = f'http://127.0.0.1:{port}/v1'
    try:
        for _ in range(100):
            try: socket.create_connection(('127.0.0.1', port), timeout=0.2).close(); break
            except OSError: time.sleep(0.1)
        print(f'fake server latency {a.latency * 1000:.0f} ms, {os.cpu_count()} CPUs, Python {sys.version.split()[0]}\n')
        print('| concurrency | requests | ideal req/s | bare openai SDK req/s (% ideal) | envsynth LLMClient req/s (% ideal) |')
        print('|---:|---:|---:|---:|---:|')
        for c in a.levels:
            n = max(20, 6 * c)
            ideal = c / a.latency
            sdk = n / asyncio.run(bare_sdk(base_url, c, n))
            ours = n / asyncio.run(envsynth_client(base_url, c, n))
            print(f'| {c} | {n} | {ideal:.0f} | {sdk:.0f} ({sdk / ideal:.0%}) | {ours:.0f} ({ours / ideal:.0%}) |')
    finally:
        server.kill(); server.wait()
    chat_hits, raw_hits = asyncio.run(cache_hits(a.cache_items))
    print(f'\ncache hits ({a.cache_items} entries, SQLite): {chat_hits:,.0f}/s through LLMClient.chat (replay), {raw_hits:,.0f}/s ChatCache.get alone')

if __name__ == '__main__': main()
