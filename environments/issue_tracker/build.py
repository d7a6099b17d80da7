"""Build the `issue_tracker` environment folder: a seeded seed state, tasks with gold actions, tool tests.

Run `python environments/issue_tracker/build.py` after changing anything here or in tools.py; it rewrites the
derived files (tools.json, db_schema.json, env.json, seed_state.json, tasks.jsonl, tests.json) and fills in
the gold hashes. The output is byte-identical from run to run.
"""
import datetime as dt
import random
from pathlib import Path

from envsynth.envs import ToolTest, ToolTestCall, write_environment
from envsynth.schema import Action, Task

HERE = Path(__file__).parent
CLOCK_START = '2026-03-09T09:30:00+00:00'
TODAY = dt.date(2026, 3, 9)
SPRINT_DAYS = 14

FIRST = ['Aino', 'Bastian', 'Carmen', 'Dorian', 'Esme', 'Felix', 'Greta', 'Hugo', 'Ines', 'Jonas', 'Keiko', 'Luca', 'Mira', 'Nils',
         'Odile', 'Pavel', 'Rhea', 'Soren', 'Talia', 'Ulf', 'Vera', 'Wim', 'Xenia', 'Yusuf', 'Zora']
LAST = ['Aalto', 'Brandt', 'Castell', 'Dunmore', 'Ekberg', 'Falk', 'Grau', 'Hollis', 'Ilves', 'Jaric', 'Krull', 'Lomax', 'Marsh',
        'Novak', 'Orlov', 'Pruett', 'Quill', 'Roux', 'Stenberg', 'Thorne', 'Uribe', 'Voss', 'Wendt', 'Yardley', 'Zeller']
PROJECTS = {
    'PAY': ('Payments Gateway', ['backend', 'checkout', 'refunds', 'security', 'performance', 'tech-debt'],
            ['card tokenizer', 'refund queue', 'invoice PDF', 'currency rounding', 'webhook retries', '3DS challenge', 'payout report']),
    'AUTH': ('Identity and Login', ['backend', 'sso', 'mfa', 'security', 'ux', 'tech-debt'],
             ['password reset', 'session store', 'SAML bridge', 'TOTP enrolment', 'login page', 'API keys', 'audit log']),
    'SRCH': ('Catalogue Search', ['indexing', 'ranking', 'frontend', 'performance', 'backend', 'tech-debt'],
             ['autocomplete', 'facet sidebar', 'synonym list', 'reindex job', 'result ranking', 'spell checker', 'query parser']),
    'MOBL': ('Mobile App', ['ios', 'android', 'offline', 'ux', 'crash', 'accessibility'],
             ['onboarding flow', 'push settings', 'offline cart', 'photo picker', 'order tracker', 'deep links', 'profile screen']),
    'DATA': ('Data Pipeline', ['ingest', 'warehouse', 'scheduling', 'backfill', 'performance', 'monitoring'],
             ['nightly loader', 'event collector', 'dedupe step', 'partition pruner', 'metrics export', 'schema registry', 'retry scheduler']),
    'LGCY': ('Legacy Storefront', ['frontend', 'backend', 'seo'],
             ['product page', 'sitemap', 'basket widget', 'CMS bridge']),
}
ARCHIVED = {'LGCY'}
SYMPTOMS = ['fails on empty input', 'times out under load', 'returns 500 after deploy', 'shows stale data', 'double-counts totals',
            'crashes on rotation', 'ignores timezone offset', 'logs tokens in plain text', 'breaks with long names', 'hangs on slow network']
FEATURES = ['CSV export', 'an audit trail', 'bulk actions', 'keyboard shortcuts', 'rate limiting', 'a retry button', 'usage metrics']
CHORES = ['Upgrade dependencies of the {c}', 'Remove dead code in the {c}', 'Add integration tests for the {c}', 'Document the {c}',
          'Move the {c} to the new config service']
REMARKS = ['Reproduced on staging.', 'I can take a look after standup.', 'Blocked on the API change, will update.', 'Added a failing test.',
           'Customer support reported this twice this week.', 'Looks like a regression from the last release.', 'PR is up for review.',
           'Can we split this into two tickets?', 'Design mock attached in the wiki.', 'Verified the fix in production.',
           'Not seeing this anymore after the cache flush.', 'Lowering priority, there is a workaround.']
ROLES = ['engineer'] * 5 + ['qa', 'designer', 'manager']


