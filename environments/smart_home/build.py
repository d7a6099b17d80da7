"""Build the `smart_home` environment folder: a seeded hub state, tasks with gold actions, tool tests.

Run `python environments/smart_home/build.py` after changing anything here or in tools.py; it rewrites the
derived files (tools.json, db_schema.json, env.json, seed_state.json, tasks.jsonl, tests.json) and fills in
the gold hashes. The output is byte-identical from run to run.
"""
import datetime as dt
import itertools
import random
from pathlib import Path

from envsynth.envs import ToolTest, ToolTestCall, write_environment
from envsynth.schema import Action, Task

HERE = Path(__file__).parent
CLOCK_START = '2026-03-02T18:30:00+00:00'
NOW = dt.datetime.fromisoformat(CLOCK_START)

FIRST = ['Aurelio', 'Brina', 'Cosmo', 'Delphine', 'Emrys', 'Fenna', 'Gideon', 'Hollis', 'Isolde', 'Jory', 'Kestrel', 'Linnea', 'Marek',
         'Nell', 'Orin', 'Perpetua', 'Ravi', 'Saoirse', 'Tobiah', 'Ulla', 'Vesna', 'Wilder', 'Ximena', 'Yusuf', 'Zuri']
LAST = ['Ashdown', 'Brackett', 'Calloway', 'Dunmore', 'Ellery', 'Fairweather', 'Greaves', 'Hartigan', 'Ingleby', 'Jessop', 'Kilbride',
        'Lockwood', 'Merriman', 'Northcott', 'Oakes', 'Pemberton', 'Quill', 'Radley', 'Sallow', 'Thorne', 'Underhill', 'Whitlock', 'Yardley']
HOME_ADJ = ['Maple', 'Birch', 'Cedar', 'Willow', 'Hazel', 'Rowan', 'Alder', 'Juniper', 'Linden', 'Aspen', 'Bramble', 'Holly', 'Larch', 'Sorrel']
HOME_NOUN = ['Cottage', 'House', 'Loft', 'Lodge', 'Villa', 'Flat', 'Barn', 'Terrace', 'Mews']
# room name -> (floor, [(device name, kind), ...]); the first device of the Hallway is always installed
ROOMS = {'Living Room': (0, [('Ceiling Light', 'light'), ('Floor Lamp', 'light'), ('Thermostat', 'thermostat'), ('Roller Blind', 'blind'), ('TV Plug', 'plug')]),
         'Kitchen': (0, [('Pendant Lights', 'light'), ('Coffee Maker Plug', 'plug')]),
         'Hallway': (0, [('Front Door Lock', 'lock'), ('Hall Light', 'light')]),
         'Main Bedroom': (1, [('Bedside Lamp', 'light'), ('Blackout Blind', 'blind'), ('Bedroom Thermostat', 'thermostat')]),
         'Guest Bedroom': (1, [('Guest Ceiling Light', 'light'), ('Radiator Valve', 'thermostat')]),
         'Bathroom': (1, [('Mirror Light', 'light'), ('Towel Rail Plug', 'plug')]),
         'Office': (1, [('Desk Lamp', 'light'), ('Office Blind', 'blind'), ('Monitor Plug', 'plug')]),
         'Garage': (0, [('Garage Side Door Lock', 'lock'), ('Garage Light', 'light')]),
         'Nursery': (1, [('Night Light', 'light'), ('Nursery Thermostat', 'thermostat')]),
         'Den': (0, [('Reading Lamp', 'light'), ('Den Blind', 'blind')]),
         'Conservatory': (0, [('Patio Door Lock', 'lock'), ('Skylight Blind', 'blind')]),
         'Utility Room': (0, [('Back Door Lock', 'lock'), ('Dryer Plug', 'plug')])}
