"""The front desk of a small hotel chain: properties with room types and rooms, guest profiles with loyalty
tiers, bookings priced night by night, check-in with room assignment, extras on the folio, check-out with an invoice."""
import datetime as dt
from typing import Literal

from pydantic import Field

from envsynth.envs import Row, Toolkit, ToolFailure, read_tool, write_tool

MAX_NIGHTS = 14
WEEKEND_UPLIFT = 1.2                 # Friday and Saturday nights
NONREFUNDABLE_DISCOUNT = 0.10
MEMBER_DISCOUNT = {'none': 0.0, 'silver': 0.05, 'gold': 0.10}
TIER_POINTS = (('gold', 5000), ('silver', 1500))
FREE_CANCEL_DAYS = 2                 # flexible bookings cancel free up to this many days before arrival
EXTRAS = {'breakfast': 18.5, 'parking': 22.0, 'minibar': 6.0, 'spa': 45.0, 'laundry': 12.0, 'late_checkout': 30.0}
ACTIVE = ('confirmed', 'checked_in')

RatePlan = Literal['flexible', 'nonrefundable']
Extra = Literal['breakfast', 'parking', 'minibar', 'spa', 'laundry', 'late_checkout']


class Property(Row):
    name: str
    city: str
    phone: str
    city_tax: float = Field(ge=0)            # per adult per night, added at check-out


class RoomType(Row):
    property_id: str
    name: str
    beds: str
    max_guests: int = Field(ge=1)
    base_rate: float = Field(gt=0)


class Room(Row):
    property_id: str
    room_type_id: str
    number: str
    floor: int
    status: Literal['clean', 'dirty', 'occupied', 'out_of_service']


class Guest(Row):
    name: str
    email: str
    phone: str
    loyalty_tier: Literal['none', 'silver', 'gold']
    loyalty_points: int = Field(ge=0)
    blocked: bool


class Booking(Row):
    guest_id: str
    property_id: str
    room_type_id: str
    room_id: str | None
    arrival: str
    departure: str
    adults: int = Field(ge=1)
    rate_plan: RatePlan
    nightly_rates: list[float]
    status: Literal['confirmed', 'checked_in', 'checked_out', 'cancelled', 'no_show']
    booked_on: str


class Charge(Row):
    booking_id: str
    item: Literal['breakfast', 'parking', 'minibar', 'spa', 'laundry', 'late_checkout', 'cancellation_fee']
    quantity: int = Field(ge=1)
    unit_price: float
    amount: float
    posted_on: str


class Invoice(Row):
    booking_id: str
    guest_id: str
    issued_on: str
    room_total: float
    extras_total: float
    city_tax: float
    total: float
    payment_method: Literal['card', 'cash', 'company_account']


def nights_between(arrival: dt.date, departure: dt.date) -> list[dt.date]:
    return [arrival + dt.timedelta(days=i) for i in range((departure - arrival).days)]


def nightly_rate(base: float, night: dt.date, plan: str, tier: str) -> float:
    rate = base * (WEEKEND_UPLIFT if night.weekday() in (4, 5) else 1.0)
    return round(rate * (1 - (NONREFUNDABLE_DISCOUNT if plan == 'nonrefundable' else 0.0)) * (1 - MEMBER_DISCOUNT[tier]), 2)


