"""Build the `pharmacy` environment folder: a seeded seed state, tasks with gold actions, tool tests.

Run `python environments/pharmacy/build.py` after changing anything here or in tools.py; it rewrites the
derived files (tools.json, db_schema.json, env.json, seed_state.json, tasks.jsonl, tests.json) and fills in
the gold hashes. The output is byte-identical from run to run. All drug and people names are invented.
"""
import datetime as dt
import math
import random
from pathlib import Path

from envsynth.envs import ToolTest, ToolTestCall, write_environment
from envsynth.schema import Action, Task

HERE = Path(__file__).parent
CLOCK_START = '2026-03-16T08:45:00+00:00'
TODAY = dt.date(2026, 3, 16)

FIRST = ['Agnes', 'Benedikt', 'Cosima', 'Desmond', 'Edda', 'Florin', 'Gilda', 'Henrik', 'Isolde', 'Jasper', 'Kirsi', 'Leopold', 'Malin',
         'Nestor', 'Ottilie', 'Pim', 'Rosalind', 'Silas', 'Thea', 'Ugo', 'Vilma', 'Waldo', 'Ylva', 'Zdenek', 'Annika', 'Casimir']
LAST = ['Ambrose', 'Birkeland', 'Carrow', 'Delacroix', 'Emberly', 'Fairweather', 'Gundersen', 'Halloran', 'Ingram', 'Juhl', 'Kestrel',
        'Lindgard', 'Merriweather', 'Nightingale', 'Oakes', 'Pemberton', 'Quarry', 'Rainsford', 'Sallow', 'Thistlewood', 'Underhill',
        'Valcourt', 'Whitlock', 'Yarrow']
# drug class: (invented stems, suffix, strengths, form, controlled, antibiotic)
CLASSES = {
    'statin': (['melo', 'tora', 'pira', 'cova'], 'vastin', ['10 mg', '20 mg', '40 mg'], 'tablet', False, False),
    'ace_inhibitor': (['bena', 'quino', 'tela'], 'pralil', ['5 mg', '10 mg', '20 mg'], 'tablet', False, False),
    'beta_blocker': (['meta', 'ateno', 'bisa'], 'prolol', ['25 mg', '50 mg', '100 mg'], 'tablet', False, False),
    'ssri': (['fluo', 'sera', 'cita', 'paro'], 'xetane', ['10 mg', '20 mg', '40 mg'], 'tablet', False, False),
    'nsaid': (['ibra', 'napro', 'keto'], 'fenamac', ['200 mg', '400 mg', '500 mg'], 'tablet', False, False),
    'anticoagulant': (['apira', 'rivo', 'dabo'], 'xabarin', ['2.5 mg', '5 mg'], 'tablet', False, False),
    'opioid': (['oxa', 'hydra', 'tapo'], 'morphane', ['5 mg', '10 mg'], 'tablet', True, False),
    'benzodiazepine': (['alpa', 'lora', 'clona'], 'zepolam', ['0.5 mg', '1 mg'], 'tablet', True, False),
    'stimulant': (['methy', 'dexo'], 'phenidrate', ['10 mg', '20 mg'], 'capsule', True, False),
    'macrolide': (['azra', 'clara', 'erya'], 'thromicin', ['250 mg', '500 mg'], 'capsule', False, True),
    'penicillin': (['amo', 'diclo', 'piva'], 'xacillan', ['250 mg', '500 mg'], 'capsule', False, True),
    'antihistamine': (['ceta', 'lora', 'fexa'], 'radine', ['10 mg', '180 mg'], 'tablet', False, False),
    'ppi': (['omi', 'panto', 'rabo'], 'prazolin', ['20 mg', '40 mg'], 'capsule', False, False),
    'thyroid_hormone': (['levo', 'lio'], 'thyrolate', ['50 mcg', '100 mcg'], 'tablet', False, False),
    'biguanide': (['meta', 'buta'], 'formidine', ['500 mg', '850 mg'], 'tablet', False, False),
}
BRAND_A = ['Cor', 'Vel', 'Zan', 'Tri', 'Lum', 'Ori', 'Pax', 'Neo', 'Sol', 'Vir', 'Quel', 'Dax']
BRAND_B = ['exa', 'ora', 'ivo', 'antra', 'ela', 'ix', 'ara', 'ion', 'umet', 'otil']
INTERACTIONS = [('anticoagulant', 'nsaid', 'major', 'raised bleeding risk'), ('benzodiazepine', 'opioid', 'major', 'risk of respiratory depression'),
                ('macrolide', 'statin', 'major', 'raised risk of muscle damage'), ('nsaid', 'ssri', 'moderate', 'raised risk of stomach bleeding'),
                ('ace_inhibitor', 'nsaid', 'moderate', 'reduced blood-pressure control and kidney strain'),
                ('opioid', 'ssri', 'moderate', 'risk of serotonin effects'), ('anticoagulant', 'macrolide', 'moderate', 'raised anticoagulant levels'),
                ('anticoagulant', 'ssri', 'moderate', 'raised bleeding risk'), ('beta_blocker', 'stimulant', 'moderate', 'opposing effects on heart rate'),
                ('antihistamine', 'benzodiazepine', 'moderate', 'added drowsiness'), ('antihistamine', 'opioid', 'moderate', 'added drowsiness'),
                ('ppi', 'thyroid_hormone', 'moderate', 'reduced thyroid hormone absorption'), ('ssri', 'stimulant', 'moderate', 'raised blood pressure')]