EXTRA_ROOMS = [r for r in ROOMS if r not in ('Living Room', 'Kitchen', 'Hallway')]
# scene name -> (room, settings by device kind)
SCENES = {'Movie Night': ('Living Room', {'light': {'on': True, 'brightness': 15, 'color_temp_k': 2700}, 'blind': {'position': 0}, 'plug': {'on': True}}),
          'Cosy Evening': ('Living Room', {'light': {'on': True, 'brightness': 45, 'color_temp_k': 2700}, 'thermostat': {'hvac_mode': 'heat', 'target_c': 21.0}}),
          'Wake Up': ('Main Bedroom', {'light': {'on': True, 'brightness': 80, 'color_temp_k': 4000}, 'blind': {'position': 100}}),
          'Lights Out': ('Main Bedroom', {'light': {'on': False, 'brightness': 10, 'color_temp_k': 2200}, 'blind': {'position': 0}, 'thermostat': {'hvac_mode': 'heat', 'target_c': 18.0}}),
          'Deep Work': ('Office', {'light': {'on': True, 'brightness': 100, 'color_temp_k': 5000}, 'blind': {'position': 75}, 'plug': {'on': True}}),
          'Dinner Prep': ('Kitchen', {'light': {'on': True, 'brightness': 100, 'color_temp_k': 4000}, 'plug': {'on': False}})}
FIELDS = ('on', 'brightness', 'color_temp_k', 'hvac_mode', 'target_c', 'position')


def device_state(rng: random.Random, kind: str) -> dict:
    if kind == 'light': return {'kind': 'light', 'on': rng.random() < 0.4, 'brightness': rng.choice([20, 35, 50, 65, 80, 100]), 'color_temp_k': rng.choice([2700, 3000, 4000, 5000])}
    if kind == 'thermostat':
        target = rng.choice([18.0, 19.0, 19.5, 20.0, 20.5, 21.0, 22.0])
        return {'kind': 'thermostat', 'hvac_mode': rng.choice(['heat', 'heat', 'heat', 'auto', 'off']), 'target_c': target, 'current_c': round(target + rng.uniform(-2.5, 1.5), 1)}
    if kind == 'lock': return {'kind': 'lock', 'locked': rng.random() < 0.7, 'jammed': rng.random() < 0.05}
    if kind == 'blind': return {'kind': 'blind', 'position': rng.choice([0, 25, 50, 75, 100])}
    on = rng.random() < 0.5
    return {'kind': 'plug', 'on': on, 'watts': round(rng.uniform(2.0, 1500.0), 1) if on else 0.0}


