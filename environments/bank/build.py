"""Build the `bank` environment folder: a seeded retail bank back office, tasks with gold actions, tool tests.

Run `python environments/bank/build.py` after changing anything here or in tools.py; it rewrites the derived
files (tools.json, db_schema.json, env.json, seed_state.json, tasks.jsonl, tests.json) and fills in the gold
hashes. The output is byte-identical from run to run.
"""
import datetime as dt
import random
from pathlib import Path

from envsynth.envs import ToolTest, ToolTestCall, write_environment
from envsynth.schema import Action, Task

HERE = Path(__file__).parent
CLOCK_START = '2026-05-06T09:30:00+00:00'
TODAY = dt.date(2026, 5, 6)

FIRST = ['Aurelio', 'Brisa', 'Caspian', 'Delphine', 'Emrys', 'Flavia', 'Gaspard', 'Honora', 'Ignatius', 'Jessamy', 'Lorcan', 'Maelis',
         'Norberto', 'Ottilie', 'Peregrine', 'Rosalind', 'Severin', 'Thessaly', 'Valentin', 'Wrenna', 'Ximena', 'Yannick', 'Zephyrine']
LAST = ['Abernathy', 'Blackthorn', 'Coldwell', 'Dovecote', 'Everleigh', 'Foxley', 'Greenhalgh', 'Hazeldene', 'Inchbald', 'Kingsmill',
        'Lockwood', 'Marchbank', 'Nettleford', 'Orpington', 'Pembrey', 'Rushmere', 'Saltonstall', 'Tregarthen', 'Wainfleet']
EMPLOYERS = ['Corrib Logistics', 'Halden Foods', 'Pellow Engineering', 'Stillwater Clinics', 'Vantage Print Works', 'Marl & Hythe Legal']
MERCHANTS = ['Pantry Corner', 'Lumen Cinema', 'Fernhill Grocers', 'Brass Kettle Cafe', 'Quayside Books', 'Orbit Fuel', 'Saltmarsh Pharmacy',
             'Tinker Hardware', 'Larch Street Bakery', 'Nimbus Electronics']
PAYEES = ['Greystone Lettings', 'Brightwell Energy', 'Hollowbrook Water', 'Kinderly Nursery', 'Northgate Gym', 'Meridian Mobile',
          'Cobble Lane Insurance', 'Tallow Broadband', 'Riverside Council Tax']


def ext_number(rng: random.Random) -> str: return f'XE{rng.randrange(10**9, 10**10)}'


def next_run(day: int) -> str:
    if TODAY.day < day: return TODAY.replace(day=day).isoformat()
    return dt.date(TODAY.year + (TODAY.month == 12), TODAY.month % 12 + 1, day).isoformat()