def stamp(day: dt.date, rng: random.Random) -> str:
    return f'{day.isoformat()}T{rng.randint(7, 18):02d}:{rng.choice([0, 5, 10, 15, 20, 30, 40, 45, 50, 55]):02d}+00:00'


def title_for(kind: str, comp: str, rng: random.Random) -> str:
    if kind == 'bug': return f'{comp[0].upper()}{comp[1:]} {rng.choice(SYMPTOMS)}'
    if kind == 'feature': return f'Add {rng.choice(FEATURES)} to the {comp}'
    return rng.choice(CHORES).format(c=comp)


def describe(kind: str, comp: str) -> str:
    if kind == 'bug': return f'Open the {comp} and repeat the action. Expected it to work; it does not.'
    if kind == 'feature': return f'Users of the {comp} have asked for this several times.'
    return f'Housekeeping for the {comp}.'


def seed_state(rng: random.Random) -> dict:
    projects, members, sprints, issues, comments = {}, {}, {}, {}, {}
    for i in range(60):
        first, last = rng.choice(FIRST), rng.choice(LAST)
        handle = f'{first.lower()}.{last.lower()}'
        if handle in members: handle += str(i)
        keys = rng.sample(sorted(k for k in PROJECTS if k not in ARCHIVED), rng.choice([1, 1, 2, 2, 3]))
        if rng.random() < 0.25: keys.append('LGCY')
        members[handle] = {'name': f'{first} {last}', 'email': f'{handle}@devteam.example', 'role': rng.choice(ROLES),
                           'projects': sorted(keys), 'active': rng.random() > 0.08}
    team = {k: sorted(h for h, m in members.items() if k in m['projects']) for k in PROJECTS}
    active_team = {k: [h for h in v if members[h]['active']] for k, v in team.items()}
    for key, (name, labels, _) in PROJECTS.items():
        projects[key] = {'name': name, 'lead': rng.choice(active_team[key]), 'labels': sorted(labels), 'archived': key in ARCHIVED}
    n = 0
    for key in PROJECTS:
        rounds = range(1, 5) if key in ARCHIVED else range(1, 9)
        base = TODAY - dt.timedelta(days=7 + (300 if key in ARCHIVED else 0))     # sprint 7 of a live project is the active one
        for k in rounds:
            n += 1
            start = base + dt.timedelta(days=(k - 7) * SPRINT_DAYS)
            status = 'closed' if key in ARCHIVED or k < 7 else 'active' if k == 7 else 'planned'
            sprints[f'SP{n:03d}'] = {'project_id': key, 'name': f'{key} Sprint {k + 20}', 'starts_on': start.isoformat(),
                                     'ends_on': (start + dt.timedelta(days=SPRINT_DAYS - 1)).isoformat(), 'status': status,
                                     'capacity_points': rng.choice([21, 24, 26, 30, 34, 40])}
    load = {s: 0 for s in sprints}
    wip = {h: 0 for h in members}
    for key, (_, labels, comps) in PROJECTS.items():
        own = sorted(s for s in sprints if sprints[s]['project_id'] == key)
        first_day = dt.date.fromisoformat(sprints[own[0]]['starts_on']) - dt.timedelta(days=20)
        last_day = TODAY if key not in ARCHIVED else dt.date.fromisoformat(sprints[own[-1]]['ends_on'])
        days = sorted(first_day + dt.timedelta(days=rng.randint(0, (last_day - first_day).days)) for _ in range(20 if key in ARCHIVED else 64))
        for number, created in enumerate(days, 1):
            kind = rng.choice(['bug', 'bug', 'feature', 'feature', 'chore'])
            comp = rng.choice(comps)
            points = rng.choice([1, 2, 3, 3, 5, 5, 8, 13])
            limit = lambda s: sprints[s]['capacity_points'] * (0.7 if sprints[s]['status'] == 'planned' else 1)
            open_sprints = [s for s in own if sprints[s]['ends_on'] >= created.isoformat() and load[s] + points <= limit(s)]
            sprint = (open_sprints[0] if rng.random() < 0.7 else rng.choice(open_sprints)) if open_sprints and rng.random() < 0.65 else None
            st = sprints[sprint]['status'] if sprint else 'backlog'
            if st == 'closed': status = rng.choice(['done'] * 9 + ['wont_fix'])
            elif st == 'active': status = rng.choice(['todo', 'todo', 'in_progress', 'in_progress', 'in_progress', 'in_review', 'in_review', 'done', 'done'])
            elif st == 'planned': status = 'todo'
            else: status = rng.choice(['backlog'] * 6 + ['todo', 'todo', 'in_progress', 'wont_fix', 'done'])
            if key in ARCHIVED and status not in ('done', 'wont_fix'): status = 'backlog'
            pool = team[key] if status in ('done', 'wont_fix') else active_team[key]
            needs = status in ('in_progress', 'in_review', 'done')
            assignee = rng.choice(pool) if needs or rng.random() < {'todo': 0.6, 'backlog': 0.2, 'wont_fix': 0.3}[status] else None
            if status == 'in_progress' and wip[assignee] >= 3: status = 'todo'
            if status == 'in_progress': wip[assignee] += 1
            if sprint: load[sprint] += points
            end = min(TODAY, dt.date.fromisoformat(sprints[sprint]['ends_on'])) if sprint else last_day
            resolved = created + dt.timedelta(days=rng.randint(0, max(0, (end - created).days))) if status in ('done', 'wont_fix') else None
            touched = resolved or created + dt.timedelta(days=rng.randint(0, (last_day - created).days))
            created_at = stamp(created, rng)
            updated_at = max(created_at, stamp(touched, rng))
            issues[f'{key}-{number}'] = {
                'project_id': key, 'number': number, 'title': title_for(kind, comp, rng), 'description': describe(kind, comp), 'kind': kind,
                'status': status, 'priority': rng.choice(['p0', 'p1', 'p1', 'p2', 'p2', 'p2', 'p3', 'p3']),
                'labels': sorted(rng.sample(labels, rng.choice([0, 1, 1, 2]))), 'assignee': assignee, 'reporter': rng.choice(team[key]),
                'sprint_id': sprint, 'story_points': points if sprint or rng.random() < 0.4 else None, 'created_at': created_at,
                'updated_at': updated_at, 'resolved_at': updated_at if resolved else None}
    drafts = []
    for _ in range(260):
        k = rng.choice(sorted(issues))
        i = issues[k]
        day = dt.date.fromisoformat(i['created_at'][:10])
        last = dt.date.fromisoformat(i['updated_at'][:10])
        drafts.append({'issue_key': k, 'author': rng.choice(team[i['project_id']]), 'body': rng.choice(REMARKS),
                       'created_at': max(i['created_at'], stamp(day + dt.timedelta(days=rng.randint(0, (last - day).days)), rng))})
    for n, c in enumerate(sorted(drafts, key=lambda c: (c['created_at'], c['issue_key'])), 1): comments[f'C{n:05d}'] = c
    return {'projects': projects, 'members': members, 'sprints': sprints, 'issues': issues, 'comments': comments}


