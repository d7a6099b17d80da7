"""Build the `hotel` environment folder: a seeded front-desk state, tasks with gold actions, tool tests.

Run `python environments/hotel/build.py` after changing anything here or in tools.py; it rewrites the
derived files (tools.json, db_schema.json, env.json, seed_state.json, tasks.jsonl, tests.json) and fills in
the gold hashes. The output is byte-identical from run to run.
"""
import datetime as dt
import random
from pathlib import Path

from envsynth.envs import ToolTest, ToolTestCall, write_environment
from envsynth.schema import Action, Task

HERE = Path(__file__).parent
CLOCK_START = '2026-03-02T11:00:00+00:00'
TODAY = dt.date(2026, 3, 2)

FIRST = ['Anselm', 'Berit', 'Caspian', 'Dagny', 'Evander', 'Fiorella', 'Gunnar', 'Hesper', 'Ignatius', 'Jolene', 'Kasimir', 'Lorelei',
         'Magnus', 'Noor', 'Octavia', 'Peregrine', 'Rosalind', 'Soren', 'Tamsin', 'Ulric', 'Verity', 'Wynn', 'Xavi', 'Ysolde', 'Zephyr']
LAST = ['Abernethy', 'Blackwood', 'Crane', 'Devereux', 'Elsworth', 'Foxley', 'Gilchrist', 'Holloway', 'Inglis', 'Jarrow', 'Kingsley',
        'Larkin', 'Mallory', 'Nettleton', 'Ormsby', 'Penhallow', 'Rookwood', 'Stainforth', 'Tregarth', 'Upwood', 'Vickery', 'Wyndham']
CITIES = ['Port Averly', 'Lindenford', 'Calder Bay', 'Marrowick', 'Stonemere', 'Eastbridge']
# name, beds, max guests, typical base rate
TYPES = [('Standard Double', '1 double', 2, 95), ('Twin', '2 singles', 2, 99), ('Deluxe King', '1 king', 2, 135),
         ('Family Room', '1 king + 2 singles', 4, 165), ('Junior Suite', '1 king + sofa bed', 3, 210), ('Accessible Double', '1 double, step-free', 2, 95)]
EXTRAS = {'breakfast': 18.5, 'parking': 22.0, 'minibar': 6.0, 'spa': 45.0, 'laundry': 12.0, 'late_checkout': 30.0}
TIER_DISCOUNT = {'none': 0.0, 'silver': 0.05, 'gold': 0.10}


def rate(base: float, night: dt.date, plan: str, tier: str) -> float:
    "Same pricing as tools.nightly_rate."
    r = base * (1.2 if night.weekday() in (4, 5) else 1.0)
    return round(r * (0.9 if plan == 'nonrefundable' else 1.0) * (1 - TIER_DISCOUNT[tier]), 2)


def nights(a: dt.date, d: dt.date) -> list[dt.date]: return [a + dt.timedelta(days=i) for i in range((d - a).days)]


def free_rooms(state: dict, type_id: str, a: dt.date, d: dt.date, statuses=('confirmed', 'checked_in')) -> int:
    rooms = sum(1 for r in state['rooms'].values() if r['room_type_id'] == type_id and r['status'] != 'out_of_service')
    return rooms - max(sum(1 for b in state['bookings'].values() if b['room_type_id'] == type_id and b['status'] in statuses
                           and b['arrival'] <= n.isoformat() < b['departure']) for n in nights(a, d))


