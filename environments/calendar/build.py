"""Build the `calendar` environment folder: a seeded team calendar, tasks with gold actions, tool tests.

Run `python environments/calendar/build.py` after changing anything here or in tools.py; it rewrites the
derived files (tools.json, db_schema.json, env.json, seed_state.json, tasks.jsonl, tests.json) and fills in
the gold hashes. The output is byte-identical from run to run.
"""
import datetime as dt
import random
from pathlib import Path

from envsynth.envs import ToolTest, ToolTestCall, write_environment
from envsynth.schema import Action, Task

HERE = Path(__file__).parent
CLOCK_START = '2026-04-13T08:00:00+00:00'
NOW = '2026-04-13T08:00'
TODAY = dt.date(2026, 4, 13)
FMT = '%Y-%m-%dT%H:%M'

FIRST = ['Anneli', 'Borek', 'Calla', 'Desmond', 'Edda', 'Fenna', 'Gideon', 'Hollis', 'Isadora', 'Jory', 'Kestrel', 'Lupe', 'Marit',
         'Nilo', 'Odile', 'Pascoe', 'Renata', 'Sorrel', 'Tamsin', 'Ulrich', 'Verity', 'Wilma', 'Xander', 'Ysolde', 'Zuri']
LAST = ['Ashgrove', 'Brightwater', 'Copperfield', 'Dunmore', 'Elderbank', 'Fairweather', 'Glenholm', 'Hartwell', 'Ivesby', 'Juniper',
        'Kettering', 'Larkspur', 'Merriman', 'Northcott', 'Oakhurst', 'Pennyworth', 'Quarrington', 'Redfern', 'Stonebridge', 'Thistlewood']
TEAMS = ['Platform', 'Payments', 'Design', 'Research', 'Sales', 'Legal', 'Support', 'Data']
ROLES = ['Engineer', 'Engineer', 'Senior Engineer', 'Manager', 'Designer', 'Analyst', 'Team Lead', 'Coordinator']
BUILDINGS = {'North': ['Alder', 'Birch', 'Cedar', 'Damson', 'Elm', 'Fir', 'Gorse'],
             'Harbour': ['Anchor', 'Buoy', 'Compass', 'Dock', 'Ebb', 'Flint'],
             'Mill': ['Anvil', 'Bellows', 'Chisel', 'Drill', 'Emery', 'Forge', 'Grindstone']}
TOPICS = ['roadmap', 'retro', 'standup', 'design review', 'hiring panel', 'budget check', '1:1', 'incident review', 'planning',
          'customer call', 'onboarding', 'demo', 'architecture', 'contract review', 'kickoff', 'brainstorm']


def weekdays(first: dt.date, last: dt.date) -> list[dt.date]:
    return [first + dt.timedelta(days=i) for i in range((last - first).days + 1) if (first + dt.timedelta(days=i)).weekday() < 5]


def overlaps(e: dict, s: str, end: str) -> bool: return e['status'] == 'scheduled' and e['start'] < end and s < e['end']


def room_free(state: dict, room_id: str, s: str, e: str, skip: str | None = None) -> bool:
    return not any(k != skip and ev['room_id'] == room_id and overlaps(ev, s, e) for k, ev in state['events'].items())


def person_busy(state: dict, pid: str, s: str, e: str, skip: str | None = None) -> bool:
    accepted = {i['event_id'] for i in state['invitations'].values() if i['person_id'] == pid and i['response'] == 'accepted'}
    return any(k != skip and (ev['organizer_id'] == pid or k in accepted) and overlaps(ev, s, e) for k, ev in state['events'].items())


def headcount(state: dict, eid: str) -> int:
    return 1 + sum(1 for i in state['invitations'].values() if i['event_id'] == eid and i['response'] != 'declined')


def invitees(state: dict, eid: str) -> set[str]: return {i['person_id'] for i in state['invitations'].values() if i['event_id'] == eid}


