"""Build the `car_sharing` environment folder: a seeded seed state, tasks with gold actions, tool tests.

Run `python environments/car_sharing/build.py` after changing anything here or in tools.py; it rewrites the
derived files (tools.json, db_schema.json, env.json, seed_state.json, tasks.jsonl, tests.json) and fills in
the gold hashes. The output is byte-identical from run to run.
"""
import datetime as dt
import math
import random
from pathlib import Path

from envsynth.envs import ToolTest, ToolTestCall, write_environment
from envsynth.schema import Action, Task

HERE = Path(__file__).parent
CLOCK_START = '2026-03-02T10:00:00+00:00'
NOW = dt.datetime.fromisoformat(CLOCK_START)
TODAY = NOW.date()

FIRST = ['Alba', 'Bastien', 'Carys', 'Dario', 'Ebba', 'Fintan', 'Greta', 'Hamid', 'Ines', 'Jonah', 'Kaia', 'Lorcan', 'Maren', 'Nilo',
         'Odile', 'Pavel', 'Quinn', 'Rhea', 'Soren', 'Thea', 'Ugo', 'Vesna', 'Wilder', 'Xenia', 'Yusuf', 'Zora']
LAST = ['Achterberg', 'Brannock', 'Cazale', 'Delacroix-Ruiz', 'Ellwood', 'Ferrante', 'Gosling', 'Haverkamp', 'Iversen', 'Juhasz',
        'Kestrel', 'Lowther', 'Marchetti', 'Nordlund', 'Oyelaran', 'Pascoe', 'Quarles', 'Rademaker', 'Strand', 'Tembo', 'Uribe',
        'Voss', 'Whitlock', 'Yardley', 'Zamora']
# zone id -> (name, district, operating, drop-off surcharge)
ZONES = [('Brackwater Quay', 'Harbourside', True, 0.0), ('Millbrook', 'North', True, 0.0), ('Old Tannery', 'Centre', True, 0.0),
         ('Fennel Hill', 'North', True, 0.0), ('Station Square', 'Centre', True, 0.0), ('Larkspur Gardens', 'West', True, 0.0),
         ('Copperfield', 'East', True, 0.0), ('University Green', 'West', True, 0.0), ('Saltmarsh', 'Harbourside', True, 0.0),
         ('Kingsweir', 'South', True, 0.0), ('Eastgate Retail Park', 'East', True, 2.5), ('Airport Long-Stay', 'Airport', True, 4.5),
         ('Thornbury Industrial', 'South', False, 0.0), ('Ridgeway Villages', 'Outskirts', False, 0.0)]
MODELS = {'compact': [('Vela Pico', 'petrol'), ('Vela Pico E', 'electric'), ('Sorrel City', 'petrol'), ('Ampere One', 'electric')],
          'sedan': [('Corvane Estate', 'petrol'), ('Corvane EV', 'electric'), ('Halden Touring', 'petrol'), ('Ampere Five', 'electric')],
          'van': [('Tessel Cargo', 'petrol'), ('Tessel e-Cargo', 'electric'), ('Brumm Mover', 'petrol')]}
PLATE_LETTERS = 'ABCDEFGHJKLMNPRSTUVWXYZ'
RATES = {'compact': (0.29, 0.19), 'sedan': (0.36, 0.24), 'van': (0.45, 0.31)}
DISCOUNT = {'pay_as_you_go': 0.0, 'commuter': 0.15, 'business': 0.25}
DAMAGE = {'minor': ['Scratch on the rear bumper', 'Small dent in the passenger door', 'Scuffed left wing mirror housing',
                    'Stain on the back seat upholstery', 'Chipped paint on the bonnet edge'],
          'major': ['Cracked windscreen across the driver side', 'Flat front left tyre', 'Warning light for brakes stays on',
                    'Tailgate will not close or lock', 'Headlight smashed on the right side']}


def ts(t: dt.datetime) -> str: return t.replace(microsecond=0).isoformat()