def seed_state(rng: random.Random) -> dict:
    homes, rooms, devices, scenes = {}, {}, {}, {}
    for i, (adj, noun) in enumerate(rng.sample(sorted(itertools.product(HOME_ADJ, HOME_NOUN)), 36), 1):
        hid = f'H{i:04d}'
        homes[hid] = {'name': f'{adj} {noun}', 'owner': f'{rng.choice(FIRST)} {rng.choice(LAST)}', 'mode': rng.choice(['home'] * 6 + ['away', 'away', 'night', 'vacation']),
                      'access_code': f'{rng.randrange(10000):04d}', 'eco_target_c': rng.choice([15.0, 16.0, 16.5, 17.0])}
        for room in ['Living Room', 'Kitchen', 'Hallway'] + sorted(rng.sample(EXTRA_ROOMS, rng.randint(1, 3)), key=list(ROOMS).index):
            rid = f'R{len(rooms) + 1:05d}'
            floor, templates = ROOMS[room]
            rooms[rid] = {'home_id': hid, 'name': room, 'floor': 0 if noun == 'Flat' else floor}
            keep = [j == 0 and room == 'Hallway' or rng.random() < 0.7 for j in range(len(templates))]
            for j, (name, kind) in enumerate(templates):
                if not (keep[j] or (j == 0 and not any(keep))): continue
                devices[f'D{len(devices) + 1:05d}'] = {'home_id': hid, 'room_id': rid, 'name': name, 'online': rng.random() > 0.06,
                                                       'battery_pct': rng.choice([3, 12, 18] + list(range(35, 101, 5))) if kind in ('lock', 'blind') else None,
                                                       'state': device_state(rng, kind)}
    for hid, h in homes.items():              # secure modes: doors locked, lights off, heating at eco, blinds shut on vacation
        if h['mode'] == 'home': continue
        for d in devices.values():
            s = d['state']
            if d['home_id'] != hid: continue
            if s['kind'] == 'lock': s['locked'] = True
            elif s['kind'] == 'light': s['on'] = False
            elif s['kind'] == 'thermostat' and h['mode'] != 'night': s['target_c'] = min(s['target_c'], h['eco_target_c'])
            elif s['kind'] == 'blind' and h['mode'] == 'vacation': s['position'] = 0
    for hid in homes:
        room_ids = {r['name']: k for k, r in rooms.items() if r['home_id'] == hid}
        options = [s for s in SCENES if SCENES[s][0] in room_ids]
        for name in sorted(rng.sample(options, min(len(options), rng.randint(1, 3))), key=list(SCENES).index):
            room, settings = SCENES[name]
            steps = [{'device_id': k, **{f: settings.get(d['state']['kind'], {}).get(f) for f in FIELDS}} for k, d in sorted(devices.items())
                     if d['room_id'] == room_ids[room] and d['state']['kind'] in settings]
            if not steps: continue
            last = None if rng.random() < 0.3 else (NOW - dt.timedelta(minutes=rng.randint(60, 20000))).isoformat(timespec='seconds')
            scenes[f'S{len(scenes) + 1:05d}'] = {'home_id': hid, 'name': name, 'steps': steps, 'last_run': last}
    return {'homes': homes, 'rooms': rooms, 'devices': devices, 'scenes': scenes, 'events': seed_events(rng, homes, devices, scenes)}


def seed_events(rng: random.Random, homes: dict, devices: dict, scenes: dict) -> dict:
    raw = []
    for k, s in scenes.items():
        if s['last_run']: raw.append((s['last_run'], {'home_id': s['home_id'], 'device_id': None, 'kind': 'scene', 'source': rng.choice(['app', 'schedule']),
                                                      'detail': f"scene '{s['name']}' ran"}))
    device_ids = sorted(devices)
    while len(raw) < 320:
        k = rng.choice(device_ids)
        d, at = devices[k], (NOW - dt.timedelta(seconds=rng.randint(600, 7 * 86400))).isoformat(timespec='seconds')
        kind = d['state']['kind']
        if not d['online'] and rng.random() < 0.5: ev = ('offline', 'hub', f"{d['name']} stopped responding")
        elif d['battery_pct'] is not None and d['battery_pct'] < 20 and rng.random() < 0.5: ev = ('low_battery', 'hub', f"{d['name']} battery at {d['battery_pct']}%")
        elif kind == 'lock':
            locked = rng.random() < 0.5
            ev = ('locked' if locked else 'unlocked', rng.choice(['keypad', 'app', 'schedule']), f"{d['name']} {'locked' if locked else 'unlocked'}")
        elif kind == 'light': ev = ('state_change', rng.choice(['app', 'schedule']), rng.choice(['on False -> True', 'on True -> False', f'brightness 50 -> {rng.choice([20, 80, 100])}']))
        elif kind == 'thermostat': ev = ('state_change', rng.choice(['app', 'schedule']), f"target_c 18.0 -> {rng.choice([19.0, 20.0, 21.0])}")
        elif kind == 'blind': ev = ('state_change', rng.choice(['app', 'schedule']), f"position 0 -> {rng.choice([50, 100])}")
        else: ev = ('state_change', 'app', rng.choice(['on False -> True', 'on True -> False']))
        raw.append((at, {'home_id': d['home_id'], 'device_id': k, 'kind': ev[0], 'source': ev[1], 'detail': ev[2]}))
    raw.sort(key=lambda e: (e[0], e[1]['home_id'], e[1]['device_id'] or '', e[1]['kind'], e[1]['detail']))
    return {f'E{i:05d}': {'home_id': e['home_id'], 'device_id': e['device_id'], 'at': at, 'kind': e['kind'], 'source': e['source'], 'detail': e['detail']}
            for i, (at, e) in enumerate(raw, 1)}