def seed_state(rng: random.Random) -> dict:
    people, rooms, events, invitations = {}, {}, {}, {}
    for i in range(1, 73):
        first, last = rng.choice(FIRST), rng.choice(LAST)
        people[f'P{i:04d}'] = {'name': f'{first} {last}', 'email': f'{first.lower()}.{last.lower()}{i}@teamcal.example',
                               'team': rng.choice(TEAMS), 'role': rng.choice(ROLES), 'active': rng.random() > 0.06}
    n = 0
    for building, names in BUILDINGS.items():
        for name in names:
            n += 1
            cap = rng.choice([2, 4, 4, 6, 6, 8, 10, 12, 16, 24])
            rooms[f'R{n:03d}'] = {'name': name, 'building': building, 'floor': rng.randint(0, 5), 'capacity': cap,
                                  'has_video': cap >= 6 or rng.random() < 0.4, 'status': 'maintenance' if rng.random() < 0.1 else 'open'}
    active = [k for k, p in sorted(people.items()) if p['active']]
    days = weekdays(TODAY - dt.timedelta(days=7), TODAY + dt.timedelta(days=11))
    state = {'people': people, 'rooms': rooms, 'events': events, 'invitations': invitations}
    inv_n = 0
    for i in range(1, 166):
        day = rng.choice(days)
        start = dt.datetime.combine(day, dt.time(rng.randint(8, 17), rng.choice([0, 15, 30, 45])))
        end = start + dt.timedelta(minutes=rng.choice([30, 30, 45, 60, 60, 90]))
        s, e = start.strftime(FMT), end.strftime(FMT)
        org = rng.choice(active)
        guests = rng.sample([p for p in active if p != org], rng.randint(1, 4))
        room_id = None
        if rng.random() < 0.75:
            fits = [k for k, r in sorted(rooms.items()) if r['status'] == 'open' and r['capacity'] >= 1 + len(guests) and room_free(state, k, s, e)]
            room_id = min(fits, key=lambda k: (rooms[k]['capacity'], rng.random())) if fits else None
        created = min(start - dt.timedelta(days=rng.randint(1, 9), hours=rng.randint(0, 6)), dt.datetime.strptime(NOW, FMT) - dt.timedelta(hours=rng.randint(1, 48)))
        topic = rng.choice(TOPICS)
        eid = f'E{i:05d}'
        events[eid] = {'title': f"{people[org]['team']} {topic}", 'organizer_id': org, 'room_id': room_id, 'start': s, 'end': e,
                       'status': 'cancelled' if rng.random() < 0.07 else 'scheduled', 'created_at': created.strftime(FMT)}
        past = s < NOW
        for g in guests:
            inv_n += 1
            resp = rng.choices(['accepted', 'declined', 'tentative', 'pending'], [70, 15, 10, 5] if past else [35, 10, 10, 45])[0]
            answered = min(created + dt.timedelta(hours=rng.randint(1, 30)), dt.datetime.strptime(NOW, FMT) - dt.timedelta(minutes=30))
            invitations[f'I{inv_n:05d}'] = {'event_id': eid, 'person_id': g, 'response': resp,
                                            'responded_at': None if resp == 'pending' else answered.strftime(FMT)}
    return state


