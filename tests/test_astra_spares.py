"""ASTRA's rollouts take reference MCP servers started ahead (`envsynth.astra.trajectories.ServerSpares`): every episode
still gets server processes and folders no other episode sees, and no server outlives the trajectory stage, whether an
episode raises, a start fails or the run is killed."""
import asyncio, os, signal, sys, time
from pathlib import Path
import pytest
from envsynth.astra import recipe
from envsynth.astra.offline import offline_recipe_client, register_offline_agent
from envsynth.astra.tasks import make_task
from envsynth.astra.tool_docs import read_mcp_servers, sample_servers_file
from envsynth.astra.trajectories import ServerSpares, collect_trajectory
from envsynth.mcp import MCPConnectionError
from envsynth.pipeline import StepFailedError
from _mcp import ensure_mcp_servers
from _recipe_runs import journal_lines, start

pytestmark = pytest.mark.timeout(600)
REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope='module')
def bin_dir(): return ensure_mcp_servers()


def live_children() -> dict[int, str]:
    "This process's live child processes (zombies left out): pid -> command line."
    out = {}
    for d in Path('/proc').iterdir():
        try:
            if not d.name.isdigit(): continue
            stat = (d / 'stat').read_text()
            state, ppid = stat[stat.rindex(')') + 2:].split()[:2]
            if int(ppid) == os.getpid() and state != 'Z': out[int(d.name)] = (d / 'cmdline').read_text().replace('\0', ' ')
        except (OSError, ValueError): continue
    return out


def servers_running(marker: str = 'mcp-server-') -> dict[int, str]:
    return {pid: cmd for pid, cmd in live_children().items() if marker in cmd}


def processes_in(folder: str) -> list[int]:
    "Live processes whose working folder is `folder` (or was, before it was removed)."
    out = []
    for d in Path('/proc').iterdir():
        try:
            if d.name.isdigit() and os.readlink(d / 'cwd').removesuffix(' (deleted)') == os.path.realpath(folder): out.append(int(d.name))
        except OSError: continue
    return out


@pytest.fixture
def record_takes(monkeypatch):
    "Every take of every `ServerSpares`: (server, folder, pids of the processes working in it)."
    seen, take = [], ServerSpares.take
    async def recording(self, ref):
        folder, client = await take(self, ref)
        seen.append((ref, folder.name, processes_in(folder.name)))
        return folder, client
    monkeypatch.setattr(ServerSpares, 'take', recording)
    return seen


def trip_budget_task():
    server = {s.name: s for s in read_mcp_servers(sample_servers_file())[0]}['trip-budget']
    task = make_task(server, 'I fly from OSL to LIS on 2025-06-12 and stay 3 nights: what will flights and hotel cost together?',
                     mode='chain', target_tools=['search_flights', 'estimate_hotel_cost', 'calculate'])
    return server, task


class RaisingAgent:
    "An agent client whose `chat` raises (a bug in the episode, not a model error the loop would catch)."
    async def chat(self, *a, **k): raise RuntimeError('the agent broke')


def test_episodes_never_share_a_server_and_none_outlives_the_spares(bin_dir, record_takes):
    server, task = trip_budget_task()
    client = offline_recipe_client(); register_offline_agent(client.backend, [task])
    async def main():
        async with ServerSpares(bin_dir, {'calculator': 4}, ahead=2) as spares:
            trajs = await asyncio.gather(*(collect_trajectory(task, server, client, client, deploy=['calculator'], seed=s, spares=spares)
                                           for s in range(3)))
            with pytest.raises(RuntimeError, match='the agent broke'):
                await collect_trajectory(task, server, RaisingAgent(), client, deploy=['calculator'], spares=spares)
            assert not spares.waiting()                            # four takes expected, four started
        return trajs
    trajs = asyncio.run(main())
    assert all(t.info['routes']['calculate'] == 'mcp:calculator' and t.info['calls_by_route']['mcp'] for t in trajs)
    assert len(record_takes) == 4 and all(len(pids) == 1 for _, _, pids in record_takes)
    assert len({pids[0] for _, _, pids in record_takes}) == 4          # four processes
    assert len({folder for _, folder, _ in record_takes}) == 4         # four folders
    assert not servers_running() and not any(Path(f).exists() for _, f, _ in record_takes)


