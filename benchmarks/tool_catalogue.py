"""The tool catalogue of the tool-search benchmark: Spring AI's scenario, then near misses, then bulk.

Catalogue N is the first N tools: the three the scenario needs (``currentTime``, then ``weather`` and
``clothing``, which take the time), 25 hand-written business and utility tools (N = 28 is Spring's
scenario), then tools generated from entities and operations in the same style. Near misses are on
purpose: ``convert_timezone``, ``request_time_off`` and ``track_shipment`` from 28 on, four
``*_route_weather_alert`` tools and a ``*_uniform_order`` ("protective clothing") from 50 on, and
``*_marketplace_shop`` tools from 100 on.
"""

from __future__ import annotations

from typing import Any

Spec = tuple[str, str, dict[str, Any]]
"""(name, description, JSON schema of the arguments)."""


def _schema(required: list[str], **properties: tuple[str, str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {name: {"type": kind, "description": text} for name, (kind, text) in properties.items()},
        "required": required,
    }


_LOCATION = ("string", "City and country, for example 'Landsmeer, NL'.")
_TIME = ("string", "Local date and time in ISO 8601, for example '2025-05-01T10:30'.")

NEEDED: list[Spec] = [
    ("currentTime", "Get the current date and time in the user's time zone.", _schema([])),
    (
        "weather",
        "Get the weather for a location at a given time: temperature, wind, rain and a short summary.",
        _schema(["location", "time"], location=_LOCATION, time=_TIME),
    ),
    (
        "clothing",
        "Find clothing shops near a location that are open at the given time, with their opening hours.",
        _schema(["location", "time"], location=_LOCATION, time=_TIME),
    ),
]

_HANDWRITTEN: list[Spec] = [
    ("convert_timezone", "Convert a date and time from one time zone to another.",
     _schema(["time", "from_zone", "to_zone"], time=_TIME, from_zone=("string", "IANA time zone of the input."),
             to_zone=("string", "IANA time zone to convert to."))),
    ("request_time_off", "File a request for time off work for an employee, with the dates and a reason.",
     _schema(["employee_id", "start", "end"], employee_id=("string", "The employee's id."),
             start=("string", "First day off, ISO date."), end=("string", "Last day off, ISO date."),
             reason=("string", "Why the time off is needed."))),
    ("track_shipment", "Track a shipment: its current location, status and expected delivery time.",
     _schema(["tracking_number"], tracking_number=("string", "The carrier's tracking number."),
             carrier=("string", "Carrier name, if known."))),
    ("create_calendar_event", "Create an event in the user's calendar at a given time, with invitees.",
     _schema(["title", "start"], title=("string", "Event title."), start=_TIME,
             duration_minutes=("integer", "Length of the event in minutes."),
             invitees=("string", "Comma-separated e-mail addresses."))),
    ("send_email", "Send an e-mail to one or more recipients with a subject and a body.",
     _schema(["to", "subject", "body"], to=("string", "Comma-separated recipients."),
             subject=("string", "Subject line."), body=("string", "Plain-text body."))),
    ("search_contacts", "Search the address book for contacts by name, company or e-mail address.",
     _schema(["query"], query=("string", "Words to look for."), limit=("integer", "Maximum results."))),
    ("translate_text", "Translate a text into another language, detecting the source language.",
     _schema(["text", "target_language"], text=("string", "The text to translate."),
             target_language=("string", "ISO 639-1 code of the language to translate into."))),
    ("get_stock_quote", "Get the latest price, change and volume of a stock by its ticker symbol.",
     _schema(["symbol"], symbol=("string", "Ticker symbol, for example 'ASML'."),
             exchange=("string", "Exchange code, if the symbol is ambiguous."))),
    ("convert_currency", "Convert an amount of money from one currency to another at today's rate.",
     _schema(["amount", "from_currency", "to_currency"], amount=("number", "The amount to convert."),
             from_currency=("string", "ISO 4217 code."), to_currency=("string", "ISO 4217 code."))),
    ("book_meeting_room", "Book a meeting room in an office for a time slot and number of people.",
     _schema(["office", "start", "people"], office=("string", "Office name."), start=_TIME,
             people=("integer", "How many people attend."), duration_minutes=("integer", "Length in minutes."))),
    ("create_support_ticket", "Open a support ticket for a customer problem, with a priority.",
     _schema(["customer_id", "summary"], customer_id=("string", "The customer's id."),
             summary=("string", "What went wrong."), priority=("string", "low, normal, high or urgent."))),
    ("lookup_order", "Look up a customer order: items, totals, payment and fulfilment status.",
     _schema(["order_id"], order_id=("string", "The order number."))),
    ("refund_payment", "Refund all or part of a card payment to the customer.",
     _schema(["payment_id"], payment_id=("string", "The payment's id."),
             amount=("number", "Amount to refund; the whole payment when left out."),
             reason=("string", "Why the payment is refunded."))),
    ("generate_invoice", "Generate a PDF invoice for an order and e-mail it to the billing contact.",
     _schema(["order_id"], order_id=("string", "The order number."),
             due_days=("integer", "Days until the invoice is due."))),
    ("check_inventory", "Check how many units of a product are in stock in each warehouse.",
     _schema(["sku"], sku=("string", "Product SKU."), warehouse=("string", "Limit to one warehouse."))),
    ("schedule_delivery", "Schedule the delivery of an order to an address in a time window.",
     _schema(["order_id", "address", "window_start"], order_id=("string", "The order number."),
             address=("string", "Delivery address."), window_start=_TIME)),
    ("summarize_document", "Summarise a long document in a few sentences or bullet points.",
     _schema(["document_id"], document_id=("string", "The stored document's id."),
             style=("string", "'sentences' or 'bullets'."))),
    ("search_knowledge_base", "Search the internal knowledge base for articles that answer a question.",
     _schema(["question"], question=("string", "The question, in plain words."),
             limit=("integer", "Maximum articles."))),
    ("create_task", "Create a task in the team's project board with an assignee and a due date.",
     _schema(["title"], title=("string", "Task title."), assignee=("string", "Who does it."),
             due=("string", "Due date, ISO date."))),
    ("get_exchange_calendar", "List the trading days and holidays of a stock exchange in a month.",
     _schema(["exchange", "month"], exchange=("string", "Exchange code."), month=("string", "YYYY-MM."))),
    ("reset_password", "Send a password reset link to a user of the customer portal.",
     _schema(["email"], email=("string", "The user's e-mail address."))),
    ("list_open_incidents", "List the open incidents of the operations team by severity.",
     _schema([], severity=("string", "Only this severity."), team=("string", "Only this team."))),
    ("calculate_shipping_cost", "Calculate the cost of shipping a parcel between two postcodes.",
     _schema(["from_postcode", "to_postcode", "weight_kg"], from_postcode=("string", "Sender postcode."),
             to_postcode=("string", "Recipient postcode."), weight_kg=("number", "Parcel weight in kilograms."))),
    ("get_employee_profile", "Get an employee's profile: role, team, manager and office.",
     _schema(["employee_id"], employee_id=("string", "The employee's id."))),
    ("approve_expense", "Approve or reject an expense claim, with a comment for the employee.",
     _schema(["claim_id", "approved"], claim_id=("string", "The claim's id."),
             approved=("boolean", "True to approve."), comment=("string", "Note for the employee."))),
]  # fmt: skip

_ENTITIES = [
    "customer", "supplier", "product", "warehouse", "fleet", "driver", "depot", "carrier", "contract", "project",
    "campaign", "lead", "invoice", "budget", "asset", "vendor", "partner", "store", "team", "policy", "claim",
    "subscription", "license", "device", "sensor", "ticket", "release", "survey", "course", "booking", "venue",
    "menu", "recipe", "patient", "appointment", "prescription", "property", "tenant", "lease", "vehicle",
    "route", "seller", "listing",
]  # fmt: skip
_OPERATIONS = ["create", "get", "update", "list"]
_SPECIAL = {
    # entity: (operation replaced, name suffix, description)
    "fleet": ("update", "route_weather_alert", "Send a weather alert to the fleet's vehicles on an affected route."),
    "driver": ("update", "route_weather_alert", "Warn a driver about severe weather on the route of the day."),
    "depot": ("update", "route_weather_alert", "Set a weather alert for routes leaving the depot."),
    "carrier": ("update", "route_weather_alert", "Tell a carrier about weather on a route that may delay deliveries."),
    "warehouse": ("list", "uniform_order", "Order protective clothing and uniforms for warehouse staff."),
    "store": ("list", "marketplace_shop", "Open or configure the store's shop on an online marketplace."),
    "seller": ("list", "marketplace_shop", "List the marketplace shops of a seller, with their status."),
    "listing": ("list", "marketplace_shop", "Find the marketplace shop a listing belongs to."),
}  # fmt: skip


def _generated(entity: str, operation: str) -> Spec:
    special = _SPECIAL.get(entity)
    if special is not None and special[0] == operation:
        _, suffix, description = special
        return (
            f"{entity}_{suffix}",
            description,
            _schema(
                [f"{entity}_id"],
                **{
                    f"{entity}_id": ("string", f"The {entity}'s id."),
                    "note": ("string", "Free text for the recipient."),
                },
            ),
        )
    verb = {"create": "Create a new", "get": "Get one", "update": "Update an existing", "list": "List the"}[operation]
    plural = "records" if operation == "list" else "record"
    description = f"{verb} {entity} {plural} in the {entity} register, with its status and owner."
    if operation == "create":
        schema = _schema(
            ["name"],
            name=("string", f"Name of the {entity}."),
            owner=("string", "Who owns it."),
            tags=("string", "Comma-separated tags."),
        )
    elif operation == "list":
        schema = _schema(
            [],
            status=("string", "Only this status."),
            owner=("string", "Only this owner."),
            limit=("integer", "Maximum results."),
        )
    else:
        schema = _schema(
            [f"{entity}_id"],
            **{
                f"{entity}_id": ("string", f"The {entity}'s id."),
                "fields": ("string", "JSON object of the fields to set or return."),
            },
        )
    return (f"{operation}_{entity}", description, schema)  # fmt: skip


def catalogue(size: int) -> list[Spec]:
    """The first ``size`` tools; past the 200 named ones, entities are numbered (for the index cost at 1,000)."""
    specs = [*NEEDED, *_HANDWRITTEN]
    round_ = 0
    while len(specs) < size:
        for entity in _ENTITIES:
            name = entity if round_ == 0 else f"{entity}{round_}"
            specs.extend(_generated(name, op) if round_ == 0 else _generated_numbered(name, entity, op)
                         for op in _OPERATIONS)  # fmt: skip
        round_ += 1
    return specs[:size]


def _generated_numbered(name: str, entity: str, operation: str) -> Spec:
    spec_name, description, schema = _generated(entity, operation)
    return (spec_name.replace(entity, name, 1), description.replace(entity, name, 1), schema)
