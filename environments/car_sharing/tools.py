"""A city car-sharing service: a fleet parked across zones, members with licence checks and plans, short
reservations, trips billed per minute and per km, balances and damage reports."""
import datetime as dt
import math
from typing import Literal

from pydantic import Field

from envsynth.envs import Row, Toolkit, ToolFailure, read_tool, write_tool

HOLD_MINUTES = 20
UNLOCK_FEE = 1.0
RATES = {'compact': {'minute': 0.29, 'km': 0.19}, 'sedan': {'minute': 0.36, 'km': 0.24}, 'van': {'minute': 0.45, 'km': 0.31}}
MINUTE_DISCOUNT = {'pay_as_you_go': 0.0, 'commuter': 0.15, 'business': 0.25}
DAY_CAP = 69.0            # minute charges are capped at this much per started 24 hours
MIN_ENERGY_TO_RENT = 15   # cars below this fuel/charge level cannot be reserved or started
LOW_ENERGY_PCT, LOW_ENERGY_FEE = 10, 5.0
MAX_BALANCE = 25.0        # members owing more than this cannot reserve or start a trip
MAX_TRIP_KM = 1500

Category = Literal['compact', 'sedan', 'van']


def trip_price(category: str, plan: str, minutes: int, distance_km: float, surcharge: float = 0.0, low_energy: bool = False) -> dict:
    "The price breakdown of a trip (all amounts rounded to cents)."
    per_min = RATES[category]['minute'] * (1 - MINUTE_DISCOUNT[plan])
    minute_charge = round(min(minutes * per_min, DAY_CAP * math.ceil(minutes / 1440)), 2)
    km_charge = round(distance_km * RATES[category]['km'], 2)
    fee = LOW_ENERGY_FEE if low_energy else 0.0
    total = round(UNLOCK_FEE + minute_charge + km_charge + surcharge + fee, 2)
    return {'unlock_fee': UNLOCK_FEE, 'minute_charge': minute_charge, 'km_charge': km_charge, 'zone_surcharge': round(surcharge, 2),
            'low_energy_fee': fee, 'total': total}


class Zone(Row):
    name: str
    district: str
    operating: bool
    drop_surcharge: float = Field(ge=0)


class Vehicle(Row):
    plate: str
    model: str
    category: Category
    powertrain: Literal['petrol', 'electric']
    zone_id: str
    energy_pct: int = Field(ge=0, le=100)
    odometer_km: float = Field(ge=0)
    status: Literal['available', 'reserved', 'in_trip', 'maintenance']


class Member(Row):
    name: str
    email: str
    licence_number: str
    licence_expires: str
    licence_verified: bool
    plan: Literal['pay_as_you_go', 'commuter', 'business']
    balance_due: float = Field(ge=0)
    status: Literal['active', 'suspended']
    joined_on: str


class Reservation(Row):
    vehicle_id: str
    member_id: str
    created_at: str
    expires_at: str
    status: Literal['active', 'started', 'cancelled', 'expired']


class Trip(Row):
    vehicle_id: str
    member_id: str
    reservation_id: str | None
    start_zone_id: str
    end_zone_id: str | None
    started_at: str
    ended_at: str | None
    start_odometer_km: float = Field(ge=0)
    distance_km: float = Field(ge=0)
    minutes: int = Field(ge=0)
    cost: float = Field(ge=0)
    status: Literal['ongoing', 'completed']


class DamageReport(Row):
    vehicle_id: str
    member_id: str
    reported_at: str
    severity: Literal['minor', 'major']
    description: str
    status: Literal['open', 'resolved']