def seed_state(rng: random.Random) -> dict:
    state = {t: {} for t in ('properties', 'room_types', 'rooms', 'guests', 'bookings', 'charges', 'invoices')}
    props, types, rooms, guests, bookings, charges, invoices = state.values()
    for i, city in enumerate(CITIES, 1):
        pid = f'P{i:02d}'
        props[pid] = {'name': f'Lanternhouse {city}', 'city': city, 'phone': f'+99 {rng.randint(100, 999)} 555 0{i:02d}{rng.randint(0, 9)}',
                      'city_tax': rng.choice([1.5, 2.0, 2.5, 3.0, 3.5])}
        chosen = [TYPES[0]] + sorted(rng.sample(TYPES[1:], 3), key=TYPES.index)
        tids = []
        for name, beds, cap, base in chosen:
            tid = f'T{len(types) + 1:02d}'
            types[tid] = {'property_id': pid, 'name': name, 'beds': beds, 'max_guests': cap, 'base_rate': float(round(base * rng.uniform(0.85, 1.25)))}
            tids.append(tid)
        for floor in range(1, rng.randint(3, 4) + 1):
            for n in range(1, rng.randint(9, 12) + 1):
                number = f'{floor}{n:02d}'
                r = rng.random()
                rooms[f'{pid}-{number}'] = {'property_id': pid, 'room_type_id': rng.choices(tids, weights=[4, 2, 2, 1])[0], 'number': number, 'floor': floor,
                                            'status': 'out_of_service' if r < 0.04 else 'dirty' if r < 0.18 else 'clean'}
    for i in range(1, 171):
        first, last = rng.choice(FIRST), rng.choice(LAST)
        tier = rng.choice(['none'] * 6 + ['silver'] * 3 + ['gold'])
        points = {'none': rng.randint(0, 1499), 'silver': rng.randint(1500, 4999), 'gold': rng.randint(5000, 12000)}[tier]
        guests[f'G{i:05d}'] = {'name': f'{first} {last}', 'email': f'{first.lower()}.{last.lower()}{i}@guestmail.example',
                               'phone': f'+99 7{rng.randint(100, 999)} {rng.randint(100000, 999999)}', 'loyalty_tier': tier,
                               'loyalty_points': points, 'blocked': rng.random() < 0.03}
    guest_ids, type_ids = sorted(guests), sorted(types)
    for _ in range(900):
        if len(bookings) >= 380: break
        tid = rng.choice(type_ids)
        t, gid = types[tid], rng.choice(guest_ids)
        a = TODAY + dt.timedelta(days=rng.randint(-20, 30))
        d = a + dt.timedelta(days=rng.choice([1, 1, 2, 2, 3, 3, 4, 5, 7]))
        plan, r = rng.choice(['flexible'] * 3 + ['nonrefundable']), rng.random()
        if d < TODAY or (d == TODAY and r < 0.5): status = 'checked_out' if r < 0.85 else 'cancelled' if r < 0.93 else 'no_show'
        elif a < TODAY or (a == TODAY and d == TODAY): status = 'checked_in'
        else: status = 'confirmed' if r < 0.9 else 'cancelled'
        if status != 'cancelled' and free_rooms(state, tid, a, d, ('confirmed', 'checked_in', 'checked_out', 'no_show')) <= 0: continue
        if any(b['guest_id'] == gid and b['property_id'] == t['property_id'] and b['status'] != 'cancelled' and b['arrival'] < d.isoformat() and a.isoformat() < b['departure']
               for b in bookings.values()): continue
        room_id = None
        if status == 'checked_in':
            room_id = next((k for k, rm in sorted(rooms.items()) if rm['room_type_id'] == tid and rm['status'] == 'clean'), None)
            if room_id is None: continue
            rooms[room_id]['status'] = 'occupied'
        bid = f'B{len(bookings) + 1:05d}'
        tier = guests[gid]['loyalty_tier']
        bookings[bid] = {'guest_id': gid, 'property_id': t['property_id'], 'room_type_id': tid, 'room_id': room_id, 'arrival': a.isoformat(),
                         'departure': d.isoformat(), 'adults': rng.randint(1, t['max_guests']), 'rate_plan': plan,
                         'nightly_rates': [rate(t['base_rate'], n, plan, tier) for n in nights(a, d)], 'status': status,
                         'booked_on': min(TODAY, a - dt.timedelta(days=rng.randint(1, 60))).isoformat()}
    for bid, b in bookings.items():
        a, d = dt.date.fromisoformat(b['arrival']), dt.date.fromisoformat(b['departure'])
        if b['status'] in ('checked_in', 'checked_out'):
            for item in sorted(rng.sample(sorted(EXTRAS), rng.choice([0, 0, 1, 1, 2, 3]))):
                qty = 1 if item in ('late_checkout', 'spa') else b['adults'] if item == 'breakfast' else rng.randint(1, 3)
                posted = min(TODAY, a + dt.timedelta(days=rng.randint(0, (d - a).days)))
                charges[f'C{len(charges) + 1:05d}'] = {'booking_id': bid, 'item': item, 'quantity': qty, 'unit_price': EXTRAS[item],
                                                       'amount': round(EXTRAS[item] * qty, 2), 'posted_on': posted.isoformat()}
        elif b['status'] in ('cancelled', 'no_show') and (b['rate_plan'] == 'nonrefundable' or b['status'] == 'no_show' or rng.random() < 0.3):
            fee = round(sum(b['nightly_rates']), 2) if b['rate_plan'] == 'nonrefundable' else b['nightly_rates'][0]
            charges[f'C{len(charges) + 1:05d}'] = {'booking_id': bid, 'item': 'cancellation_fee', 'quantity': 1, 'unit_price': fee, 'amount': fee,
                                                   'posted_on': min(TODAY, a).isoformat()}
        if b['status'] == 'checked_out':
            room_total = round(sum(b['nightly_rates']), 2)
            extras = round(sum((c['amount'] for c in charges.values() if c['booking_id'] == bid), 0.0), 2)
            tax = round(props[b['property_id']]['city_tax'] * b['adults'] * len(b['nightly_rates']), 2)
            invoices[f'I{len(invoices) + 1:05d}'] = {'booking_id': bid, 'guest_id': b['guest_id'], 'issued_on': b['departure'], 'room_total': room_total,
                                                     'extras_total': extras, 'city_tax': tax, 'total': round(room_total + extras + tax, 2),
                                                     'payment_method': rng.choice(['card', 'card', 'card', 'cash', 'company_account'])}
    return state