def tasks(state: dict) -> list[Task]:
    homes, rooms, devices, scenes = (state[k] for k in ('homes', 'rooms', 'devices', 'scenes'))
    def home_devices(hid, kind=None): return [(k, d) for k, d in sorted(devices.items()) if d['home_id'] == hid and (kind is None or d['state']['kind'] == kind)]
    def operable(d): return d['online'] and not d['state']['jammed'] and (d['battery_pct'] is None or d['battery_pct'] >= 5)
    open_home = next(h for h in sorted(homes) if any(not d['state']['locked'] for _, d in home_devices(h, 'lock')))
    leave = next(h for h in sorted(homes) if homes[h]['mode'] == 'home' and h != open_home
                 and (u := [(k, d) for k, d in home_devices(h, 'lock') if d['online'] and not d['state']['locked']]) and all(operable(d) for _, d in u))
    leave_locks = [k for k, d in home_devices(leave, 'lock') if d['online'] and not d['state']['locked']]
    lamp = next(k for k, d in sorted(devices.items()) if d['state']['kind'] == 'light' and d['online'] and homes[d['home_id']]['mode'] == 'home'
                and rooms[d['room_id']]['name'] == 'Living Room' and d['home_id'] not in (open_home, leave))
    ld = devices[lamp]
    back = next(k for k, s in sorted(scenes.items()) if homes[s['home_id']]['mode'] == 'away')
    bh = scenes[back]['home_id']
    capture_room = next(k for k, r in sorted(rooms.items()) if r['name'] == 'Office' and homes[r['home_id']]['mode'] == 'home'
                        and any(d['room_id'] == k and d['online'] for d in devices.values()))
    ch = rooms[capture_room]['home_id']
    heat = next(k for k, d in sorted(devices.items()) if d['state']['kind'] == 'thermostat' and d['online'] and d['state']['hvac_mode'] == 'off'
                and rooms[d['room_id']]['name'] == 'Main Bedroom')
    hh = devices[heat]['home_id']
    guest_lock = next(k for k, d in sorted(devices.items()) if d['state']['kind'] == 'lock' and operable(d) and d['state']['locked']
                      and d['name'] == 'Front Door Lock' and homes[d['home_id']]['mode'] == 'home' and d['home_id'] not in (leave, open_home)
                      and any(e['device_id'] == k and e['kind'] in ('locked', 'unlocked') for e in state['events'].values()))
    gh = devices[guest_lock]['home_id']
    night = next(h for h in sorted(homes) if homes[h]['mode'] == 'home' and h not in (leave, gh, open_home)
                 and all(operable(d) for _, d in home_devices(h, 'lock') if d['online'] and not d['state']['locked'])
                 and any(d['online'] and d['state']['position'] > 0 for _, d in home_devices(h, 'blind')))
    night_locks = [k for k, d in home_devices(night, 'lock') if d['online'] and not d['state']['locked']]
    night_blind = next(k for k, d in home_devices(night, 'blind') if d['online'] and d['state']['position'] > 0)
    nb = devices[night_blind]
    def who(h): return homes[h]['owner']
    return [
        Task(id='smart_home-door-check', env_id='smart_home',
             instruction=f"Hi, this is {who(open_home)}. Are any doors at {homes[open_home]['name']} unlocked right now? Just tell me, don't change anything.",
             gold_actions=[Action(name='find_homes', arguments={'query': homes[open_home]['name']}),
                           Action(name='get_home_overview', arguments={'home_id': open_home})],
             user_context={'owner': who(open_home), 'home_name': homes[open_home]['name']}),
        Task(id='smart_home-dim-lamp', env_id='smart_home',
             instruction=f"In {homes[ld['home_id']]['name']}, set the {ld['name']} in the living room to 30% brightness and warm white (2700 K).",
             gold_actions=[Action(name='find_homes', arguments={'query': homes[ld['home_id']]['name']}),
                           Action(name='list_home_devices', arguments={'home_id': ld['home_id'], 'room_id': ld['room_id']}),
                           Action(name='adjust_device', arguments={'device_id': lamp, 'brightness': 30, 'color_temp_k': 2700})],
             user_context={'owner': who(ld['home_id']), 'home_name': homes[ld['home_id']]['name']}),
        Task(id='smart_home-leave-away', env_id='smart_home',
             instruction=f"I'm heading out of {homes[leave]['name']} (home {leave}) for the day. Make sure every door is locked and put the house in away mode.",
             gold_actions=[Action(name='get_home_overview', arguments={'home_id': leave})]
                          + [Action(name='operate_lock', arguments={'device_id': k, 'action': 'lock'}) for k in leave_locks]
                          + [Action(name='set_home_mode', arguments={'home_id': leave, 'mode': 'away', 'access_code': homes[leave]['access_code']})],
             user_context={'home_id': leave, 'access_code': homes[leave]['access_code']}),
        Task(id='smart_home-back-home-scene', env_id='smart_home',
             instruction=f"I'm back at {homes[bh]['name']} (home {bh}). Take the house out of away mode and run my '{scenes[back]['name']}' scene.",
             gold_actions=[Action(name='set_home_mode', arguments={'home_id': bh, 'mode': 'home', 'access_code': homes[bh]['access_code']}),
                           Action(name='get_home_overview', arguments={'home_id': bh}),
                           Action(name='activate_scene', arguments={'scene_id': back})],
             user_context={'home_id': bh, 'access_code': homes[bh]['access_code']}),
        Task(id='smart_home-save-scene', env_id='smart_home',
             instruction=f"I like how my office at {homes[ch]['name']} (home {ch}) is set up right now. Save it as a scene called 'Evening Calm'.",
             gold_actions=[Action(name='get_home_overview', arguments={'home_id': ch}),
                           Action(name='capture_scene', arguments={'room_id': capture_room, 'name': 'Evening Calm'})],
             user_context={'home_id': ch}),
        Task(id='smart_home-bedroom-heating', env_id='smart_home',
             instruction=f"It's cold in the main bedroom at {homes[hh]['name']} (home {hh}). Turn its thermostat to heating at 21.5 degrees.",
             gold_actions=[Action(name='list_home_devices', arguments={'home_id': hh, 'kind': 'thermostat'}),
                           Action(name='adjust_device', arguments={'device_id': heat, 'hvac_mode': 'heat', 'target_c': 21.5})],
             user_context={'home_id': hh}),
        Task(id='smart_home-let-guest-in', env_id='smart_home',
             instruction=f"My sister is at the front door of {homes[gh]['name']} (home {gh}). Tell me when the front door was last locked or unlocked, then unlock it for her.",
             gold_actions=[Action(name='list_home_devices', arguments={'home_id': gh, 'kind': 'lock'}),
                           Action(name='read_event_log', arguments={'home_id': gh, 'device_id': guest_lock}),
                           Action(name='operate_lock', arguments={'device_id': guest_lock, 'action': 'unlock', 'access_code': homes[gh]['access_code']})],
             user_context={'home_id': gh, 'access_code': homes[gh]['access_code']}),
        Task(id='smart_home-bedtime', env_id='smart_home',
             instruction=f"Bedtime at {homes[night]['name']} (home {night}): close the {nb['name'].lower()} in the {rooms[nb['room_id']]['name'].lower()} completely, lock any door that is still open and switch the house to night mode.",
             gold_actions=[Action(name='list_home_devices', arguments={'home_id': night, 'kind': 'blind'}),
                           Action(name='adjust_device', arguments={'device_id': night_blind, 'position': 0}),
                           Action(name='get_home_overview', arguments={'home_id': night})]
                          + [Action(name='operate_lock', arguments={'device_id': k, 'action': 'lock'}) for k in night_locks]
                          + [Action(name='set_home_mode', arguments={'home_id': night, 'mode': 'night', 'access_code': homes[night]['access_code']})],
             user_context={'home_id': night, 'access_code': homes[night]['access_code']}),
    ]