def price(category: str, plan: str, minutes: int, km: float, surcharge: float) -> float:
    "Mirrors tools.trip_price for historical trips."
    per_min, per_km = RATES[category]
    minute_charge = round(min(minutes * per_min * (1 - DISCOUNT[plan]), 69.0 * math.ceil(minutes / 1440)), 2)
    return round(1.0 + minute_charge + round(km * per_km, 2) + surcharge, 2)


def seed_state(rng: random.Random) -> dict:
    zones = {f'Z{i:02d}': {'name': n, 'district': d, 'operating': op, 'drop_surcharge': s} for i, (n, d, op, s) in enumerate(ZONES, 1)}
    parkable = [k for k, z in zones.items() if z['operating']]
    vehicles, members, reservations, trips, damage = {}, {}, {}, {}, {}
    for i in range(1, 181):
        category = rng.choice(['compact'] * 5 + ['sedan'] * 3 + ['van'] * 2)
        model, power = rng.choice(MODELS[category])
        vehicles[f'V{i:04d}'] = {'plate': f'CS-{rng.choice(PLATE_LETTERS)}{rng.choice(PLATE_LETTERS)}{100 + i * 37 % 900:03d}', 'model': model,
                                 'category': category, 'powertrain': power, 'zone_id': rng.choice(parkable), 'energy_pct': rng.randint(6, 100),
                                 'odometer_km': round(rng.uniform(1500, 68000), 1), 'status': 'available'}
    for i in range(1, 141):
        first, last = rng.choice(FIRST), rng.choice(LAST)
        joined = TODAY - dt.timedelta(days=rng.randint(20, 1400))
        members[f'M{i:05d}'] = {'name': f'{first} {last}', 'email': f"{first.lower()}.{last.lower().replace('-', '')}{i}@ride.example",
                                'licence_number': f'DL{rng.randrange(10**7, 10**8)}',
                                'licence_expires': (TODAY + dt.timedelta(days=rng.randint(-200, 2500))).isoformat(),
                                'licence_verified': rng.random() > 0.06,
                                'plan': rng.choice(['pay_as_you_go', 'pay_as_you_go', 'commuter', 'business']),
                                'balance_due': rng.choice([0.0] * 8 + [4.35, 11.8, 18.2, 27.65, 42.1, 63.9]),
                                'status': 'active' if rng.random() > 0.05 else 'suspended', 'joined_on': joined.isoformat()}
    vids, mids = sorted(vehicles), sorted(members)
    eligible = [k for k in mids if (m := members[k])['status'] == 'active' and m['licence_verified']
                and m['licence_expires'] >= TODAY.isoformat() and m['balance_due'] <= 25]
    # history: completed trips, most of them booked through a reservation first; some cancelled or lapsed holds
    starts = sorted(NOW - dt.timedelta(minutes=rng.randint(300, 60 * 24 * 60)) for _ in range(300))
    for i, start in enumerate(starts, 1):
        vid, mid = rng.choice(vids), rng.choice(mids)
        v, m = vehicles[vid], members[mid]
        minutes = rng.choice([rng.randint(6, 45), rng.randint(20, 120), rng.randint(180, 1600)])
        km = round(minutes * rng.uniform(0.1, 0.6), 1)
        end_zone = rng.choice(parkable)
        res_id = None
        if rng.random() < 0.4:
            res_id = f'R{len(reservations) + 1:05d}'
            made = start - dt.timedelta(minutes=rng.randint(2, 18))
            reservations[res_id] = {'vehicle_id': vid, 'member_id': mid, 'created_at': ts(made), 'expires_at': ts(made + dt.timedelta(minutes=20)),
                                    'status': 'started'}
        if rng.random() < 0.2:
            made = start - dt.timedelta(hours=rng.randint(3, 30))
            reservations[f'R{len(reservations) + 1:05d}'] = {'vehicle_id': rng.choice(vids), 'member_id': mid, 'created_at': ts(made),
                                                             'expires_at': ts(made + dt.timedelta(minutes=20)),
                                                             'status': rng.choice(['cancelled', 'expired'])}
        trips[f'TR{i:05d}'] = {'vehicle_id': vid, 'member_id': mid, 'reservation_id': res_id, 'start_zone_id': v['zone_id'], 'end_zone_id': end_zone,
                               'started_at': ts(start), 'ended_at': ts(start + dt.timedelta(minutes=minutes)),
                               'start_odometer_km': round(v['odometer_km'] * rng.uniform(0.4, 0.97), 1), 'distance_km': km, 'minutes': minutes,
                               'cost': price(v['category'], m['plan'], minutes, km, zones[end_zone]['drop_surcharge']), 'status': 'completed'}
    busy = set()
    # cars out of service, with the open major report that took them off the road
    for vid in rng.sample(vids, 9):
        vehicles[vid]['status'] = 'maintenance'
        damage[f'D{len(damage) + 1:05d}'] = {'vehicle_id': vid, 'member_id': rng.choice(mids), 'reported_at': ts(NOW - dt.timedelta(hours=rng.randint(2, 90))),
                                            'severity': 'major', 'description': rng.choice(DAMAGE['major']), 'status': 'open'}
    for _ in range(36):
        sev = rng.choice(['minor', 'minor', 'minor', 'major'])
        damage[f'D{len(damage) + 1:05d}'] = {'vehicle_id': rng.choice(vids), 'member_id': rng.choice(mids),
                                            'reported_at': ts(NOW - dt.timedelta(hours=rng.randint(24, 1400))), 'severity': sev,
                                            'description': rng.choice(DAMAGE[sev]), 'status': 'resolved' if sev == 'major' or rng.random() < 0.6 else 'open'}
    free = lambda: [k for k in vids if vehicles[k]['status'] == 'available' and vehicles[k]['energy_pct'] >= 15]
    # ongoing trips right now
    for mid in rng.sample(eligible, 12):
        vid = rng.choice(free())
        start = NOW - dt.timedelta(minutes=rng.randint(8, 170), seconds=rng.choice([0, 15, 30, 45]))
        trips[f'TR{len(trips) + 1:05d}'] = {'vehicle_id': vid, 'member_id': mid, 'reservation_id': None, 'start_zone_id': vehicles[vid]['zone_id'],
                                          'end_zone_id': None, 'started_at': ts(start), 'ended_at': None,
                                          'start_odometer_km': vehicles[vid]['odometer_km'], 'distance_km': 0.0, 'minutes': 0, 'cost': 0.0, 'status': 'ongoing'}
        vehicles[vid]['status'] = 'in_trip'; busy.add(mid)
    # live reservations, made in the last quarter of an hour
    for mid in rng.sample([k for k in eligible if k not in busy], 14):
        vid = rng.choice(free())
        made = NOW - dt.timedelta(minutes=rng.randint(1, 12))
        reservations[f'R{len(reservations) + 1:05d}'] = {'vehicle_id': vid, 'member_id': mid, 'created_at': ts(made),
                                                         'expires_at': ts(made + dt.timedelta(minutes=20)), 'status': 'active'}
        vehicles[vid]['status'] = 'reserved'; busy.add(mid)
    return {'zones': zones, 'vehicles': vehicles, 'members': members, 'reservations': reservations, 'trips': trips, 'damage_reports': damage}