class CarSharingTools(Toolkit):
    tables = {'zones': Zone, 'vehicles': Vehicle, 'members': Member, 'reservations': Reservation, 'trips': Trip,
              'damage_reports': DamageReport}

    def _member(self, member_id: str) -> dict: return self.row('members', member_id, 'member')

    def _vehicle(self, vehicle_id: str) -> dict: return self.row('vehicles', vehicle_id, 'vehicle')

    def _zone_id(self, zone: str) -> str:
        if zone in self.db.zones: return zone
        for k, z in sorted(self.db.zones.items()):
            if z['name'].lower() == zone.strip().lower(): return k
        raise ToolFailure(f'no zone with id or name {zone!r}')

    def _live_reservation(self, member_id: str) -> tuple[str, dict] | None:
        now = self.now()
        return next(((k, r) for k, r in sorted(self.db.reservations.items()) if r['member_id'] == member_id and r['status'] == 'active'
                     and dt.datetime.fromisoformat(r['expires_at']) > now), None)

    def _ongoing_trip(self, member_id: str) -> tuple[str, dict] | None:
        return next(((k, t) for k, t in sorted(self.db.trips.items()) if t['member_id'] == member_id and t['status'] == 'ongoing'), None)

    def _release_lapsed(self) -> None:
        "Mark active reservations past their expiry as expired and put their cars back on the map."
        now = self.now()
        for r in self.db.reservations.values():
            if r['status'] == 'active' and dt.datetime.fromisoformat(r['expires_at']) <= now:
                r['status'] = 'expired'
                v = self.db.vehicles[r['vehicle_id']]
                if v['status'] == 'reserved': v['status'] = 'available'

    def _check_can_drive(self, member_id: str, m: dict) -> None:
        if m['status'] != 'active': raise ToolFailure(f'member {member_id} is suspended')
        if not m['licence_verified']: raise ToolFailure(f"member {member_id}'s driving licence has not been verified yet")
        if m['licence_expires'] < self.now().date().isoformat(): raise ToolFailure(f"member {member_id}'s driving licence expired on {m['licence_expires']}")
        if m['balance_due'] > MAX_BALANCE: raise ToolFailure(f"member {member_id} owes {m['balance_due']:.2f}; settle the balance (limit {MAX_BALANCE:.2f}) first")

    @read_tool
    def find_available_cars(self, zone: str, category: Category | None = None, powertrain: Literal['petrol', 'electric'] | None = None,
                            min_energy_pct: int = 0, limit: int = 10) -> list[dict]:
        """Cars that can be booked now in a zone, fullest tank or battery first.

        Args:
            zone: the zone's id (e.g. 'Z03') or its name (e.g. 'Millbrook')
            category: only cars of this category
            powertrain: only 'petrol' or only 'electric' cars
            min_energy_pct: only cars with at least this fuel or charge level, in percent
            limit: at most this many cars
        """
        zone_id = self._zone_id(zone)
        floor = max(min_energy_pct, MIN_ENERGY_TO_RENT)
        hits = [{'vehicle_id': k, 'plate': v['plate'], 'model': v['model'], 'category': v['category'], 'powertrain': v['powertrain'],
                 'energy_pct': v['energy_pct'], 'zone_id': zone_id, 'zone_name': self.db.zones[zone_id]['name']}
                for k, v in sorted(self.db.vehicles.items())
                if v['zone_id'] == zone_id and v['status'] == 'available' and v['energy_pct'] >= floor
                and (category is None or v['category'] == category) and (powertrain is None or v['powertrain'] == powertrain)]
        hits.sort(key=lambda h: -h['energy_pct'])
        return hits[:limit]

    @read_tool
    def lookup_member(self, email: str) -> dict:
        """Find a member by the email address on their account.

        Args:
            email: the member's email address
        """
        for k, m in sorted(self.db.members.items()):
            if m['email'].lower() == email.strip().lower(): return {'member_id': k, 'name': m['name'], 'plan': m['plan'], 'status': m['status']}
        raise ToolFailure(f'no member with email {email!r}')

    @read_tool
    def get_member_profile(self, member_id: str) -> dict:
        """A member's account: plan, licence check, balance due, the live reservation, the ongoing trip and the
        five most recent completed trips.

        Args:
            member_id: the member's id, e.g. 'M00042'
        """
        m = self._member(member_id)
        res, trip = self._live_reservation(member_id), self._ongoing_trip(member_id)
        done = sorted(((k, t) for k, t in self.db.trips.items() if t['member_id'] == member_id and t['status'] == 'completed'),
                      key=lambda kt: (kt[1]['started_at'], kt[0]), reverse=True)[:5]
        return {'member_id': member_id, **m,
                'live_reservation': {'reservation_id': res[0], **res[1]} if res else None,
                'ongoing_trip': {'trip_id': trip[0], **trip[1], 'plate': self.db.vehicles[trip[1]['vehicle_id']]['plate']} if trip else None,
                'recent_trips': [{'trip_id': k, 'vehicle_id': t['vehicle_id'], 'started_at': t['started_at'], 'minutes': t['minutes'],
                                  'distance_km': t['distance_km'], 'cost': t['cost']} for k, t in done]}

    @read_tool
    def quote_trip_price(self, category: Category, minutes: int, distance_km: float, member_id: str | None = None) -> dict:
        """Estimate the price of a trip: 1.00 to unlock plus per-minute and per-km rates of the category. Commuter
        plans get 15% and business plans 25% off the minute rate; minute charges are capped at 69.00 per day.

        Args:
            category: the car category: 'compact', 'sedan' or 'van'
            minutes: planned trip length in minutes
            distance_km: planned distance in km
            member_id: the member whose plan applies; pay-as-you-go prices if omitted
        """
        if minutes < 1: raise ToolFailure('minutes must be at least 1')
        if distance_km < 0: raise ToolFailure('distance_km cannot be negative')
        plan = self._member(member_id)['plan'] if member_id else 'pay_as_you_go'
        return {'category': category, 'plan': plan, 'minute_rate': RATES[category]['minute'], 'km_rate': RATES[category]['km'],
                **trip_price(category, plan, minutes, distance_km)}

    @write_tool('reservations', 'vehicles')
    def reserve_car(self, member_id: str, vehicle_id: str) -> dict:
        """Hold an available car for a member for 20 minutes free of charge. The member needs an active account,
        a verified, unexpired licence, a balance of at most 25.00 and no other reservation or ongoing trip; the car
        needs at least 15% fuel or charge.

        Args:
            member_id: the member's id
            vehicle_id: the car's id, e.g. 'V0123'
        """
        self._release_lapsed()
        m, v = self._member(member_id), self._vehicle(vehicle_id)
        self._check_can_drive(member_id, m)
        if (res := self._live_reservation(member_id)): raise ToolFailure(f'member {member_id} already holds reservation {res[0]}; cancel it first')
        if (trip := self._ongoing_trip(member_id)): raise ToolFailure(f'member {member_id} is on trip {trip[0]}')
        if v['status'] != 'available': raise ToolFailure(f"vehicle {vehicle_id} is not available (status: {v['status']})")
        if v['energy_pct'] < MIN_ENERGY_TO_RENT: raise ToolFailure(f"vehicle {vehicle_id} has only {v['energy_pct']}% fuel/charge and cannot be booked")
        now = self.now().replace(microsecond=0)
        res_id = self.next_id('reservations', 'R')
        self.db.reservations[res_id] = {'vehicle_id': vehicle_id, 'member_id': member_id, 'created_at': now.isoformat(),
                                        'expires_at': (now + dt.timedelta(minutes=HOLD_MINUTES)).isoformat(), 'status': 'active'}
        v['status'] = 'reserved'
        return {'reservation_id': res_id, **self.db.reservations[res_id], 'plate': v['plate'], 'zone_id': v['zone_id']}

    @write_tool('reservations', 'vehicles')
    def cancel_car_reservation(self, reservation_id: str) -> dict:
        """Cancel a live reservation and release the car.

        Args:
            reservation_id: the reservation's id, e.g. 'R00031'
        """
        self._release_lapsed()
        r = self.db.reservations.get(reservation_id)
        if r is None: raise ToolFailure(f'no reservation with id {reservation_id!r}')
        if r['status'] != 'active': raise ToolFailure(f"reservation {reservation_id} is {r['status']}, not active")
        r['status'] = 'cancelled'
        v = self.db.vehicles[r['vehicle_id']]
        if v['status'] == 'reserved': v['status'] = 'available'
        return {'reservation_id': reservation_id, 'status': 'cancelled', 'vehicle_id': r['vehicle_id']}

    @write_tool('trips', 'reservations', 'vehicles')
    def start_trip(self, member_id: str, vehicle_id: str) -> dict:
        """Unlock a car and start a trip: either the car the member has reserved, or an available car when the
        member holds no reservation. Same member and car rules as reserving.

        Args:
            member_id: the driving member's id
            vehicle_id: the car's id
        """
        self._release_lapsed()
        m, v = self._member(member_id), self._vehicle(vehicle_id)
        self._check_can_drive(member_id, m)
        if (trip := self._ongoing_trip(member_id)): raise ToolFailure(f'member {member_id} is already on trip {trip[0]}')
        res = self._live_reservation(member_id)
        if res and res[1]['vehicle_id'] != vehicle_id:
            raise ToolFailure(f"member {member_id} has reserved vehicle {res[1]['vehicle_id']} ({res[0]}); cancel that reservation to take another car")
        if not res and v['status'] != 'available': raise ToolFailure(f"vehicle {vehicle_id} is not available (status: {v['status']})")
        if v['energy_pct'] < MIN_ENERGY_TO_RENT: raise ToolFailure(f"vehicle {vehicle_id} has only {v['energy_pct']}% fuel/charge and cannot be started")
        if res: res[1]['status'] = 'started'
        trip_id = self.next_id('trips', 'TR')
        self.db.trips[trip_id] = {'vehicle_id': vehicle_id, 'member_id': member_id, 'reservation_id': res[0] if res else None,
                                  'start_zone_id': v['zone_id'], 'end_zone_id': None, 'started_at': self.now().replace(microsecond=0).isoformat(),
                                  'ended_at': None, 'start_odometer_km': v['odometer_km'], 'distance_km': 0.0, 'minutes': 0, 'cost': 0.0,
                                  'status': 'ongoing'}
        v['status'] = 'in_trip'
        return {'trip_id': trip_id, **self.db.trips[trip_id]}

    @write_tool('trips', 'vehicles', 'members')
    def end_trip(self, trip_id: str, end_zone: str, odometer_km: float, energy_pct: int) -> dict:
        """End an ongoing trip and charge it to the member's balance. The car must be parked in an operating zone;
        some zones add a drop-off surcharge, and leaving the car below 10% fuel/charge adds a 5.00 fee. Cars with an
        open major damage report go to maintenance.

        Args:
            trip_id: the trip's id, e.g. 'TR00012'
            end_zone: id or name of the zone where the car is parked
            odometer_km: the car's odometer reading at the end of the trip, in km
            energy_pct: the car's fuel or charge level at the end of the trip, 0 to 100
        """
        t = self.db.trips.get(trip_id)
        if t is None: raise ToolFailure(f'no trip with id {trip_id!r}')
        if t['status'] != 'ongoing': raise ToolFailure(f'trip {trip_id} has already ended')
        zone_id = self._zone_id(end_zone)
        zone = self.db.zones[zone_id]
        if not zone['operating']: raise ToolFailure(f"{zone['name']} is outside the operating area; trips cannot end there")
        if not 0 <= energy_pct <= 100: raise ToolFailure('energy_pct must be between 0 and 100')
        distance = round(odometer_km - t['start_odometer_km'], 1)
        if distance < 0: raise ToolFailure(f"odometer {odometer_km} is below the reading at the start of the trip ({t['start_odometer_km']})")
        if distance > MAX_TRIP_KM: raise ToolFailure(f'a distance of {distance} km is not plausible; check the odometer reading')
        v, m = self.db.vehicles[t['vehicle_id']], self.db.members[t['member_id']]
        now = self.now().replace(microsecond=0)
        minutes = max(1, math.ceil((now - dt.datetime.fromisoformat(t['started_at'])).total_seconds() / 60))
        price = trip_price(v['category'], m['plan'], minutes, distance, zone['drop_surcharge'], energy_pct < LOW_ENERGY_PCT)
        t.update(end_zone_id=zone_id, ended_at=now.isoformat(), distance_km=float(distance), minutes=minutes, cost=price['total'], status='completed')
        damaged = any(d['vehicle_id'] == t['vehicle_id'] and d['status'] == 'open' and d['severity'] == 'major' for d in self.db.damage_reports.values())
        v.update(zone_id=zone_id, odometer_km=round(float(odometer_km), 1), energy_pct=energy_pct, status='maintenance' if damaged else 'available')
        m['balance_due'] = round(m['balance_due'] + price['total'], 2)
        return {'trip_id': trip_id, 'minutes': minutes, 'distance_km': distance, **price, 'balance_due': m['balance_due']}

    @write_tool('damage_reports', 'vehicles', 'reservations')
    def report_damage(self, vehicle_id: str, member_id: str, severity: Literal['minor', 'major'], description: str) -> dict:
        """Record damage found on a car. A major report takes a parked car out of service at once (cancelling any
        live reservation on it); a car on a trip goes to maintenance when the trip ends.

        Args:
            vehicle_id: the damaged car's id
            member_id: the id of the member reporting it
            severity: 'minor' (cosmetic, safe to drive) or 'major' (unsafe or not drivable)
            description: what is damaged and where, at least 10 characters
        """
        v = self._vehicle(vehicle_id); self._member(member_id)
        if len(description.strip()) < 10: raise ToolFailure('describe the damage in at least 10 characters')
        if any(d['vehicle_id'] == vehicle_id and d['member_id'] == member_id and d['status'] == 'open' for d in self.db.damage_reports.values()):
            raise ToolFailure(f'member {member_id} already has an open damage report on vehicle {vehicle_id}')
        report_id = self.next_id('damage_reports', 'D')
        self.db.damage_reports[report_id] = {'vehicle_id': vehicle_id, 'member_id': member_id, 'reported_at': self.now().replace(microsecond=0).isoformat(),
                                             'severity': severity, 'description': description.strip(), 'status': 'open'}
        cancelled = []
        if severity == 'major' and v['status'] in ('available', 'reserved'):
            for k, r in sorted(self.db.reservations.items()):
                if r['vehicle_id'] == vehicle_id and r['status'] == 'active': r['status'] = 'cancelled'; cancelled.append(k)
            v['status'] = 'maintenance'
        return {'report_id': report_id, 'vehicle_status': v['status'], 'cancelled_reservations': cancelled}

    @write_tool('members')
    def settle_balance(self, member_id: str, amount: float) -> dict:
        """Record a card payment towards a member's balance. The amount cannot exceed what is owed.

        Args:
            member_id: the member's id
            amount: the amount paid, greater than zero
        """
        m = self._member(member_id)
        if amount <= 0: raise ToolFailure('amount must be greater than zero')
        if amount > m['balance_due'] + 1e-9: raise ToolFailure(f"amount {amount:.2f} is more than the balance due ({m['balance_due']:.2f})")
        m['balance_due'] = round(m['balance_due'] - amount, 2)
        return {'member_id': member_id, 'paid': round(amount, 2), 'balance_due': m['balance_due']}