def tasks(state: dict) -> list[Task]:
    props, types, rooms, guests, bookings = (state[k] for k in ('properties', 'room_types', 'rooms', 'guests', 'bookings'))
    T = TODAY.isoformat()
    def day(n): return (TODAY + dt.timedelta(days=n)).isoformat()
    def clean_rooms(tid): return [k for k, r in sorted(rooms.items(), key=lambda kv: kv[1]['number']) if r['room_type_id'] == tid and r['status'] == 'clean']
    used = set()
    def pick(pred, items):
        k = next(k for k, v in items if pred(k, v) and k not in used)
        used.add(k); return k

    deluxe = next(k for k, t in sorted(types.items()) if t['name'] == 'Deluxe King')
    qp = types[deluxe]['property_id']
    g_new = pick(lambda k, g: g['loyalty_tier'] == 'silver' and not g['blocked'], sorted(guests.items()))
    std = next(k for k, t in sorted(types.items()) if t['name'] == 'Standard Double' and free_rooms(state, k, TODAY + dt.timedelta(days=14), TODAY + dt.timedelta(days=17)) > 0
               and not any(b['guest_id'] == g_new and b['property_id'] == t['property_id'] for b in bookings.values()))
    sp = types[std]['property_id']
    arrive = pick(lambda k, b: b['status'] == 'confirmed' and b['arrival'] == T and clean_rooms(b['room_type_id']), sorted(bookings.items()))
    leaving = pick(lambda k, b: b['status'] == 'checked_in' and b['departure'] == T, sorted(bookings.items()))
    cancel = pick(lambda k, b: b['status'] == 'confirmed' and b['rate_plan'] == 'flexible' and b['arrival'] >= day(5), sorted(bookings.items()))
    def movable(k, b): return b['status'] == 'checked_in' and any(rooms[r]['floor'] != rooms[b['room_id']]['floor'] for r in clean_rooms(b['room_type_id']))
    move = pick(movable, sorted(bookings.items()))
    move_to = next(r for r in clean_rooms(bookings[move]['room_type_id']) if rooms[r]['floor'] != rooms[bookings[move]['room_id']]['floor'])
    def shiftable(k, b):
        if not (b['status'] == 'confirmed' and b['rate_plan'] == 'flexible' and b['arrival'] >= day(3)): return False
        a2, d2 = dt.date.fromisoformat(b['arrival']) + dt.timedelta(days=7), dt.date.fromisoformat(b['departure']) + dt.timedelta(days=7)
        return free_rooms(state, b['room_type_id'], a2, d2) > 0 and not any(o['guest_id'] == b['guest_id'] and o['property_id'] == b['property_id'] and o['status'] in ('confirmed', 'checked_in')
                                                                               and o['arrival'] < d2.isoformat() and a2.isoformat() < o['departure'] for kk, o in bookings.items() if kk != k)
    shift = pick(shiftable, sorted(bookings.items()))
    sb = bookings[shift]
    s_arr = (dt.date.fromisoformat(sb['arrival']) + dt.timedelta(days=7)).isoformat()
    s_dep = (dt.date.fromisoformat(sb['departure']) + dt.timedelta(days=7)).isoformat()
    gn, ga, gl, gc, gm, gs = (guests[x] for x in (g_new, bookings[arrive]['guest_id'], bookings[leaving]['guest_id'], bookings[cancel]['guest_id'],
                                                   bookings[move]['guest_id'], sb['guest_id']))
    return [
        Task(id='hotel-quote', env_id='hotel',
             instruction=f"What would a Deluxe King at {props[qp]['name']} cost for two adults from {day(10)} to {day(13)}, and is one free? Just a quote, please don't book.",
             gold_actions=[Action(name='quote_stay', arguments={'property_id': qp, 'arrival': day(10), 'departure': day(13), 'adults': 2})],
             user_context={'property': props[qp]['name'], 'arrival': day(10), 'departure': day(13), 'adults': 2}),
        Task(id='hotel-new-booking', env_id='hotel',
             instruction=f"Hi, I'm {gn['name']} ({gn['email']}). I'd like a Standard Double at {props[sp]['name']} for two adults, arriving {day(14)} and leaving {day(17)}, on the flexible rate with my member discount.",
             gold_actions=[Action(name='find_guest_profile', arguments={'query': gn['email']}),
                           Action(name='quote_stay', arguments={'property_id': sp, 'arrival': day(14), 'departure': day(17), 'adults': 2, 'guest_id': g_new}),
                           Action(name='reserve_stay', arguments={'guest_id': g_new, 'property_id': sp, 'room_type_id': std, 'arrival': day(14), 'departure': day(17),
                                                                  'adults': 2, 'rate_plan': 'flexible'})],
             user_context={'email': gn['email'], 'guest_id': g_new}),
        Task(id='hotel-check-in', env_id='hotel',
             instruction=f"Good morning, {ga['name']} here, email {ga['email']}. I have a reservation arriving today at {props[bookings[arrive]['property_id']]['name']}; please check me in.",
             gold_actions=[Action(name='find_guest_profile', arguments={'query': ga['email']}),
                           Action(name='check_in_guest', arguments={'booking_id': arrive})],
             user_context={'email': ga['email'], 'booking_id': arrive}),
        Task(id='hotel-check-out-breakfast', env_id='hotel',
             instruction=f"I'm leaving today, booking {leaving}. We had two breakfasts this morning that aren't on the bill yet; add them and check me out. I'll pay by card.",
             gold_actions=[Action(name='get_booking_folio', arguments={'booking_id': leaving}),
                           Action(name='post_extra_charge', arguments={'booking_id': leaving, 'item': 'breakfast', 'quantity': 2}),
                           Action(name='check_out_guest', arguments={'booking_id': leaving, 'payment_method': 'card'})],
             user_context={'booking_id': leaving, 'name': gl['name'], 'payment_method': 'card'}),
        Task(id='hotel-cancel', env_id='hotel',
             instruction=f"This is {gc['name']} ({gc['email']}). Please cancel my stay at {props[bookings[cancel]['property_id']]['name']} arriving {bookings[cancel]['arrival']}. It's free to cancel, right?",
             gold_actions=[Action(name='find_guest_profile', arguments={'query': gc['email']}),
                           Action(name='cancel_guest_booking', arguments={'booking_id': cancel})],
             user_context={'email': gc['email'], 'booking_id': cancel}),
        Task(id='hotel-room-move', env_id='hotel',
             instruction=f"I'm {gm['name']}, booking {move}. My room is too noisy. Can you move me to a clean room of the same type on a different floor? The lowest room number you have is fine.",
             gold_actions=[Action(name='get_booking_folio', arguments={'booking_id': move}),
                           Action(name='move_guest_room', arguments={'booking_id': move, 'room_id': move_to})],
             user_context={'booking_id': move, 'name': gm['name']}),
        Task(id='hotel-shift-dates', env_id='hotel',
             instruction=f"Hello, {gs['name']} ({gs['email']}). My trip to {props[sb['property_id']]['city']} moved a week later. Cancel booking {shift} and book the same room type for {s_arr} to {s_dep} instead, same number of guests and rate plan.",
             gold_actions=[Action(name='find_guest_profile', arguments={'query': gs['email']}),
                           Action(name='cancel_guest_booking', arguments={'booking_id': shift}),
                           Action(name='quote_stay', arguments={'property_id': sb['property_id'], 'arrival': s_arr, 'departure': s_dep, 'adults': sb['adults'], 'guest_id': sb['guest_id']}),
                           Action(name='reserve_stay', arguments={'guest_id': sb['guest_id'], 'property_id': sb['property_id'], 'room_type_id': sb['room_type_id'],
                                                                  'arrival': s_arr, 'departure': s_dep, 'adults': sb['adults'], 'rate_plan': 'flexible'})],
             user_context={'email': gs['email'], 'booking_id': shift}),
    ]


