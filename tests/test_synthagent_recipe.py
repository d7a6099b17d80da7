"""The SynthAgent recipe end to end through its command line: a run killed mid-stage and resumed finishes with exactly
the outputs of an uninterrupted run; bad parameters are a clear error; a model that fails every request is counted
and never reported as success; the mock world answers the same call the same way in every rollout of a task."""
import asyncio, json, os, subprocess, sys
from pathlib import Path
import pytest
from envsynth.pipeline import read_records
from _recipe_runs import kill_during, start, untimed

pytestmark = pytest.mark.timeout(600)
ROOT = Path(__file__).resolve().parents[1]
SMOKE = ROOT / 'papers_repro' / 'synthagent' / 'smoke.yaml'
ITEM_STAGES = ('02_tool_suites', '03_tasks', '04_demos', '05_rubrics', '06_rewards', '07_reasoning')

def _personas(tmp: Path, n: int = 24) -> Path:
    jobs = ['nurse', 'ferry captain', 'beekeeper', 'archivist', 'tax advisor', 'stage manager', 'bus dispatcher', 'lab technician']
    places = ['in a small town', 'at a large hospital', 'for a city council']
    f = tmp / 'personas.jsonl'
    f.write_text(''.join(json.dumps({'persona': f'A {j} working {p} who handles {k} requests a day.'}) + '\n'
                         for k, (j, p) in enumerate((j, p) for p in places for j in jobs) if k < n))
    return f

def _cmd(run_dir: Path, personas: Path, *extra) -> list[str]:
    return [sys.executable, '-m', 'envsynth.synthagent.recipe', '--run-dir', str(run_dir), '--params', str(SMOKE),
            '--set', f'persona_files=["{personas}"]', '--set', 'max_personas=24', '--set', 'concurrency=2', *extra]

def _kill_during(cmd, run_dir: Path, stage: str) -> bool:
    return kill_during(lambda: start(cmd), run_dir, stage, timeout_s=200, poll_s=0.005)

def _finish(cmd, env=None) -> subprocess.CompletedProcess:
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    return r

def _outputs(run_dir: Path) -> dict:
    out = {stage: untimed(read_records(run_dir / stage)) for stage in ITEM_STAGES}
    out |= {f'{stage}/stats': json.loads((run_dir / stage / 'stats.json').read_text()) for stage in ITEM_STAGES}
    out |= {f.name: f.read_bytes() for f in sorted((run_dir / '08_export').glob('*')) if f.is_file()}
    card = json.loads((run_dir / 'data_card.json').read_text())
    out['card'] = {k: v for k, v in card.items() if k not in ('ledger', 'wall_s')}
    return out

def _spending(run_dir: Path) -> dict:
    "What the run paid per tag (ledger.json, every process's journal): backend calls and tokens; requests and cache hits differ after a resume."
    ledger = json.loads((run_dir / 'ledger.json').read_text())
    return {tag: {k: s[k] for k in ('backend_calls', 'prompt_tokens', 'completion_tokens')} for tag, s in ledger.items()}

def test_killed_and_resumed_run_matches_an_uninterrupted_run(tmp_path):
    personas = _personas(tmp_path)
    whole = tmp_path / 'whole'
    summary = json.loads(_finish(_cmd(whole, personas)).stdout.strip().splitlines()[-1])
    assert summary['tasks'] > 0 and summary['probe_ranking_ok'] is True and summary['exports']['sft'] > 0
    cut = tmp_path / 'cut'
    killed_in_demos = _kill_during(_cmd(cut, personas), cut, '04_demos')
    killed_in_rewards = _kill_during(_cmd(cut, personas), cut, '06_rewards')
    assert killed_in_demos or killed_in_rewards, 'both stages finished before the kill: the test did not cut a stage'
    _finish(_cmd(cut, personas))
    a, b = _outputs(whole), _outputs(cut)
    assert sorted(a) == sorted(b)
    for k in a: assert a[k] == b[k], f'{k} differs after kill and resume'
    # the killed processes' calls are in the ledger; a call answered in the instant between its ledger line and its
    # cache entry is paid again by the resumed run (2 kills, 2 in flight each): never less than the clean run's spending
    for tag, clean in _spending(whole).items():
        cut_spent = _spending(cut)[tag]
        assert all(cut_spent[k] >= clean[k] for k in clean) and cut_spent['backend_calls'] - clean['backend_calls'] <= 4, tag