def seed_state(rng: random.Random) -> dict:
    customers, accounts, cards, txs, orders = {}, {}, {}, {}, {}
    payee_accounts = {p: ext_number(rng) for p in PAYEES}
    numbers = set()

    def new_number() -> str:
        while True:
            n = f'NB{rng.randrange(10**9, 10**10)}'
            if n not in numbers: numbers.add(n); return n

    def post(acc_id: str, when: dt.datetime, amount: float, kind: str, counterparty: str, reference: str) -> bool:
        acc = accounts[acc_id]
        if acc['balance'] + amount < -acc['overdraft_limit']: return False
        acc['balance'] = round(acc['balance'] + amount, 2)
        txs[f'T{len(txs) + 1:06d}'] = {'account_id': acc_id, 'posted_at': when.strftime('%Y-%m-%dT%H:%M:%S'), 'amount': round(amount, 2), 'kind': kind,
                                       'counterparty': counterparty, 'reference': reference, 'balance_after': acc['balance']}
        return True

    for i in range(1, 71):
        first, last = rng.choice(FIRST), rng.choice(LAST)
        seg = 'premier' if rng.random() < 0.22 else 'retail'
        joined = TODAY - dt.timedelta(days=rng.randint(200, 4000))
        cid = f'C{i:04d}'
        customers[cid] = {'name': f'{first} {last}', 'email': f'{first.lower()}.{last.lower()}{i}@post.example', 'phone': f'07700 900{i:03d}',
                          'segment': seg, 'kyc_verified': rng.random() > 0.05, 'joined_on': joined.isoformat()}
        kinds = ['current'] + (['savings'] if rng.random() < 0.55 else [])
        for kind in kinds:
            aid = f'A{len(accounts) + 1:05d}'
            status = 'closed' if kind == 'savings' and rng.random() < 0.1 else 'frozen' if rng.random() < 0.04 else 'open'
            overdraft = 0.0 if kind == 'savings' else rng.choice([0.0, 250.0, 500.0] if seg == 'retail' else [1000.0, 2500.0])
            accounts[aid] = {'customer_id': cid, 'number': new_number(), 'kind': kind, 'balance': 0.0 if status == 'closed' else round(rng.uniform(20, 2500), 2),
                             'overdraft_limit': overdraft, 'status': status, 'opened_on': (joined + dt.timedelta(days=rng.randint(0, 150))).isoformat()}
            if status == 'closed': continue
            moments = sorted(dt.datetime.combine(TODAY - dt.timedelta(days=rng.randint(1, 35)), dt.time(rng.randint(7, 21), rng.randint(0, 59), rng.randint(0, 59)))
                             for _ in range(rng.randint(2, 5)))
            for j, when in enumerate(moments):
                if kind == 'savings':
                    if rng.random() < 0.4: post(aid, when, round(rng.uniform(0.5, 14), 2), 'interest', 'Bank', 'Monthly interest')
                    else: post(aid, when, round(rng.uniform(50, 900), 2), 'deposit', customers[cid]['name'], 'Savings top-up')
                elif j == 0: post(aid, when, round(rng.uniform(1400, 4200), 2), 'deposit', rng.choice(EMPLOYERS), 'Salary')
                elif rng.random() < 0.6:
                    post(aid, when, -round(rng.uniform(3.5, 180), 2), 'card', rng.choice(MERCHANTS), f'Card purchase {when:%d%m}')
                else:
                    payee = rng.choice(PAYEES)
                    post(aid, when, -round(rng.uniform(20, 400), 2), 'payment_out', payee, f'REF-{rng.randrange(1000, 9999)}')
            if kind == 'current':
                limits = [500.0, 1000.0, 1500.0] if seg == 'retail' else [2000.0, 3000.0]
                if rng.random() < 0.15:
                    cards[f'K{len(cards) + 1:05d}'] = {'account_id': aid, 'last4': f'{rng.randrange(10000):04d}', 'status': 'cancelled',
                                                       'block_reason': rng.choice(['lost', 'stolen', 'damaged']), 'daily_limit': rng.choice(limits),
                                                       'expires': f'{rng.randint(2027, 2029)}-{rng.randint(1, 12):02d}', 'issued_on': accounts[aid]['opened_on']}
                issued = TODAY - dt.timedelta(days=rng.randint(30, 1200))
                cards[f'K{len(cards) + 1:05d}'] = {'account_id': aid, 'last4': f'{rng.randrange(10000):04d}', 'status': 'active', 'block_reason': None,
                                                   'daily_limit': rng.choice(limits), 'expires': f'{issued.year + 4}-{issued.month:02d}', 'issued_on': issued.isoformat()}
    currents = [k for k, a in sorted(accounts.items()) if a['kind'] == 'current' and a['status'] == 'open']
    for _ in range(55):
        aid, payee = rng.choice(currents), rng.choice(PAYEES)
        status = 'active' if rng.random() < 0.85 else 'cancelled'
        if status == 'active' and any(o['account_id'] == aid and o['payee'] == payee and o['status'] == 'active' for o in orders.values()): continue
        day = rng.randint(1, 28)
        amount = round(rng.uniform(650, 1400), 0) if payee == 'Greystone Lettings' else round(rng.uniform(12, 160), 2)
        orders[f'S{len(orders) + 1:04d}'] = {'account_id': aid, 'payee': payee, 'payee_account': payee_accounts[payee], 'amount': float(amount),
                                             'day_of_month': day, 'status': status, 'created_on': (TODAY - dt.timedelta(days=rng.randint(20, 700))).isoformat(),
                                             'next_run': next_run(day)}
    return {'customers': customers, 'accounts': accounts, 'cards': cards, 'transactions': txs, 'standing_orders': orders}


