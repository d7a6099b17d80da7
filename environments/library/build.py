"""Build the `library` environment folder: a seeded seed state, tasks with gold actions, tool tests.

Run `python environments/library/build.py` after changing anything here or in tools.py; it rewrites the
derived files (tools.json, db_schema.json, env.json, seed_state.json, tasks.jsonl, tests.json) and fills in
the gold hashes. The output is byte-identical from run to run (tests/test_environments.py checks that).
"""
import datetime as dt
import random
from pathlib import Path

from envsynth.envs import ToolTest, ToolTestCall, write_environment
from envsynth.schema import Action, Task

HERE = Path(__file__).parent
CLOCK_START = '2026-03-02T10:00:00+00:00'
TODAY = dt.date(2026, 3, 2)

FIRST = ['Ada', 'Bruno', 'Chiara', 'Dmitri', 'Elif', 'Farah', 'Gustav', 'Hana', 'Ivo', 'Jun', 'Kofi', 'Lena', 'Mateo', 'Nadia',
         'Oskar', 'Priya', 'Quentin', 'Rosa', 'Sven', 'Tariq', 'Uma', 'Viktor', 'Wen', 'Yara', 'Zeno']
LAST = ['Abara', 'Berg', 'Costa', 'Dahl', 'Eze', 'Fischer', 'Gallo', 'Horvat', 'Ito', 'Jensen', 'Kowalski', 'Lindqvist', 'Moreau',
        'Nakamura', 'Okafor', 'Petrov', 'Quist', 'Rossi', 'Silva', 'Tanaka', 'Ueda', 'Varga', 'Weber', 'Yilmaz', 'Zhou']
SUBJECTS = {'history': ['Empire', 'Rivers', 'Salt', 'Harbours', 'Frontier', 'Revolt'],
            'science': ['Light', 'Cells', 'Orbits', 'Fields', 'Entropy', 'Genes'],
            'fiction': ['Winter', 'Lantern', 'Orchard', 'Stranger', 'Tide', 'Garden'],
            'cooking': ['Bread', 'Spice', 'Broth', 'Ferment', 'Oven', 'Harvest'],
            'travel': ['Roads', 'Islands', 'Passes', 'Deserts', 'Rails', 'Coasts'],
            'children': ['Dragon', 'Puddle', 'Kite', 'Moon', 'Badger', 'Button']}
PATTERNS = ['The {a} of {b}', '{a} and {b}', 'A Short History of {a}', 'After the {a}', '{a}: A Guide', 'Notes on {a}']


def seed_state(rng: random.Random) -> dict:
    titles, members, loans, holds = {}, {}, {}, {}
    for i in range(1, 241):
        subject = rng.choice(sorted(SUBJECTS))
        a, b = rng.sample(SUBJECTS[subject], 2)
        total = rng.choice([1, 1, 2, 2, 3, 4])
        titles[f'T{i:04d}'] = {'isbn': f'978{rng.randrange(10**9, 10**10)}', 'title': rng.choice(PATTERNS).format(a=a, b=b),
                               'author': f'{rng.choice(FIRST)} {rng.choice(LAST)}', 'year': rng.randint(1950, 2025),
                               'subject': subject, 'copies_total': total, 'copies_available': total}
    for i in range(1, 91):
        first, last = rng.choice(FIRST), rng.choice(LAST)
        members[f'M{i:05d}'] = {'name': f'{first} {last}', 'email': f'{first.lower()}.{last.lower()}{i}@mail.example',
                                'tier': rng.choice(['standard', 'standard', 'student', 'staff']),
                                'fees_due': rng.choice([0.0] * 6 + [1.5, 3.25, 6.75, 12.0]), 'active': rng.random() > 0.05}
    title_ids, member_ids = sorted(titles), sorted(members)
    for i in range(1, 181):
        t = rng.choice(title_ids)
        if titles[t]['copies_available'] == 0: continue
        borrowed = TODAY - dt.timedelta(days=rng.randint(1, 60))
        returned = None if rng.random() < 0.45 else (borrowed + dt.timedelta(days=rng.randint(1, 20)))
        if returned and returned > TODAY: returned = None
        loans[f'L{i:05d}'] = {'title_id': t, 'member_id': rng.choice(member_ids), 'borrowed_on': borrowed.isoformat(),
                              'due_on': (borrowed + dt.timedelta(days=21)).isoformat(), 'renewals': rng.choice([0, 0, 0, 1, 2]),
                              'returned_on': returned.isoformat() if returned else None}
        if returned is None: titles[t]['copies_available'] -= 1
    empty = [t for t in title_ids if titles[t]['copies_available'] == 0]
    for i, t in enumerate(empty[:15], 1):
        holds[f'H{i:05d}'] = {'title_id': t, 'member_id': rng.choice(member_ids), 'placed_on': (TODAY - dt.timedelta(days=rng.randint(1, 10))).isoformat(),
                              'status': 'waiting'}
    return {'titles': titles, 'members': members, 'loans': loans, 'holds': holds}