PLANS = [('Brightwater Basic', 10.0, 45.0, 1500.0), ('Brightwater Plus', 5.0, 30.0, 900.0), ('Cedar Mutual', 8.0, 40.0, 1200.0),
         ('Northgate Silver', 12.0, 55.0, 2500.0), ('Northgate Gold', 3.0, 20.0, 600.0), ('Civic Care', 0.0, 15.0, 150.0)]
SPECIALTIES = ['family medicine', 'internal medicine', 'cardiology', 'psychiatry', 'pediatrics', 'dermatology', 'pain medicine', 'dentistry']
HOLD_REASONS = ['prior authorization pending with the insurer', 'prescriber asked to pause treatment']
ALLERGENS = ['penicillin', 'penicillin', 'nsaid', 'macrolide', 'opioid', 'ace_inhibitor']


def wait_days(days_supply: int, controlled: bool) -> int: return math.ceil(days_supply * (0.9 if controlled else 0.75))


def seed_state(rng: random.Random) -> dict:
    plans = {f'PL{i:02d}': {'name': n, 'copay_generic': g, 'copay_brand': b, 'oop_max': m} for i, (n, g, b, m) in enumerate(PLANS, 1)}
    prescribers = {}
    while len(prescribers) < 40:
        prescribers[f'LIC-{rng.randint(10000, 99999)}'] = {'name': f'Dr. {rng.choice(FIRST)} {rng.choice(LAST)}', 'specialty': rng.choice(SPECIALTIES),
                                                           'controlled_authority': rng.random() < 0.75}
    prescribers = dict(sorted(prescribers.items()))
    medications, brands = {}, rng.sample([a + b for a in BRAND_A for b in BRAND_B], 40)
    drafts = []
    for cls, (stems, suffix, strengths, form, controlled, _) in CLASSES.items():
        for stem in stems:
            for s in sorted(rng.sample(strengths, 2), key=strengths.index): drafts.append((stem + suffix, s, form, cls, True, controlled))
        for _ in range(rng.choice([1, 2])): drafts.append((brands.pop(), rng.choice(strengths), form, cls, False, controlled))
    for i, (name, strength, form, cls, generic, controlled) in enumerate(drafts, 1):
        price = rng.uniform(0.3, 2.0) if controlled else rng.uniform(0.04, 0.9) if generic else rng.uniform(1.2, 8.5)
        medications[f'MED{i:04d}'] = {'name': name, 'strength': strength, 'form': form, 'drug_class': cls, 'generic': generic, 'controlled': controlled,
                                      'unit_price': round(price, 2), 'stock_units': 0 if rng.random() < 0.06 else rng.randint(20, 900),
                                      'reorder_level': rng.choice([50, 100, 150, 200])}
    interactions = {f'IX{i:02d}': {'class_a': a, 'class_b': b, 'severity': s, 'note': n} for i, (a, b, s, n) in enumerate(INTERACTIONS, 1)}
    major = {frozenset((a, b)) for a, b, s, _ in INTERACTIONS if s == 'major'}
    patients, seen = {}, set()
    while len(patients) < 160:
        first, last = rng.choice(FIRST), rng.choice(LAST)
        dob = dt.date(1940, 1, 1) + dt.timedelta(days=rng.randint(0, 68 * 365))
        if (last, dob) in seen: continue
        seen.add((last, dob))
        allergies = sorted(set(rng.sample(ALLERGENS, rng.choice([1, 1, 1, 2])))) if rng.random() < 0.2 else []
        patients[f'P{len(patients) + 1:05d}'] = {'first_name': first, 'last_name': last, 'date_of_birth': dob.isoformat(),
                                                 'phone': f'555-{rng.randint(100, 999)}-{rng.randint(1000, 9999)}', 'allergies': allergies,
                                                 'plan_id': rng.choice(sorted(plans)) if rng.random() < 0.85 else None, 'oop_spent_ytd': 0.0}
    med_ids, pat_ids = sorted(medications), sorted(patients)
    authorised = [k for k, d in prescribers.items() if d['controlled_authority']]
    rx_drafts, taken = [], {p: [] for p in pat_ids}
    while len(rx_drafts) < 210:
        pid, mid = rng.choice(pat_ids), rng.choice(med_ids)
        med = medications[mid]
        cls, controlled, antibiotic = med['drug_class'], med['controlled'], CLASSES[med['drug_class']][5]
        others = [medications[m]['drug_class'] for m in taken[pid]]
        if cls in patients[pid]['allergies'] or mid in taken[pid] or any(frozenset((cls, o)) in major for o in others): continue
        taken[pid].append(mid)
        if antibiotic: days, refills, per_day = rng.choice([7, 10]), 0, rng.choice([2, 3])
        elif controlled: days, refills, per_day = rng.choice([14, 30]), 0, rng.choice([1, 2])
        else: days, refills, per_day = rng.choice([30, 30, 30, 90]), rng.choice([0, 1, 2, 3, 5, 5]), rng.choice([1, 1, 2])
        written = TODAY - dt.timedelta(days=rng.randint(0, 40 if controlled or antibiotic else 240))
        status = 'cancelled' if rng.random() < 0.05 else 'on_hold' if rng.random() < 0.03 else 'active'
        rx_drafts.append({'patient_id': pid, 'medication_id': mid, 'prescriber_id': rng.choice(authorised if controlled else sorted(prescribers)),
                          'quantity': days * per_day, 'days_supply': days, 'fills_allowed': refills + 1, 'fills_used': 0,
                          'written_on': written.isoformat(), 'expires_on': (written + dt.timedelta(days=180 if controlled else 365)).isoformat(),
                          'last_filled_on': None, 'status': status, 'hold_reason': rng.choice(HOLD_REASONS) if status == 'on_hold' else None})
    prescriptions = {f'RX{i:05d}': r for i, r in enumerate(sorted(rx_drafts, key=lambda r: (r['written_on'], r['patient_id'], r['medication_id'])), 1)}
    events = []
    for k, r in prescriptions.items():
        controlled = medications[r['medication_id']]['controlled']
        day, n = dt.date.fromisoformat(r['written_on']) + dt.timedelta(days=rng.randint(0, 2)), 0
        while n < r['fills_allowed'] and day <= TODAY and day.isoformat() <= r['expires_on']:
            events.append((day.isoformat(), k, n)); n += 1
            day += dt.timedelta(days=max(wait_days(r['days_supply'], controlled), r['days_supply'] + rng.randint(-4, 8)))
            if rng.random() < 0.12: break
    last_fill = {}
    for day, k, n in events: last_fill[k] = max(last_fill.get(k, ''), day)
    oop, dispensings = {}, {}
    for i, (day, k, n) in enumerate(sorted(events), 1):
        r = prescriptions[k]; p = patients[r['patient_id']]; med = medications[r['medication_id']]
        age = (TODAY - dt.date.fromisoformat(day)).days
        if day == last_fill[k] and age <= 9 and rng.random() < 0.5: status = 'ready'
        elif age > 14 and day != last_fill[k] and rng.random() < 0.03: status = 'returned_to_stock'
        else: status = 'picked_up'
        retail = round(med['unit_price'] * r['quantity'], 2)
        spent = oop.get((r['patient_id'], day[:4]), 0.0)
        if p['plan_id'] is None: pay = retail
        else:
            plan = plans[p['plan_id']]
            pay = round(min(plan['copay_generic'] if med['generic'] else plan['copay_brand'], retail, max(0.0, plan['oop_max'] - spent)), 2)
            if status != 'returned_to_stock': oop[(r['patient_id'], day[:4])] = round(spent + pay, 2)
        picked = min(TODAY, dt.date.fromisoformat(day) + dt.timedelta(days=rng.randint(0, 3))).isoformat() if status == 'picked_up' else None
        dispensings[f'D{i:05d}'] = {'prescription_id': k, 'patient_id': r['patient_id'], 'medication_id': r['medication_id'], 'quantity': r['quantity'],
                                    'filled_on': day, 'plan_id': p['plan_id'], 'retail_price': retail, 'patient_pay': pay,
                                    'plan_pay': round(retail - pay, 2), 'status': status, 'picked_up_on': picked}
        if status != 'returned_to_stock':
            r['fills_used'] += 1; r['last_filled_on'] = max(r['last_filled_on'] or '', day)
    for (pid, year), spent in oop.items():
        if year == str(TODAY.year): patients[pid]['oop_spent_ytd'] = spent
    return {'plans': plans, 'prescribers': prescribers, 'patients': patients, 'medications': medications, 'interactions': interactions,
            'prescriptions': prescriptions, 'dispensings': dispensings}