def tasks(state: dict) -> list[Task]:
    customers, accounts, cards, txs, orders = (state[k] for k in ('customers', 'accounts', 'cards', 'transactions', 'standing_orders'))
    names = [c['name'] for c in customers.values()]
    ok = [k for k, c in sorted(customers.items()) if c['kyc_verified'] and names.count(c['name']) == 1]
    used: set[str] = set()

    def accts(cid: str, kind: str) -> list[str]: return [k for k, a in sorted(accounts.items()) if a['customer_id'] == cid and a['kind'] == kind and a['status'] == 'open']
    def active_cards(aid: str) -> list[str]: return [k for k, c in sorted(cards.items()) if c['account_id'] == aid and c['status'] == 'active']
    def available(aid: str) -> float: return accounts[aid]['balance'] + accounts[aid]['overdraft_limit']
    def pick(cond) -> str:
        cid = next(c for c in ok if c not in used and cond(c)); used.add(cid); return cid
    def current(cid: str) -> str: return accts(cid, 'current')[0]

    one_card = lambda c: len(accts(c, 'current')) == 1 and len(active_cards(current(c))) == 1
    lost = pick(lambda c: customers[c]['segment'] == 'retail' and one_card(c) and available(current(c)) >= 7.5)
    lost_card = active_cards(current(lost))[0]
    payer = pick(lambda c: customers[c]['segment'] == 'retail' and len(accts(c, 'current')) == 1 and available(current(c)) >= 245.8)
    plumber = 'XE5518230947'
    saver = pick(lambda c: len(accts(c, 'current')) == 1 and len(accts(c, 'savings')) == 1 and accounts[accts(c, 'savings')[0]]['balance'] > 0)
    sav = accts(saver, 'savings')[0]
    rent = {o['account_id']: k for k, o in sorted(orders.items()) if o['payee'] == 'Greystone Lettings' and o['status'] == 'active'}
    tenant = pick(lambda c: len(accts(c, 'current')) == 1 and current(c) in rent)
    old = rent[current(tenant)]
    premier = pick(lambda c: customers[c]['segment'] == 'premier' and one_card(c))
    fraud = pick(lambda c: one_card(c) and any(t['account_id'] == current(c) and t['kind'] == 'card' for t in txs.values()))
    fraud_tx = max((t['posted_at'], k) for k, t in txs.items() if t['account_id'] == current(fraud) and t['kind'] == 'card')[1]
    ft = txs[fraud_tx]
    asker = pick(lambda c: len(accts(c, 'current')) == 1)
    short = pick(lambda c: len(accts(c, 'current')) == 1 and available(current(c)) < 9000)
    c = customers
    return [
        Task(id='bank-lost-card', env_id='bank',
             instruction=(f"Hello, I'm {c[lost]['name']} ({c[lost]['email']}). I've lost my debit card ending in {cards[lost_card]['last4']}. "
                          f"Please block it straight away and send me a replacement."),
             gold_actions=[Action(name='search_customers', arguments={'query': c[lost]['email']}),
                           Action(name='account_overview', arguments={'customer_id': lost}),
                           Action(name='block_card', arguments={'card_id': lost_card, 'reason': 'lost'}),
                           Action(name='reissue_card', arguments={'card_id': lost_card})],
             user_context={'customer_id': lost, 'email': c[lost]['email'], 'card_last4': cards[lost_card]['last4']}),
        Task(id='bank-pay-invoice', env_id='bank',
             instruction=(f"This is {c[payer]['name']}. Please pay 245.80 from my current account to Hollowbrook Plumbing, account {plumber} at "
                          f"another bank, with the reference INV-2231."),
             gold_actions=[Action(name='search_customers', arguments={'query': c[payer]['name']}),
                           Action(name='account_overview', arguments={'customer_id': payer}),
                           Action(name='execute_payment', arguments={'from_account_id': current(payer), 'to_account_number': plumber, 'amount': 245.8,
                                                                     'reference': 'INV-2231', 'payee_name': 'Hollowbrook Plumbing'})],
             user_context={'name': c[payer]['name'], 'payee': 'Hollowbrook Plumbing', 'payee_account': plumber, 'amount': 245.8, 'reference': 'INV-2231'}),
        Task(id='bank-close-savings', env_id='bank',
             instruction=(f"I'm customer {saver}. I want to close my savings account. Move everything in it to my current account first, "
                          f"with the reference 'Savings closure'."),
             gold_actions=[Action(name='account_overview', arguments={'customer_id': saver}),
                           Action(name='execute_payment', arguments={'from_account_id': sav, 'to_account_number': accounts[current(saver)]['number'],
                                                                     'amount': accounts[sav]['balance'], 'reference': 'Savings closure'}),
                           Action(name='close_account', arguments={'account_id': sav})],
             user_context={'customer_id': saver, 'reference': 'Savings closure'}),
        Task(id='bank-rent-increase', env_id='bank',
             instruction=(f"I'm {c[tenant]['name']}, customer {tenant}. My rent to Greystone Lettings goes up to 1,350.00 a month. Replace my standing "
                          f"order to them with one for the new amount, same account and same day of the month."),
             gold_actions=[Action(name='account_overview', arguments={'customer_id': tenant}),
                           Action(name='cancel_standing_order', arguments={'order_id': old}),
                           Action(name='create_standing_order', arguments={'account_id': orders[old]['account_id'], 'payee_name': 'Greystone Lettings',
                                                                           'payee_account': orders[old]['payee_account'], 'amount': 1350.0,
                                                                           'day_of_month': orders[old]['day_of_month']})],
             user_context={'customer_id': tenant, 'new_amount': 1350.0}),
        Task(id='bank-card-limit', env_id='bank',
             instruction=f"Hi, {c[premier]['name']} here ({c[premier]['email']}). I'm travelling next week; please raise my debit card's daily limit to 4,000.00.",
             gold_actions=[Action(name='search_customers', arguments={'query': c[premier]['email']}),
                           Action(name='account_overview', arguments={'customer_id': premier}),
                           Action(name='set_card_limit', arguments={'card_id': active_cards(current(premier))[0], 'daily_limit': 4000.0})],
             user_context={'customer_id': premier, 'email': c[premier]['email'], 'daily_limit': 4000.0}),
        Task(id='bank-card-fraud', env_id='bank',
             instruction=(f"I'm customer {fraud}. There's a card payment of {-ft['amount']:.2f} at {ft['counterparty']} on {ft['posted_at'][:10]} that I "
                          f"never made. Block my card as suspected fraud and issue me a new one."),
             gold_actions=[Action(name='account_overview', arguments={'customer_id': fraud}),
                           Action(name='list_account_activity', arguments={'account_id': current(fraud), 'kind': 'card'}),
                           Action(name='block_card', arguments={'card_id': active_cards(current(fraud))[0], 'reason': 'suspected_fraud'}),
                           Action(name='reissue_card', arguments={'card_id': active_cards(current(fraud))[0]})],
             user_context={'customer_id': fraud, 'transaction': {'amount': -ft['amount'], 'merchant': ft['counterparty'], 'date': ft['posted_at'][:10]}}),
        Task(id='bank-recent-activity', env_id='bank',
             instruction=(f"I'm {c[asker]['name']} ({c[asker]['email']}). What is the balance of my current account, and what were the last three "
                          f"transactions on it? Don't change anything."),
             gold_actions=[Action(name='search_customers', arguments={'query': c[asker]['email']}),
                           Action(name='account_overview', arguments={'customer_id': asker}),
                           Action(name='list_account_activity', arguments={'account_id': current(asker), 'limit': 3})],
             user_context={'customer_id': asker, 'email': c[asker]['email']}),
        Task(id='bank-payment-too-large', env_id='bank',
             instruction=(f"I'm customer {short}. Pay 9,000.00 from my current account to Ashcombe Motors, account XE7730418852, reference CAR-DEPOSIT. "
                          f"If I can't afford it, just tell me and don't move any money."),
             gold_actions=[Action(name='account_overview', arguments={'customer_id': short})],
             user_context={'customer_id': short, 'available': round(available(current(short)), 2)}),
    ]