def tasks(state: dict) -> list[Task]:
    titles, members, loans, holds = (state[k] for k in ('titles', 'members', 'loans', 'holds'))
    ok_member = next(k for k, m in sorted(members.items()) if m['active'] and m['fees_due'] == 0 and m['tier'] == 'student')
    shelf_title = next(k for k, t in sorted(titles.items()) if t['copies_available'] > 1 and t['subject'] == 'science')
    t_shelf = titles[shelf_title]
    held = {h['title_id'] for h in holds.values() if h['status'] == 'waiting'}
    open_loans = [(k, l) for k, l in sorted(loans.items()) if l['returned_on'] is None]
    overdue = next((k, l) for k, l in open_loans if l['due_on'] < TODAY.isoformat())
    renewable = next((k, l) for k, l in open_loans if l['renewals'] == 0 and l['title_id'] not in held and l['due_on'] >= TODAY.isoformat())
    owing = next(k for k, m in sorted(members.items()) if m['fees_due'] > 5 and m['active'])
    empty_title = next(k for k, t in sorted(titles.items()) if t['copies_available'] == 0 and k not in held)
    hold_to_cancel = next(k for k, h in sorted(holds.items()) if h['status'] == 'waiting')
    hold_member = holds[hold_to_cancel]['member_id']
    m = members
    return [
        Task(id='library-borrow', env_id='library',
             instruction=f"I'm {m[ok_member]['name']} ({m[ok_member]['email']}). I'd like to borrow '{t_shelf['title']}' by {t_shelf['author']}.",
             gold_actions=[Action(name='find_member_by_email', arguments={'email': m[ok_member]['email']}),
                           Action(name='search_catalogue', arguments={'query': t_shelf['title'], 'available_only': True}),
                           Action(name='lend_copy', arguments={'member_id': ok_member, 'title_id': shelf_title})],
             user_context={'member_id': ok_member, 'email': m[ok_member]['email']}),
        Task(id='library-return-late', env_id='library',
             instruction=f"Member {loans[overdue[0]]['member_id']} is returning the copy on loan {overdue[0]}. Check it in and tell them the late fee.",
             gold_actions=[Action(name='return_copy', arguments={'loan_id': overdue[0]})],
             user_context={'member_id': loans[overdue[0]]['member_id'], 'loan_id': overdue[0]}),
        Task(id='library-renew', env_id='library',
             instruction=f"I'm member {renewable[1]['member_id']}. Please renew all my loans that can be renewed; I only care about loan {renewable[0]}.",
             gold_actions=[Action(name='get_member_account', arguments={'member_id': renewable[1]['member_id']}),
                           Action(name='renew_loan', arguments={'loan_id': renewable[0]})],
             user_context={'member_id': renewable[1]['member_id']}),
        Task(id='library-pay-then-borrow', env_id='library',
             instruction=f"I'm member {owing}. I want to pay all my fees and then borrow '{t_shelf['title']}'.",
             gold_actions=[Action(name='get_member_account', arguments={'member_id': owing}),
                           Action(name='record_fee_payment', arguments={'member_id': owing, 'amount': m[owing]['fees_due']}),
                           Action(name='lend_copy', arguments={'member_id': owing, 'title_id': shelf_title})],
             user_context={'member_id': owing, 'fees_due': m[owing]['fees_due']}),
        Task(id='library-hold', env_id='library',
             instruction=f"I'm member {ok_member}. '{titles[empty_title]['title']}' is out; put me in the queue for it.",
             gold_actions=[Action(name='search_catalogue', arguments={'query': titles[empty_title]['title']}),
                           Action(name='place_hold', arguments={'member_id': ok_member, 'title_id': empty_title})],
             user_context={'member_id': ok_member}),
        Task(id='library-cancel-hold', env_id='library',
             instruction=f"I'm member {hold_member}; I no longer need the title I am waiting for. Cancel my hold {hold_to_cancel}.",
             gold_actions=[Action(name='get_member_account', arguments={'member_id': hold_member}),
                           Action(name='cancel_hold', arguments={'hold_id': hold_to_cancel})],
             user_context={'member_id': hold_member}),
        Task(id='library-lookup', env_id='library',
             instruction=f"How many copies of '{t_shelf['title']}' are on the shelf right now? Don't change anything.",
             gold_actions=[Action(name='search_catalogue', arguments={'query': t_shelf['title']})],
             user_context={}),
    ]