def best_car(vehicles: dict, zone_id: str, category: str | None = None, powertrain: str | None = None, floor: int = 0) -> str | None:
    "The car find_available_cars lists first."
    hits = [(-v['energy_pct'], k) for k, v in sorted(vehicles.items()) if v['zone_id'] == zone_id and v['status'] == 'available'
            and v['energy_pct'] >= max(floor, 15) and category in (None, v['category']) and powertrain in (None, v['powertrain'])]
    return min(hits)[1] if hits else None


def tasks(state: dict) -> list[Task]:
    zones, vehicles, members, reservations, trips = (state[k] for k in ('zones', 'vehicles', 'members', 'reservations', 'trips'))
    today = TODAY.isoformat()
    live = [(k, r) for k, r in sorted(reservations.items()) if r['status'] == 'active']
    ongoing = [(k, t) for k, t in sorted(trips.items()) if t['status'] == 'ongoing']
    busy = {r['member_id'] for _, r in live} | {t['member_id'] for _, t in ongoing}
    can_drive = lambda m: m['status'] == 'active' and m['licence_verified'] and m['licence_expires'] >= today
    idle = [k for k, m in sorted(members.items()) if can_drive(m) and k not in busy]
    zname = lambda z: zones[z]['name']
    order = lambda n: sorted(zones)[n:] + sorted(zones)[:n]     # spread the tasks over the city

    # reserve: an idle member wants the fullest van (>= 50%) in a zone that has one
    booker = next(k for k in idle if members[k]['balance_due'] == 0)
    van_zone = next(z for z in order(1) if best_car(vehicles, z, 'van', floor=50))
    van = best_car(vehicles, van_zone, 'van', floor=50)
    # end a trip the app could not close
    trip_id, trip = ongoing[0]
    end_zone = next(z for z in order(5) if zones[z]['operating'] and zones[z]['drop_surcharge'] == 0 and z != trip['start_zone_id'])
    odo = round(trip['start_odometer_km'] + 23.4, 1)
    # cancel a reservation and rebook an electric car elsewhere
    rebooker, (rb_id, rb) = next((r['member_id'], (k, r)) for k, r in live if members[r['member_id']]['balance_due'] == 0)
    ev_zone = next(z for z in order(7) if z != vehicles[rb['vehicle_id']]['zone_id'] and best_car(vehicles, z, powertrain='electric', floor=60))
    ev = best_car(vehicles, ev_zone, powertrain='electric', floor=60)
    # start the reserved trip
    starter, (st_id, st) = next((r['member_id'], (k, r)) for k, r in live if r['member_id'] != rebooker)
    # damage on the reserved car, then the fullest other car in the same zone
    damager, (dm_id, dm) = next((r['member_id'], (k, r)) for k, r in live if r['member_id'] not in (rebooker, starter)
                                and best_car(vehicles, vehicles[r['vehicle_id']]['zone_id']))
    dm_zone = vehicles[dm['vehicle_id']]['zone_id']
    replacement = best_car(vehicles, dm_zone)
    # pay an over-limit balance, then book a car by its plate
    debtor = next(k for k in idle if members[k]['balance_due'] > 25 and k != booker)
    pay_zone = next(z for z in order(3) if best_car(vehicles, z, 'compact'))
    plate_car = best_car(vehicles, pay_zone, 'compact')
    # read-only: a quote, and an availability question
    quoter = next(k for k, m in sorted(members.items()) if m['plan'] == 'commuter' and k != rebooker)
    ev_check_zone = next(z for z in order(10) if best_car(vehicles, z, powertrain='electric', floor=80))
    m = members
    return [
        Task(id='car_sharing-reserve-van', env_id='car_sharing',
             instruction=f"Hi, I'm {m[booker]['name']} ({m[booker]['email']}). I need a van in {zname(van_zone)} with at least half a tank or "
                         f"charge. Please book whichever one has the most.",
             gold_actions=[Action(name='lookup_member', arguments={'email': m[booker]['email']}),
                           Action(name='find_available_cars', arguments={'zone': zname(van_zone), 'category': 'van', 'min_energy_pct': 50}),
                           Action(name='reserve_car', arguments={'member_id': booker, 'vehicle_id': van})],
             user_context={'member_id': booker, 'email': m[booker]['email'], 'zone': zname(van_zone), 'wants': 'a van, >= 50% fuel/charge, the fullest'}),
        Task(id='car_sharing-end-trip', env_id='car_sharing',
             instruction=f"I'm member {trip['member_id']}. The app froze and won't let me end my trip. I've parked in {zname(end_zone)}; "
                         f"the odometer reads {odo} km and the gauge shows 34%. Please end the trip and tell me what it cost.",
             gold_actions=[Action(name='get_member_profile', arguments={'member_id': trip['member_id']}),
                           Action(name='end_trip', arguments={'trip_id': trip_id, 'end_zone': zname(end_zone), 'odometer_km': odo, 'energy_pct': 34})],
             user_context={'member_id': trip['member_id'], 'plate': vehicles[trip['vehicle_id']]['plate'], 'parked_in': zname(end_zone),
                           'odometer_km': odo, 'energy_pct': 34}),
        Task(id='car_sharing-cancel-and-rebook', env_id='car_sharing',
             instruction=f"I'm member {rebooker}. My plans changed: cancel the car I reserved and instead book me an electric car in "
                         f"{zname(ev_zone)} with at least 60% charge - the one with the most charge.",
             gold_actions=[Action(name='get_member_profile', arguments={'member_id': rebooker}),
                           Action(name='cancel_car_reservation', arguments={'reservation_id': rb_id}),
                           Action(name='find_available_cars', arguments={'zone': zname(ev_zone), 'powertrain': 'electric', 'min_energy_pct': 60}),
                           Action(name='reserve_car', arguments={'member_id': rebooker, 'vehicle_id': ev})],
             user_context={'member_id': rebooker, 'zone': zname(ev_zone), 'wants': 'electric, >= 60% charge, the fullest'}),
        Task(id='car_sharing-start-reserved', env_id='car_sharing',
             instruction=f"I'm member {starter} and I'm standing at the car I reserved. The unlock button does nothing - can you start my trip?",
             gold_actions=[Action(name='get_member_profile', arguments={'member_id': starter}),
                           Action(name='start_trip', arguments={'member_id': starter, 'vehicle_id': st['vehicle_id']})],
             user_context={'member_id': starter, 'plate': vehicles[st['vehicle_id']]['plate']}),
        Task(id='car_sharing-damage-and-swap', env_id='car_sharing',
             instruction=f"I'm member {damager}. The car I reserved ({vehicles[dm['vehicle_id']]['plate']}) has a cracked windscreen right across "
                         f"the driver's side - I won't drive it. Please report it and book me the best-charged or best-fuelled other car in the same zone.",
             gold_actions=[Action(name='get_member_profile', arguments={'member_id': damager}),
                           Action(name='report_damage', arguments={'vehicle_id': dm['vehicle_id'], 'member_id': damager, 'severity': 'major',
                                                                   'description': 'Cracked windscreen across the driver side'}),
                           Action(name='find_available_cars', arguments={'zone': dm_zone}),
                           Action(name='reserve_car', arguments={'member_id': damager, 'vehicle_id': replacement})],
             user_context={'member_id': damager, 'plate': vehicles[dm['vehicle_id']]['plate'], 'damage': 'cracked windscreen, driver side',
                           'zone': zname(dm_zone)}),
        Task(id='car_sharing-pay-then-reserve', env_id='car_sharing',
             instruction=f"I'm member {debtor}. The app says I can't book because of my balance. I'll pay the whole balance by card now, then "
                         f"book the compact {vehicles[plate_car]['plate']} parked in {zname(pay_zone)}.",
             gold_actions=[Action(name='get_member_profile', arguments={'member_id': debtor}),
                           Action(name='settle_balance', arguments={'member_id': debtor, 'amount': m[debtor]['balance_due']}),
                           Action(name='find_available_cars', arguments={'zone': zname(pay_zone), 'category': 'compact'}),
                           Action(name='reserve_car', arguments={'member_id': debtor, 'vehicle_id': plate_car})],
             user_context={'member_id': debtor, 'balance_due': m[debtor]['balance_due'], 'plate': vehicles[plate_car]['plate'], 'zone': zname(pay_zone)}),
        Task(id='car_sharing-quote', env_id='car_sharing',
             instruction=f"I'm member {quoter}. Roughly what would a 95-minute, 48 km trip in a sedan cost me on my plan? Just a quote, don't book anything.",
             gold_actions=[Action(name='quote_trip_price', arguments={'category': 'sedan', 'minutes': 95, 'distance_km': 48.0, 'member_id': quoter})],
             user_context={'member_id': quoter, 'plan': m[quoter]['plan']}),
        Task(id='car_sharing-ev-availability', env_id='car_sharing',
             instruction=f"Which electric cars in {zname(ev_check_zone)} have at least 80% charge right now? Don't book anything.",
             gold_actions=[Action(name='find_available_cars', arguments={'zone': zname(ev_check_zone), 'powertrain': 'electric', 'min_energy_pct': 80})],
             user_context={'zone': zname(ev_check_zone)}),
    ]