def tool_tests(state: dict) -> list[ToolTest]:
    customers, accounts, cards, orders = (state[k] for k in ('customers', 'accounts', 'cards', 'standing_orders'))
    open_cur = [k for k, a in sorted(accounts.items()) if a['kind'] == 'current' and a['status'] == 'open' and customers[a['customer_id']]['kyc_verified']]
    poor = min(open_cur, key=lambda k: (accounts[k]['balance'] + accounts[k]['overdraft_limit'], k))
    savings = next(k for k, a in sorted(accounts.items()) if a['kind'] == 'savings' and a['status'] == 'open' and a['balance'] > 0 and customers[a['customer_id']]['kyc_verified'])
    frozen = next(k for k, a in sorted(accounts.items()) if a['status'] == 'frozen')
    retail_card = next(k for k, c in sorted(cards.items()) if c['status'] == 'active' and customers[accounts[c['account_id']]['customer_id']]['segment'] == 'retail')
    dead_card = next(k for k, c in sorted(cards.items()) if c['status'] == 'cancelled')
    stopped = next(k for k, o in sorted(orders.items()) if o['status'] == 'cancelled')
    txs = state['transactions']
    busy = max(sorted(accounts), key=lambda k: sum(t['account_id'] == k for t in txs.values()))
    days = sorted(t['posted_at'][:10] for t in txs.values() if t['account_id'] == busy)
    since = days[len(days) // 2]
    segment = lambda c: customers[accounts[cards[c]['account_id']]['customer_id']]['segment']
    usable = [k for k, c in sorted(cards.items()) if c['status'] == 'active' and accounts[c['account_id']]['status'] == 'open']
    spendable = lambda a: round(accounts[a]['balance'] + accounts[a]['overdraft_limit'], 2)
    broke_card = next(k for k in usable if segment(k) == 'retail' and accounts[cards[k]['account_id']]['kind'] == 'current'
                      and customers[accounts[cards[k]['account_id']]['customer_id']]['kyc_verified'] and 0 < spendable(cards[k]['account_id']) <= 5000)
    lost_cards = [next(k for k in usable if segment(k) == 'retail'), next(k for k in usable if segment(k) == 'premier')]
    return [
        ToolTest(name='unknown customer', calls=[ToolTestCall(name='account_overview', arguments={'customer_id': 'C9999'}, expect='execution_error')]),
        ToolTest(name='insufficient funds', calls=[ToolTestCall(name='execute_payment', arguments={'from_account_id': poor, 'to_account_number': 'XE1000000001',
                                                                                                   'amount': 50000.0, 'reference': 'x', 'payee_name': 'Someone'}, expect='execution_error')]),
        ToolTest(name='savings cannot pay outside', calls=[ToolTestCall(name='execute_payment', arguments={'from_account_id': savings, 'to_account_number': 'XE1000000001',
                                                                                                         'amount': 1.0, 'reference': 'x', 'payee_name': 'Someone'}, expect='execution_error')]),
        ToolTest(name='frozen account', calls=[ToolTestCall(name='execute_payment', arguments={'from_account_id': frozen, 'to_account_number': 'XE1000000001',
                                                                                               'amount': 1.0, 'reference': 'x', 'payee_name': 'Someone'}, expect='execution_error')]),
        ToolTest(name='close with money in it', calls=[ToolTestCall(name='close_account', arguments={'account_id': savings}, expect='execution_error')]),
        ToolTest(name='retail card limit cap', calls=[ToolTestCall(name='set_card_limit', arguments={'card_id': retail_card, 'daily_limit': 4000.0}, expect='execution_error')]),
        ToolTest(name='cancelled card', calls=[ToolTestCall(name='block_card', arguments={'card_id': dead_card, 'reason': 'lost'}, expect='execution_error'),
                                               ToolTestCall(name='reissue_card', arguments={'card_id': retail_card}, expect='execution_error')]),
        ToolTest(name='standing order day 31', calls=[ToolTestCall(name='create_standing_order', arguments={'account_id': open_cur[0], 'payee_name': 'Tallow Broadband',
                                                                                                          'payee_account': 'XE1000000002', 'amount': 30.0, 'day_of_month': 31}, expect='execution_error')]),
        ToolTest(name='order already stopped', calls=[ToolTestCall(name='cancel_standing_order', arguments={'order_id': stopped}, expect='execution_error')]),
        ToolTest(name='amount must be a number', calls=[ToolTestCall(name='execute_payment', arguments={'from_account_id': poor, 'to_account_number': 'XE1000000001',
                                                                                                        'amount': 'ten', 'reference': 'x'}, expect='invalid_arguments')]),
        ToolTest(name='unknown transaction kind', calls=[ToolTestCall(name='list_account_activity', arguments={'account_id': poor, 'kind': 'refund'}, expect='invalid_arguments')]),
        ToolTest(name='limit within cap, phone search', calls=[
            ToolTestCall(name='set_card_limit', arguments={'card_id': retail_card, 'daily_limit': 1800.0}),
            ToolTestCall(name='search_customers', arguments={'query': '07700 900001'})]),
        ToolTest(name='search with a small limit', calls=[ToolTestCall(name='search_customers', arguments={'query': 'post.example', 'limit': 3})]),
        ToolTest(name='activity since a day', calls=[ToolTestCall(name='list_account_activity', arguments={'account_id': busy, 'since': since})]),
        ToolTest(name='replace a retail and a premier lost card: only retail pays', calls=[
            ToolTestCall(name='block_card', arguments={'card_id': lost_cards[0], 'reason': 'lost'}),
            ToolTestCall(name='reissue_card', arguments={'card_id': lost_cards[0]}),
            ToolTestCall(name='block_card', arguments={'card_id': lost_cards[1], 'reason': 'stolen'}),
            ToolTestCall(name='reissue_card', arguments={'card_id': lost_cards[1]})]),
        ToolTest(name='a retail replacement fee the account cannot cover', calls=[
            ToolTestCall(name='execute_payment', arguments={'from_account_id': cards[broke_card]['account_id'], 'to_account_number': 'XE1000000003',
                                                            'amount': spendable(cards[broke_card]['account_id']), 'reference': 'rent', 'payee_name': 'Landlord'}),
            ToolTestCall(name='block_card', arguments={'card_id': broke_card, 'reason': 'damaged'}),
            ToolTestCall(name='reissue_card', arguments={'card_id': broke_card}, expect='execution_error')]),
        ToolTest(name='close a frozen account', calls=[ToolTestCall(name='close_account', arguments={'account_id': frozen}, expect='execution_error')]),
    ]


def build(folder: Path = HERE):
    state = seed_state(random.Random(20260506))
    return write_environment(
        folder, 'bank', (HERE / 'tools.py').read_text(), 'BankTools', state, tasks(state), tool_tests(state),
        description='A retail bank back office: customer lookup, accounts and balances, statements, payments, debit cards and standing orders.',
        policy=('You are a bank back-office assistant. Identify the customer (id, email, phone or unique name) before acting, and act only '
                'on that customer\'s own accounts and cards. Never move more money than balance plus overdraft; savings accounts pay only '
                'into the customer\'s own accounts. Block a card at once when it is reported lost, stolen or misused; a replacement costs '
                'retail customers 7.50 unless the block was for suspected fraud. Use the exact payee name, account number, amount and '
                'reference the customer gives; an account can only be closed once its balance is 0.00 and its standing orders are stopped.'),
        clock_start=CLOCK_START, provenance={'author': 'hand-written', 'seed': 20260506}, trusted=True)


if __name__ == '__main__':
    env = build()
    print(env, {t: n for t, n in env.metadata['tables'].items()})