def tasks(state: dict) -> list[Task]:
    projects, members, sprints, issues = (state[k] for k in ('projects', 'members', 'sprints', 'issues'))
    by_num = sorted(issues.items(), key=lambda x: (x[1]['project_id'], x[1]['number']))
    wip = {h: sum(1 for i in issues.values() if i['assignee'] == h and i['status'] == 'in_progress') for h in members}
    on = lambda h, p: members[h]['active'] and p in members[h]['projects']
    committed = lambda s: sum(i['story_points'] or 0 for i in issues.values() if i['sprint_id'] == s and i['status'] != 'wont_fix')
    sprint_of = lambda p, st: next(k for k, s in sorted(sprints.items()) if s['project_id'] == p and s['status'] == st)

    # file a bug and hand it to an engineer
    qa = next(h for h, m in sorted(members.items()) if m['role'] == 'qa' and on(h, 'PAY'))
    dev = next(h for h, m in sorted(members.items()) if m['role'] == 'engineer' and on(h, 'PAY') and h != qa)
    new_key = f"PAY-{max(i['number'] for i in issues.values() if i['project_id'] == 'PAY') + 1}"
    bug_title = 'Refund queue skips partial refunds in EUR'
    bug_desc = 'Partial refunds in EUR stay pending forever; full refunds go through.'
    # start work on a todo issue of the active sprint
    start = next((k, i) for k, i in by_num if i['status'] == 'todo' and i['assignee'] and wip[i['assignee']] < 3
                 and i['sprint_id'] and sprints[i['sprint_id']]['status'] == 'active' and members[i['assignee']]['active'])
    # estimate a backlog issue and pull it into the planned sprint
    plan_proj = 'SRCH'
    planned = sprint_of(plan_proj, 'planned')
    room = sprints[planned]['capacity_points'] - committed(planned)
    pts = max(p for p in (1, 2, 3, 5) if p <= room)
    plan = next((k, i) for k, i in by_num if i['project_id'] == plan_proj and i['status'] == 'backlog' and i['story_points'] is None)
    # close as won't fix
    wf = next((k, i) for k, i in by_num if i['project_id'] == 'AUTH' and i['status'] == 'backlog' and i['kind'] == 'feature')
    wf_note = 'Superseded by the new SSO roadmap; closing.'
    # review approval: comment and mark done
    review = next((k, i) for k, i in by_num if i['status'] == 'in_review')
    reviewer = next(h for h in sorted(members) if on(h, review[1]['project_id']) and h != review[1]['assignee'])
    review_note = 'Reviewed the change and the new tests; looks good. Merging.'
    # end the active sprint, carry leftovers into the planned one
    end_proj = next(p for p in ('DATA', 'MOBL', 'PAY') if any(i['status'] in ('todo', 'in_progress', 'in_review') for i in issues.values() if i['sprint_id'] == sprint_of(p, 'active')))
    active, nxt = sprint_of(end_proj, 'active'), sprint_of(end_proj, 'planned')
    # hand an in-progress issue to a colleague
    handover = next((k, i) for k, i in by_num if i['status'] == 'in_progress')
    taker = next(h for h in sorted(members) if on(h, handover[1]['project_id']) and h != handover[1]['assignee'] and wip[h] < 3)
    # read-only: what is in review for a member
    reader = next(h for h in sorted(members, key=lambda h: -sum(1 for i in issues.values() if i['assignee'] == h and i['status'] == 'in_review'))
                  if members[h]['active'])
    reader_proj = next(i['project_id'] for _, i in by_num if i['assignee'] == reader and i['status'] == 'in_review')
    return [
        Task(id='issue_tracker-file-bug', env_id='issue_tracker',
             instruction=(f"I'm {members[qa]['name']} (handle {qa}) from QA. Please file a p1 bug in the Payments Gateway project titled "
                          f"'{bug_title}' with the description '{bug_desc}' and the labels refunds and backend, then assign it to {dev}."),
             gold_actions=[Action(name='file_issue', arguments={'project_key': 'PAY', 'summary': bug_title, 'kind': 'bug', 'priority': 'p1', 'reporter': qa,
                                                                 'description': bug_desc, 'labels': ['backend', 'refunds']}),
                           Action(name='assign_issue_to', arguments={'issue_key': new_key, 'assignee': dev})],
             user_context={'handle': qa, 'project': 'PAY', 'title': bug_title, 'description': bug_desc, 'assignee': dev}),
        Task(id='issue_tracker-start-work', env_id='issue_tracker',
             instruction=f"I'm {start[1]['assignee']}. I'm picking up {start[0]} now; move it to in progress.",
             gold_actions=[Action(name='get_issue_details', arguments={'issue_key': start[0]}),
                           Action(name='move_issue_status', arguments={'issue_key': start[0], 'new_status': 'in_progress'})],
             user_context={'handle': start[1]['assignee'], 'issue_key': start[0]}),
        Task(id='issue_tracker-plan-next-sprint', env_id='issue_tracker',
             instruction=(f"For the Catalogue Search project: estimate {plan[0]} at {pts} story points and pull it into the upcoming "
                          f"(planned) sprint, {sprints[planned]['name']}."),
             gold_actions=[Action(name='get_sprint_board', arguments={'project_key': plan_proj, 'sprint_id': planned}),
                           Action(name='update_issue_fields', arguments={'issue_key': plan[0], 'story_points': pts}),
                           Action(name='plan_into_sprint', arguments={'issue_key': plan[0], 'sprint_id': planned})],
             user_context={'issue_key': plan[0], 'story_points': pts, 'sprint': sprints[planned]['name']}),
        Task(id='issue_tracker-wont-fix', env_id='issue_tracker',
             instruction=f"We are not going to build {wf[0]} ('{wf[1]['title']}'). Close it as won't fix with the note: '{wf_note}'",
             gold_actions=[Action(name='move_issue_status', arguments={'issue_key': wf[0], 'new_status': 'wont_fix', 'note': wf_note})],
             user_context={'issue_key': wf[0], 'note': wf_note}),
        Task(id='issue_tracker-approve-review', env_id='issue_tracker',
             instruction=(f"I'm {reviewer} and I just reviewed {review[0]}. Leave my comment '{review_note}' on it and mark it done."),
             gold_actions=[Action(name='get_issue_details', arguments={'issue_key': review[0]}),
                           Action(name='post_issue_comment', arguments={'issue_key': review[0], 'author': reviewer, 'body': review_note}),
                           Action(name='move_issue_status', arguments={'issue_key': review[0], 'new_status': 'done'})],
             user_context={'handle': reviewer, 'issue_key': review[0], 'comment': review_note}),
        Task(id='issue_tracker-end-sprint', env_id='issue_tracker',
             instruction=(f"The {projects[end_proj]['name']} sprint {sprints[active]['name']} is being wrapped up early. Close it and carry anything "
                          f"unfinished into {sprints[nxt]['name']}, which starts now."),
             gold_actions=[Action(name='get_sprint_board', arguments={'project_key': end_proj}),
                           Action(name='complete_sprint', arguments={'sprint_id': active, 'next_sprint_id': nxt})],
             user_context={'project': end_proj, 'sprint': sprints[active]['name'], 'next_sprint': sprints[nxt]['name']}),
        Task(id='issue_tracker-handover', env_id='issue_tracker',
             instruction=(f"{handover[1]['assignee']} is going on leave. Hand {handover[0]} over to {taker} and raise its priority to p0."),
             gold_actions=[Action(name='assign_issue_to', arguments={'issue_key': handover[0], 'assignee': taker}),
                           Action(name='update_issue_fields', arguments={'issue_key': handover[0], 'priority': 'p0'})],
             user_context={'issue_key': handover[0], 'new_assignee': taker}),
        Task(id='issue_tracker-review-queue', env_id='issue_tracker',
             instruction=f"I'm {reader}. Which of my {projects[reader_proj]['name']} issues are waiting in review? Just list them, don't change anything.",
             gold_actions=[Action(name='search_issues', arguments={'project_key': reader_proj, 'status': 'in_review', 'assignee': reader})],
             user_context={'handle': reader, 'project': reader_proj}),
    ]