def tool_tests(state: dict) -> list[ToolTest]:
    vehicles, members, reservations, trips = (state[k] for k in ('vehicles', 'members', 'reservations', 'trips'))
    suspended = next(k for k, m in sorted(members.items()) if m['status'] == 'suspended')
    expired = next(k for k, m in sorted(members.items()) if m['licence_expires'] < TODAY.isoformat())
    in_shop = next(k for k, v in sorted(vehicles.items()) if v['status'] == 'maintenance')
    free = next(k for k, v in sorted(vehicles.items()) if v['status'] == 'available' and v['energy_pct'] >= 15)
    done = next(k for k, t in sorted(trips.items()) if t['status'] == 'completed')
    ongoing = next((k, t) for k, t in sorted(trips.items()) if t['status'] == 'ongoing')
    gone = next(k for k, r in sorted(reservations.items()) if r['status'] == 'cancelled')
    held = next(r for _, r in sorted(reservations.items()) if r['status'] == 'active')
    idle = next(k for k, m in sorted(members.items()) if m['status'] == 'active' and m['licence_verified'] and m['balance_due'] == 0
                and m['licence_expires'] >= TODAY.isoformat() and not any(r['member_id'] == k and r['status'] == 'active' for r in reservations.values())
                and not any(t['member_id'] == k and t['status'] == 'ongoing' for t in trips.values()))
    owing = next(k for k, m in sorted(members.items()) if m['balance_due'] > 0)
    T, C = ToolTest, ToolTestCall
    return [
        T(name='unknown member', calls=[C(name='get_member_profile', arguments={'member_id': 'M99999'}, expect='execution_error')]),
        T(name='unknown email', calls=[C(name='lookup_member', arguments={'email': 'nobody@ride.example'}, expect='execution_error')]),
        T(name='suspended member cannot reserve', calls=[C(name='reserve_car', arguments={'member_id': suspended, 'vehicle_id': free}, expect='execution_error')]),
        T(name='expired licence cannot drive', calls=[C(name='start_trip', arguments={'member_id': expired, 'vehicle_id': free}, expect='execution_error')]),
        T(name='car in maintenance', calls=[C(name='reserve_car', arguments={'member_id': idle, 'vehicle_id': in_shop}, expect='execution_error')]),
        T(name='reserved by someone else', calls=[C(name='start_trip', arguments={'member_id': idle, 'vehicle_id': held['vehicle_id']}, expect='execution_error')]),
        T(name='reserve, second reservation refused, cancel', calls=[
            C(name='reserve_car', arguments={'member_id': idle, 'vehicle_id': free}),
            C(name='reserve_car', arguments={'member_id': idle, 'vehicle_id': free}, expect='execution_error'),
            C(name='cancel_car_reservation', arguments={'reservation_id': 'R00001'}, expect='execution_error'),
            C(name='find_available_cars', arguments={'zone': vehicles[free]['zone_id'], 'limit': 3})]),
        T(name='walk-up trip', calls=[C(name='start_trip', arguments={'member_id': idle, 'vehicle_id': free}),
                                      C(name='start_trip', arguments={'member_id': idle, 'vehicle_id': free}, expect='execution_error')]),
        T(name='cancel a cancelled reservation', calls=[C(name='cancel_car_reservation', arguments={'reservation_id': gone}, expect='execution_error')]),
        T(name='end a finished trip', calls=[C(name='end_trip', arguments={'trip_id': done, 'end_zone': 'Z01', 'odometer_km': 99999.0, 'energy_pct': 50},
                                               expect='execution_error')]),
        T(name='end outside operating area', calls=[C(name='end_trip', arguments={'trip_id': ongoing[0], 'end_zone': 'Ridgeway Villages',
                                                                                  'odometer_km': ongoing[1]['start_odometer_km'] + 10, 'energy_pct': 50},
                                                      expect='execution_error')]),
        T(name='odometer below start', calls=[C(name='end_trip', arguments={'trip_id': ongoing[0], 'end_zone': 'Z02',
                                                                            'odometer_km': ongoing[1]['start_odometer_km'] - 5, 'energy_pct': 50},
                                                expect='execution_error')]),
        T(name='end at airport with low fuel', calls=[C(name='end_trip', arguments={'trip_id': ongoing[0], 'end_zone': 'Airport Long-Stay',
                                                                                    'odometer_km': ongoing[1]['start_odometer_km'] + 31.5, 'energy_pct': 7})]),
        T(name='overpay', calls=[C(name='settle_balance', arguments={'member_id': owing, 'amount': 1000.0}, expect='execution_error'),
                                 C(name='settle_balance', arguments={'member_id': owing, 'amount': 0.0}, expect='execution_error')]),
        T(name='damage description too short', calls=[C(name='report_damage', arguments={'vehicle_id': free, 'member_id': idle, 'severity': 'minor',
                                                                                          'description': 'dent'}, expect='execution_error')]),
        T(name='bad severity', calls=[C(name='report_damage', arguments={'vehicle_id': free, 'member_id': idle, 'severity': 'catastrophic',
                                                                         'description': 'Bumper hanging off at the back'}, expect='invalid_arguments')]),
        T(name='bad category', calls=[C(name='quote_trip_price', arguments={'category': 'limousine', 'minutes': 30, 'distance_km': 10.0},
                                        expect='invalid_arguments')]),
        T(name='zero-minute quote', calls=[C(name='quote_trip_price', arguments={'category': 'van', 'minutes': 0, 'distance_km': 10.0}, expect='execution_error')]),
        T(name='wrong argument type', calls=[C(name='find_available_cars', arguments={'zone': 'Z01', 'limit': 'ten'}, expect='invalid_arguments')]),
        T(name='unknown zone', calls=[C(name='find_available_cars', arguments={'zone': 'Atlantis'}, expect='execution_error')]),
    ]


def build(folder: Path = HERE):
    state = seed_state(random.Random(20260302))
    return write_environment(
        folder, 'car_sharing', (HERE / 'tools.py').read_text(), 'CarSharingTools', state, tasks(state), tool_tests(state),
        description='A city car-sharing service: finding cars by zone, member accounts and licence checks, reservations, '
                    'trips billed per minute and per km, balances and damage reports.',
        policy=('You are the car-sharing support assistant. Identify the member (id or email) before changing anything on '
                'their account. Reservations hold a car for 20 minutes; a member can hold one reservation or drive one trip '
                'at a time. Members need a verified, unexpired licence and a balance of at most 25.00 to book or drive. '
                'Trips can only end inside the operating area. Confirm the amount with the member before recording a payment, '
                'and report damage as major when the car is unsafe to drive.'),
        clock_start=CLOCK_START, provenance={'author': 'hand-written', 'seed': 20260302}, trusted=True)


if __name__ == '__main__':
    env = build()
    print(env, {t: n for t, n in env.metadata['tables'].items()})
