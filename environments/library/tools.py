"""A public lending library: a catalogue of titles with copies, members, loans, holds and late fees."""
import datetime as dt
from typing import Literal

from pydantic import Field

from envsynth.envs import Row, Toolkit, ToolFailure, read_tool, write_tool

LOAN_DAYS = 21
MAX_RENEWALS = 2
MAX_LOANS = {'standard': 5, 'student': 8, 'staff': 12}
FEE_PER_DAY = 0.25


class Title(Row):
    isbn: str
    title: str
    author: str
    year: int
    subject: str
    copies_total: int = Field(ge=0)
    copies_available: int = Field(ge=0)


class Member(Row):
    name: str
    email: str
    tier: Literal['standard', 'student', 'staff']
    fees_due: float = Field(ge=0)
    active: bool


class Loan(Row):
    title_id: str
    member_id: str
    borrowed_on: str
    due_on: str
    renewals: int = Field(ge=0)
    returned_on: str | None


class Hold(Row):
    title_id: str
    member_id: str
    placed_on: str
    status: Literal['waiting', 'cancelled']


class LibraryTools(Toolkit):
    tables = {'titles': Title, 'members': Member, 'loans': Loan, 'holds': Hold}

    def _member(self, member_id: str) -> dict: return self.row('members', member_id, 'member')

    def _title(self, title_id: str) -> dict: return self.row('titles', title_id, 'title')

    def _open_loans(self, member_id: str) -> list[tuple[str, dict]]:
        return [(k, l) for k, l in sorted(self.db.loans.items()) if l['member_id'] == member_id and l['returned_on'] is None]

    @read_tool
    def search_catalogue(self, query: str, subject: str | None = None, available_only: bool = False, limit: int = 10) -> list[dict]:
        """Search titles by words in the title or author name.

        Args:
            query: words to look for in the title or the author's name (case-insensitive)
            subject: only titles of this subject, e.g. 'history'
            available_only: only titles with a copy on the shelf now
            limit: at most this many results
        """
        words = query.lower().split()
        hits = []
        for k, t in sorted(self.db.titles.items()):
            text = f"{t['title']} {t['author']}".lower()
            if all(w in text for w in words) and (subject is None or t['subject'] == subject) \
                    and (not available_only or t['copies_available'] > 0):
                hits.append({'title_id': k, **t})
        return hits[:limit]

    @read_tool
    def get_member_account(self, member_id: str) -> dict:
        """A member's account: details, open loans with due dates, waiting holds and fees due.

        Args:
            member_id: the member's id, e.g. 'M00012'
        """
        m = self._member(member_id)
        loans = [{'loan_id': k, **l} for k, l in self._open_loans(member_id)]
        holds = [{'hold_id': k, **h} for k, h in sorted(self.db.holds.items()) if h['member_id'] == member_id and h['status'] == 'waiting']
        return {'member_id': member_id, **m, 'open_loans': loans, 'holds': holds}

    @read_tool
    def find_member_by_email(self, email: str) -> dict:
        """Look a member up by email address.

        Args:
            email: the member's email address
        """
        for k, m in sorted(self.db.members.items()):
            if m['email'].lower() == email.lower(): return {'member_id': k, 'name': m['name'], 'tier': m['tier']}
        raise ToolFailure(f'no member with email {email!r}')

    @write_tool('loans', 'titles')
    def lend_copy(self, member_id: str, title_id: str) -> dict:
        """Lend a copy of a title to a member for 21 days. Members with fees above 5.00, inactive members and
        members at their loan limit (standard 5, student 8, staff 12) cannot borrow.

        Args:
            member_id: the borrowing member's id
            title_id: the title's id
        """
        m, t = self._member(member_id), self._title(title_id)
        if not m['active']: raise ToolFailure(f'member {member_id} is not active')
        if m['fees_due'] > 5: raise ToolFailure(f"member {member_id} owes {m['fees_due']:.2f} in fees; pay before borrowing")
        if len(self._open_loans(member_id)) >= MAX_LOANS[m['tier']]: raise ToolFailure(f"member {member_id} is at the loan limit of {MAX_LOANS[m['tier']]}")
        if t['copies_available'] == 0: raise ToolFailure(f'no copy of {title_id} is on the shelf; a hold can be placed')
        today = self.now().date()
        loan_id = self.next_id('loans', 'L')
        self.db.loans[loan_id] = {'title_id': title_id, 'member_id': member_id, 'borrowed_on': today.isoformat(),
                                  'due_on': (today + dt.timedelta(days=LOAN_DAYS)).isoformat(), 'renewals': 0, 'returned_on': None}
        t['copies_available'] -= 1
        return {'loan_id': loan_id, **self.db.loans[loan_id]}

    @write_tool('loans', 'titles', 'members')
    def return_copy(self, loan_id: str) -> dict:
        """Check a borrowed copy back in. A late return adds 0.25 per day late to the member's fees.

        Args:
            loan_id: the loan's id, e.g. 'L00042'
        """
        loan = self.db.loans.get(loan_id)
        if loan is None: raise ToolFailure(f'no loan with id {loan_id!r}')
        if loan['returned_on'] is not None: raise ToolFailure(f"loan {loan_id} was already returned on {loan['returned_on']}")
        today = self.now().date()
        late_days = max(0, (today - dt.date.fromisoformat(loan['due_on'])).days)
        fee = round(late_days * FEE_PER_DAY, 2)
        loan['returned_on'] = today.isoformat()
        self.db.titles[loan['title_id']]['copies_available'] += 1
        member = self.db.members[loan['member_id']]
        member['fees_due'] = round(member['fees_due'] + fee, 2)
        return {'loan_id': loan_id, 'late_days': late_days, 'fee_added': fee}

    @write_tool('loans')
    def renew_loan(self, loan_id: str) -> dict:
        """Extend an open loan by 21 days from its current due date. At most two renewals, and not when
        another member is waiting for the title.

        Args:
            loan_id: the loan's id
        """
        loan = self.db.loans.get(loan_id)
        if loan is None or loan['returned_on'] is not None: raise ToolFailure(f'no open loan with id {loan_id!r}')
        if loan['renewals'] >= MAX_RENEWALS: raise ToolFailure(f'loan {loan_id} was already renewed {MAX_RENEWALS} times')
        if any(h['title_id'] == loan['title_id'] and h['status'] == 'waiting' for h in self.db.holds.values()):
            raise ToolFailure(f"another member is waiting for {loan['title_id']}; the loan cannot be renewed")
        loan['due_on'] = (dt.date.fromisoformat(loan['due_on']) + dt.timedelta(days=LOAN_DAYS)).isoformat()
        loan['renewals'] += 1
        return {'loan_id': loan_id, 'due_on': loan['due_on'], 'renewals': loan['renewals']}

    @write_tool('holds')
    def place_hold(self, member_id: str, title_id: str) -> dict:
        """Put a member in the queue for a title that has no copy on the shelf.

        Args:
            member_id: the member's id
            title_id: the title's id
        """
        self._member(member_id); t = self._title(title_id)
        if t['copies_available'] > 0: raise ToolFailure(f'{title_id} has a copy on the shelf; lend it instead')
        if any(h['member_id'] == member_id and h['title_id'] == title_id and h['status'] == 'waiting' for h in self.db.holds.values()):
            raise ToolFailure(f'member {member_id} already has a hold on {title_id}')
        hold_id = self.next_id('holds', 'H')
        self.db.holds[hold_id] = {'title_id': title_id, 'member_id': member_id, 'placed_on': self.now().date().isoformat(), 'status': 'waiting'}
        queue = sum(1 for h in self.db.holds.values() if h['title_id'] == title_id and h['status'] == 'waiting')
        return {'hold_id': hold_id, 'position': queue}

    @write_tool('holds')
    def cancel_hold(self, hold_id: str) -> dict:
        """Cancel a waiting hold.

        Args:
            hold_id: the hold's id
        """
        h = self.db.holds.get(hold_id)
        if h is None or h['status'] != 'waiting': raise ToolFailure(f'no waiting hold with id {hold_id!r}')
        h['status'] = 'cancelled'
        return {'hold_id': hold_id, 'status': 'cancelled'}

    @write_tool('members')
    def record_fee_payment(self, member_id: str, amount: float) -> dict:
        """Record a payment towards a member's fees. The amount cannot exceed what is due.

        Args:
            member_id: the member's id
            amount: the amount paid, greater than zero
        """
        m = self._member(member_id)
        if amount <= 0: raise ToolFailure('amount must be greater than zero')
        if amount > m['fees_due'] + 1e-9: raise ToolFailure(f"amount {amount:.2f} is more than the fees due ({m['fees_due']:.2f})")
        m['fees_due'] = round(m['fees_due'] - amount, 2)
        return {'member_id': member_id, 'fees_due': m['fees_due']}