def tasks(state: dict) -> list[Task]:
    people, rooms, events, invs = (state[k] for k in ('people', 'rooms', 'events', 'invitations'))
    names = [p['name'] for p in people.values()]
    unique = [k for k, p in sorted(people.items()) if p['active'] and names.count(p['name']) == 1]
    future = [(k, e) for k, e in sorted(events.items()) if e['status'] == 'scheduled' and e['start'] > NOW and people[e['organizer_id']]['active']]
    used: set[str] = set()

    def slot(day: dt.date, hm: str, minutes: int) -> tuple[str, str]:
        s = dt.datetime.strptime(f'{day.isoformat()}T{hm}', FMT)
        return s.strftime(FMT), (s + dt.timedelta(minutes=minutes)).strftime(FMT)

    def free_rooms(s: str, e: str, cap: int, building: str | None = None, video: bool = False, skip: str | None = None) -> list[str]:
        fits = [k for k, r in sorted(rooms.items()) if r['status'] == 'open' and r['capacity'] >= cap and (building is None or r['building'] == building)
                and (r['has_video'] or not video) and room_free(state, k, s, e, skip)]
        return sorted(fits, key=lambda k: (rooms[k]['capacity'], k))

    def smallest(*a, **kw) -> str | None:
        "The single smallest free room that fits, or None when there is none or two tie (an ambiguous request)."
        fits = free_rooms(*a, **kw)
        return fits[0] if fits and (len(fits) == 1 or rooms[fits[0]]['capacity'] < rooms[fits[1]]['capacity']) else None

    def agenda_unique(pid: str, eid: str) -> bool:
        "No other meeting of the person's on that day has the same title."
        e = events[eid]; mine = invitees_of(pid)
        return not any(k != eid and x['title'] == e['title'] and x['start'][:10] == e['start'][:10] and (x['organizer_id'] == pid or k in mine)
                       for k, x in events.items())

    def invitees_of(pid: str) -> set[str]: return {i['event_id'] for i in invs.values() if i['person_id'] == pid}

    # 1. a new meeting with three colleagues in the smallest free video room of a building
    day = TODAY + dt.timedelta(days=2)
    s1, e1 = slot(day, '14:00', 60)
    org, building = next((o, b) for o in unique for b in sorted(BUILDINGS) if not person_busy(state, o, s1, e1) and smallest(s1, e1, 4, b, True))
    mates = [p for p in unique if p != org][:3]
    room1 = smallest(s1, e1, 4, building, True)
    used.add(org)
    # 2. accept one invitation and decline another
    pend = {}
    for k, i in sorted(invs.items()):
        ev = events[i['event_id']]
        if i['response'] == 'pending' and ev['status'] == 'scheduled' and ev['start'] > NOW: pend.setdefault(i['person_id'], []).append(i['event_id'])
    rsvp = next(p for p in unique if len([e for e in pend.get(p, []) if agenda_unique(p, e)]) >= 2 and p not in used)
    acc, dec = [e for e in pend[rsvp] if agenda_unique(rsvp, e)][:2]
    used.add(rsvp)
    # 3. move a meeting to the same time on the next working day, keeping its room
    def next_workday(d: dt.date) -> dt.date:
        d += dt.timedelta(days=1)
        while d.weekday() >= 5: d += dt.timedelta(days=1)
        return d
    def moved(e): return dt.datetime.combine(next_workday(dt.date.fromisoformat(e['start'][:10])), dt.time.fromisoformat(e['start'][11:]))
    def moved_end(e): return moved(e) + (dt.datetime.strptime(e['end'], FMT) - dt.datetime.strptime(e['start'], FMT))
    resched, ev3 = next((k, e) for k, e in future if e['room_id'] and e['organizer_id'] not in used
                        and room_free(state, e['room_id'], moved(e).strftime(FMT), moved_end(e).strftime(FMT), k)
                        and not person_busy(state, e['organizer_id'], moved(e).strftime(FMT), moved_end(e).strftime(FMT), k)
                        and any(i['response'] == 'accepted' for i in invs.values() if i['event_id'] == k))
    used.add(ev3['organizer_id'])
    # 4. cancel a meeting
    cancel, ev4 = next((k, e) for k, e in future if e['organizer_id'] not in used and agenda_unique(e['organizer_id'], k))
    used.add(ev4['organizer_id'])
    # 5. two more guests need a bigger room in the same building
    def growable(k, e):
        if not e['room_id'] or e['organizer_id'] in used: return False
        need = headcount(state, k) + 2
        return rooms[e['room_id']]['capacity'] < need and smallest(e['start'], e['end'], need, rooms[e['room_id']]['building'], skip=k) is not None
    grow, ev5 = next((k, e) for k, e in future if growable(k, e))
    extra = [p for p in unique if p != ev5['organizer_id'] and p not in invitees(state, grow)][:2]
    need5 = headcount(state, grow) + 2
    room5 = smallest(ev5['start'], ev5['end'], need5, rooms[ev5['room_id']]['building'], skip=grow)
    used.add(ev5['organizer_id'])
    # 6. a room-less meeting gets the smallest free room with video
    roomless, ev6 = next((k, e) for k, e in future if e['room_id'] is None and e['organizer_id'] not in used
                         and smallest(e['start'], e['end'], headcount(state, k), video=True))
    room6 = smallest(ev6['start'], ev6['end'], headcount(state, roomless), video=True)
    dur6 = int((dt.datetime.strptime(ev6['end'], FMT) - dt.datetime.strptime(ev6['start'], FMT)).total_seconds() // 60)
    # 7. read-only: who declined
    declined, ev7 = next((k, e) for k, e in sorted(events.items()) if e['status'] == 'scheduled' and e['start'] > NOW
                         and any(i['response'] == 'declined' for i in invs.values() if i['event_id'] == k))
    p = people
    return [
        Task(id='calendar-book-meeting', env_id='calendar',
             instruction=(f"Hi, this is {p[org]['name']} ({p[org]['email']}). Please set up a 60-minute meeting called 'Quarterly roadmap sync' "
                          f"on {day.strftime('%A %d %B %Y')} at 14:00 with {', '.join(p[m]['name'] for m in mates[:2])} and {p[mates[2]]['name']}. "
                          f"Book the smallest free room with video in the {building} building that fits all four of us."),
             gold_actions=[Action(name='search_people', arguments={'query': p[org]['email']}),
                           *[Action(name='search_people', arguments={'query': p[m]['name']}) for m in mates],
                           Action(name='find_free_rooms', arguments={'start': s1, 'duration_minutes': 60, 'min_capacity': 4, 'building': building, 'needs_video': True}),
                           Action(name='schedule_meeting', arguments={'organizer_id': org, 'meeting_title': 'Quarterly roadmap sync', 'start': s1,
                                                                      'duration_minutes': 60, 'attendee_ids': mates, 'room_id': room1})],
             user_context={'person_id': org, 'email': p[org]['email'], 'attendees': [p[m]['name'] for m in mates], 'building': building}),
        Task(id='calendar-rsvp', env_id='calendar',
             instruction=(f"I'm {p[rsvp]['name']} (id {rsvp}). I have two open invitations: please accept '{events[acc]['title']}' on "
                          f"{events[acc]['start'][:10]} at {events[acc]['start'][11:]} and decline '{events[dec]['title']}' on {events[dec]['start'][:10]} at {events[dec]['start'][11:]}."),
             gold_actions=[Action(name='view_agenda', arguments={'person_id': rsvp, 'date': events[acc]['start'][:10]}),
                           Action(name='respond_to_invite', arguments={'event_id': acc, 'person_id': rsvp, 'response': 'accepted'}),
                           Action(name='view_agenda', arguments={'person_id': rsvp, 'date': events[dec]['start'][:10]}),
                           Action(name='respond_to_invite', arguments={'event_id': dec, 'person_id': rsvp, 'response': 'declined'})],
             user_context={'person_id': rsvp, 'accept': events[acc]['title'], 'decline': events[dec]['title']}),
        Task(id='calendar-reschedule', env_id='calendar',
             instruction=(f"I'm {p[ev3['organizer_id']]['name']} (id {ev3['organizer_id']}). My meeting {resched} ('{ev3['title']}') has to move to the same "
                          f"time on the next working day. Keep the same room, please."),
             gold_actions=[Action(name='view_meeting', arguments={'event_id': resched}),
                           Action(name='reschedule_meeting', arguments={'event_id': resched, 'organizer_id': ev3['organizer_id'], 'new_start': moved(ev3).strftime(FMT)})],
             user_context={'person_id': ev3['organizer_id'], 'event_id': resched, 'new_start': moved(ev3).strftime(FMT)}),
        Task(id='calendar-cancel', env_id='calendar',
             instruction=(f"This is {p[ev4['organizer_id']]['name']}, {p[ev4['organizer_id']]['email']}. Please cancel my meeting '{ev4['title']}' "
                          f"on {ev4['start'][:10]}; it is no longer needed."),
             gold_actions=[Action(name='search_people', arguments={'query': p[ev4['organizer_id']]['email']}),
                           Action(name='view_agenda', arguments={'person_id': ev4['organizer_id'], 'date': ev4['start'][:10]}),
                           Action(name='cancel_meeting', arguments={'event_id': cancel, 'organizer_id': ev4['organizer_id']})],
             user_context={'person_id': ev4['organizer_id'], 'email': p[ev4['organizer_id']]['email'], 'title': ev4['title'], 'date': ev4['start'][:10]}),
        Task(id='calendar-grow-meeting', env_id='calendar',
             instruction=(f"I'm {p[ev5['organizer_id']]['name']} (id {ev5['organizer_id']}). Please add {p[extra[0]]['name']} and {p[extra[1]]['name']} "
                          f"to my meeting {grow}. The current room is too small then, so first move us to the smallest free room in the same building "
                          f"that fits everyone."),
             gold_actions=[Action(name='view_meeting', arguments={'event_id': grow}),
                           *[Action(name='search_people', arguments={'query': p[x]['name']}) for x in extra],
                           Action(name='find_free_rooms', arguments={'start': ev5['start'], 'duration_minutes': int((dt.datetime.strptime(ev5['end'], FMT) - dt.datetime.strptime(ev5['start'], FMT)).total_seconds() // 60),
                                                                     'min_capacity': need5, 'building': rooms[ev5['room_id']]['building']}),
                           Action(name='assign_room', arguments={'event_id': grow, 'organizer_id': ev5['organizer_id'], 'room_id': room5}),
                           Action(name='invite_attendees', arguments={'event_id': grow, 'organizer_id': ev5['organizer_id'], 'person_ids': extra})],
             user_context={'person_id': ev5['organizer_id'], 'event_id': grow, 'new_guests': [p[x]['name'] for x in extra]}),
        Task(id='calendar-add-room', env_id='calendar',
             instruction=(f"I'm {p[ev6['organizer_id']]['name']} (id {ev6['organizer_id']}). My meeting {roomless} has no room yet. Book the smallest free "
                          f"room with video that fits everyone who hasn't declined."),
             gold_actions=[Action(name='view_meeting', arguments={'event_id': roomless}),
                           Action(name='find_free_rooms', arguments={'start': ev6['start'], 'duration_minutes': dur6, 'min_capacity': headcount(state, roomless), 'needs_video': True}),
                           Action(name='assign_room', arguments={'event_id': roomless, 'organizer_id': ev6['organizer_id'], 'room_id': room6})],
             user_context={'person_id': ev6['organizer_id'], 'event_id': roomless}),
        Task(id='calendar-who-declined', env_id='calendar',
             instruction=f"Who has declined the meeting {declined} ('{ev7['title']}')? Just tell me; don't change anything.",
             gold_actions=[Action(name='view_meeting', arguments={'event_id': declined})],
             user_context={'event_id': declined}),
    ]


def tool_tests(state: dict) -> list[ToolTest]:
    events, rooms, people = state['events'], state['rooms'], state['people']
    fut = next((k, e) for k, e in sorted(events.items()) if e['status'] == 'scheduled' and e['start'] > NOW and people[e['organizer_id']]['active'])
    other = next(k for k in sorted(people) if k != fut[1]['organizer_id'])
    shut = next(k for k, r in sorted(rooms.items()) if r['status'] == 'maintenance')
    outsider = next(k for k in sorted(people) if k not in invitees(state, fut[0]) and k != fut[1]['organizer_id'])
    org = fut[1]['organizer_id']
    full = next((k, e) for k, e in sorted(events.items()) if e['status'] == 'scheduled' and e['start'] > NOW and e['room_id']
                and people[e['organizer_id']]['active'] and headcount(state, k) == rooms[e['room_id']]['capacity'])
    guest = next(k for k, p in sorted(people.items()) if p['active'] and k not in invitees(state, full[0]) and k != full[1]['organizer_id'])
    return [
        ToolTest(name='unknown person', calls=[ToolTestCall(name='view_agenda', arguments={'person_id': 'P9999', 'date': '2026-04-14'}, expect='execution_error')]),
        ToolTest(name='meeting in the past', calls=[ToolTestCall(name='schedule_meeting', arguments={'organizer_id': org, 'meeting_title': 'Late', 'start': '2026-04-10T10:00',
                                                                                                   'duration_minutes': 30, 'attendee_ids': [outsider]}, expect='execution_error')]),
        ToolTest(name='weekend slot', calls=[ToolTestCall(name='find_free_rooms', arguments={'start': '2026-04-18T10:00', 'duration_minutes': 30}, expect='execution_error')]),
        ToolTest(name='room under maintenance', calls=[ToolTestCall(name='assign_room', arguments={'event_id': fut[0], 'organizer_id': org, 'room_id': shut}, expect='execution_error')]),
        ToolTest(name='not invited', calls=[ToolTestCall(name='respond_to_invite', arguments={'event_id': fut[0], 'person_id': outsider, 'response': 'accepted'}, expect='execution_error')]),
        ToolTest(name='only the organizer cancels', calls=[ToolTestCall(name='cancel_meeting', arguments={'event_id': fut[0], 'organizer_id': other}, expect='execution_error')]),
        ToolTest(name='bad response value', calls=[ToolTestCall(name='respond_to_invite', arguments={'event_id': fut[0], 'person_id': outsider, 'response': 'maybe'}, expect='invalid_arguments')]),
        ToolTest(name='duration must be a number', calls=[ToolTestCall(name='find_free_rooms', arguments={'start': '2026-04-14T10:00', 'duration_minutes': 'an hour'}, expect='invalid_arguments')]),
        ToolTest(name='cancelled meetings cannot be moved', calls=[
            ToolTestCall(name='cancel_meeting', arguments={'event_id': fut[0], 'organizer_id': org}),
            ToolTestCall(name='reschedule_meeting', arguments={'event_id': fut[0], 'organizer_id': org, 'new_start': '2026-04-24T09:00'}, expect='execution_error'),
            ToolTestCall(name='invite_attendees', arguments={'event_id': fut[0], 'organizer_id': org, 'person_ids': [outsider]}, expect='execution_error')]),
        ToolTest(name='team filter', calls=[ToolTestCall(name='search_people', arguments={'query': '', 'team': 'Design', 'limit': 3})]),
        ToolTest(name='a room without video is free, but not for a video call', calls=[
            ToolTestCall(name='find_free_rooms', arguments={'start': '2026-04-14T14:00', 'duration_minutes': 30, 'building': 'Mill', 'needs_video': False}),
            ToolTestCall(name='find_free_rooms', arguments={'start': '2026-04-14T14:00', 'duration_minutes': 30, 'building': 'Mill', 'needs_video': True})]),
        ToolTest(name='move a meeting into a room under maintenance', calls=[
            ToolTestCall(name='reschedule_meeting', arguments={'event_id': fut[0], 'organizer_id': org, 'new_start': '2026-04-24T16:00', 'new_room_id': shut},
                         expect='execution_error'),
            ToolTestCall(name='reschedule_meeting', arguments={'event_id': fut[0], 'organizer_id': org, 'new_start': '2026-04-24T16:00'})]),
        ToolTest(name='no seat left in the booked room', calls=[
            ToolTestCall(name='invite_attendees', arguments={'event_id': full[0], 'organizer_id': full[1]['organizer_id'], 'person_ids': [guest]},
                         expect='execution_error')]),
    ]


def build(folder: Path = HERE):
    state = seed_state(random.Random(20260413))
    return write_environment(
        folder, 'calendar', (HERE / 'tools.py').read_text(), 'CalendarTools', state, tasks(state), tool_tests(state),
        description='A team calendar and meeting-room booking service: people search, agendas, room availability, meetings, invitations and RSVPs.',
        policy=('You are the office calendar assistant. Identify the person (id or email) before acting for them; only a meeting\'s '
                'organizer may move, cancel, re-room or extend it, and an invitee answers only for themselves. Meetings are on weekdays '
                'between 07:00 and 20:00, 15 to 240 minutes long, starting on the quarter hour. A booked room must be open, free and seat '
                'everyone who has not declined. Moving a meeting resets every response to pending; tell the organizer.'),
        clock_start=CLOCK_START, provenance={'author': 'hand-written', 'seed': 20260413}, trusted=True)


if __name__ == '__main__':
    env = build()
    print(env, {t: n for t, n in env.metadata['tables'].items()})