def test_bad_parameters_are_a_clear_error(tmp_path):
    for sets, word in ((['--set', 'demo=2'], 'demo'), (['--set', 'min_tools=9'], 'min_tools'), (['--set', 'unknown_verdicts=half'], 'unknown_verdicts')):
        r = subprocess.run([sys.executable, '-m', 'envsynth.synthagent.recipe', '--run-dir', str(tmp_path), *sets], capture_output=True, text=True)
        assert r.returncode == 2 and word in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    r = subprocess.run([str(Path(sys.executable).parent / 'envsynth'), 'synthagent', 'run', '--run-dir', str(tmp_path), '--stages', 'bogus'],
                       capture_output=True, text=True)
    assert r.returncode == 2 and 'bogus' in r.stderr

def test_a_model_that_fails_every_request_is_a_failed_run(tmp_path):
    "No answer from the model is a failure, journaled as such (retried on resume), never a drop: exit 1, one line, no card."
    from envsynth.pipeline import read_entries
    env = {**os.environ, 'ENVSYNTH_LLM_ENDPOINT': 'http://127.0.0.1:9/v1', 'ENVSYNTH_LLM_MAX_RETRIES': '0', 'ENVSYNTH_LLM_TIMEOUT_S': '5'}
    run_dir = tmp_path / 'run'
    r = subprocess.run([sys.executable, '-m', 'envsynth.synthagent.recipe', '--run-dir', str(run_dir), '--params', str(SMOKE),
                        '--set', 'problem_files=[]'], capture_output=True, text=True, env=env, timeout=300)
    last = r.stderr.strip().splitlines()[-1]
    assert r.returncode == 1 and last.startswith('envsynth synthagent run: error:') and 'TransportError' in last, (r.returncode, r.stderr[-2000:])
    assert not (run_dir / 'data_card.json').exists()
    entries = read_entries(run_dir / '02_tool_suites')
    assert len(entries) == 8 and all(e['status'] == 'failed' and 'TransportError' in e['error'] for e in entries)

def test_the_same_call_in_two_rollouts_of_a_task_gets_the_same_answer():
    from envsynth.llm import LLMClient
    from envsynth.rollout import OraclePolicy
    from envsynth.schema import Action
    from envsynth.synthagent.mock_world import MockWorlds, rollout_in_world
    from envsynth.synthagent.offline import offline_synthagent_teacher
    from envsynth.synthagent.tasks import Persona, generate_tool_suite, make_fuzzy_task, task_tools

    async def go():
        client = LLMClient(offline_synthagent_teacher(), 'offline-teacher')
        task = await make_fuzzy_task(await generate_tool_suite(Persona(persona='A harbour master who assigns berths to ships.'), client), client)
        tool = task_tools(task)[0]
        calls = [Action(name=tool.name, arguments={'reference': 'B-7'}), Action(name=tool.name, arguments={'reference': '  b-7 '})]
        worlds = MockWorlds('task')
        trajs = await asyncio.gather(*(rollout_in_world(task, OraclePolicy(calls[i % 2:] + calls[:i % 2]), worlds.for_task(task), client, client, attempt=i)
                                       for i in range(6)))
        answers = {m.content for t in trajs for m in t.messages if m.role == 'tool'}
        world = worlds.for_task(task)
        fresh = MockWorlds('episode')
        other = await rollout_in_world(task, OraclePolicy(calls), fresh.for_task(task), client, client)
        return answers, world, other
    answers, world, other = asyncio.run(go())
    assert len(answers) == 1                                  # 12 calls, two spellings, six concurrent rollouts: one answer
    assert len(world) == 1 and world.stats['new'] == 1 and world.stats['semantic'] + world.stats['exact'] == 11
    assert other.info['mock_world']['scope_size'] == 1        # an episode-scoped world starts empty


def test_a_role_without_an_endpoint_beside_one_with_an_endpoint_is_refused(tmp_path):
    "Only the teacher has an endpoint: the other roles would be the offline teacher's. Refused at start (exit 2, one line,"
    "no stage written) unless allow_offline_roles=true says the mix is meant."
    env = {**os.environ, 'ENVSYNTH_LLM_TEACHER_ENDPOINT': 'http://127.0.0.1:9/v1', 'ENVSYNTH_LLM_MAX_RETRIES': '0', 'ENVSYNTH_LLM_TIMEOUT_S': '5'}
    for k in [k for k in env if k.startswith('ENVSYNTH_LLM_') and k.endswith('_ENDPOINT') and k != 'ENVSYNTH_LLM_TEACHER_ENDPOINT']: env.pop(k)
    run_dir = tmp_path / 'run'
    cmd = [sys.executable, '-m', 'envsynth.synthagent.recipe', '--run-dir', str(run_dir), '--params', str(SMOKE)]
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, (r.returncode, r.stderr[-2000:])
    assert 'no endpoint' in r.stderr and 'allow_offline_roles' in r.stderr and 'teacher has an endpoint' in r.stderr, r.stderr
    written = {p.name for p in run_dir.glob('*')} if run_dir.exists() else set()
    assert not written & {'params.json', '01_personas', *ITEM_STAGES, '08_export'}, written
    r = subprocess.run([*cmd, '--set', 'allow_offline_roles=true', '--set', 'problem_files=[]'], capture_output=True, text=True, env=env,
                       timeout=300)
    assert 'allow_offline_roles' not in r.stderr and (run_dir / 'params.json').exists(), r.stderr[-2000:]
    assert r.returncode == 1 and 'TransportError' in r.stderr, (r.returncode, r.stderr[-2000:])     # past the check: the teacher is unreachable

