"""What the SQLite and PostgreSQL stores share: the SQL of every role.

:class:`SQLStore` is every role of :class:`rein.store.base.Store` over one connection and one
transaction (:class:`~rein.store.sql.connection.SQLConnection`): each role is a module of
its own with the SQL of its tables (:mod:`.runs`, :mod:`.events`, :mod:`.approvals`,
:mod:`.driver_turns`, :mod:`.threads`, :mod:`.processes`). Every write method is one
transaction: the event row and the state it describes commit together or not at all, and
every event is written by the event log's role (:mod:`.events`), on which the roles whose
rows carry an event (the approval queue, the driver's turns) are built.
``atomic()`` groups several writes into one transaction where a step needs more than one
event (a run and its graph approval).
"""

from __future__ import annotations

from rein.store.sql.approvals import ApprovalsSQL
from rein.store.sql.connection import SQLConnection, dump, dump_ordered, host_name
from rein.store.sql.driver_turns import DriverTurnsSQL
from rein.store.sql.events import ROWS_PER_STATEMENT, EventsSQL
from rein.store.sql.processes import ProcessesSQL
from rein.store.sql.runs import RunsSQL
from rein.store.sql.threads import ThreadsSQL


class SQLStore(RunsSQL, ApprovalsSQL, DriverTurnsSQL, EventsSQL, ThreadsSQL, ProcessesSQL):
    """The shared implementation of :class:`rein.store.base.Store`: every role, one
    connection (a backend subclasses it with that connection)."""


__all__ = ["ROWS_PER_STATEMENT", "SQLConnection", "SQLStore", "dump", "dump_ordered",
           "host_name"]
