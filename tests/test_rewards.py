"""Properties of envsynth.rewards checked on many random cases (the notebook shows the paper's examples).

Brute force is the reference: pass^k against enumerating every k-subset of trials, `trace_reward` against trying every
assignment of predicted calls to gold calls. Seeded, so a failure reproduces."""
import itertools, math, random
import pytest
from envsynth.schema import Action, Task, ToolCall, ToolError, ToolResult, Trajectory, assistant, user
from envsynth.rewards import (RewardInputError, agentscaler_filter, envfactory_reward, f1_reward, pass_hat_k, pass_hat_k_table,
                              pass_hat_k_task, repetition_ratio, rubric_reward, trace_reward)

def call_turn(name, args, index, error=None):
    call = ToolCall.make(name, args, index=index)
    res = ToolResult(call_id=call.id, name=name, output=None if error else {'ok': True},
                     error=ToolError(type='execution_error', message=error) if error else None)
    return [assistant(tool_calls=[call]), res.to_message()]

def trajectory(calls, final_state_hash='S', failed_before=()):
    "A trajectory making `calls` [(name, args)]; a failed attempt is inserted before each call whose position is in `failed_before`."
    msgs, i = [user('Please help.')], 0
    for k, (name, args) in enumerate(calls):
        if k in failed_before:
            msgs += call_turn(name, {**args, 'typo': True}, i, error='bad argument'); i += 1
        msgs += call_turn(name, args, i); i += 1
    return Trajectory(messages=msgs + [assistant('Done.')], final_state_hash=final_state_hash)

def test_pass_hat_k_task_is_the_chance_that_k_distinct_trials_all_succeed():
    for n in range(1, 8):
        for c in range(n + 1):
            trials = [True] * c + [False] * (n - c)
            for k in range(1, n + 1):
                subsets = list(itertools.combinations(trials, k))
                assert math.isclose(pass_hat_k_task(n, c, k), sum(all(s) for s in subsets) / len(subsets))

def test_pass_hat_k_table_starts_at_the_success_rate_and_never_rises():
    rng = random.Random(0)
    for _ in range(200):
        n = rng.randint(1, 6)
        runs = {f't{i}': [float(rng.random() < rng.random()) for _ in range(n)] for i in range(rng.randint(1, 5))}
        table = pass_hat_k_table(runs)
        assert list(table) == list(range(1, n + 1))
        assert math.isclose(table[1], sum(sum(r) / n for r in runs.values()) / len(runs))
        assert all(table[k] >= table[k + 1] - 1e-12 for k in range(1, n))
        with pytest.raises(RewardInputError): pass_hat_k(runs, n + 1)

def test_f1_reward_is_bounded_and_monotone():
    rng = random.Random(1)
    for _ in range(2000):
        n = rng.randint(1, 10); s = rng.randint(0, n); c = rng.randint(0, 30)
        f = f1_reward(n, s, c)
        assert 0 <= f <= 1
        if s < n: assert f1_reward(n, s + 1, c) >= f          # solving more never hurts
        assert f1_reward(n, s, c + 1) <= f + 1e-12             # an extra call never helps
        if s: assert f1_reward(n, s, c) == pytest.approx(2 * s / (n + max(c, s)), rel=1e-6)   # the closed form, p capped

def test_trace_reward_agrees_with_brute_force_matching():
    rng = random.Random(2)
    names, values = ['a', 'b'], [1, 2, 3]
    for _ in range(300):
        gold = [Action(name=rng.choice(names), arguments={'x': rng.choice(values), 'y': rng.choice(values)}) for _ in range(rng.randint(1, 3))]
        masked = [rng.choice([(), ('y',)]) for _ in gold]
        calls = [(rng.choice(names), {'x': rng.choice(values), 'y': rng.choice(values)}) for _ in range(rng.randint(0, 4))]
        def ok(call, g, m): return call[0] == g.name and all(call[1][k] == g.arguments[k] for k in g.arguments if k not in m)
        assignments = [a for a in itertools.product([None, *range(len(calls))], repeat=len(gold))   # gold i -> call a[i] or none
                       if len([j for j in a if j is not None]) == len({j for j in a if j is not None})]
        best = max(sum(j is not None and ok(calls[j], g, m) for j, g, m in zip(a, gold, masked)) for a in assignments)
        t = trajectory(calls)
        assert trace_reward(t, gold, masked, partial=True) == pytest.approx(best / len(gold))
        assert trace_reward(trajectory(calls[::-1]), gold, masked) == trace_reward(t, gold, masked)   # order-free

def test_envfactory_and_rubric_rewards_stay_in_range():
    rng = random.Random(3)
    for _ in range(1000):
        a, rt, rs, p = rng.random(), rng.random(), rng.random(), rng.random() * 0.5
        r = envfactory_reward(rt, rs, p, alpha=a)
        assert -0.5 - 1e-12 <= r <= 1 + 1e-12 and envfactory_reward(rt, rs, p, alpha=a, clip_at_zero=True) >= 0
        ok, n, i = rng.random() < 0.5, rng.random(), rng.random()
        assert 0 <= rubric_reward(ok, n, i) <= 1 and (rubric_reward(ok, n, i) == 0) == (not ok or n == i == 0)

def test_filter_verdict_does_not_depend_on_recovered_tool_errors():
    "AgentScaler keeps trajectories whose tool calls failed if they still reach the goal: failed attempts never change the verdict."
    rng = random.Random(4)
    writes = {'w1', 'w2'}
    for _ in range(200):
        gold = [Action(name=rng.choice(['r1', 'r2', 'w1', 'w2']), arguments={'x': rng.randint(0, 2)}) for _ in range(rng.randint(1, 4))]
        task = Task(instruction='t', gold_actions=gold, gold_state_hash='S')
        calls = [(g.name, dict(g.arguments)) for g in gold]
        if rng.random() < 0.3: calls.append(('r1', {'x': 9}))
        final = 'S' if rng.random() < 0.8 else 'T'
        base = agentscaler_filter(trajectory(calls, final), task, writes)
        failed = set(rng.sample(range(len(calls)), rng.randint(1, len(calls))))
        assert agentscaler_filter(trajectory(calls, final, failed), task, writes) == base

def test_repetition_ratio_bounds():
    rng = random.Random(5)
    words = [f'w{i}' for i in range(40)]
    assert repetition_ratio(' '.join(words)) == 0.0
    for _ in range(200):
        text = ' '.join(rng.choice(words[:rng.randint(1, 40)]) for _ in range(rng.randint(0, 80)))
        assert 0 <= repetition_ratio(text) < 1