def live(rx: dict) -> bool: return rx['status'] == 'active' and rx['expires_on'] >= TODAY.isoformat()


def blocked(state: dict, rx_id: str) -> bool:
    "Whether an allergy or a major interaction with another live prescription blocks filling `rx_id`."
    rx, meds = state['prescriptions'][rx_id], state['medications']
    cls = meds[rx['medication_id']]['drug_class']
    major = {frozenset((x['class_a'], x['class_b'])) for x in state['interactions'].values() if x['severity'] == 'major'}
    others = [meds[r['medication_id']]['drug_class'] for k, r in state['prescriptions'].items()
              if k != rx_id and r['patient_id'] == rx['patient_id'] and live(r) and r['medication_id'] != rx['medication_id']]
    return cls in state['patients'][rx['patient_id']]['allergies'] or any(frozenset((cls, o)) in major for o in others)


def refillable(state: dict, rx_id: str) -> bool:
    "Whether `rx_id` passes every check of fill_prescription except stock."
    rx, med = state['prescriptions'][rx_id], state['medications'][state['prescriptions'][rx_id]['medication_id']]
    soon = rx['last_filled_on'] and (TODAY - dt.date.fromisoformat(rx['last_filled_on'])).days < wait_days(rx['days_supply'], med['controlled'])
    return live(rx) and rx['fills_used'] < rx['fills_allowed'] and not soon and not blocked(state, rx_id)