def test_persona_files_are_read_by_content_and_an_overlong_line_is_refused(tmp_path):
    "Personas appended to a file are run (the personas step is keyed on the file's content); a line over 64 KiB is a"
    "one-line error naming the file and the line, for persona and problem files alike."
    personas = _personas(tmp_path, n=2)
    run_dir = tmp_path / 'run'
    cmd = lambda *extra: [*_cmd(run_dir, personas), '--stages', 'tool_suites', *extra]
    _finish(cmd())
    assert len(read_records(run_dir / '02_tool_suites')) + sum((json.loads((run_dir / '02_tool_suites' / 'stats.json').read_text())['dropped'] or {}).values()) == 2
    with personas.open('a') as f: f.write(json.dumps({'persona': 'A lighthouse keeper who logs passing ships every night.'}) + '\n')
    _finish(cmd())
    assert json.loads((run_dir / '02_tool_suites' / 'stats.json').read_text())['inputs'] == 3
    with personas.open('a') as f: f.write(json.dumps({'persona': 'x' * 70_000}) + '\n')
    r = subprocess.run(cmd(), capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and f'{personas}:4:' in r.stderr, r.stderr[-2000:]
    problems = tmp_path / 'problems.jsonl'
    problems.write_text(json.dumps({'question': 'What is 2 + 2?', 'answer': '4'}) + '\n' + json.dumps({'question': 'y' * 70_000, 'answer': '1'}) + '\n')
    r = subprocess.run([*_cmd(tmp_path / 'run2', _personas(tmp_path, n=2)), '--stages', 'reasoning', '--set', f'problem_files=["{problems}"]'],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and f'{problems}:2:' in r.stderr, r.stderr[-2000:]

def test_the_user_simulator_knows_the_restriction_without_reciting_it():
    "The official user simulator sees the task's restriction; ours gets it in its own block, which the stand-in never reads out."
    from envsynth.rollout import offline_user_simulator
    from envsynth.llm import ChatRequest
    from envsynth.schema import Task, system, user
    from envsynth.synthagent.mock_world import synthagent_user
    rule = 'Tool reset_order must NOT be used to fix the order {now}. Violating this restriction will result in task failure.'
    task = Task(instruction='My order is wrong again.', tools=['lookup_order'], hidden_context='The order is ORD-1234.',
                forbidden_behaviors=[rule])
    prompt = synthagent_user(task, None).prompt
    assert f'<restriction>\n{rule}\n</restriction>' in prompt and '<private>\nThe order is ORD-1234.\n</private>' in prompt
    opening = offline_user_simulator(ChatRequest(model='m', tag='synthagent.user', messages=[
        system(prompt), user('(The agent is waiting. Write your first message.)')]))
    assert opening == task.instruction and 'reset_order' not in opening

def test_table6_counts_held_out_tasks_per_persona_category():
    from envsynth.synthagent.recipe import PAPER_TABLE6, table6
    rewards = [{'task_id': 't1', 'heldout': {'score': 0.1}}, {'task_id': 't2', 'heldout': {'score': 0.9}},
               {'task_id': 't3', 'heldout': None}, {'task_id': 't4', 'heldout': {'score': None}},
               {'task_id': 't5', 'heldout': {'score': 0.6}}]
    rows = {r['category']: r for r in table6(rewards, {f't{i}': f'p{i % 2}' for i in range(1, 6)}, {'p1': 'Health', 'p0': 'unknown'})}
    assert rows['Health']['tasks'] == 2 and rows['Health']['low_score_rate'] == 0.5 and rows['Health']['share'] == round(2 / 3, 4)
    assert rows['unknown']['tasks'] == 1 and rows['unknown']['low_score_rate'] == 0.0 and rows['unknown']['paper'] is None
    assert rows['Education']['tasks'] == 0 and rows['Education']['low_score_rate'] is None
    assert sum(v[0] for v in PAPER_TABLE6.values()) == 3127           # the paper's row sums to 3,127, not the caption's 3,000
