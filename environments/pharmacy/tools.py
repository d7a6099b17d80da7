"""A community pharmacy: patients with allergies and insurance plans, a formulary with shelf stock, prescriptions
with refills from licensed prescribers, dispensing records with co-pays, and drug-class interaction checks."""
import datetime as dt
import math
from typing import Literal

from pydantic import Field

from envsynth.envs import Row, Toolkit, ToolFailure, read_tool, write_tool

TOO_SOON = {False: 0.75, True: 0.9}      # share of the days' supply that must pass before a refill (controlled: 90%)
MAX_REFILLS = 5
MAX_QUANTITY, MAX_DAYS, MAX_CONTROLLED_DAYS = 360, 90, 30
RX_VALID_DAYS = {False: 365, True: 180}
MAX_DELIVERY = 5000


class Plan(Row):
    name: str
    copay_generic: float = Field(ge=0)
    copay_brand: float = Field(ge=0)
    oop_max: float = Field(ge=0)


class Prescriber(Row):
    name: str
    specialty: str
    controlled_authority: bool


class Patient(Row):
    first_name: str
    last_name: str
    date_of_birth: str
    phone: str
    allergies: list[str]
    plan_id: str | None
    oop_spent_ytd: float = Field(ge=0)


class Medication(Row):
    name: str
    strength: str
    form: Literal['tablet', 'capsule', 'solution', 'inhaler', 'cream']
    drug_class: str
    generic: bool
    controlled: bool
    unit_price: float = Field(ge=0)
    stock_units: int = Field(ge=0)
    reorder_level: int = Field(ge=0)


class Interaction(Row):
    class_a: str
    class_b: str
    severity: Literal['moderate', 'major']
    note: str


class Prescription(Row):
    patient_id: str
    medication_id: str
    prescriber_id: str
    quantity: int = Field(ge=1)
    days_supply: int = Field(ge=1)
    fills_allowed: int = Field(ge=1)
    fills_used: int = Field(ge=0)
    written_on: str
    expires_on: str
    last_filled_on: str | None
    status: Literal['active', 'on_hold', 'cancelled']
    hold_reason: str | None


class Dispensing(Row):
    prescription_id: str
    patient_id: str
    medication_id: str
    quantity: int = Field(ge=1)
    filled_on: str
    plan_id: str | None
    retail_price: float = Field(ge=0)
    patient_pay: float = Field(ge=0)
    plan_pay: float = Field(ge=0)
    status: Literal['ready', 'picked_up', 'returned_to_stock']
    picked_up_on: str | None