def tasks(state: dict) -> list[Task]:
    patients, meds, rxs, disp, prescribers = (state[k] for k in ('patients', 'medications', 'prescriptions', 'dispensings', 'prescribers'))
    who = lambda pid: f"{patients[pid]['first_name']} {patients[pid]['last_name']}, born {patients[pid]['date_of_birth']}"
    find = lambda pid: Action(name='find_patient', arguments={'last_name': patients[pid]['last_name'], 'date_of_birth': patients[pid]['date_of_birth']})
    mname = lambda mid: f"{meds[mid]['name']} {meds[mid]['strength']}"
    cands = [k for k in sorted(rxs) if refillable(state, k) and rxs[k]['fills_used'] > 0]

    # a plain refill of an insured patient's maintenance drug
    refill = next(k for k in cands if meds[rxs[k]['medication_id']]['stock_units'] >= rxs[k]['quantity'] and patients[rxs[k]['patient_id']]['plan_id'])
    rp = rxs[refill]['patient_id']
    # a refill that needs the delivery booked in first
    short = next(k for k in cands if meds[rxs[k]['medication_id']]['stock_units'] < rxs[k]['quantity'] and rxs[k]['patient_id'] != rp)
    sm = rxs[short]['medication_id']
    # a fill waiting at the counter, controlled if there is one
    ready = sorted((k for k, d in disp.items() if d['status'] == 'ready'), key=lambda k: (not meds[disp[k]['medication_id']]['controlled'], k))
    pickup = ready[0]
    unclaimed = next(k for k in ready if not meds[disp[k]['medication_id']]['controlled'] and disp[k]['patient_id'] != disp[pickup]['patient_id'])
    up = disp[unclaimed]['patient_id']
    # a new prescription: a generic, in-stock drug with no interaction for an insured patient without allergies
    np = next(k for k, p in sorted(patients.items()) if not p['allergies'] and p['plan_id'] and k not in (rp, up)
              and sum(1 for r in rxs.values() if r['patient_id'] == k and live(r)) >= 1)
    np_classes = {meds[r['medication_id']]['drug_class'] for r in rxs.values() if r['patient_id'] == np and live(r)}
    ix = state['interactions'].values()
    paired = {x['class_b'] for x in ix if x['class_a'] in np_classes} | {x['class_a'] for x in ix if x['class_b'] in np_classes}
    nm = next(k for k, m in sorted(meds.items()) if m['drug_class'] == 'antihistamine' and m['generic'] and m['stock_units'] >= 30
              and m['drug_class'] not in paired and m['drug_class'] not in np_classes)
    doc = next(k for k in sorted(prescribers))
    new_rx = f'RX{len(rxs) + 1:05d}'
    # a newly reported allergy that puts a live prescription on hold
    al_rx = next(k for k in sorted(rxs) if live(rxs[k]) and meds[rxs[k]['medication_id']]['drug_class'] == 'nsaid' and rxs[k]['patient_id'] not in (rp, up, np))
    ap = rxs[al_rx]['patient_id']
    # read-only: refills left
    ro = next(k for k in sorted(rxs) if live(rxs[k]) and rxs[k]['fills_allowed'] > 2 and rxs[k]['fills_used'] >= 1 and rxs[k]['patient_id'] not in (rp, up, np, ap))
    op = rxs[ro]['patient_id']
    return [
        Task(id='pharmacy-refill', env_id='pharmacy',
             instruction=f"Hi, this is {who(rp)}. Could you refill my {mname(rxs[refill]['medication_id'])}? And what will I pay?",
             gold_actions=[find(rp), Action(name='get_patient_profile', arguments={'patient_id': rp}),
                           Action(name='fill_prescription', arguments={'prescription_id': refill})],
             user_context={'name': who(rp), 'medication': mname(rxs[refill]['medication_id'])}),
        Task(id='pharmacy-restock-then-fill', env_id='pharmacy',
             instruction=(f"The wholesaler just delivered 500 units of {mname(sm)} ({sm}). Book the delivery into stock, then fill "
                          f"prescription {short} for {who(rxs[short]['patient_id'])}, which was waiting on it."),
             gold_actions=[Action(name='receive_stock_delivery', arguments={'medication_id': sm, 'units': 500}),
                           Action(name='fill_prescription', arguments={'prescription_id': short})],
             user_context={'medication_id': sm, 'units': 500, 'prescription_id': short}),
        Task(id='pharmacy-pickup', env_id='pharmacy',
             instruction=(f"I'm {who(disp[pickup]['patient_id'])}, here to collect my {meds[disp[pickup]['medication_id']]['name']}. "
                          f"Here's my driver's licence if you need it."),
             gold_actions=[find(disp[pickup]['patient_id']), Action(name='get_patient_profile', arguments={'patient_id': disp[pickup]['patient_id']}),
                           Action(name='record_pickup', arguments={'dispensing_id': pickup, 'id_checked': True})],
             user_context={'name': who(disp[pickup]['patient_id']), 'shows_photo_id': True}),
        Task(id='pharmacy-return-unclaimed', env_id='pharmacy',
             instruction=(f"This is {who(up)}. I won't be picking up the {meds[disp[unclaimed]['medication_id']]['name']} you filled for me; "
                          f"please put it back and don't charge me."),
             gold_actions=[find(up), Action(name='get_patient_profile', arguments={'patient_id': up}),
                           Action(name='return_unclaimed_fill', arguments={'dispensing_id': unclaimed})],
             user_context={'name': who(up), 'medication': meds[disp[unclaimed]['medication_id']]['name']}),
        Task(id='pharmacy-new-prescription', env_id='pharmacy',
             instruction=(f"{prescribers[doc]['name']} (licence {doc}) phoned in a prescription for {who(np)}: {mname(nm)}, "
                          f"quantity 30, 30 days' supply, 2 refills. Check it is safe with their other medicines, enter it and fill it now."),
             gold_actions=[find(np), Action(name='search_formulary', arguments={'query': meds[nm]['name']}),
                           Action(name='check_drug_interactions', arguments={'patient_id': np, 'medication_id': nm}),
                           Action(name='enter_new_prescription', arguments={'patient_id': np, 'medication_id': nm, 'prescriber_id': doc,
                                                                            'quantity': 30, 'days_supply': 30, 'refills': 2}),
                           Action(name='fill_prescription', arguments={'prescription_id': new_rx})],
             user_context={'prescriber_id': doc, 'patient': who(np), 'medication': mname(nm), 'quantity': 30, 'days_supply': 30, 'refills': 2}),
        Task(id='pharmacy-new-allergy', env_id='pharmacy',
             instruction=(f"I'm {who(ap)}. My doctor says I had a reaction to NSAIDs. Please add that allergy to my record."),
             gold_actions=[find(ap), Action(name='record_allergy', arguments={'patient_id': ap, 'drug_class': 'nsaid'})],
             user_context={'name': who(ap), 'allergy': 'nsaid'}),
        Task(id='pharmacy-refills-left', env_id='pharmacy',
             instruction=(f"This is {who(op)}. How many refills are left on my {mname(rxs[ro]['medication_id'])}, and when is the earliest "
                          f"I can get the next one? Don't fill anything yet."),
             gold_actions=[find(op), Action(name='get_patient_profile', arguments={'patient_id': op})],
             user_context={'name': who(op)}),
    ]