class HotelTools(Toolkit):
    tables = {'properties': Property, 'room_types': RoomType, 'rooms': Room, 'guests': Guest, 'bookings': Booking,
              'charges': Charge, 'invoices': Invoice}

    def _today(self) -> dt.date: return self.now().date()

    def _dates(self, arrival: str, departure: str) -> tuple[dt.date, dt.date]:
        try: a, d = dt.date.fromisoformat(arrival), dt.date.fromisoformat(departure)
        except ValueError: raise ToolFailure('dates must be given as YYYY-MM-DD') from None
        if d <= a: raise ToolFailure('departure must be after arrival')
        if (d - a).days > MAX_NIGHTS: raise ToolFailure(f'a stay can be at most {MAX_NIGHTS} nights')
        if a < self._today(): raise ToolFailure(f'arrival {arrival} is in the past')
        return a, d

    def _free_rooms(self, room_type_id: str, a: dt.date, d: dt.date) -> int:
        "Rooms of a type left on the busiest night of [a, d)."
        rooms = sum(1 for r in self.db.rooms.values() if r['room_type_id'] == room_type_id and r['status'] != 'out_of_service')
        busiest = max(sum(1 for b in self.db.bookings.values() if b['room_type_id'] == room_type_id and b['status'] in ACTIVE
                          and b['arrival'] <= n.isoformat() < b['departure']) for n in nights_between(a, d))
        return rooms - busiest

    def _booking(self, booking_id: str, *statuses: str) -> dict:
        b = self.row('bookings', booking_id, 'booking')
        if statuses and b['status'] not in statuses: raise ToolFailure(f"booking {booking_id} is {b['status']}; this needs a booking that is {' or '.join(statuses)}")
        return b

    def _extras(self, booking_id: str) -> list[dict]:
        return [{'charge_id': k, **c} for k, c in sorted(self.db.charges.items()) if c['booking_id'] == booking_id]

    def _free_room_ok(self, room_id: str, b: dict) -> dict:
        room = self.row('rooms', room_id, 'room')
        if room['property_id'] != b['property_id']: raise ToolFailure(f"room {room_id} is not at property {b['property_id']}")
        if room['status'] != 'clean': raise ToolFailure(f"room {room['number']} is {room['status']}; only clean, free rooms can be assigned")
        if self.db.room_types[room['room_type_id']]['max_guests'] < b['adults']: raise ToolFailure(f"room {room['number']} sleeps fewer than {b['adults']} guests")
        return room

    @read_tool
    def find_guest_profile(self, query: str) -> list[dict]:
        """Find guest profiles by exact email address or by words in the guest's name, with their bookings.

        Args:
            query: an email address, or words of the guest's name (case-insensitive)
        """
        q = query.strip().lower()
        hits = [(k, g) for k, g in sorted(self.db.guests.items()) if g['email'].lower() == q] or \
               [(k, g) for k, g in sorted(self.db.guests.items()) if q and all(w in g['name'].lower() for w in q.split())]
        out = []
        for k, g in hits[:5]:
            bookings = [{'booking_id': bk, 'property': self.db.properties[b['property_id']]['name'], 'room_type': self.db.room_types[b['room_type_id']]['name'],
                         'arrival': b['arrival'], 'departure': b['departure'], 'status': b['status']}
                        for bk, b in sorted(self.db.bookings.items()) if b['guest_id'] == k]
            out.append({'guest_id': k, 'name': g['name'], 'email': g['email'], 'loyalty_tier': g['loyalty_tier'],
                        'loyalty_points': g['loyalty_points'], 'bookings': bookings})
        return out

    @read_tool
    def quote_stay(self, property_id: str, arrival: str, departure: str, adults: int, rate_plan: RatePlan = 'flexible', guest_id: str | None = None) -> list[dict]:
        """Availability and prices of every room type at a property for a stay. Friday and Saturday nights cost 20% more,
        non-refundable rates are 10% cheaper, and silver/gold members get 5%/10% off.

        Args:
            property_id: the hotel's id, e.g. 'P01'
            arrival: arrival date, YYYY-MM-DD
            departure: departure date, YYYY-MM-DD
            adults: number of adults staying
            rate_plan: 'flexible' (free cancellation until 2 days before arrival) or 'nonrefundable'
            guest_id: the guest's id, to apply their member discount
        """
        self.row('properties', property_id, 'property')
        a, d = self._dates(arrival, departure)
        tier = self.row('guests', guest_id, 'guest')['loyalty_tier'] if guest_id else 'none'
        out = []
        for k, t in sorted(self.db.room_types.items()):
            if t['property_id'] != property_id: continue
            rates = [nightly_rate(t['base_rate'], n, rate_plan, tier) for n in nights_between(a, d)]
            out.append({'room_type_id': k, 'name': t['name'], 'beds': t['beds'], 'max_guests': t['max_guests'], 'fits_party': adults <= t['max_guests'],
                        'rooms_left': max(0, self._free_rooms(k, a, d)), 'nightly_rates': rates, 'total': round(sum(rates), 2)})
        return out

    @read_tool
    def get_booking_folio(self, booking_id: str) -> dict:
        """A booking with its nightly rates, extras posted so far, expected city tax, the running total and the invoice
        once checked out.

        Args:
            booking_id: the booking's id, e.g. 'B00042'
        """
        b = self._booking(booking_id)
        extras = self._extras(booking_id)
        room_total = round(sum(b['nightly_rates']), 2) if b['status'] != 'cancelled' else 0.0
        tax = round(self.db.properties[b['property_id']]['city_tax'] * b['adults'] * len(b['nightly_rates']), 2) if b['status'] != 'cancelled' else 0.0
        room = self.db.rooms[b['room_id']]['number'] if b['room_id'] else None
        invoice = next(({'invoice_id': k, **i} for k, i in sorted(self.db.invoices.items()) if i['booking_id'] == booking_id), None)
        return {'booking_id': booking_id, **b, 'room_number': room, 'room_total': room_total, 'extras': extras,
                'city_tax': tax, 'total': round(room_total + sum(c['amount'] for c in extras) + tax, 2), 'invoice': invoice}

    @write_tool('bookings')
    def reserve_stay(self, guest_id: str, property_id: str, room_type_id: str, arrival: str, departure: str, adults: int,
                     rate_plan: RatePlan = 'flexible') -> dict:
        """Book a room type for a guest at the quoted nightly rates. At most 14 nights; the party must fit the room type;
        blocked guests cannot book; a guest cannot hold two overlapping bookings at the same hotel.

        Args:
            guest_id: the guest's id, e.g. 'G00017'
            property_id: the hotel's id
            room_type_id: the room type to book, e.g. 'T03'
            arrival: arrival date, YYYY-MM-DD
            departure: departure date, YYYY-MM-DD
            adults: number of adults staying (at least 1)
            rate_plan: 'flexible' or 'nonrefundable'
        """
        g = self.row('guests', guest_id, 'guest')
        self.row('properties', property_id, 'property')
        t = self.row('room_types', room_type_id, 'room type')
        if t['property_id'] != property_id: raise ToolFailure(f'room type {room_type_id} belongs to another property')
        if g['blocked']: raise ToolFailure(f'guest {guest_id} is blocked from booking; refer them to the duty manager')
        if adults < 1: raise ToolFailure('at least one adult must stay')
        if adults > t['max_guests']: raise ToolFailure(f"a {t['name']} sleeps at most {t['max_guests']}")
        a, d = self._dates(arrival, departure)
        if any(b['guest_id'] == guest_id and b['property_id'] == property_id and b['status'] in ACTIVE and b['arrival'] < departure and arrival < b['departure']
               for b in self.db.bookings.values()): raise ToolFailure(f'guest {guest_id} already has a booking at {property_id} on those dates')
        if self._free_rooms(room_type_id, a, d) <= 0: raise ToolFailure(f"no {t['name']} is free for every night from {arrival} to {departure}")
        bid = self.next_id('bookings', 'B')
        self.db.bookings[bid] = {'guest_id': guest_id, 'property_id': property_id, 'room_type_id': room_type_id, 'room_id': None,
                                 'arrival': arrival, 'departure': departure, 'adults': adults, 'rate_plan': rate_plan,
                                 'nightly_rates': [nightly_rate(t['base_rate'], n, rate_plan, g['loyalty_tier']) for n in nights_between(a, d)],
                                 'status': 'confirmed', 'booked_on': self._today().isoformat()}
        b = self.db.bookings[bid]
        return {'booking_id': bid, **b, 'total': round(sum(b['nightly_rates']), 2)}

    @write_tool('bookings', 'charges')
    def cancel_guest_booking(self, booking_id: str) -> dict:
        """Cancel a confirmed booking. Flexible bookings are free until 2 days before arrival, later the first night is
        charged; non-refundable bookings are charged in full.

        Args:
            booking_id: the booking's id
        """
        b = self._booking(booking_id, 'confirmed')
        days = (dt.date.fromisoformat(b['arrival']) - self._today()).days
        if b['rate_plan'] == 'nonrefundable': fee = round(sum(b['nightly_rates']), 2)
        else: fee = 0.0 if days >= FREE_CANCEL_DAYS else b['nightly_rates'][0]
        b['status'] = 'cancelled'
        if fee > 0:
            self.db.charges[self.next_id('charges', 'C')] = {'booking_id': booking_id, 'item': 'cancellation_fee', 'quantity': 1, 'unit_price': fee,
                                                              'amount': fee, 'posted_on': self._today().isoformat()}
        return {'booking_id': booking_id, 'status': 'cancelled', 'cancellation_fee': fee}

    @write_tool('bookings', 'rooms')
    def check_in_guest(self, booking_id: str, room_id: str | None = None) -> dict:
        """Check a guest in on their arrival day and give them a room: the requested one (a clean, free room of the booked
        type) or else the lowest-numbered clean room of the booked type.

        Args:
            booking_id: the booking's id
            room_id: a specific room to assign, e.g. 'P02-214'; leave out to pick one automatically
        """
        b = self._booking(booking_id, 'confirmed')
        if b['arrival'] != self._today().isoformat(): raise ToolFailure(f"booking {booking_id} arrives on {b['arrival']}; check-in is only on the arrival day")
        if room_id is not None:
            room = self._free_room_ok(room_id, b)
            if room['room_type_id'] != b['room_type_id']: raise ToolFailure(f"room {room['number']} is not a {self.db.room_types[b['room_type_id']]['name']}")
        else:
            free = [k for k, r in sorted(self.db.rooms.items(), key=lambda kv: kv[1]['number']) if r['room_type_id'] == b['room_type_id'] and r['status'] == 'clean']
            if not free: raise ToolFailure('no clean room of the booked type is ready; ask housekeeping or assign another room')
            room_id, room = free[0], self.db.rooms[free[0]]
        room['status'] = 'occupied'
        b['room_id'], b['status'] = room_id, 'checked_in'
        return {'booking_id': booking_id, 'status': 'checked_in', 'room_id': room_id, 'room_number': room['number'], 'floor': room['floor'],
                'departure': b['departure']}

    @write_tool('bookings', 'rooms')
    def move_guest_room(self, booking_id: str, room_id: str) -> dict:
        """Move a checked-in guest to another clean room at the same hotel (at no extra cost). The old room is left for
        housekeeping.

        Args:
            booking_id: the booking's id
            room_id: the room to move the guest into
        """
        b = self._booking(booking_id, 'checked_in')
        if room_id == b['room_id']: raise ToolFailure(f'the guest is already in room {room_id}')
        room = self._free_room_ok(room_id, b)
        self.db.rooms[b['room_id']]['status'] = 'dirty'
        room['status'], b['room_id'] = 'occupied', room_id
        return {'booking_id': booking_id, 'room_id': room_id, 'room_number': room['number'], 'room_type': self.db.room_types[room['room_type_id']]['name']}

    @write_tool('charges')
    def post_extra_charge(self, booking_id: str, item: Extra, quantity: int = 1) -> dict:
        """Add an extra to a checked-in guest's folio at the house price: breakfast 18.50 per person, parking 22.00 per night,
        minibar 6.00 per item, spa 45.00, laundry 12.00 per bag, late check-out 30.00 (once per stay).

        Args:
            booking_id: the booking's id
            item: breakfast, parking, minibar, spa, laundry or late_checkout
            quantity: how many, 1-10
        """
        self._booking(booking_id, 'checked_in')
        if not 1 <= quantity <= 10: raise ToolFailure('quantity must be between 1 and 10')
        if item == 'late_checkout' and (quantity > 1 or any(c['item'] == 'late_checkout' for c in self._extras(booking_id))):
            raise ToolFailure('late check-out can be added once per stay')
        cid = self.next_id('charges', 'C')
        self.db.charges[cid] = {'booking_id': booking_id, 'item': item, 'quantity': quantity, 'unit_price': EXTRAS[item],
                                'amount': round(EXTRAS[item] * quantity, 2), 'posted_on': self._today().isoformat()}
        return {'charge_id': cid, **self.db.charges[cid]}

    @write_tool('bookings', 'rooms', 'invoices', 'guests')
    def check_out_guest(self, booking_id: str, payment_method: Literal['card', 'cash', 'company_account']) -> dict:
        """Check a guest out: settle all booked nights, extras and city tax on an invoice, free the room for housekeeping,
        and credit loyalty points (1 per whole unit of room revenue; 1500 points make silver, 5000 gold).

        Args:
            booking_id: the booking's id
            payment_method: how the guest pays: card, cash or company_account
        """
        b = self._booking(booking_id, 'checked_in')
        room_total = round(sum(b['nightly_rates']), 2)
        extras = round(sum((c['amount'] for c in self._extras(booking_id)), 0.0), 2)
        tax = round(self.db.properties[b['property_id']]['city_tax'] * b['adults'] * len(b['nightly_rates']), 2)
        iid = self.next_id('invoices', 'I')
        self.db.invoices[iid] = {'booking_id': booking_id, 'guest_id': b['guest_id'], 'issued_on': self._today().isoformat(), 'room_total': room_total,
                                 'extras_total': extras, 'city_tax': tax, 'total': round(room_total + extras + tax, 2), 'payment_method': payment_method}
        b['status'] = 'checked_out'
        self.db.rooms[b['room_id']]['status'] = 'dirty'
        g = self.db.guests[b['guest_id']]
        g['loyalty_points'] += int(room_total)
        for tier, points in TIER_POINTS:
            if g['loyalty_points'] >= points and list(MEMBER_DISCOUNT).index(tier) > list(MEMBER_DISCOUNT).index(g['loyalty_tier']): g['loyalty_tier'] = tier; break
        return {'invoice_id': iid, **self.db.invoices[iid], 'loyalty_points': g['loyalty_points'], 'loyalty_tier': g['loyalty_tier']}
