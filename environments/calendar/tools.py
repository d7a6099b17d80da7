"""A team calendar and meeting-room booking service: people, rooms, meetings and invitations with RSVPs."""
import datetime as dt
from typing import Literal

from pydantic import Field

from envsynth.envs import Row, Toolkit, ToolFailure, read_tool, write_tool

DAY_START, DAY_END = '07:00', '20:00'
MIN_MINUTES, MAX_MINUTES = 15, 240
MAX_ATTENDEES = 30
FMT = '%Y-%m-%dT%H:%M'


class Person(Row):
    name: str
    email: str
    team: str
    role: str
    active: bool


class Room(Row):
    name: str
    building: str
    floor: int
    capacity: int = Field(ge=1)
    has_video: bool
    status: Literal['open', 'maintenance']


class Event(Row):
    title: str
    organizer_id: str
    room_id: str | None
    start: str
    end: str
    status: Literal['scheduled', 'cancelled']
    created_at: str


class Invitation(Row):
    event_id: str
    person_id: str
    response: Literal['pending', 'accepted', 'declined', 'tentative']
    responded_at: str | None


class CalendarTools(Toolkit):
    tables = {'people': Person, 'rooms': Room, 'events': Event, 'invitations': Invitation}

    def _person(self, person_id: str) -> dict: return self.row('people', person_id, 'person')

    def _room(self, room_id: str) -> dict: return self.row('rooms', room_id, 'room')

    def _event(self, event_id: str) -> dict: return self.row('events', event_id, 'meeting')

    def _stamp(self) -> str: return self.now().strftime(FMT)

    def _slot(self, start: str, minutes: int) -> tuple[str, str]:
        "Validated (start, end) strings of a meeting slot on a weekday inside office hours, not in the past."
        try: s = dt.datetime.strptime(start, FMT)
        except ValueError: raise ToolFailure(f"start {start!r} must look like 'YYYY-MM-DDTHH:MM'") from None
        if not MIN_MINUTES <= minutes <= MAX_MINUTES or minutes % 15: raise ToolFailure(f'duration must be {MIN_MINUTES} to {MAX_MINUTES} minutes in steps of 15')
        if s.minute % 15: raise ToolFailure('meetings start on the quarter hour')
        if s.weekday() >= 5: raise ToolFailure(f'{s.date()} is a weekend; meetings are booked Monday to Friday')
        e = s + dt.timedelta(minutes=minutes)
        if s.strftime('%H:%M') < DAY_START or e.date() != s.date() or e.strftime('%H:%M') > DAY_END:
            raise ToolFailure(f'meetings must lie between {DAY_START} and {DAY_END}')
        if start < self._stamp(): raise ToolFailure(f'{start} is in the past')
        return s.strftime(FMT), e.strftime(FMT)

    def _clashes(self, person_id: str, start: str, end: str, skip: str | None = None) -> list[str]:
        "Scheduled meetings overlapping [start, end) that the person organizes or has accepted."
        accepted = {i['event_id'] for i in self.db.invitations.values() if i['person_id'] == person_id and i['response'] == 'accepted'}
        return [k for k, e in sorted(self.db.events.items()) if k != skip and e['status'] == 'scheduled' and e['start'] < end and start < e['end']
                and (e['organizer_id'] == person_id or k in accepted)]

    def _room_taken(self, room_id: str, start: str, end: str, skip: str | None = None) -> str | None:
        return next((k for k, e in sorted(self.db.events.items()) if k != skip and e['room_id'] == room_id and e['status'] == 'scheduled'
                     and e['start'] < end and start < e['end']), None)

    def _headcount(self, event_id: str) -> int:
        return 1 + sum(1 for i in self.db.invitations.values() if i['event_id'] == event_id and i['response'] != 'declined')

    def _check_room(self, room_id: str, start: str, end: str, heads: int, skip: str | None = None) -> dict:
        room = self._room(room_id)
        if room['status'] != 'open': raise ToolFailure(f"room {room_id} ({room['name']}) is under maintenance")
        if room['capacity'] < heads: raise ToolFailure(f"room {room_id} ({room['name']}) seats {room['capacity']}, the meeting needs {heads}")
        taken = self._room_taken(room_id, start, end, skip)
        if taken: raise ToolFailure(f"room {room_id} ({room['name']}) is booked by meeting {taken} at that time")
        return room

    def _own_event(self, event_id: str, organizer_id: str) -> dict:
        e = self._event(event_id)
        if e['organizer_id'] != organizer_id: raise ToolFailure(f'only the organizer of {event_id} can change it')
        if e['status'] != 'scheduled': raise ToolFailure(f'meeting {event_id} is cancelled')
        if e['start'] <= self._stamp(): raise ToolFailure(f'meeting {event_id} has already started')
        return e

    @read_tool
    def search_people(self, query: str, team: str | None = None, limit: int = 10) -> list[dict]:
        """Find colleagues by words in their name or email address.

        Args:
            query: words to look for in the person's name or email (case-insensitive)
            team: only people of this team, e.g. 'Platform'
            limit: at most this many results
        """
        words = query.lower().split()
        hits = [{'person_id': k, 'name': p['name'], 'email': p['email'], 'team': p['team'], 'role': p['role'], 'active': p['active']}
                for k, p in sorted(self.db.people.items())
                if all(w in f"{p['name']} {p['email']}".lower() for w in words) and (team is None or p['team'].lower() == team.lower())]
        return hits[:limit]

    @read_tool
    def find_free_rooms(self, start: str, duration_minutes: int, min_capacity: int = 1, building: str | None = None,
                        needs_video: bool = False) -> list[dict]:
        """Rooms that are open and free for a whole slot, smallest first.

        Args:
            start: the slot's start, local office time 'YYYY-MM-DDTHH:MM'
            duration_minutes: length of the slot in minutes (15 to 240, steps of 15)
            min_capacity: the room must seat at least this many people, organizer included
            building: only rooms in this building, e.g. 'North'
            needs_video: only rooms with video-conferencing equipment
        """
        s, e = self._slot(start, duration_minutes)
        rooms = [{'room_id': k, **r} for k, r in sorted(self.db.rooms.items())
                 if r['status'] == 'open' and r['capacity'] >= min_capacity and (building is None or r['building'].lower() == building.lower())
                 and (r['has_video'] or not needs_video) and not self._room_taken(k, s, e)]
        return sorted(rooms, key=lambda r: (r['capacity'], r['room_id']))

    @read_tool
    def view_agenda(self, person_id: str, date: str) -> list[dict]:
        """A person's meetings on one day, as organizer or invitee, with their response.

        Args:
            person_id: the person's id, e.g. 'P0042'
            date: the day, 'YYYY-MM-DD'
        """
        self._person(person_id)
        mine = {i['event_id']: (k, i['response']) for k, i in self.db.invitations.items() if i['person_id'] == person_id}
        out = []
        for k, e in sorted(self.db.events.items(), key=lambda kv: (kv[1]['start'], kv[0])):
            if not e['start'].startswith(date) or (e['organizer_id'] != person_id and k not in mine): continue
            room = self.db.rooms.get(e['room_id']) if e['room_id'] else None
            inv = mine.get(k)
            out.append({'event_id': k, 'title': e['title'], 'start': e['start'], 'end': e['end'], 'status': e['status'],
                        'room': room['name'] if room else None, 'role': 'organizer' if e['organizer_id'] == person_id else 'invitee',
                        'invitation_id': inv[0] if inv else None, 'response': inv[1] if inv else None})
        return out

    @read_tool
    def view_meeting(self, event_id: str) -> dict:
        """A meeting's details: time, room, organizer and every invitee's response.

        Args:
            event_id: the meeting's id, e.g. 'E00123'
        """
        e = self._event(event_id)
        room = self.db.rooms.get(e['room_id']) if e['room_id'] else None
        guests = [{'invitation_id': k, 'person_id': i['person_id'], 'name': self.db.people[i['person_id']]['name'], 'response': i['response']}
                  for k, i in sorted(self.db.invitations.items()) if i['event_id'] == event_id]
        return {'event_id': event_id, **e, 'organizer': self.db.people[e['organizer_id']]['name'],
                'room': {'room_id': e['room_id'], **room} if room else None, 'invitees': guests, 'headcount': self._headcount(event_id)}

    @write_tool('events', 'invitations')
    def schedule_meeting(self, organizer_id: str, meeting_title: str, start: str, duration_minutes: int, attendee_ids: list[str],
                         room_id: str | None = None) -> dict:
        """Put a new meeting in the calendar and invite the attendees. The organizer must be active and free at that
        time; attendees who already have a meeting then are invited anyway and listed under 'conflicts'. A room, if
        given, must be open, free and seat everyone. Meetings are on weekdays between 07:00 and 20:00.

        Args:
            organizer_id: the id of the person who organizes the meeting
            meeting_title: the meeting's title, e.g. 'Design review'
            start: the start, local office time 'YYYY-MM-DDTHH:MM' on a quarter hour
            duration_minutes: length in minutes, 15 to 240 in steps of 15
            attendee_ids: ids of the people to invite (not the organizer), at most 30
            room_id: the room to book, e.g. 'R012'; leave out for a meeting without a room
        """
        org = self._person(organizer_id)
        if not org['active']: raise ToolFailure(f'{organizer_id} is not an active employee')
        if not meeting_title.strip(): raise ToolFailure('the meeting needs a title')
        s, e = self._slot(start, duration_minutes)
        if len(set(attendee_ids)) != len(attendee_ids): raise ToolFailure('attendee_ids lists someone twice')
        if organizer_id in attendee_ids: raise ToolFailure('the organizer is not invited to their own meeting')
        if len(attendee_ids) > MAX_ATTENDEES: raise ToolFailure(f'at most {MAX_ATTENDEES} attendees')
        for a in attendee_ids:
            if not self._person(a)['active']: raise ToolFailure(f'{a} is not an active employee')
        busy = self._clashes(organizer_id, s, e)
        if busy: raise ToolFailure(f'the organizer already has meeting {busy[0]} at that time')
        if room_id is not None: self._check_room(room_id, s, e, 1 + len(attendee_ids))
        event_id = self.next_id('events', 'E')
        self.db.events[event_id] = {'title': meeting_title.strip(), 'organizer_id': organizer_id, 'room_id': room_id, 'start': s, 'end': e,
                                    'status': 'scheduled', 'created_at': self._stamp()}
        for a in attendee_ids:
            self.db.invitations[self.next_id('invitations', 'I')] = {'event_id': event_id, 'person_id': a, 'response': 'pending', 'responded_at': None}
        conflicts = [a for a in attendee_ids if self._clashes(a, s, e, skip=event_id)]
        return {'event_id': event_id, **self.db.events[event_id], 'invited': len(attendee_ids), 'conflicts': conflicts}

    @write_tool('invitations')
    def respond_to_invite(self, event_id: str, person_id: str, response: Literal['accepted', 'declined', 'tentative']) -> dict:
        """Record an invitee's answer to a meeting invitation. Only for scheduled meetings that have not started.

        Args:
            event_id: the meeting's id
            person_id: the invitee's id
            response: 'accepted', 'declined' or 'tentative'
        """
        e = self._event(event_id); self._person(person_id)
        key = next((k for k, i in sorted(self.db.invitations.items()) if i['event_id'] == event_id and i['person_id'] == person_id), None)
        if key is None: raise ToolFailure(f'{person_id} is not invited to {event_id}')
        if e['status'] != 'scheduled': raise ToolFailure(f'meeting {event_id} is cancelled')
        if e['start'] <= self._stamp(): raise ToolFailure(f'meeting {event_id} has already started')
        inv = self.db.invitations[key]
        inv['response'], inv['responded_at'] = response, self._stamp()
        return {'invitation_id': key, 'event_id': event_id, 'response': response, 'headcount': self._headcount(event_id)}

    @write_tool('events', 'invitations')
    def reschedule_meeting(self, event_id: str, organizer_id: str, new_start: str, new_room_id: str | None = None) -> dict:
        """Move a meeting to a new start time, keeping its length. The meeting keeps its room unless a new room is given;
        the room must be free at the new time. Every invitee's response is reset to pending.

        Args:
            event_id: the meeting's id
            organizer_id: the organizer's id (only the organizer can move a meeting)
            new_start: the new start, 'YYYY-MM-DDTHH:MM'
            new_room_id: a different room to book at the new time; leave out to keep the current room
        """
        ev = self._own_event(event_id, organizer_id)
        minutes = int((dt.datetime.strptime(ev['end'], FMT) - dt.datetime.strptime(ev['start'], FMT)).total_seconds() // 60)
        s, e = self._slot(new_start, minutes)
        busy = self._clashes(organizer_id, s, e, skip=event_id)
        if busy: raise ToolFailure(f'the organizer already has meeting {busy[0]} at that time')
        room_id = new_room_id if new_room_id is not None else ev['room_id']
        if room_id is not None: self._check_room(room_id, s, e, self._headcount(event_id), skip=event_id)
        ev['start'], ev['end'], ev['room_id'] = s, e, room_id
        reset = 0
        for i in self.db.invitations.values():
            if i['event_id'] == event_id and i['response'] != 'pending':
                i['response'], i['responded_at'] = 'pending', None; reset += 1
        return {'event_id': event_id, 'start': s, 'end': e, 'room_id': room_id, 'responses_reset': reset}

    @write_tool('events')
    def cancel_meeting(self, event_id: str, organizer_id: str) -> dict:
        """Cancel a meeting that has not started yet; its room is released.

        Args:
            event_id: the meeting's id
            organizer_id: the organizer's id (only the organizer can cancel)
        """
        ev = self._own_event(event_id, organizer_id)
        ev['status'] = 'cancelled'
        return {'event_id': event_id, 'status': 'cancelled', 'room_released': ev['room_id']}

    @write_tool('invitations')
    def invite_attendees(self, event_id: str, organizer_id: str, person_ids: list[str]) -> dict:
        """Invite more people to an upcoming meeting. Everyone must still fit in the booked room.

        Args:
            event_id: the meeting's id
            organizer_id: the organizer's id (only the organizer can invite)
            person_ids: ids of the people to add
        """
        ev = self._own_event(event_id, organizer_id)
        if not person_ids: raise ToolFailure('name at least one person to invite')
        already = {i['person_id'] for i in self.db.invitations.values() if i['event_id'] == event_id}
        for p in person_ids:
            if not self._person(p)['active']: raise ToolFailure(f'{p} is not an active employee')
            if p in already or p == organizer_id: raise ToolFailure(f'{p} is already part of meeting {event_id}')
        if len(set(person_ids)) != len(person_ids): raise ToolFailure('person_ids lists someone twice')
        if len(already) + len(person_ids) > MAX_ATTENDEES: raise ToolFailure(f'at most {MAX_ATTENDEES} attendees')
        heads = self._headcount(event_id) + len(person_ids)
        seats = self.db.rooms[ev['room_id']]['capacity'] if ev['room_id'] else None
        if seats is not None and seats < heads:
            raise ToolFailure(f"room {ev['room_id']} seats {seats}; with these guests the meeting needs {heads}")
        added = []
        for p in person_ids:
            k = self.next_id('invitations', 'I'); added.append(k)
            self.db.invitations[k] = {'event_id': event_id, 'person_id': p, 'response': 'pending', 'responded_at': None}
        return {'event_id': event_id, 'invitation_ids': added, 'headcount': heads}

    @write_tool('events')
    def assign_room(self, event_id: str, organizer_id: str, room_id: str) -> dict:
        """Book a room for an upcoming meeting, or move it to another room. The room must be open, free for the
        whole meeting and seat everyone who has not declined.

        Args:
            event_id: the meeting's id
            organizer_id: the organizer's id (only the organizer can change the room)
            room_id: the room to book, e.g. 'R007'
        """
        ev = self._own_event(event_id, organizer_id)
        if ev['room_id'] == room_id: raise ToolFailure(f'meeting {event_id} is already in room {room_id}')
        room = self._check_room(room_id, ev['start'], ev['end'], self._headcount(event_id), skip=event_id)
        previous, ev['room_id'] = ev['room_id'], room_id
        return {'event_id': event_id, 'room_id': room_id, 'room': room['name'], 'previous_room_id': previous}