def tool_tests(state: dict) -> list[ToolTest]:
    patients, meds, rxs, disp, prescribers = (state[k] for k in ('patients', 'medications', 'prescriptions', 'dispensings', 'prescribers'))
    soon = next(k for k in sorted(rxs) if live(rxs[k]) and rxs[k]['last_filled_on'] == max(r['last_filled_on'] or '' for r in rxs.values()))
    used_up = next(k for k in sorted(rxs) if live(rxs[k]) and rxs[k]['fills_used'] >= rxs[k]['fills_allowed'])
    picked = next(k for k in sorted(disp) if disp[k]['status'] == 'picked_up')
    controlled = next(k for k, m in sorted(meds.items()) if m['controlled'])
    doc = next(k for k, d in sorted(prescribers.items()) if d['controlled_authority'])
    nodoc = next(k for k, d in sorted(prescribers.items()) if not d['controlled_authority'])
    pid = next(k for k, p in sorted(patients.items()) if not p['allergies'])
    warfarin_like = next(k for k, m in sorted(meds.items()) if m['drug_class'] == 'anticoagulant')
    nsaid = next(k for k, m in sorted(meds.items()) if m['drug_class'] == 'nsaid' and m['stock_units'] > 100)
    rx = lambda mid, n: {'patient_id': pid, 'medication_id': mid, 'prescriber_id': doc, 'quantity': 30, 'days_supply': 30, 'fills_allowed': n,
                         'fills_used': 0, 'written_on': '2026-03-01', 'expires_on': '2027-03-01', 'last_filled_on': None, 'status': 'active', 'hold_reason': None}
    empty_med = next(k for k, m in sorted(meds.items()) if m['stock_units'] == 0)
    statin = max(k for k, m in meds.items() if m['drug_class'] == 'statin')
    ace = min(k for k, m in meds.items() if m['drug_class'] == 'ace_inhibitor')
    on_two = {'prescriptions': {'RX90001': rx(statin, 3), 'RX90002': rx(ace, 3)}}
    ready = [k for k in sorted(disp) if disp[k]['status'] == 'ready']
    copay_fill = next(k for k in ready if disp[k]['plan_id'] and disp[k]['patient_pay'] > 0)
    clash = {'prescriptions': {'RX90001': rx(warfarin_like, 3), 'RX90002': rx(nsaid, 1)}}
    ready_c = {'dispensings': {'D90001': {'prescription_id': 'RX90001', 'patient_id': pid, 'medication_id': controlled, 'quantity': 30, 'filled_on': '2026-03-15',
                                          'plan_id': None, 'retail_price': 30.0, 'patient_pay': 30.0, 'plan_pay': 0.0, 'status': 'ready', 'picked_up_on': None}},
               'prescriptions': {'RX90001': {**rx(controlled, 1), 'fills_used': 1, 'last_filled_on': '2026-03-15'}}}
    return [
        ToolTest(name='unknown patient', calls=[ToolTestCall(name='get_patient_profile', arguments={'patient_id': 'P99999'}, expect='execution_error')]),
        ToolTest(name='no such patient by name', calls=[ToolTestCall(name='find_patient', arguments={'last_name': 'Nobody', 'date_of_birth': '1990-01-01'}, expect='execution_error')]),
        ToolTest(name='too soon to refill', calls=[ToolTestCall(name='fill_prescription', arguments={'prescription_id': soon}, expect='execution_error')]),
        ToolTest(name='no refills left', calls=[ToolTestCall(name='fill_prescription', arguments={'prescription_id': used_up}, expect='execution_error')]),
        ToolTest(name='major interaction blocks the fill', initial_state=clash,
                 calls=[ToolTestCall(name='check_drug_interactions', arguments={'patient_id': pid, 'medication_id': nsaid}),
                        ToolTestCall(name='fill_prescription', arguments={'prescription_id': 'RX90002'}, expect='execution_error')]),
        ToolTest(name='controlled pickup needs ID', initial_state=ready_c,
                 calls=[ToolTestCall(name='record_pickup', arguments={'dispensing_id': 'D90001'}, expect='execution_error'),
                        ToolTestCall(name='record_pickup', arguments={'dispensing_id': 'D90001', 'id_checked': True}),
                        ToolTestCall(name='return_unclaimed_fill', arguments={'dispensing_id': 'D90001'}, expect='execution_error')]),
        ToolTest(name='picked-up fill cannot be returned', calls=[ToolTestCall(name='return_unclaimed_fill', arguments={'dispensing_id': picked}, expect='execution_error')]),
        ToolTest(name='controlled substances have no refills', calls=[ToolTestCall(name='enter_new_prescription', arguments={'patient_id': pid, 'medication_id': controlled, 'prescriber_id': doc, 'quantity': 30, 'days_supply': 30, 'refills': 1}, expect='execution_error')]),
        ToolTest(name='controlled needs authority', calls=[ToolTestCall(name='enter_new_prescription', arguments={'patient_id': pid, 'medication_id': controlled, 'prescriber_id': nodoc, 'quantity': 30, 'days_supply': 30, 'refills': 0}, expect='execution_error')]),
        ToolTest(name='unknown drug class', calls=[ToolTestCall(name='record_allergy', arguments={'patient_id': pid, 'drug_class': 'peanuts'}, expect='execution_error')]),
        ToolTest(name='empty delivery', calls=[ToolTestCall(name='receive_stock_delivery', arguments={'medication_id': nsaid, 'units': 0}, expect='execution_error')]),
        ToolTest(name='wrong argument type', calls=[ToolTestCall(name='receive_stock_delivery', arguments={'medication_id': nsaid, 'units': 'a box'}, expect='invalid_arguments')]),
        ToolTest(name='formulary by class', calls=[ToolTestCall(name='search_formulary', arguments={'query': '', 'drug_class': 'statin', 'in_stock_only': True, 'limit': 3})]),
        ToolTest(name='formulary by another class, and a name with no stock left', calls=[
            ToolTestCall(name='search_formulary', arguments={'query': '', 'drug_class': 'ssri'}),
            ToolTestCall(name='search_formulary', arguments={'query': meds[empty_med]['name']}),
            ToolTestCall(name='search_formulary', arguments={'query': meds[empty_med]['name'], 'in_stock_only': True})]),
        ToolTest(name='interaction checks: a statin, and an unknown patient', calls=[
            ToolTestCall(name='check_drug_interactions', arguments={'patient_id': pid, 'medication_id': statin}),
            ToolTestCall(name='check_drug_interactions', arguments={'patient_id': 'P99999', 'medication_id': statin}, expect='execution_error')]),
        ToolTest(name='prescriptions for an unknown patient or medication', calls=[
            ToolTestCall(name='enter_new_prescription', arguments={'patient_id': 'P99999', 'medication_id': statin, 'prescriber_id': doc, 'quantity': 30,
                                                                   'days_supply': 30, 'refills': 1}, expect='execution_error'),
            ToolTestCall(name='enter_new_prescription', arguments={'patient_id': pid, 'medication_id': 'MED9999', 'prescriber_id': doc, 'quantity': 30,
                                                                   'days_supply': 30, 'refills': 1}, expect='execution_error')]),
        ToolTest(name='every ready fill picked up without an ID check: only the controlled ones wait',
                 calls=[ToolTestCall(name='record_pickup', arguments={'dispensing_id': k}, expect='execution_error' if meds[disp[k]['medication_id']]['controlled'] else 'ok')
                        for k in ready]),
        ToolTest(name='an unclaimed fill under a plan goes back: stock, refill and co-pay restored',
                 calls=[ToolTestCall(name='return_unclaimed_fill', arguments={'dispensing_id': copay_fill})]),
        ToolTest(name="an allergy holds only that class's prescriptions", initial_state=on_two,
                 calls=[ToolTestCall(name='record_allergy', arguments={'patient_id': pid, 'drug_class': 'statin'})]),
    ]


def build(folder: Path = HERE):
    state = seed_state(random.Random(20260316))
    return write_environment(
        folder, 'pharmacy', (HERE / 'tools.py').read_text(), 'PharmacyTools', state, tasks(state), tool_tests(state),
        description='A community pharmacy: patient profiles, formulary and stock, prescriptions with refills, fills with insurance co-pays, pickups and interaction checks.',
        policy=('You are the pharmacy counter assistant. Identify the patient by last name and date of birth before discussing or changing '
                'their record. Never fill a prescription that is too soon, expired, out of refills, on hold, or blocked by an allergy or a major '
                'interaction; tell the patient to contact their prescriber instead. Mention moderate interaction warnings. Controlled '
                'substances are handed over only after checking photo ID. Tell the patient their co-pay when you fill.'),
        clock_start=CLOCK_START, provenance={'author': 'hand-written', 'seed': 20260316}, trusted=True)


if __name__ == '__main__':
    env = build()
    print(env, {t: n for t, n in env.metadata['tables'].items()})