def tool_tests(state: dict) -> list[ToolTest]:
    issues, sprints, members = state['issues'], state['sprints'], state['members']
    by_num = sorted(issues.items(), key=lambda x: (x[1]['project_id'], x[1]['number']))
    backlog = next(k for k, i in by_num if i['status'] == 'backlog' and i['project_id'] == 'PAY')
    unassigned = next(k for k, i in by_num if i['status'] == 'todo' and i['assignee'] is None and i['project_id'] != 'LGCY')
    full = next(k for k, s in sorted(sprints.items()) if s['status'] == 'planned')
    big = next(k for k, i in by_num if i['project_id'] == sprints[full]['project_id'] and i['status'] == 'backlog')
    lgcy_member = next(h for h, m in sorted(members.items()) if 'LGCY' in m['projects'] and m['active'])
    closed = next(k for k, i in by_num if i['status'] == 'done' and i['project_id'] != 'LGCY')
    pay_member = next(h for h, m in sorted(members.items()) if 'PAY' in m['projects'] and m['active'])
    labelled = next(k for k, i in by_num if i['project_id'] == 'PAY' and i['status'] not in ('done', 'wont_fix') and i['labels'] and 'refunds' not in i['labels'])
    planned = next(k for k, i in by_num if i['sprint_id'] == full and i['status'] not in ('done', 'wont_fix') and (i['story_points'] or 0) < 13)
    committed = lambda s: sum(i['story_points'] or 0 for i in issues.values() if i['sprint_id'] == s and i['status'] != 'wont_fix')
    return [
        ToolTest(name='unknown issue', calls=[ToolTestCall(name='get_issue_details', arguments={'issue_key': 'PAY-999'}, expect='execution_error')]),
        ToolTest(name='no skipping the workflow', calls=[ToolTestCall(name='move_issue_status', arguments={'issue_key': backlog, 'new_status': 'done'}, expect='execution_error')]),
        ToolTest(name='wont_fix needs a note', calls=[ToolTestCall(name='move_issue_status', arguments={'issue_key': backlog, 'new_status': 'wont_fix'}, expect='execution_error')]),
        ToolTest(name='in progress needs an assignee', calls=[ToolTestCall(name='move_issue_status', arguments={'issue_key': unassigned, 'new_status': 'in_progress'}, expect='execution_error')]),
        ToolTest(name='sprint capacity', initial_state={'sprints': {full: {**sprints[full], 'capacity_points': committed(full)}}},
                 calls=[ToolTestCall(name='update_issue_fields', arguments={'issue_key': big, 'story_points': 3}),
                        ToolTestCall(name='plan_into_sprint', arguments={'issue_key': big, 'sprint_id': full}, expect='execution_error'),
                        ToolTestCall(name='plan_into_sprint', arguments={'issue_key': big, 'sprint_id': None}, expect='execution_error'),
                        ToolTestCall(name='get_sprint_board', arguments={'project_key': sprints[full]['project_id'], 'sprint_id': full})]),
        ToolTest(name='archived project is read-only', calls=[ToolTestCall(name='file_issue', arguments={'project_key': 'LGCY', 'summary': 'Sitemap is stale', 'kind': 'bug', 'priority': 'p2', 'reporter': lgcy_member}, expect='execution_error'),
                                                              ToolTestCall(name='search_issues', arguments={'project_key': 'LGCY', 'limit': 3})]),
        ToolTest(name='unknown label', calls=[ToolTestCall(name='file_issue', arguments={'project_key': 'PAY', 'summary': 'Payout report is slow', 'kind': 'bug', 'priority': 'p2', 'reporter': pay_member, 'labels': ['frontend']}, expect='execution_error')]),
        ToolTest(name='bad estimate', calls=[ToolTestCall(name='update_issue_fields', arguments={'issue_key': backlog, 'story_points': 4}, expect='execution_error')]),
        ToolTest(name='closed issue cannot be reassigned', calls=[ToolTestCall(name='assign_issue_to', arguments={'issue_key': closed, 'assignee': None}, expect='execution_error')]),
        ToolTest(name='planned sprint cannot be completed', calls=[ToolTestCall(name='complete_sprint', arguments={'sprint_id': full}, expect='execution_error')]),
        ToolTest(name='empty comment', calls=[ToolTestCall(name='post_issue_comment', arguments={'issue_key': backlog, 'author': lgcy_member, 'body': '  '}, expect='execution_error')]),
        ToolTest(name='bad status value', calls=[ToolTestCall(name='move_issue_status', arguments={'issue_key': backlog, 'new_status': 'closed'}, expect='invalid_arguments')]),
        ToolTest(name='wrong argument type', calls=[ToolTestCall(name='search_issues', arguments={'project_key': 'PAY', 'limit': 'all'}, expect='invalid_arguments')]),
        ToolTest(name='search by label and by title words', calls=[ToolTestCall(name='search_issues', arguments={'project_key': 'PAY', 'label': 'refunds'}),
                                                                   ToolTestCall(name='search_issues', arguments={'project_key': 'AUTH', 'text': 'password reset'})]),
        ToolTest(name="add a project's own label, then remove one", calls=[
            ToolTestCall(name='update_issue_fields', arguments={'issue_key': labelled, 'add_labels': ['refunds']}),
            ToolTestCall(name='update_issue_fields', arguments={'issue_key': labelled, 'remove_labels': [issues[labelled]['labels'][0]]})]),
        ToolTest(name="re-estimate over a planned sprint's capacity", initial_state={'sprints': {full: {**sprints[full], 'capacity_points': committed(full)}}},
                 calls=[ToolTestCall(name='update_issue_fields', arguments={'issue_key': planned, 'story_points': 13}, expect='execution_error')]),
    ]


def build(folder: Path = HERE):
    state = seed_state(random.Random(20260309))
    return write_environment(
        folder, 'issue_tracker', (HERE / 'tools.py').read_text(), 'IssueTrackerTools', state, tasks(state), tool_tests(state),
        description='A software team\'s issue tracker: projects, issues with a status workflow, priorities, labels and assignees, comments and sprints.',
        policy=('You are the team\'s tracker assistant. Act for the member who asks, using their handle as reporter or comment author. '
                'Issues move backlog -> todo -> in_progress -> in_review -> done one step at a time; won\'t-fix, reopen and revive need a '
                'note. Starting work needs an assignee with fewer than 3 issues in progress. Only estimated issues (1, 2, 3, 5, 8 or 13 '
                'points) can go into a sprint, and a sprint may not exceed its capacity. Archived projects are read-only.'),
        clock_start=CLOCK_START, provenance={'author': 'hand-written', 'seed': 20260309}, trusted=True)


if __name__ == '__main__':
    env = build()
    print(env, {t: n for t, n in env.metadata['tables'].items()})
