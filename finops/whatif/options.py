"""The what-if's inputs as people give them: the three classic profiles of the issue (the page's presets) and the
options typed on the command line, in a query string or in the page's form, parsed into a calculator's options
(finops.whatif.calculator.Profile) or refused with ProfileInvalid naming the option at fault. Pure: no ORM.
"""

from decimal import Decimal

from finops.whatif.calculator import Profile, ProfileInvalid

# The three classic profiles of the issue, as monthly totals.
PRESETS = {
    "coding-copilot": Profile(
        requests=220_000,
        input_tokens=220_000 * 4_000,
        output_tokens=220_000 * 1_500,
        sla_seconds=Decimal(3),
        label="Real-time coding copilot (≤ 3 s)",
    ),
    "support-agent": Profile(
        requests=3_000_000,
        input_tokens=3_000_000 * 2_000,
        output_tokens=3_000_000 * 400,
        sla_seconds=Decimal(4),
        label="Customer-support agent (≤ 4 s)",
    ),
    "document-processing": Profile(
        requests=10_000_000,
        input_tokens=10_000_000 * 1_500,
        output_tokens=10_000_000 * 200,
        batch_window_hours=Decimal(8),
        label="Overnight document processing (8-hour batch window)",
    ),
}


# --- options as typed (command line, query string, page form) ---

INTEGER_OPTIONS = ("requests", "input_tokens", "output_tokens", "cached_input_tokens")
DECIMAL_OPTIONS = ("sla_seconds", "batch_window_hours")
TEXT_OPTIONS = ("workload", "family")
OPTIONS = (*TEXT_OPTIONS, *INTEGER_OPTIONS, *DECIMAL_OPTIONS)


def parse_options(raw: dict) -> dict:
    """Text values (None or "" = not given) → typed options; raises ProfileInvalid naming the first bad one.
    Volumes are whole numbers ≥ 0; the SLA and the window are positive decimals; a workload and a typed
    volume exclude each other."""
    options = {}
    for name in OPTIONS:
        value = raw.get(name)
        value = value.strip() if isinstance(value, str) else value
        if value in (None, ""):
            continue
        if name in INTEGER_OPTIONS:
            try:
                number = int(str(value).replace("_", "").replace(",", ""))
            except ValueError:
                raise ProfileInvalid(name, f"must be a whole number, not {value!r}") from None
            if number < 0:
                raise ProfileInvalid(name, "must not be negative")
            options[name] = number
        elif name in DECIMAL_OPTIONS:
            try:
                number = Decimal(str(value))
            except ArithmeticError:
                raise ProfileInvalid(name, f"must be a number, not {value!r}") from None
            if not number.is_finite() or number <= 0:
                raise ProfileInvalid(name, "must be greater than 0")
            options[name] = number
        else:
            options[name] = str(value)
    if "workload" in options:
        typed = [name for name in INTEGER_OPTIONS if name in options]
        if typed:
            raise ProfileInvalid(typed[0], "give a workload or volumes, not both")
    if "sla_seconds" in options and "batch_window_hours" in options:
        raise ProfileInvalid("batch_window_hours", "give a latency SLA or a batch window, not both")
    return options
