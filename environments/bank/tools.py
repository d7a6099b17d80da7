"""A retail bank back office: customers, current and savings accounts, debit cards, payments and standing orders."""
import datetime as dt
from typing import Literal

from pydantic import Field

from envsynth.envs import Row, Toolkit, ToolFailure, read_tool, write_tool

DAILY_PAYMENT_LIMIT = {'retail': 5000.0, 'premier': 20000.0}
CARD_LIMIT_MAX = {'retail': 2000.0, 'premier': 5000.0}
REPLACEMENT_FEE = {'retail': 7.5, 'premier': 0.0}
MAX_STANDING_ORDERS = 10
MAX_STANDING_ORDER_AMOUNT = 10000.0
CARD_YEARS = 4
OWN = 'Own account '   # counterparty prefix of moves between a customer's own accounts
TxKind = Literal['card', 'payment_in', 'payment_out', 'deposit', 'fee', 'standing_order', 'interest']


class Customer(Row):
    name: str
    email: str
    phone: str
    segment: Literal['retail', 'premier']
    kyc_verified: bool
    joined_on: str


class Account(Row):
    customer_id: str
    number: str
    kind: Literal['current', 'savings']
    balance: float
    overdraft_limit: float = Field(ge=0)
    status: Literal['open', 'frozen', 'closed']
    opened_on: str


class Card(Row):
    account_id: str
    last4: str
    status: Literal['active', 'blocked', 'cancelled']
    block_reason: Literal['lost', 'stolen', 'damaged', 'suspected_fraud'] | None
    daily_limit: float = Field(gt=0)
    expires: str
    issued_on: str


class Transaction(Row):
    account_id: str
    posted_at: str
    amount: float
    kind: TxKind
    counterparty: str
    reference: str
    balance_after: float


class StandingOrder(Row):
    account_id: str
    payee: str
    payee_account: str
    amount: float = Field(gt=0)
    day_of_month: int = Field(ge=1, le=28)
    status: Literal['active', 'cancelled']
    created_on: str
    next_run: str