def tool_tests(state: dict) -> list[ToolTest]:
    members, loans = state['members'], state['loans']
    inactive = next(k for k, mm in sorted(members.items()) if not mm['active'])
    returned = next(k for k, l in sorted(loans.items()) if l['returned_on'] is not None)
    titles, holds = state['titles'], state['holds']
    held = {h['title_id'] for h in holds.values() if h['status'] == 'waiting'}
    open_loans = [(k, l) for k, l in sorted(loans.items()) if l['returned_on'] is None]
    renewable = [k for k, l in open_loans if l['renewals'] < 2 and l['title_id'] not in held][:2]
    renewed_twice = next(k for k, l in open_loans if l['renewals'] == 2)
    waited_for = next(k for k, l in open_loans if l['renewals'] < 2 and l['title_id'] in held)
    empty = next(k for k, t in sorted(titles.items()) if t['copies_available'] == 0 and k not in held)
    empty_words = titles[empty]['title']
    shelf = next(k for k, t in sorted(titles.items()) if t['copies_available'] > 0)
    waiting = [k for k, h in sorted(holds.items()) if h['status'] == 'waiting'][:2]
    return [
        ToolTest(name='unknown member', calls=[ToolTestCall(name='get_member_account', arguments={'member_id': 'M99999'}, expect='execution_error')]),
        ToolTest(name='inactive member cannot borrow', calls=[ToolTestCall(name='lend_copy', arguments={'member_id': inactive, 'title_id': 'T0001'}, expect='execution_error')]),
        ToolTest(name='double return', calls=[ToolTestCall(name='return_copy', arguments={'loan_id': returned}, expect='execution_error')]),
        ToolTest(name='overpay', calls=[ToolTestCall(name='record_fee_payment', arguments={'member_id': 'M00001', 'amount': 1000}, expect='execution_error')]),
        ToolTest(name='bad email', calls=[ToolTestCall(name='find_member_by_email', arguments={'email': 'nobody@mail.example'}, expect='execution_error')]),
        ToolTest(name='wrong argument type', calls=[ToolTestCall(name='search_catalogue', arguments={'query': 'salt', 'limit': 'ten'}, expect='invalid_arguments')]),
        ToolTest(name='subject filter', calls=[ToolTestCall(name='search_catalogue', arguments={'query': '', 'subject': 'travel', 'limit': 3})]),
        ToolTest(name='a title with no copy left is found, but not among available ones',
                 calls=[ToolTestCall(name='search_catalogue', arguments={'query': empty_words, 'available_only': False}),
                        ToolTestCall(name='search_catalogue', arguments={'query': empty_words, 'available_only': True})]),
        ToolTest(name='renew two loans, then one renewed twice already',
                 calls=[ToolTestCall(name='renew_loan', arguments={'loan_id': renewable[0]}),
                        ToolTestCall(name='renew_loan', arguments={'loan_id': renewable[1]}),
                        ToolTestCall(name='renew_loan', arguments={'loan_id': renewed_twice}, expect='execution_error')]),
        ToolTest(name='no renewal while someone waits', calls=[ToolTestCall(name='renew_loan', arguments={'loan_id': waited_for}, expect='execution_error')]),
        ToolTest(name='holds: two members queue, the shelf copy is lent instead, a repeat hold is refused',
                 calls=[ToolTestCall(name='place_hold', arguments={'member_id': 'M00002', 'title_id': empty}),
                        ToolTestCall(name='place_hold', arguments={'member_id': 'M00003', 'title_id': empty}),
                        ToolTestCall(name='place_hold', arguments={'member_id': 'M00002', 'title_id': empty}, expect='execution_error'),
                        ToolTestCall(name='place_hold', arguments={'member_id': 'M00002', 'title_id': shelf}, expect='execution_error')]),
        ToolTest(name="cancel two members' holds, then one twice",
                 calls=[ToolTestCall(name='cancel_hold', arguments={'hold_id': waiting[0]}),
                        ToolTestCall(name='cancel_hold', arguments={'hold_id': waiting[1]}),
                        ToolTestCall(name='cancel_hold', arguments={'hold_id': waiting[0]}, expect='execution_error')]),
    ]


def build(folder: Path = HERE):
    state = seed_state(random.Random(20260302))
    return write_environment(
        folder, 'library', (HERE / 'tools.py').read_text(), 'LibraryTools', state, tasks(state), tool_tests(state),
        description='A public lending library: catalogue search, member accounts, loans, renewals, holds and late fees.',
        policy=('You are the library desk assistant. Identify the member (id or email) before changing anything on '
                'their account. Loans last 21 days and can be renewed twice unless someone is waiting. Members owing '
                'more than 5.00 in fees must pay before borrowing. Confirm with the member before recording a payment.'),
        clock_start=CLOCK_START, provenance={'author': 'hand-written', 'seed': 20260302}, trusted=True)


if __name__ == '__main__':
    env = build()
    print(env, {t: n for t, n in env.metadata['tables'].items()})