def tool_tests(state: dict) -> list[ToolTest]:
    types, rooms, guests, bookings = state['room_types'], state['rooms'], state['guests'], state['bookings']
    T = TODAY.isoformat()
    blocked = next(k for k, g in sorted(guests.items()) if g['blocked'])
    ok_guest = next(k for k, g in sorted(guests.items()) if not g['blocked'])
    small = next(k for k, t in sorted(types.items()) if t['max_guests'] == 2)
    sp = types[small]['property_id']
    future = next(k for k, b in sorted(bookings.items()) if b['status'] == 'confirmed' and b['arrival'] > T)
    done = next(k for k, b in sorted(bookings.items()) if b['status'] == 'checked_out')
    cancelled = next(k for k, b in sorted(bookings.items()) if b['status'] == 'cancelled')
    late = next(k for k, b in sorted(bookings.items()) if b['status'] == 'confirmed' and b['rate_plan'] == 'flexible' and b['arrival'] <= (TODAY + dt.timedelta(days=1)).isoformat())
    staying = next(k for k, b in sorted(bookings.items()) if b['status'] == 'checked_in' and not any(c['booking_id'] == k and c['item'] == 'late_checkout' for c in state['charges'].values()))
    busy = next(k for k, r in sorted(rooms.items()) if r['status'] == 'occupied' and r['property_id'] == bookings[staying]['property_id'] and k != bookings[staying]['room_id'])
    tier_after = lambda pts: next((t for t, p in (('gold', 5000), ('silver', 1500)) if pts >= p), 'none')
    promoted = next(k for k, b in sorted(bookings.items()) if b['status'] == 'checked_in' and guests[b['guest_id']]['loyalty_tier']
                    != tier_after(guests[b['guest_id']]['loyalty_points'] + int(sum(b['nightly_rates']))))
    d1, d2 = (TODAY + dt.timedelta(days=20)).isoformat(), (TODAY + dt.timedelta(days=22)).isoformat()
    return [
        ToolTest(name='unknown booking', calls=[ToolTestCall(name='get_booking_folio', arguments={'booking_id': 'B99999'}, expect='execution_error')]),
        ToolTest(name='blocked guest cannot book', calls=[ToolTestCall(name='reserve_stay', arguments={'guest_id': blocked, 'property_id': sp, 'room_type_id': small,
                                                                                                       'arrival': d1, 'departure': d2, 'adults': 1}, expect='execution_error')]),
        ToolTest(name='party too big for room', calls=[ToolTestCall(name='reserve_stay', arguments={'guest_id': ok_guest, 'property_id': sp, 'room_type_id': small,
                                                                                                   'arrival': d1, 'departure': d2, 'adults': 3}, expect='execution_error')]),
        ToolTest(name='stay too long or in the past', calls=[ToolTestCall(name='quote_stay', arguments={'property_id': sp, 'arrival': d1, 'departure': '2026-05-30', 'adults': 2}, expect='execution_error'),
                                                             ToolTestCall(name='quote_stay', arguments={'property_id': sp, 'arrival': '2026-02-01', 'departure': '2026-02-03', 'adults': 2}, expect='execution_error'),
                                                             ToolTestCall(name='quote_stay', arguments={'property_id': sp, 'arrival': '3 April', 'departure': d2, 'adults': 2}, expect='execution_error')]),
        ToolTest(name='check-in before arrival day', calls=[ToolTestCall(name='check_in_guest', arguments={'booking_id': future}, expect='execution_error')]),
        ToolTest(name='no extras after check-out', calls=[ToolTestCall(name='post_extra_charge', arguments={'booking_id': done, 'item': 'minibar', 'quantity': 2}, expect='execution_error'),
                                                          ToolTestCall(name='check_out_guest', arguments={'booking_id': done, 'payment_method': 'cash'}, expect='execution_error')]),
        ToolTest(name='cancel twice', calls=[ToolTestCall(name='cancel_guest_booking', arguments={'booking_id': cancelled}, expect='execution_error')]),
        ToolTest(name='late cancellation costs a night', calls=[ToolTestCall(name='cancel_guest_booking', arguments={'booking_id': late},
                                                                             output={'booking_id': late, 'status': 'cancelled', 'cancellation_fee': bookings[late]['nightly_rates'][0]}),
                                                                ToolTestCall(name='cancel_guest_booking', arguments={'booking_id': late}, expect='execution_error')]),
        ToolTest(name='late check-out only once', calls=[ToolTestCall(name='post_extra_charge', arguments={'booking_id': staying, 'item': 'late_checkout'}),
                                                         ToolTestCall(name='post_extra_charge', arguments={'booking_id': staying, 'item': 'late_checkout'}, expect='execution_error')]),
        ToolTest(name='move into an occupied room', calls=[ToolTestCall(name='move_guest_room', arguments={'booking_id': staying, 'room_id': busy}, expect='execution_error')]),
        ToolTest(name='bad arguments', calls=[ToolTestCall(name='quote_stay', arguments={'property_id': sp, 'arrival': d1, 'departure': d2, 'adults': 'two'}, expect='invalid_arguments'),
                                              ToolTestCall(name='post_extra_charge', arguments={'booking_id': staying, 'item': 'champagne'}, expect='invalid_arguments')]),
        ToolTest(name='guest search by name', calls=[ToolTestCall(name='find_guest_profile', arguments={'query': guests[ok_guest]['name']})]),
        ToolTest(name='non-refundable quote and booking', calls=[
            ToolTestCall(name='quote_stay', arguments={'property_id': sp, 'arrival': d1, 'departure': d2, 'adults': 2, 'rate_plan': 'nonrefundable'}),
            ToolTestCall(name='reserve_stay', arguments={'guest_id': ok_guest, 'property_id': sp, 'room_type_id': small, 'arrival': d1, 'departure': d2,
                                                         'adults': 2, 'rate_plan': 'nonrefundable'})]),
        ToolTest(name='unknown hotel', calls=[ToolTestCall(name='quote_stay', arguments={'property_id': 'P99', 'arrival': d1, 'departure': d2, 'adults': 2},
                                                           expect='execution_error')]),
        ToolTest(name='a check-out that earns the next tier', calls=[ToolTestCall(name='check_out_guest', arguments={'booking_id': promoted, 'payment_method': 'card'})]),
    ]


def build(folder: Path = HERE):
    state = seed_state(random.Random(20260319))
    return write_environment(
        folder, 'hotel', (HERE / 'tools.py').read_text(), 'HotelTools', state, tasks(state), tool_tests(state),
        description='The front desk of the Lanternhouse hotel chain: quotes, bookings with nightly rates, cancellations, check-in and room moves, extras and check-out invoices.',
        policy=('You are the Lanternhouse front-desk assistant. Identify the guest (email, name or booking id) before changing a booking. '
                'Quote the price before booking and confirm the dates, room type, number of adults and rate plan with the guest. Flexible '
                'bookings cancel free until 2 days before arrival, then the first night is charged; non-refundable bookings are charged in '
                'full. Check-in is only on the arrival day. Tell the guest the invoice total at check-out.'),
        clock_start=CLOCK_START, provenance={'author': 'hand-written', 'seed': 20260319}, trusted=True)


if __name__ == '__main__':
    env = build()
    print(env, {t: n for t, n in env.metadata['tables'].items()})