class BankTools(Toolkit):
    tables = {'customers': Customer, 'accounts': Account, 'cards': Card, 'transactions': Transaction, 'standing_orders': StandingOrder}

    def _customer(self, customer_id: str) -> dict: return self.row('customers', customer_id, 'customer')

    def _account(self, account_id: str) -> dict: return self.row('accounts', account_id, 'account')

    def _card(self, card_id: str) -> dict: return self.row('cards', card_id, 'card')

    def _stamp(self) -> str: return self.now().strftime('%Y-%m-%dT%H:%M:%S')

    def _post(self, account_id: str, amount: float, kind: str, counterparty: str, reference: str) -> str:
        "Book `amount` (signed) on an account and record the transaction; returns its id."
        acc = self.db.accounts[account_id]
        acc['balance'] = round(acc['balance'] + amount, 2)
        tx_id = self.next_id('transactions', 'T', 6)
        self.db.transactions[tx_id] = {'account_id': account_id, 'posted_at': self._stamp(), 'amount': round(amount, 2), 'kind': kind,
                                       'counterparty': counterparty, 'reference': reference, 'balance_after': acc['balance']}
        return tx_id

    def _money(self, amount: float, what: str = 'amount') -> float:
        if amount <= 0: raise ToolFailure(f'{what} must be greater than zero')
        if abs(round(amount, 2) - amount) > 1e-9: raise ToolFailure(f'{what} has more than two decimals')
        return round(amount, 2)

    def _next_run(self, day: int) -> str:
        today = self.now().date()
        if today.day < day: return today.replace(day=day).isoformat()
        y, m = (today.year + 1, 1) if today.month == 12 else (today.year, today.month + 1)
        return dt.date(y, m, day).isoformat()

    @read_tool
    def search_customers(self, query: str, limit: int = 10) -> list[dict]:
        """Find customers by words in their name, email address or phone number.

        Args:
            query: words to look for in the name, email or phone (case-insensitive)
            limit: at most this many results
        """
        words = query.lower().split()
        hits = [{'customer_id': k, 'name': c['name'], 'email': c['email'], 'segment': c['segment']} for k, c in sorted(self.db.customers.items())
                if all(w in f"{c['name']} {c['email']} {c['phone']}".lower() for w in words)]
        return hits[:limit]

    @read_tool
    def account_overview(self, customer_id: str) -> dict:
        """A customer's profile with every account: balance, available funds, cards and active standing orders.

        Args:
            customer_id: the customer's id, e.g. 'C0042'
        """
        c = self._customer(customer_id)
        accounts = []
        for k, a in sorted(self.db.accounts.items()):
            if a['customer_id'] != customer_id: continue
            cards = [{'card_id': ck, 'last4': x['last4'], 'status': x['status'], 'block_reason': x['block_reason'], 'daily_limit': x['daily_limit'],
                      'expires': x['expires']} for ck, x in sorted(self.db.cards.items()) if x['account_id'] == k]
            orders = [{'order_id': sk, **s} for sk, s in sorted(self.db.standing_orders.items()) if s['account_id'] == k and s['status'] == 'active']
            accounts.append({'account_id': k, **a, 'available': round(a['balance'] + a['overdraft_limit'], 2) if a['status'] == 'open' else 0.0,
                             'cards': cards, 'standing_orders': orders})
        return {'customer_id': customer_id, **c, 'accounts': accounts}

    @read_tool
    def list_account_activity(self, account_id: str, since: str | None = None, kind: TxKind | None = None, limit: int = 20) -> list[dict]:
        """An account's transactions, newest first.

        Args:
            account_id: the account's id, e.g. 'A00017'
            since: only transactions posted on or after this day, 'YYYY-MM-DD'
            kind: only this kind: 'card', 'payment_in', 'payment_out', 'deposit', 'fee', 'standing_order' or 'interest'
            limit: at most this many transactions
        """
        self._account(account_id)
        rows = [{'transaction_id': k, **t} for k, t in self.db.transactions.items()
                if t['account_id'] == account_id and (since is None or t['posted_at'][:10] >= since) and (kind is None or t['kind'] == kind)]
        return sorted(rows, key=lambda t: (t['posted_at'], t['transaction_id']), reverse=True)[:limit]

    @write_tool('accounts', 'transactions')
    def execute_payment(self, from_account_id: str, to_account_number: str, amount: float, reference: str, payee_name: str | None = None) -> dict:
        """Pay money out of an open account, to another account at this bank (booked on both sides) or to an outside
        account number. The amount must be covered by balance plus overdraft. Savings accounts pay only into the same
        customer's accounts. Payments to other people count toward a daily limit of 5000.00 (retail) or 20000.00
        (premier) per customer; moves between a customer's own accounts do not.

        Args:
            from_account_id: id of the account to pay from, e.g. 'A00017'
            to_account_number: the receiving account number, e.g. 'NB4410239981' (this bank) or 'XE...' (another bank)
            amount: the amount, greater than zero, at most two decimals
            reference: the payment reference the payee will see, e.g. 'INV-2231'
            payee_name: the payee's name; required for accounts at other banks, ignored for accounts at this bank
        """
        src = self._account(from_account_id)
        cust = self.db.customers[src['customer_id']]
        if src['status'] != 'open': raise ToolFailure(f"account {from_account_id} is {src['status']}; no payments can leave it")
        if not cust['kyc_verified']: raise ToolFailure(f"customer {src['customer_id']} has not completed identity checks")
        amount = self._money(amount)
        if to_account_number == src['number']: raise ToolFailure('cannot pay an account into itself')
        dest_id = next((k for k, a in sorted(self.db.accounts.items()) if a['number'] == to_account_number), None)
        if dest_id is None and to_account_number.startswith('NB'): raise ToolFailure(f'no account {to_account_number!r} at this bank')
        dest = self.db.accounts[dest_id] if dest_id else None
        if dest and dest['status'] == 'closed': raise ToolFailure(f'account {to_account_number} is closed')
        own = dest is not None and dest['customer_id'] == src['customer_id']
        if src['kind'] == 'savings' and not own: raise ToolFailure("savings accounts can only pay into the customer's own accounts")
        if dest is None and not (payee_name or '').strip(): raise ToolFailure('payee_name is required for a payment to another bank')
        available = round(src['balance'] + src['overdraft_limit'], 2)
        if amount > available + 1e-9: raise ToolFailure(f'insufficient funds: {available:.2f} available in {from_account_id}')
        if not own:
            today, mine = self.now().date().isoformat(), {k for k, a in self.db.accounts.items() if a['customer_id'] == src['customer_id']}
            sent = -sum(t['amount'] for t in self.db.transactions.values() if t['account_id'] in mine and t['kind'] == 'payment_out'
                        and t['posted_at'][:10] == today and not t['counterparty'].startswith(OWN))
            limit = DAILY_PAYMENT_LIMIT[cust['segment']]
            if sent + amount > limit + 1e-9: raise ToolFailure(f'daily payment limit {limit:.2f} reached: {sent:.2f} already sent today')
        payee = self.db.customers[dest['customer_id']]['name'] if dest else payee_name.strip()
        out_id = self._post(from_account_id, -amount, 'payment_out', f"{OWN}{dest['number']}" if own else payee, reference)
        in_id = self._post(dest_id, amount, 'payment_in', cust['name'], reference) if dest else None
        return {'transaction_id': out_id, 'credited_transaction_id': in_id, 'payee': payee, 'amount': amount, 'balance': src['balance']}

    @write_tool('cards')
    def block_card(self, card_id: str, reason: Literal['lost', 'stolen', 'damaged', 'suspected_fraud']) -> dict:
        """Block an active card at once, e.g. when it is lost or stolen. A blocked card cannot be unblocked; issue a replacement.

        Args:
            card_id: the card's id, e.g. 'K00031'
            reason: 'lost', 'stolen', 'damaged' or 'suspected_fraud'
        """
        card = self._card(card_id)
        if card['status'] != 'active': raise ToolFailure(f"card {card_id} is already {card['status']}")
        card['status'], card['block_reason'] = 'blocked', reason
        return {'card_id': card_id, 'last4': card['last4'], 'status': 'blocked', 'reason': reason}

    @write_tool('cards', 'accounts', 'transactions')
    def reissue_card(self, card_id: str) -> dict:
        """Replace a blocked card: the old card is cancelled and a new one on the same account and daily limit is issued,
        valid four years. Replacing a lost, stolen or damaged card costs retail customers 7.50 (charged to the account);
        premier customers and fraud replacements are free.

        Args:
            card_id: the blocked card's id
        """
        card = self._card(card_id)
        if card['status'] != 'blocked': raise ToolFailure(f"card {card_id} is {card['status']}; only a blocked card can be replaced")
        acc = self.db.accounts[card['account_id']]
        if acc['status'] != 'open': raise ToolFailure(f"account {card['account_id']} is {acc['status']}")
        seg = self.db.customers[acc['customer_id']]['segment']
        fee = 0.0 if card['block_reason'] == 'suspected_fraud' else REPLACEMENT_FEE[seg]
        if fee > acc['balance'] + acc['overdraft_limit'] + 1e-9: raise ToolFailure(f"the replacement fee {fee:.2f} is not covered by the funds in {card['account_id']}")
        card['status'] = 'cancelled'
        today = self.now().date()
        new_id = self.next_id('cards', 'K')
        self.db.cards[new_id] = {'account_id': card['account_id'], 'last4': f'{self.rng.randrange(10000):04d}', 'status': 'active', 'block_reason': None,
                                 'daily_limit': card['daily_limit'], 'expires': f'{today.year + CARD_YEARS}-{today.month:02d}', 'issued_on': today.isoformat()}
        fee_tx = self._post(card['account_id'], -fee, 'fee', 'Bank', f'Card replacement {card_id}') if fee else None
        return {'old_card_id': card_id, 'new_card_id': new_id, **self.db.cards[new_id], 'fee': fee, 'fee_transaction_id': fee_tx}

    @write_tool('cards')
    def set_card_limit(self, card_id: str, daily_limit: float) -> dict:
        """Change an active card's daily spending limit: at most 2000.00 for retail and 5000.00 for premier customers.

        Args:
            card_id: the card's id
            daily_limit: the new daily limit, greater than zero
        """
        card = self._card(card_id)
        if card['status'] != 'active': raise ToolFailure(f"card {card_id} is {card['status']}")
        seg = self.db.customers[self.db.accounts[card['account_id']]['customer_id']]['segment']
        limit = self._money(daily_limit, 'daily_limit')
        if limit > CARD_LIMIT_MAX[seg]: raise ToolFailure(f'{seg} customers can have a daily card limit of at most {CARD_LIMIT_MAX[seg]:.2f}')
        previous, card['daily_limit'] = card['daily_limit'], limit
        return {'card_id': card_id, 'daily_limit': limit, 'previous_limit': previous}

    @write_tool('standing_orders')
    def create_standing_order(self, account_id: str, payee_name: str, payee_account: str, amount: float, day_of_month: int) -> dict:
        """Set up a monthly standing order from an open current account. Days 1 to 28 only, at most 10000.00, at most
        10 active orders per account, and only one active order per account to the same payee account.

        Args:
            account_id: the paying current account's id
            payee_name: the payee's name as it should appear, e.g. 'Greystone Lettings'
            payee_account: the payee's account number
            amount: the monthly amount, greater than zero, at most two decimals
            day_of_month: the day of the month the payment leaves, 1 to 28
        """
        acc = self._account(account_id)
        if acc['kind'] != 'current': raise ToolFailure('standing orders can only be set up on current accounts')
        if acc['status'] != 'open': raise ToolFailure(f"account {account_id} is {acc['status']}")
        if not 1 <= day_of_month <= 28: raise ToolFailure('day_of_month must be between 1 and 28')
        amount = self._money(amount)
        if amount > MAX_STANDING_ORDER_AMOUNT: raise ToolFailure(f'standing orders are limited to {MAX_STANDING_ORDER_AMOUNT:.2f}')
        if payee_account == acc['number']: raise ToolFailure('a standing order cannot pay its own account')
        if not payee_name.strip(): raise ToolFailure('payee_name is required')
        active = [(k, s) for k, s in sorted(self.db.standing_orders.items()) if s['account_id'] == account_id and s['status'] == 'active']
        if len(active) >= MAX_STANDING_ORDERS: raise ToolFailure(f'account {account_id} already has {MAX_STANDING_ORDERS} active standing orders')
        dup = next((k for k, s in active if s['payee_account'] == payee_account), None)
        if dup: raise ToolFailure(f'standing order {dup} already pays {payee_account}; cancel or keep it')
        order_id = self.next_id('standing_orders', 'S', 4)
        self.db.standing_orders[order_id] = {'account_id': account_id, 'payee': payee_name.strip(), 'payee_account': payee_account, 'amount': amount,
                                             'day_of_month': day_of_month, 'status': 'active', 'created_on': self.now().date().isoformat(),
                                             'next_run': self._next_run(day_of_month)}
        return {'order_id': order_id, **self.db.standing_orders[order_id]}

    @write_tool('standing_orders')
    def cancel_standing_order(self, order_id: str) -> dict:
        """Stop an active standing order; no further payments are made.

        Args:
            order_id: the standing order's id, e.g. 'S0012'
        """
        s = self.db.standing_orders.get(order_id)
        if s is None or s['status'] != 'active': raise ToolFailure(f'no active standing order with id {order_id!r}')
        s['status'] = 'cancelled'
        return {'order_id': order_id, 'status': 'cancelled', 'payee': s['payee']}

    @write_tool('accounts', 'cards')
    def close_account(self, account_id: str) -> dict:
        """Close an open account. The balance must be exactly 0.00 and no standing order may be active on it; its cards
        are cancelled.

        Args:
            account_id: the account's id
        """
        acc = self._account(account_id)
        if acc['status'] != 'open': raise ToolFailure(f"account {account_id} is {acc['status']}")
        if acc['balance'] != 0: raise ToolFailure(f"account {account_id} holds {acc['balance']:.2f}; move or pay out the balance first")
        orders = [k for k, s in sorted(self.db.standing_orders.items()) if s['account_id'] == account_id and s['status'] == 'active']
        if orders: raise ToolFailure(f'account {account_id} still has active standing orders {orders}')
        acc['status'] = 'closed'
        cancelled = []
        for k, c in sorted(self.db.cards.items()):
            if c['account_id'] == account_id and c['status'] != 'cancelled': c['status'] = 'cancelled'; cancelled.append(k)
        return {'account_id': account_id, 'status': 'closed', 'cards_cancelled': cancelled}