def tool_tests(state: dict) -> list[ToolTest]:
    homes, devices, scenes = state['homes'], state['devices'], state['scenes']
    locks = [(k, d) for k, d in sorted(devices.items()) if d['state']['kind'] == 'lock']
    locked = next(k for k, d in locks if d['online'] and not d['state']['jammed'] and d['state']['locked'] and (d['battery_pct'] or 100) >= 5)
    wrong_code = f"{(int(homes[devices[locked]['home_id']]['access_code']) + 1) % 10000:04d}"
    jammed = next(k for k, d in locks if d['state']['jammed'] and d['online'])
    offline = next(k for k, d in sorted(devices.items()) if not d['online'] and d['state']['kind'] == 'light')
    blind = next(k for k, d in sorted(devices.items()) if d['online'] and d['state']['kind'] == 'blind')
    light = next(k for k, d in sorted(devices.items()) if d['online'] and d['state']['kind'] == 'light')
    unlocked_home = next(h for h in sorted(homes) if homes[h]['mode'] == 'home' and any(d['home_id'] == h and d['online'] and not d['state']['locked'] for _, d in locks))
    away_scene = next(k for k, s in sorted(scenes.items()) if homes[s['home_id']]['mode'] in ('away', 'vacation'))
    named = next(k for k, s in sorted(scenes.items()))
    named_room = next(k for k, r in sorted(state['rooms'].items()) if r['home_id'] == scenes[named]['home_id'] and r['name'] == 'Living Room')
    rooms = state['rooms']
    kinds = lambda h, kind: [d for d in devices.values() if d['home_id'] == h and d['online'] and d['state']['kind'] == kind]
    last_room = {r['home_id']: k for k, r in sorted(rooms.items())}
    end_room = next(k for h, k in sorted(last_room.items()) if any(d['room_id'] == k and d['online'] and d['state']['kind'] != 'lock' for d in devices.values()))
    warm = 2700 if devices[light]['state']['color_temp_k'] != 2700 else 3000
    home_scenes = next(ks for h in sorted(homes) if homes[h]['mode'] == 'home' and len(ks := [k for k, sc in sorted(scenes.items()) if sc['home_id'] == h]) >= 2)[:2]
    leaving = next(h for h in sorted(homes) if homes[h]['mode'] == 'home' and all(d['state']['locked'] for d in kinds(h, 'lock'))
                   and any(d['state']['hvac_mode'] in ('heat', 'auto') and d['state']['target_c'] > homes[h]['eco_target_c'] for d in kinds(h, 'thermostat'))
                   and any(d['state']['position'] > 0 for d in kinds(h, 'blind')))
    lvl = 77 if devices[light]['state']['brightness'] != 77 else 78
    return [
        ToolTest(name='unknown home', calls=[ToolTestCall(name='get_home_overview', arguments={'home_id': 'H9999'}, expect='execution_error')]),
        ToolTest(name='unlock with wrong code', calls=[ToolTestCall(name='operate_lock', arguments={'device_id': locked, 'action': 'unlock', 'access_code': wrong_code}, expect='execution_error'),
                                                       ToolTestCall(name='operate_lock', arguments={'device_id': locked, 'action': 'unlock'}, expect='execution_error')]),
        ToolTest(name='jammed lock', calls=[ToolTestCall(name='operate_lock', arguments={'device_id': jammed, 'action': 'lock'}, expect='execution_error')]),
        ToolTest(name='offline light', calls=[ToolTestCall(name='adjust_device', arguments={'device_id': offline, 'on': True}, expect='execution_error')]),
        ToolTest(name='lock is not adjustable', calls=[ToolTestCall(name='adjust_device', arguments={'device_id': locked, 'on': True}, expect='execution_error')]),
        ToolTest(name='blind has no brightness', calls=[ToolTestCall(name='adjust_device', arguments={'device_id': blind, 'brightness': 50}, expect='execution_error')]),
        ToolTest(name='brightness out of range then repeat', calls=[ToolTestCall(name='adjust_device', arguments={'device_id': light, 'brightness': 0}, expect='execution_error'),
                                                                    ToolTestCall(name='adjust_device', arguments={'device_id': light, 'brightness': lvl}),
                                                                    ToolTestCall(name='adjust_device', arguments={'device_id': light, 'brightness': lvl}, expect='execution_error')]),
        ToolTest(name='wrong argument type', calls=[ToolTestCall(name='adjust_device', arguments={'device_id': light, 'brightness': 'bright'}, expect='invalid_arguments')]),
        ToolTest(name='away with a door open', calls=[ToolTestCall(name='set_home_mode', arguments={'home_id': unlocked_home, 'mode': 'away', 'access_code': homes[unlocked_home]['access_code']}, expect='execution_error')]),
        ToolTest(name='scene while away', calls=[ToolTestCall(name='activate_scene', arguments={'scene_id': away_scene}, expect='execution_error')]),
        ToolTest(name='duplicate scene name', calls=[ToolTestCall(name='capture_scene', arguments={'room_id': named_room, 'name': scenes[named]['name'].upper()}, expect='execution_error')]),
        ToolTest(name='event log limit', calls=[ToolTestCall(name='read_event_log', arguments={'home_id': 'H0001', 'limit': 0}, expect='execution_error'),
                                                ToolTestCall(name='find_homes', arguments={'query': 'cottage'})]),
        ToolTest(name='an unknown home has no devices or log', calls=[
            ToolTestCall(name='list_home_devices', arguments={'home_id': 'H9999'}, expect='execution_error'),
            ToolTestCall(name='read_event_log', arguments={'home_id': 'H9999'}, expect='execution_error')]),
        ToolTest(name="a home's last room: its devices, and a scene of them", calls=[
            ToolTestCall(name='list_home_devices', arguments={'home_id': rooms[end_room]['home_id'], 'room_id': end_room}),
            ToolTestCall(name='capture_scene', arguments={'room_id': end_room, 'name': 'Evening'})]),
        ToolTest(name='warmer light, then off', calls=[
            ToolTestCall(name='adjust_device', arguments={'device_id': light, 'brightness': lvl}),
            ToolTestCall(name='adjust_device', arguments={'device_id': light, 'color_temp_k': warm}),
            ToolTestCall(name='adjust_device', arguments={'device_id': light, 'on': False})]),
        ToolTest(name='two scenes of a home in home mode', calls=[ToolTestCall(name='activate_scene', arguments={'scene_id': k}) for k in home_scenes]),
        ToolTest(name='vacation lowers the heating and closes the blinds', calls=[
            ToolTestCall(name='set_home_mode', arguments={'home_id': leaving, 'mode': 'vacation', 'access_code': homes[leaving]['access_code']})]),
    ]


def build(folder: Path = HERE):
    state = seed_state(random.Random(20260318))
    return write_environment(
        folder, 'smart_home', (HERE / 'tools.py').read_text(), 'SmartHomeTools', state, tasks(state), tool_tests(state),
        description='A smart-home hub for many households: rooms, lights, thermostats, door locks, blinds and plugs, scenes, security modes and an event log.',
        policy=('You are the smart-home hub assistant. Identify the home (name or id) before changing anything. Never reveal a '
                "home's access code; unlocking a door or changing the security mode needs the code from the resident. Doors must be "
                'locked before away, night or vacation mode. Scenes do not run in away or vacation mode. Offline devices cannot be controlled.'),
        clock_start=CLOCK_START, provenance={'author': 'hand-written', 'seed': 20260318}, trusted=True)


if __name__ == '__main__':
    env = build()
    print(env, {t: n for t, n in env.metadata['tables'].items()})