class PharmacyTools(Toolkit):
    tables = {'plans': Plan, 'prescribers': Prescriber, 'patients': Patient, 'medications': Medication, 'interactions': Interaction,
              'prescriptions': Prescription, 'dispensings': Dispensing}

    def _today(self) -> dt.date: return self.now().date()

    def _live_rx(self, patient_id: str) -> list[tuple[str, dict]]:
        "The patient's prescriptions that are active and not expired."
        today = self._today().isoformat()
        return [(k, r) for k, r in sorted(self.db.prescriptions.items())
                if r['patient_id'] == patient_id and r['status'] == 'active' and r['expires_on'] >= today]

    def _conflicts(self, patient_id: str, medication_id: str, skip_rx: str | None = None) -> dict:
        p, med = self.db.patients[patient_id], self.db.medications[medication_id]
        found = []
        for k, r in self._live_rx(patient_id):
            other = self.db.medications[r['medication_id']]
            if k == skip_rx or r['medication_id'] == medication_id: continue
            for x in self.db.interactions.values():
                if {x['class_a'], x['class_b']} == {med['drug_class'], other['drug_class']}:
                    found.append({'prescription_id': k, 'medication': f"{other['name']} {other['strength']}", 'drug_class': other['drug_class'],
                                  'severity': x['severity'], 'note': x['note']})
        allergic = med['drug_class'] in p['allergies']
        return {'allergy': allergic, 'interactions': found,
                'fill_blocked': allergic or any(f['severity'] == 'major' for f in found)}

    def _price(self, patient: dict, med: dict, quantity: int) -> tuple[float, float, float]:
        retail = round(med['unit_price'] * quantity, 2)
        if patient['plan_id'] is None: return retail, retail, 0.0
        plan = self.db.plans[patient['plan_id']]
        copay = plan['copay_generic'] if med['generic'] else plan['copay_brand']
        pay = round(min(copay, retail, max(0.0, plan['oop_max'] - patient['oop_spent_ytd'])), 2)
        return retail, pay, round(retail - pay, 2)

    def _rx_view(self, k: str, r: dict) -> dict:
        med = self.db.medications[r['medication_id']]
        nxt = None
        if r['last_filled_on']:
            wait = math.ceil(r['days_supply'] * TOO_SOON[med['controlled']])
            nxt = (dt.date.fromisoformat(r['last_filled_on']) + dt.timedelta(days=wait)).isoformat()
        return {'prescription_id': k, 'medication_id': r['medication_id'], 'medication': f"{med['name']} {med['strength']} {med['form']}",
                'prescriber_id': r['prescriber_id'], 'quantity': r['quantity'], 'days_supply': r['days_supply'],
                'refills_remaining': max(0, r['fills_allowed'] - max(r['fills_used'], 1)), 'fills_remaining': r['fills_allowed'] - r['fills_used'],
                'written_on': r['written_on'], 'expires_on': r['expires_on'], 'expired': r['expires_on'] < self._today().isoformat(),
                'last_filled_on': r['last_filled_on'], 'earliest_next_fill': nxt, 'status': r['status'], 'hold_reason': r['hold_reason']}

    @read_tool
    def find_patient(self, last_name: str, date_of_birth: str) -> list[dict]:
        """Find patients by last name and date of birth.

        Args:
            last_name: the patient's last name (case-insensitive)
            date_of_birth: the date of birth as YYYY-MM-DD
        """
        hits = [{'patient_id': k, 'name': f"{p['first_name']} {p['last_name']}", 'date_of_birth': p['date_of_birth'], 'phone': p['phone']}
                for k, p in sorted(self.db.patients.items()) if p['last_name'].lower() == last_name.strip().lower() and p['date_of_birth'] == date_of_birth]
        if not hits: raise ToolFailure(f'no patient named {last_name!r} born on {date_of_birth}')
        return hits

    @read_tool
    def get_patient_profile(self, patient_id: str) -> dict:
        """A patient's profile: details, allergies, insurance plan and co-pays, prescriptions with fills remaining
        and the earliest refill date, and the 10 most recent dispensings.

        Args:
            patient_id: the patient's id, e.g. 'P00042'
        """
        p = self.row('patients', patient_id, 'patient')
        plan = {'plan_id': p['plan_id'], **self.db.plans[p['plan_id']]} if p['plan_id'] else None
        rxs = [self._rx_view(k, r) for k, r in sorted(self.db.prescriptions.items()) if r['patient_id'] == patient_id]
        fills = sorted(((k, d) for k, d in self.db.dispensings.items() if d['patient_id'] == patient_id), key=lambda x: (x[1]['filled_on'], x[0]))
        recent = [{'dispensing_id': k, 'prescription_id': d['prescription_id'], 'medication': self.db.medications[d['medication_id']]['name'],
                   'quantity': d['quantity'], 'filled_on': d['filled_on'], 'patient_pay': d['patient_pay'], 'status': d['status']}
                  for k, d in reversed(fills[-10:])]
        return {'patient_id': patient_id, 'name': f"{p['first_name']} {p['last_name']}", 'date_of_birth': p['date_of_birth'], 'phone': p['phone'],
                'allergies': list(p['allergies']), 'plan': plan, 'oop_spent_ytd': p['oop_spent_ytd'], 'prescriptions': rxs, 'recent_dispensings': recent}

    @read_tool
    def search_formulary(self, query: str, drug_class: str | None = None, in_stock_only: bool = False, limit: int = 10) -> list[dict]:
        """Search the pharmacy's medications by name, with strength, form, class, price per unit and shelf stock.

        Args:
            query: words to look for in the medication name (case-insensitive); empty matches all
            drug_class: only medications of this drug class, e.g. 'statin'
            in_stock_only: only medications with stock on the shelf
            limit: at most this many results
        """
        words = query.lower().split()
        hits = [{'medication_id': k, **m} for k, m in sorted(self.db.medications.items())
                if all(w in m['name'].lower() for w in words) and (drug_class is None or m['drug_class'] == drug_class)
                and (not in_stock_only or m['stock_units'] > 0)]
        return hits[:max(limit, 0)]

    @read_tool
    def check_drug_interactions(self, patient_id: str, medication_id: str) -> dict:
        """Check a medication against a patient's allergies and the drug classes of their other active prescriptions.
        A major interaction or an allergy blocks dispensing.

        Args:
            patient_id: the patient's id
            medication_id: the medication's id, e.g. 'MED0031'
        """
        self.row('patients', patient_id, 'patient'); med = self.row('medications', medication_id, 'medication')
        return {'patient_id': patient_id, 'medication_id': medication_id, 'drug_class': med['drug_class'], **self._conflicts(patient_id, medication_id)}

    @write_tool('prescriptions')
    def enter_new_prescription(self, patient_id: str, medication_id: str, prescriber_id: str, quantity: int, days_supply: int, refills: int) -> dict:
        """Enter a prescription received from a prescriber. It is valid for 365 days (controlled substances: 180 days,
        no refills, at most 30 days' supply, and only from prescribers with controlled-substance authority). Refused
        if the patient is allergic to the drug class or already has a live prescription for the same medication.

        Args:
            patient_id: the patient's id
            medication_id: the prescribed medication's id
            prescriber_id: the prescriber's licence id, e.g. 'LIC-40213'
            quantity: units per fill, 1 to 360
            days_supply: days one fill lasts, 1 to 90
            refills: refills authorised after the first fill, 0 to 5
        """
        p = self.row('patients', patient_id, 'patient'); med = self.row('medications', medication_id, 'medication')
        doc = self.row('prescribers', prescriber_id, 'prescriber')
        if not 1 <= quantity <= MAX_QUANTITY: raise ToolFailure(f'quantity must be 1 to {MAX_QUANTITY}')
        if not 1 <= days_supply <= MAX_DAYS: raise ToolFailure(f'days_supply must be 1 to {MAX_DAYS}')
        if not 0 <= refills <= MAX_REFILLS: raise ToolFailure(f'refills must be 0 to {MAX_REFILLS}')
        if med['controlled']:
            if not doc['controlled_authority']: raise ToolFailure(f"{doc['name']} has no authority to prescribe controlled substances")
            if refills: raise ToolFailure(f"{med['name']} is a controlled substance and cannot have refills")
            if days_supply > MAX_CONTROLLED_DAYS: raise ToolFailure(f'controlled substances are limited to {MAX_CONTROLLED_DAYS} days per fill')
        if med['drug_class'] in p['allergies']: raise ToolFailure(f"patient {patient_id} is allergic to {med['drug_class']}; contact the prescriber")
        dup = next((k for k, r in self._live_rx(patient_id) if r['medication_id'] == medication_id and r['fills_used'] < r['fills_allowed']), None)
        if dup: raise ToolFailure(f'patient {patient_id} already has a live prescription {dup} for {medication_id}')
        today = self._today()
        rx_id = self.next_id('prescriptions', 'RX')
        self.db.prescriptions[rx_id] = {'patient_id': patient_id, 'medication_id': medication_id, 'prescriber_id': prescriber_id,
                                        'quantity': quantity, 'days_supply': days_supply, 'fills_allowed': refills + 1, 'fills_used': 0,
                                        'written_on': today.isoformat(), 'expires_on': (today + dt.timedelta(days=RX_VALID_DAYS[med['controlled']])).isoformat(),
                                        'last_filled_on': None, 'status': 'active', 'hold_reason': None}
        return self._rx_view(rx_id, self.db.prescriptions[rx_id])

    @write_tool('prescriptions', 'medications', 'dispensings', 'patients')
    def fill_prescription(self, prescription_id: str) -> dict:
        """Fill a prescription: take the quantity from stock, charge the co-pay (the plan's generic or brand co-pay,
        never more than the retail price or what is left of the plan's yearly out-of-pocket maximum; uninsured
        patients pay retail) and leave the fill ready for pickup. Refused for prescriptions that are not active,
        expired, out of fills or too soon to refill (75% of the days' supply must have passed; 90% for controlled),
        for allergies and major interactions, and when stock is short.

        Args:
            prescription_id: the prescription's id, e.g. 'RX00123'
        """
        rx = self.row('prescriptions', prescription_id, 'prescription')
        med, p = self.db.medications[rx['medication_id']], self.db.patients[rx['patient_id']]
        today = self._today()
        if rx['status'] != 'active': raise ToolFailure(f"prescription {prescription_id} is {rx['status']}" + (f": {rx['hold_reason']}" if rx['hold_reason'] else ''))
        if rx['expires_on'] < today.isoformat(): raise ToolFailure(f"prescription {prescription_id} expired on {rx['expires_on']}; a new prescription is needed")
        if rx['fills_used'] >= rx['fills_allowed']: raise ToolFailure(f'prescription {prescription_id} has no refills left; contact the prescriber')
        nxt = self._rx_view(prescription_id, rx)['earliest_next_fill']
        if nxt and today.isoformat() < nxt: raise ToolFailure(f'too soon to refill {prescription_id}; the earliest refill date is {nxt}')
        c = self._conflicts(rx['patient_id'], rx['medication_id'], skip_rx=prescription_id)
        if c['allergy']: raise ToolFailure(f"patient {rx['patient_id']} is allergic to {med['drug_class']}")
        major = [f for f in c['interactions'] if f['severity'] == 'major']
        if major: raise ToolFailure(f"major interaction with {major[0]['medication']} ({major[0]['prescription_id']}): {major[0]['note']}")
        if med['stock_units'] < rx['quantity']: raise ToolFailure(f"only {med['stock_units']} units of {med['name']} in stock; {rx['quantity']} needed")
        retail, pay, plan_pay = self._price(p, med, rx['quantity'])
        d_id = self.next_id('dispensings', 'D')
        self.db.dispensings[d_id] = {'prescription_id': prescription_id, 'patient_id': rx['patient_id'], 'medication_id': rx['medication_id'],
                                     'quantity': rx['quantity'], 'filled_on': today.isoformat(), 'plan_id': p['plan_id'], 'retail_price': retail,
                                     'patient_pay': pay, 'plan_pay': plan_pay, 'status': 'ready', 'picked_up_on': None}
        med['stock_units'] -= rx['quantity']
        rx['fills_used'] += 1; rx['last_filled_on'] = today.isoformat()
        if p['plan_id']: p['oop_spent_ytd'] = round(p['oop_spent_ytd'] + pay, 2)
        return {'dispensing_id': d_id, 'retail_price': retail, 'patient_pay': pay, 'plan_pay': plan_pay,
                'fills_remaining': rx['fills_allowed'] - rx['fills_used'], 'warnings': [f for f in c['interactions'] if f['severity'] == 'moderate']}

    @write_tool('dispensings')
    def record_pickup(self, dispensing_id: str, id_checked: bool = False) -> dict:
        """Hand a ready fill to the patient. Controlled substances need the patient's photo ID checked.

        Args:
            dispensing_id: the dispensing's id, e.g. 'D00321'
            id_checked: whether the patient's photo ID was checked at the counter
        """
        d = self.row('dispensings', dispensing_id, 'dispensing')
        if d['status'] != 'ready': raise ToolFailure(f"dispensing {dispensing_id} is {d['status']}, not ready for pickup")
        if self.db.medications[d['medication_id']]['controlled'] and not id_checked:
            raise ToolFailure(f'dispensing {dispensing_id} is a controlled substance; check the patient\'s photo ID first')
        d['status'], d['picked_up_on'] = 'picked_up', self._today().isoformat()
        return {'dispensing_id': dispensing_id, 'status': 'picked_up', 'patient_pay': d['patient_pay']}

    @write_tool('dispensings', 'medications', 'prescriptions', 'patients')
    def return_unclaimed_fill(self, dispensing_id: str) -> dict:
        """Put a fill that was never picked up back on the shelf: the stock is restored, the fill no longer counts
        against the prescription's refills, and the co-pay no longer counts towards the patient's out-of-pocket total.

        Args:
            dispensing_id: the dispensing's id
        """
        d = self.row('dispensings', dispensing_id, 'dispensing')
        if d['status'] != 'ready': raise ToolFailure(f"dispensing {dispensing_id} is {d['status']}; only fills waiting for pickup can be returned")
        d['status'] = 'returned_to_stock'
        self.db.medications[d['medication_id']]['stock_units'] += d['quantity']
        rx = self.db.prescriptions[d['prescription_id']]
        rx['fills_used'] = max(0, rx['fills_used'] - 1)
        rx['last_filled_on'] = max((x['filled_on'] for x in self.db.dispensings.values()
                                    if x['prescription_id'] == d['prescription_id'] and x['status'] != 'returned_to_stock'), default=None)
        p = self.db.patients[d['patient_id']]
        if d['plan_id']: p['oop_spent_ytd'] = round(max(0.0, p['oop_spent_ytd'] - d['patient_pay']), 2)
        return {'dispensing_id': dispensing_id, 'status': 'returned_to_stock', 'fills_remaining': rx['fills_allowed'] - rx['fills_used']}

    @write_tool('medications')
    def receive_stock_delivery(self, medication_id: str, units: int) -> dict:
        """Book a wholesaler delivery into shelf stock.

        Args:
            medication_id: the medication's id
            units: units delivered, 1 to 5000
        """
        med = self.row('medications', medication_id, 'medication')
        if not 1 <= units <= MAX_DELIVERY: raise ToolFailure(f'units must be 1 to {MAX_DELIVERY}')
        med['stock_units'] += units
        return {'medication_id': medication_id, 'stock_units': med['stock_units'], 'below_reorder_level': med['stock_units'] < med['reorder_level']}

    @write_tool('patients', 'prescriptions')
    def record_allergy(self, patient_id: str, drug_class: str) -> dict:
        """Add a drug-class allergy to a patient's record. The patient's active prescriptions of that class are put
        on hold for the prescriber to review.

        Args:
            patient_id: the patient's id
            drug_class: the drug class, e.g. 'penicillin' (one of the classes in the formulary)
        """
        p = self.row('patients', patient_id, 'patient')
        classes = sorted({m['drug_class'] for m in self.db.medications.values()})
        if drug_class not in classes: raise ToolFailure(f'unknown drug class {drug_class!r}; classes: {classes}')
        if drug_class in p['allergies']: raise ToolFailure(f'patient {patient_id} already has an allergy to {drug_class} on record')
        p['allergies'] = sorted(p['allergies'] + [drug_class])
        held = []
        for k, r in sorted(self.db.prescriptions.items()):
            if r['patient_id'] == patient_id and r['status'] == 'active' and self.db.medications[r['medication_id']]['drug_class'] == drug_class:
                r['status'], r['hold_reason'] = 'on_hold', f'allergy to {drug_class} recorded; prescriber review needed'
                held.append(k)
        return {'patient_id': patient_id, 'allergies': list(p['allergies']), 'prescriptions_on_hold': held}