def test_spares_not_taken_are_closed_and_a_failed_start_is_the_episodes_error(tmp_path, bin_dir):
    async def unused():
        async with ServerSpares(bin_dir, {'calculator': 2, 'sqlite': 2}, ahead=2) as spares:
            assert spares.waiting() == {'calculator': 2, 'sqlite': 2}
            await asyncio.sleep(0.1)                               # closed while some are still starting
    asyncio.run(unused())
    assert not servers_running()
    broken = tmp_path / 'bin'; broken.mkdir()
    (broken / 'mcp-server-calculator').write_text('#!/bin/sh\necho no such luck >&2\nexit 3\n'); (broken / 'mcp-server-calculator').chmod(0o755)
    server, task = trip_budget_task()
    client = offline_recipe_client(); register_offline_agent(client.backend, [task])
    async def failing():
        async with ServerSpares(broken, {'calculator': 2}, ahead=2) as spares:
            with pytest.raises(MCPConnectionError, match='failed to start'): await spares.take('calculator')
            return await collect_trajectory(task, server, client, client, deploy=['calculator'], spares=spares)
    traj = asyncio.run(failing())
    fresh = asyncio.run(collect_trajectory(task, server, client, client, deploy=['calculator'], bin_dir=broken))
    assert traj.info['emulation_reasons'] == fresh.info['emulation_reasons'] == {'start_failed:calculator': 1, 'not_deployed:time': 2}
    assert traj.info['routes'] == fresh.info['routes'] and traj.info['routes']['calculate'] == 'emulated'


def test_the_stage_leaves_no_server_when_an_episode_raises(tmp_path, bin_dir, record_takes, monkeypatch):
    "A whole run in this process: the third episode's agent raises; the stage fails, and every server is gone."
    calls, collect = [], recipe.collect_trajectory
    async def third_raises(task, server, agent_client, *a, **k):
        calls.append(task.id)
        return await collect(task, server, RaisingAgent() if len(calls) == 3 else agent_client, *a, **k)
    monkeypatch.setattr(recipe, 'collect_trajectory', third_raises)
    p = recipe.read_params(REPO / 'papers_repro/astra/smoke.yaml', concurrency=2, mcp_servers_bin=str(bin_dir))
    with pytest.raises(StepFailedError, match='trajectories'): asyncio.run(recipe.run_astra(p, tmp_path / 'run'))
    assert len(record_takes) >= 4 and all(len(pids) == 1 for *_, pids in record_takes)
    assert len({pids[0] for *_, pids in record_takes}) == len({f for _, f, _ in record_takes}) == len(record_takes)
    assert not servers_running() and not any(Path(f).exists() for _, f, _ in record_takes)


def test_a_killed_run_leaves_no_server(tmp_path, bin_dir):
    "SIGKILL in the middle of the trajectory stage: the servers (spares and taken) exit as their pipes close."
    own_bin = tmp_path / 'bin'; own_bin.mkdir()                   # its command lines name this folder: ours to find
    for exe in bin_dir.glob('mcp-server-*'): (own_bin / exe.name).symlink_to(exe)
    run_dir, tmp = tmp_path / 'run', tmp_path / 'tmp'; tmp.mkdir()          # the killed run's episode folders stay in here
    proc = start([sys.executable, '-m', 'envsynth.astra.recipe', '--run-dir', str(run_dir), '--params', str(REPO / 'papers_repro/astra/smoke.yaml'),
                  '--set', 'concurrency=2', '--set', f'mcp_servers_bin={own_bin}'], os.environ | {'TMPDIR': str(tmp)})
    def ours(): return [p for p in Path('/proc').iterdir() if p.name.isdigit() and _cmdline_has(p, str(own_bin))]
    seen, deadline = 0, time.monotonic() + 300
    while proc.poll() is None and time.monotonic() < deadline and not journal_lines(run_dir, '05_trajectories'):
        seen = max(seen, len(ours())); time.sleep(0.01)
    assert proc.poll() is None, proc.stderr.read()[-2000:]
    seen = max(seen, len(ours()))
    os.killpg(proc.pid, signal.SIGKILL); proc.wait()
    assert seen > 0, 'no server was running when the run was killed'
    deadline = time.monotonic() + 30
    while ours() and time.monotonic() < deadline: time.sleep(0.1)
    assert not ours()


def _cmdline_has(proc_dir: Path, text: str) -> bool:
    try:
        stat = (proc_dir / 'stat').read_text()
        return stat[stat.rindex(')') + 2] != 'Z' and text in (proc_dir / 'cmdline').read_text()
    except OSError: return False
